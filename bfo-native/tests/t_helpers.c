/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/filter.h>
#include <linux/loop.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <linux/audit.h>

#include "t_helpers.h"

/* ------------------------------------------------------------ outcome */

static const char *t_name = "test";
static pid_t t_owner;              /* the test's main process */
static char t_wd_what[256] = "the test";
static unsigned t_wd_secs;

static void t_vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s%s: ", prefix, t_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void t_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s: ", t_name);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
}

_Noreturn void t_skip(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(77);
}

static void run_cleanups(bool in_signal);

_Noreturn void t_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char where[512];

	snprintf(where, sizeof(where), "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	t_vmsg(where, fmt, ap);
	va_end(ap);
	if (getpid() != t_owner) {
		run_cleanups(false);   /* a forked child: only what it registered */
		_exit(1);
	}
	exit(1);
}

_Noreturn void t_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	t_fail_at(file, line, "assertion `%s' failed: %s", cond, msg);
}

/* ------------------------------------------------------------ cleanup */

enum ckind { C_MOUNT, C_LOOP, C_UNLINK, C_RMDIR, C_RMTREE, C_KILL };

struct citem {
	enum ckind kind;
	bool done;
	char path[PATH_MAX];
	dev_t img_dev;           /* C_LOOP: the backing image, to never detach */
	ino_t img_ino;           /* a device someone else attached since */
	pid_t pid;               /* C_KILL */
	pid_t owner;             /* the process that registered it undoes it */
};

#define MAX_CLEANUPS 64
static struct citem cleanups[MAX_CLEANUPS];
static volatile int ncleanups;

static void cleanup_add(enum ckind kind, const char *path, dev_t d, ino_t i)
{
	if (ncleanups == MAX_CLEANUPS)
		t_fail("too many cleanups registered");
	struct citem *c = &cleanups[ncleanups];

	c->kind = kind;
	c->done = false;
	c->owner = getpid();
	c->img_dev = d;
	c->img_ino = i;
	snprintf(c->path, sizeof(c->path), "%s", path);
	ncleanups++;
}

void t_cleanup_mount(const char *mnt) { cleanup_add(C_MOUNT, mnt, 0, 0); }
void t_cleanup_unlink(const char *path) { cleanup_add(C_UNLINK, path, 0, 0); }
void t_cleanup_rmdir(const char *path) { cleanup_add(C_RMDIR, path, 0, 0); }
void t_cleanup_rmtree(const char *path) { cleanup_add(C_RMTREE, path, 0, 0); }

void t_cleanup_kill(pid_t pid)
{
	cleanup_add(C_KILL, "", 0, 0);
	cleanups[ncleanups - 1].pid = pid;
}

static void loop_add(const char *dev, const char *image)
{
	struct stat st;

	if (stat(image, &st) < 0)
		t_fail("stat %s: %s", image, strerror(errno));
	cleanup_add(C_LOOP, dev, st.st_dev, st.st_ino);
}

void t_cleanup_loop(const char *dev) { cleanup_add(C_LOOP, dev, 0, 0); }

/* Removes dfd's entry name and all below it, through descriptors: at any
 * depth (nftw gives up where a path passes PATH_MAX, and tests make such
 * trees), never following a link, never into another file system (dev). */
static void rm_at(int dfd, const char *name, dev_t dev)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return;
	}
	if (st.st_dev != dev)
		return;              /* a mount point: left for its own cleanup */
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, 0) == 0)
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d && fd >= 0)
		close(fd);
	/* a second pass for entries a changing directory may have hidden
	 * from the first; a third never helps */
	for (int pass = 0; d && pass < 2; pass++) {
		struct dirent *de;

		rewinddir(d);
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_at(fd, de->d_name, dev);
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno != ENOTEMPTY)
			break;
	}
	if (d)
		closedir(d);
	else
		unlinkat(dfd, name, AT_REMOVEDIR);
}

/* Async-signal-safe except the tree removal outside a signal handler.
 * Each process undoes what it registered: a sub-test's child (t_subtest)
 * its own mounts and images, the test's main process the rest. */
static void run_cleanups(bool in_signal)
{
	pid_t me = getpid();

	for (int i = ncleanups - 1; i >= 0; i--) {
		struct citem *c = &cleanups[i];

		if (c->done || c->owner != me)
			continue;
		c->done = true;
		switch (c->kind) {
		case C_MOUNT: {
			/* Busy for a moment after a child with an io_uring on
			 * this file system died (the ring is torn down
			 * asynchronously): retry before a lazy unmount. */
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			int k = 0;

			while (umount2(c->path, 0) < 0 && errno == EBUSY && k++ < 50)
				nanosleep(&ts, NULL);
			if (k > 50)
				umount2(c->path, MNT_DETACH);
			break;
		}
		case C_LOOP: {
			int fd = open(c->path, O_RDONLY | O_CLOEXEC);
			struct loop_info64 li;

			if (fd < 0)
				break;
			/* Detach only while it is still our image (autoclear may
			 * have detached it and someone else may use it now). */
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			for (int k = 0; k < 50; k++) {
				if (ioctl(fd, LOOP_GET_STATUS64, &li) < 0 ||
				    (c->img_ino != 0 &&
				     (li.lo_inode != c->img_ino || li.lo_device != c->img_dev)))
					break;   /* detached already (autoclear) */
				if (ioctl(fd, LOOP_CLR_FD, 0) == 0 || errno != EBUSY)
					break;
				nanosleep(&ts, NULL);
			}
			close(fd);
			break;
		}
		case C_UNLINK:
			unlink(c->path);
			break;
		case C_RMDIR:
			rmdir(c->path);
			break;
		case C_KILL: {
			/* async-signal-safe: kill, waitpid, nanosleep */
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			pid_t w = 0;

			if (c->pid <= 0 || kill(c->pid, SIGTERM) < 0)
				break;
			for (int k = 0; k < 250 && (w = waitpid(c->pid, NULL, WNOHANG)) == 0; k++)
				nanosleep(&ts, NULL);
			if (w == 0) {
				kill(c->pid, SIGKILL);
				waitpid(c->pid, NULL, 0);
			}
			break;
		}
		case C_RMTREE:
			if (in_signal) {
				pid_t pid = fork();

				if (pid == 0) {
					char *argv[] = { "rm", "-rf", "--one-file-system", "--",
							 c->path, NULL };
					char *envp[] = { NULL };

					execve("/bin/rm", argv, envp);
					_exit(127);
				}
				if (pid > 0)
					waitpid(pid, NULL, 0);
			} else {
				struct stat top;

				if (lstat(c->path, &top) == 0)
					rm_at(AT_FDCWD, c->path, top.st_dev);
			}
			break;
		}
	}
}

void t_cleanup_now(void)
{
	run_cleanups(false);
}

static void at_exit_cleanup(void)
{
	run_cleanups(false);
}

static void write_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));

	(void)r;
}

static void on_fatal(int sig)
{
	if (sig == SIGALRM) {
		write_str("FAIL ");
		write_str(t_name);
		write_str(": watchdog: ");
		write_str(t_wd_what);
		write_str(" did not finish in time (hang?)\n");
	} else {
		write_str("FAIL ");
		write_str(t_name);
		write_str(": killed by signal ");
		write_str(strsignal(sig));
		write_str("; cleaning up\n");
	}
	alarm(30);             /* a cleanup that hangs still ends */
	signal(SIGALRM, SIG_DFL);
	run_cleanups(true);
	if (sig == SIGALRM || sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
		_exit(1);
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(1);
}

void t_init(const char *name, unsigned alarm_seconds)
{
	struct sigaction sa;
	static const int sigs[] = { SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGABRT,
#if !T_ASAN
		SIGSEGV, SIGBUS, SIGFPE, SIGILL,
#endif
	};

	t_name = name;
	t_owner = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(at_exit_cleanup);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
#ifdef T_CTEST_TIMEOUT
	/* the watchdog must fire before ctest kills the test, which then
	 * could not say what hung nor unmount what it mounted */
	if (alarm_seconds + 60 > T_CTEST_TIMEOUT) {
		fprintf(stderr, "FAIL %s: watchdog %u s is not 60 s below ctest's timeout (%u s, tests/CMakeLists.txt)\n",
			name, alarm_seconds, (unsigned)T_CTEST_TIMEOUT);
		exit(1);
	}
#endif
	t_wd_secs = alarm_seconds;
	alarm(alarm_seconds);
	t_log("start (watchdog %u s%s)", alarm_seconds, T_ASAN ? ", sanitizer build" : "");
}

void t_watchdog(unsigned seconds, const char *what)
{
	snprintf(t_wd_what, sizeof(t_wd_what), "%s", what ? what : "the test");
	alarm(seconds ? seconds : t_wd_secs);
}

static char failed_subtests[2048];
static int nfailed_subtests;

/* BFO_TEST_ONLY=NAME[,NAME...]: only these sub-tests run (a developer's
 * shortcut through a long test; the suite sets nothing). */
static bool subtest_wanted(const char *name)
{
	const char *only = getenv("BFO_TEST_ONLY");
	size_t n = strlen(name);

	if (!only || !*only)
		return true;
	for (const char *p = only; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

bool t_subtest(const char *name, unsigned seconds, void (*fn)(void *arg), void *arg)
{
	pid_t pid;
	int st;

	if (!subtest_wanted(name)) {
		t_log("%s: not run (BFO_TEST_ONLY)", name);
		return true;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		t_watchdog(seconds, name);
		fn(arg);
		fflush(stdout);
		exit(0);        /* its own cleanups run, then the leak check */
	}
	/* the sub-test's own watchdog bounds it; the test's runs on after */
	unsigned left = alarm(0);

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			t_fail("waitpid: %s", strerror(errno));
	alarm(left);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return true;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		t_log("%s: skipped", name);
		return true;
	}
	if (WIFEXITED(st))
		t_log("FAILED sub-test: %s (exit %d)", name, WEXITSTATUS(st));
	else
		t_log("FAILED sub-test: %s (signal %s)", name, strsignal(WTERMSIG(st)));
	nfailed_subtests++;
	size_t l = strlen(failed_subtests);

	snprintf(failed_subtests + l, sizeof(failed_subtests) - l, "%s%s", l ? "; " : "", name);
	return false;
}

void t_done(void)
{
	if (nfailed_subtests)
		t_fail("%d sub-test(s) failed: %s", nfailed_subtests, failed_subtests);
	t_log("PASS");
}

/* ------------------------------------------------------------ environment */

bool t_is_root(void)
{
	return geteuid() == 0;
}

bool t_have_prog(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path || !*path)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	/* Also the sbin directories a non-login root shell may lack. */
	char all[8192];

	snprintf(all, sizeof(all), "%s:/usr/sbin:/sbin", path);
	for (char *save = NULL, *d = strtok_r(all, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/%s", d, name);
		if (access(buf, X_OK) == 0)
			return true;
	}
	return false;
}

int t_sh(const char *fmt, ...)
{
	char cmd[16384];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fflush(stderr);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

bool t_drop_caches(void)
{
	int fd;
	bool ok;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = write(fd, "3\n", 2) == 2;
	close(fd);
	return ok;
}

/* A "Name: N kB" field of /proc/self/status, or -1. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t fl = strlen(field);
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':' &&
		    sscanf(line + fl + 1, " %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

long t_rss_peak_kb(void)
{
	return status_kb("VmHWM");
}

long t_rss_kb(void)
{
	return status_kb("VmRSS");
}

int t_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;    /* the directory's own descriptor */
}

#if defined(__x86_64__)
#define T_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define T_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

void t_deny_io_uring(void)
{
#ifdef T_AUDIT_ARCH
	/* A call of another architecture's table may not be judged by its
	 * number: it is killed, as no test makes one. */
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, T_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = { .len = sizeof(prog) / sizeof(prog[0]), .filter = prog };

	/* Without privileges a filter needs no_new_privs; root sets it too. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		t_skip("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) < 0)
		t_skip("seccomp filter: %s", strerror(errno));
#else
	t_skip("no seccomp filter for this architecture");
#endif
}

/* ------------------------------------------------------------ files */

char *t_mkdtemp_in(const char *dir)
{
	char *p = t_pathf("%s/bfo-t-XXXXXX", dir);

	if (!mkdtemp(p))
		t_fail("mkdtemp in %s: %s", dir, strerror(errno));
	if (chmod(p, 0755) < 0)
		t_fail("chmod %s: %s", p, strerror(errno));
	return p;
}

/* Strings handed out for the life of the process: kept reachable so the
 * leak checker does not count them. */
static char *keep[256];
static int nkeep;

static const char *keep_str(char *p)
{
	if (nkeep < 256)
		keep[nkeep++] = p;
	return p;
}

const char *t_keep(char *p)
{
	return keep_str(p);
}

const char *t_tmpdir(void)
{
	const char *base = getenv("BFO_TEST_TMPDIR");
	char *p = t_mkdtemp_in(base && *base ? base : "/tmp");

	t_cleanup_rmtree(p);
	return keep_str(p);
}

char *t_pathf(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		t_fail("out of memory");
	va_end(ap);
	return p;
}

char *t_path(const char *dir, const char *name)
{
	return t_pathf("%s/%s", dir, name);
}

uint64_t t_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t t_rand_range(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + t_rand(s) % (hi - lo + 1);
}

void t_fill_random(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = t_rand(&s);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = t_rand(&s);

		memcpy(p + i, &v, len - i);
	}
}

void t_write_bytes(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t done = 0;

	if (fd < 0)
		t_fail("create %s: %s", path, strerror(errno));
	while (done < len) {
		ssize_t n = write(fd, (const uint8_t *)buf + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			t_fail("write %s: %s", path, strerror(errno));
		}
		done += (size_t)n;
	}
	if (close(fd) < 0)
		t_fail("close %s: %s", path, strerror(errno));
}

void t_write_random(const char *path, uint64_t size, uint64_t seed)
{
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		t_fail("out of memory (%llu bytes)", (unsigned long long)size);
	t_fill_random(buf, size, seed);
	t_write_bytes(path, buf, size);
	free(buf);
}

int t_read_plain(const char *path, uint8_t **out, uint64_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	struct stat st;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		cap = (size_t)st.st_size + 1;
	for (;;) {
		if (n == cap || !buf) {
			if (n == cap)
				cap = cap ? cap * 2 : 65536;
			uint8_t *b = realloc(buf, cap);

			if (!b)
				t_fail("out of memory");
			buf = b;
		}
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n == 0) {
		free(buf);
		buf = NULL;
	}
	*out = buf;
	*len = n;
	return 0;
}

uint64_t t_hash(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

long t_extents(const char *path)
{
	struct fiemap fm;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long r;

	if (fd < 0)
		return -errno;
	memset(&fm, 0, sizeof(fm));
	fm.fm_length = FIEMAP_MAX_OFFSET;
	fm.fm_flags = FIEMAP_FLAG_SYNC;
	r = ioctl(fd, FS_IOC_FIEMAP, &fm) < 0 ? -errno : (long)fm.fm_mapped_extents;
	close(fd);
	return r;
}

int t_hash_file(const char *path, uint64_t *hash, uint64_t *len)
{
	uint8_t *b;
	int r = t_read_plain(path, &b, len);

	if (r)
		return r;
	*hash = t_hash(b, *len);
	free(b);
	return 0;
}

/* ------------------------------------------------------------ loop file systems */

static int run_capture(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (outlen)
		out[0] = '\0';
	while (outlen && n + 1 < outlen) {
		size_t r = fread(out + n, 1, outlen - 1 - n, p);

		if (r == 0)
			break;
		n += r;
	}
	if (outlen)
		out[n] = '\0';
	/* drain the rest */
	char sink[512];

	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

const char *t_loop_fs(const char *fstype, unsigned size_mb, const char *mkfs_extra,
		      const char *mount_opts, char *why, size_t why_len)
{
	return t_loop_fs_ex(fstype, size_mb, mkfs_extra, mount_opts, NULL, why, why_len);
}

const char *t_loop_fs_ex(const char *fstype, unsigned size_mb, const char *mkfs_extra,
			 const char *mount_opts, const char *losetup_extra, char *why, size_t why_len)
{
	char img[PATH_MAX], dev[256], out[2048], mkfs[64];
	int fd;

	if (!t_is_root()) {
		snprintf(why, why_len, "not root: loop devices and mounts need root");
		return NULL;
	}
	snprintf(mkfs, sizeof(mkfs), "mkfs.%s", fstype);
	if (!t_have_prog(mkfs)) {
		snprintf(why, why_len, "%s not installed", mkfs);
		return NULL;
	}
	if (!t_have_prog("losetup")) {
		snprintf(why, why_len, "losetup not installed");
		return NULL;
	}
	snprintf(img, sizeof(img), "/var/tmp/bfo-t-%s-XXXXXX.img", fstype);
	fd = mkstemps(img, 4);
	if (fd < 0) {
		snprintf(why, why_len, "cannot create an image under /var/tmp: %s", strerror(errno));
		return NULL;
	}
	t_cleanup_unlink(img);
	if (ftruncate(fd, (off_t)size_mb << 20) < 0) {
		snprintf(why, why_len, "ftruncate %s: %s", img, strerror(errno));
		close(fd);
		return NULL;
	}
	close(fd);
	if (run_capture(dev, sizeof(dev), "PATH=$PATH:/usr/sbin:/sbin losetup %s --find --show '%s' 2>&1",
			losetup_extra ? losetup_extra : "", img) != 0 || strncmp(dev, "/dev/", 5) != 0) {
		snprintf(why, why_len, "losetup refused: %s", dev);
		return NULL;
	}
	dev[strcspn(dev, "\n")] = '\0';
	loop_add(dev, img);
	if (run_capture(out, sizeof(out), "PATH=$PATH:/usr/sbin:/sbin %s %s %s '%s' 2>&1", mkfs,
			!strcmp(fstype, "xfs") ? "-f -q" : "-F -q -E nodiscard",
			mkfs_extra ? mkfs_extra : "", dev) != 0) {
		snprintf(why, why_len, "%s %s refused: %s", mkfs, mkfs_extra ? mkfs_extra : "", out);
		return NULL;
	}
	char *mnt = t_mkdtemp_in("/tmp");

	t_cleanup_rmdir(mnt);
	keep_str(mnt);
	if (mount(dev, mnt, fstype, 0, mount_opts && *mount_opts ? mount_opts : NULL) < 0) {
		snprintf(why, why_len, "mount -t %s -o %s %s refused: %s", fstype,
			 mount_opts ? mount_opts : "defaults", dev, strerror(errno));
		return NULL;
	}
	t_cleanup_mount(mnt);
	/* Autoclear now that the mount holds the device: the umount detaches
	 * it even if this process dies before its cleanup runs. */
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		struct loop_info64 li;

		if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
			li.lo_flags |= LO_FLAGS_AUTOCLEAR;
			ioctl(fd, LOOP_SET_STATUS64, &li);
		}
		close(fd);
	}
	if (chmod(mnt, 0755) < 0)
		t_fail("chmod %s: %s", mnt, strerror(errno));
	t_log("%s image %s on %s%s%s mounted at %s%s%s", fstype, img, dev,
	      losetup_extra ? " " : "", losetup_extra ? losetup_extra : "", mnt,
	      mount_opts ? " -o " : "", mount_opts ? mount_opts : "");
	return mnt;
}

const char *t_loop_fs_or_skip(const char *fstype, unsigned size_mb, const char *mkfs_extra,
			      const char *mount_opts)
{
	char why[2048];
	const char *m = t_loop_fs(fstype, size_mb, mkfs_extra, mount_opts, why, sizeof(why));

	if (!m)
		t_skip("%s", why);
	return m;
}

/* ------------------------------------------------------------ batches */

const int t_engines_nonraw[3] = { BFO_ENGINE_AUTO, BFO_ENGINE_URING, BFO_ENGINE_PORTABLE };

const char *t_engine(int e)
{
	return bfo_engine_name(e);
}

struct bfo_ctx *t_ctx(const struct bfo_opts *o)
{
	struct bfo_ctx *ctx = NULL;
	int r = bfo_ctx_create(&ctx, o);

	if (r < 0)
		t_fail("bfo_ctx_create (engine %s): %s", o ? t_engine((int)o->engine) : "default",
		       bfo_strerror(r));
	T_ASSERT(ctx != NULL, "no context");
	return ctx;
}

struct t_result *t_results_new(size_t n)
{
	struct t_result *r = calloc(n ? n : 1, sizeof(*r));

	if (!r)
		t_fail("out of memory");
	return r;
}

void t_results_free(struct t_result *r, size_t n)
{
	if (!r)
		return;
	for (size_t i = 0; i < n; i++)
		free(r[i].data);
	free(r);
}

#define WAIT_MAX 64u

struct held {
	struct bfo_file f[WAIT_MAX];
	uint64_t hash[WAIT_MAX];
	unsigned n;
};

static void held_release(struct bfo_ctx *ctx, struct held *h, char *const *paths)
{
	for (unsigned i = 0; i < h->n; i++) {
		const struct bfo_file *f = &h->f[i];

		/* Held entries stay valid until released. */
		if (strcmp(f->path, paths[f->index]) != 0)
			t_fail("index %llu: path changed while the entry was held",
			       (unsigned long long)f->index);
		if (f->length && t_hash(f->data, f->length) != h->hash[i])
			t_fail("index %llu (%s): data changed while the entry was held "
			       "(offset %llu, length %llu)", (unsigned long long)f->index,
			       paths[f->index], (unsigned long long)f->offset,
			       (unsigned long long)f->length);
	}
	if (h->n) {
		int r = bfo_read_release(ctx, h->f, h->n);

		if (r != 0)
			t_fail("bfo_read_release of %u valid entries returned %d", h->n, r);
	}
	h->n = 0;
}

static void take_entry(const struct bfo_file *f, char *const *paths, size_t n,
		       struct t_result *out, unsigned flags, uint64_t *order)
{
	if (f->index >= n)
		t_fail("entry with index %llu, batch has %zu paths", (unsigned long long)f->index, n);

	struct t_result *r = &out[f->index];
	const char *p = paths[f->index];

	if (r->last)
		t_fail("index %llu (%s) delivered again after its BFO_FILE_LAST entry",
		       (unsigned long long)f->index, p);
	if (!f->path || strcmp(f->path, p) != 0)
		t_fail("index %llu: entry path '%s', submitted '%s'",
		       (unsigned long long)f->index, f->path ? f->path : "(null)", p);
	if (f->engine > BFO_ENGINE_NONE)
		t_fail("index %llu (%s): engine %u out of range", (unsigned long long)f->index, p,
		       f->engine);
	r->entries++;
	if (f->status < 0) {
		if (f->data != NULL || f->length != 0)
			t_fail("index %llu (%s): status %d (%s) with data %p length %llu",
			       (unsigned long long)f->index, p, f->status, bfo_strerror(f->status),
			       f->data, (unsigned long long)f->length);
		if (!(f->flags & BFO_FILE_LAST))
			t_fail("index %llu (%s): failed entry (%s) without BFO_FILE_LAST",
			       (unsigned long long)f->index, p, bfo_strerror(f->status));
		free(r->data);     /* pieces before a failure are discarded */
		r->data = NULL;
		r->len = 0;
	} else {
		if (f->status != 0)
			t_fail("index %llu (%s): positive status %d", (unsigned long long)f->index, p,
			       f->status);
		if ((f->length == 0) != (f->data == NULL))
			t_fail("index %llu (%s): length %llu with data %p (NULL iff length 0)",
			       (unsigned long long)f->index, p, (unsigned long long)f->length, f->data);
		if (!S_ISREG(f->mode))
			t_fail("index %llu (%s): status 0 for mode 0%o", (unsigned long long)f->index,
			       p, f->mode);
		if (flags & T_NODATA) {
			if (f->length || f->offset || !(f->flags & BFO_FILE_LAST))
				t_fail("index %llu (%s): data-less batch gave offset %llu length %llu flags %u",
				       (unsigned long long)f->index, p, (unsigned long long)f->offset,
				       (unsigned long long)f->length, f->flags);
		} else {
			if (r->pieces && f->size != r->size)
				t_fail("index %llu (%s): size %llu in one piece, %llu in an earlier one",
				       (unsigned long long)f->index, p, (unsigned long long)f->size,
				       (unsigned long long)r->size);
			if (f->offset != r->len)
				t_fail("index %llu (%s): piece at offset %llu, expected %llu (contiguous, in order)",
				       (unsigned long long)f->index, p, (unsigned long long)f->offset,
				       (unsigned long long)r->len);
			if (f->offset + f->length > f->size)
				t_fail("index %llu (%s): piece %llu+%llu beyond size %llu",
				       (unsigned long long)f->index, p, (unsigned long long)f->offset,
				       (unsigned long long)f->length, (unsigned long long)f->size);
			if ((f->flags & BFO_FILE_LAST) && f->offset + f->length != f->size)
				t_fail("index %llu (%s): last entry ends at %llu, size %llu",
				       (unsigned long long)f->index, p,
				       (unsigned long long)(f->offset + f->length),
				       (unsigned long long)f->size);
			if (!(f->flags & BFO_FILE_LAST) && f->length == 0)
				t_fail("index %llu (%s): empty non-last piece", (unsigned long long)f->index, p);
			if (f->length) {
				if (!r->data) {
					r->data = malloc(f->size);
					if (!r->data)
						t_fail("out of memory (%llu)", (unsigned long long)f->size);
				}
				memcpy(r->data + f->offset, f->data, f->length);
			}
			r->len += f->length;
		}
		r->pieces++;
		r->size = f->size;
	}
	if (f->flags & BFO_FILE_LAST) {
		r->last = true;
		r->flags = f->flags;
		r->order = (*order)++;
		r->status = f->status;
		r->engine = f->engine;
		r->size = f->size;
		r->mtime_sec = f->mtime_sec;
		r->mtime_nsec = f->mtime_nsec;
		r->ctime_sec = f->ctime_sec;
		r->ctime_nsec = f->ctime_nsec;
		r->uid = f->uid;
		r->gid = f->gid;
		r->nlink = f->nlink;
		r->mode = f->mode;
		r->ino = f->ino;
		r->dev = f->dev;
	}
}

uint64_t t_batch_ctx(struct bfo_ctx *ctx, char *const *paths, size_t n,
		     struct t_result *out, struct bfo_stats *st_out, unsigned flags)
{
	struct held *h = calloc(1, sizeof(*h));
	struct bfo_file files[WAIT_MAX];
	size_t next = 0;
	bool finished = false, stopped = false;
	uint64_t entries = 0, order = 0, bytes = 0;
	unsigned stuck = 0;

	if (!h)
		t_fail("out of memory");
	for (size_t i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].status = T_STATUS_NONE;
	}
	if (n == 0)
		T_OK(bfo_read_submit(ctx, NULL, 0));
	for (;;) {
		bool progress = false;

		while (next < n && !stopped) {
			unsigned chunk = (unsigned)(n - next < 100000 ? n - next : 100000);
			int k = bfo_read_submit(ctx, (const char *const *)paths + next, chunk);

			if (k == -ECANCELED && (flags & T_PARTIAL)) {
				stopped = true;
				break;
			}
			if (k < 0)
				t_fail("bfo_read_submit: %d (%s)", k, bfo_strerror(k));
			if ((unsigned)k > chunk)
				t_fail("bfo_read_submit took %d of %u paths", k, chunk);
			next += (size_t)k;
			progress |= k > 0;
			if ((unsigned)k < chunk)
				break;      /* queue full: consume results first */
		}
		if ((next == n || stopped) && !finished) {
			int r = bfo_read_finish(ctx);

			if (r != 0 && !(stopped && r == -ECANCELED))
				t_fail("bfo_read_finish: %d (%s)", r, bfo_strerror(r));
			finished = true;
		}
		int k = bfo_read_wait(ctx, files, WAIT_MAX, -1);

		if (k == -EAGAIN) {
			if (finished)
				t_fail("bfo_read_wait: -EAGAIN after bfo_read_finish");
			if (!progress && ++stuck > 3)
				t_fail("bfo_read_wait says -EAGAIN but bfo_read_submit takes nothing");
			continue;
		}
		stuck = 0;
		if (k == -ENOBUFS) {
			if (!h->n)
				t_fail("bfo_read_wait: -ENOBUFS while the caller holds no entry");
			held_release(ctx, h, paths);
			continue;
		}
		if (k < 0)
			t_fail("bfo_read_wait: %d (%s)", k, bfo_strerror(k));
		if (k == 0) {
			if (!finished && !(flags & T_PARTIAL))
				t_fail("bfo_read_wait returned 0 before bfo_read_finish");
			break;
		}
		if ((unsigned)k > WAIT_MAX)
			t_fail("bfo_read_wait returned %d > max %u", k, WAIT_MAX);
		held_release(ctx, h, paths);
		for (int i = 0; i < k; i++) {
			take_entry(&files[i], paths, n, out, flags, &order);
			bytes += files[i].length;
			h->f[i] = files[i];
			h->hash[i] = files[i].length ? t_hash(files[i].data, files[i].length) : 0;
		}
		h->n = (unsigned)k;
		entries += (uint64_t)k;
	}
	held_release(ctx, h, paths);
	free(h);

	struct bfo_stats st;
	uint64_t ok = 0, failed = 0, by_engine = 0;

	T_OK(bfo_read_stats(ctx, &st));
	for (size_t i = 0; i < n; i++) {
		if (!out[i].last) {
			if (!(flags & T_PARTIAL))
				t_fail("index %zu (%s) never delivered with BFO_FILE_LAST (%u entries)", i,
				       paths[i], out[i].entries);
			continue;
		}
		if (out[i].status == 0)
			ok++;
		else
			failed++;
	}
	for (int e = 0; e < 5; e++)
		by_engine += st.files_by_engine[e];
	if (!(flags & T_PARTIAL)) {
		if (st.files != n)
			t_fail("stats.files %llu, submitted %zu", (unsigned long long)st.files, n);
		if (st.files_ok != ok || st.files_failed != failed)
			t_fail("stats files_ok %llu files_failed %llu, delivered %llu ok %llu failed",
			       (unsigned long long)st.files_ok, (unsigned long long)st.files_failed,
			       (unsigned long long)ok, (unsigned long long)failed);
		if (st.bytes != bytes)
			t_fail("stats.bytes %llu, delivered %llu bytes", (unsigned long long)st.bytes,
			       (unsigned long long)bytes);
		if (by_engine != n)
			t_fail("stats.files_by_engine add up to %llu, %zu files",
			       (unsigned long long)by_engine, n);
		for (int e = 0; e < 5; e++)
			if (!!st.files_by_engine[e] != !!(st.engines & (1u << e)))
				t_fail("stats.engines 0x%x disagrees with files_by_engine[%s] = %llu",
				       st.engines, t_engine(e), (unsigned long long)st.files_by_engine[e]);
	}
	if (st_out)
		*st_out = st;
	return entries;
}

uint64_t t_batch(const struct bfo_opts *o, char *const *paths, size_t n,
		 struct t_result *out, struct bfo_stats *st)
{
	struct bfo_ctx *ctx = t_ctx(o);
	uint64_t k = t_batch_ctx(ctx, paths, n, out, st,
				 o && (o->flags & (BFO_READ_METADATA_ONLY | BFO_READ_PLAN_ONLY)) ?
				 T_NODATA : 0);

	bfo_ctx_destroy(ctx);
	return k;
}

void t_expect_plain_at(const char *file, int line, const struct t_result *r,
		       char *const *paths, size_t i, const char *msg)
{
	const struct t_result *x = &r[i];
	const char *p = paths[i];
	uint8_t *buf;
	uint64_t len;
	struct stat st;
	int e;

	if (!x->last)
		t_fail_at(file, line, "[%s] %s: never delivered", msg, p);
	if (x->status != 0)
		t_fail_at(file, line, "[%s] %s: status %d (%s), expected its bytes", msg, p, x->status,
			  bfo_strerror(x->status));
	e = t_read_plain(p, &buf, &len);
	if (e)
		t_fail_at(file, line, "[%s] %s: plain read failed: %s", msg, p, strerror(-e));
	if (stat(p, &st) < 0)
		t_fail_at(file, line, "[%s] %s: stat: %s", msg, p, strerror(errno));
	if (x->len != len) {
		free(buf);
		t_fail_at(file, line, "[%s] %s: %llu bytes delivered, read() gives %llu (engine %s)",
			  msg, p, (unsigned long long)x->len, (unsigned long long)len,
			  t_engine(x->engine));
	}
	if (len && memcmp(x->data, buf, len) != 0) {
		uint64_t at = 0;

		while (at < len && x->data[at] == buf[at])
			at++;
		free(buf);
		t_fail_at(file, line, "[%s] %s: bytes differ from read() at offset %llu of %llu (engine %s)",
			  msg, p, (unsigned long long)at, (unsigned long long)len, t_engine(x->engine));
	}
	free(buf);
	uint64_t dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);

	if (x->ctime_sec != st.st_ctim.tv_sec || x->ctime_nsec != (uint32_t)st.st_ctim.tv_nsec ||
	    x->uid != st.st_uid || x->gid != st.st_gid || x->nlink != st.st_nlink || x->dev != dev)
		t_fail_at(file, line, "[%s] %s: ctime %lld.%09u uid %u gid %u nlink %u dev %llx, "
			  "stat() gives ctime %lld.%09ld uid %u gid %u nlink %lu dev %llx", msg, p,
			  (long long)x->ctime_sec, x->ctime_nsec, x->uid, x->gid, x->nlink,
			  (unsigned long long)x->dev, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec,
			  st.st_uid, st.st_gid, (unsigned long)st.st_nlink, (unsigned long long)dev);
	if (x->size != (uint64_t)st.st_size || x->mtime_sec != st.st_mtim.tv_sec ||
	    x->mtime_nsec != (uint32_t)st.st_mtim.tv_nsec || x->mode != st.st_mode ||
	    x->ino != st.st_ino)
		t_fail_at(file, line, "[%s] %s: metadata size %llu mtime %lld.%09u mode 0%o ino %llu, "
			  "stat() gives size %llu mtime %lld.%09ld mode 0%o ino %llu", msg, p,
			  (unsigned long long)x->size, (long long)x->mtime_sec, x->mtime_nsec, x->mode,
			  (unsigned long long)x->ino, (unsigned long long)st.st_size,
			  (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_mode,
			  (unsigned long long)st.st_ino);
}

void t_expect_status_at(const char *file, int line, const struct t_result *r,
			char *const *paths, size_t i, int status, const char *msg)
{
	const struct t_result *x = &r[i];

	if (!x->last)
		t_fail_at(file, line, "[%s] %s: never delivered", msg, paths[i]);
	if (x->status != status)
		t_fail_at(file, line, "[%s] %s: status %d (%s), expected %d (%s)", msg, paths[i],
			  x->status, bfo_strerror(x->status), status, bfo_strerror(status));
	if (x->len != 0 || x->data != NULL)
		t_fail_at(file, line, "[%s] %s: failed with %llu bytes kept", msg, paths[i],
			  (unsigned long long)x->len);
}

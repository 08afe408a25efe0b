/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "t_wutil.h"

/* ------------------------------------------------------------ checks */

static int checks_failed;

void tw_check_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: check `%s' failed: %s\n", file, line, cond, msg);
	fflush(stderr);
	checks_failed++;
}

int tw_checks_failed(void)
{
	return checks_failed;
}

void tw_checks_end(void)
{
	if (checks_failed)
		t_fail("%d check(s) failed (see FAIL lines above)", checks_failed);
}

const char *tw_fmt(const char *fmt, ...)
{
	static __thread char bufs[16][PATH_MAX + 256];
	static __thread unsigned slot;
	char *b = bufs[slot++ % 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b, sizeof(bufs[0]), fmt, ap);
	va_end(ap);
	return b;
}

/* ------------------------------------------------------------ programs */

static void buf_append(char **buf, size_t *len, const char *p, size_t n)
{
	char *b = realloc(*buf, *len + n + 1);

	if (!b)
		t_fail("out of memory");
	memcpy(b + *len, p, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
}

static void become(uid_t uid, gid_t gid)
{
	if (uid == (uid_t)-1)
		return;
	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0) {
		fprintf(stderr, "cannot become uid %u: %s\n", (unsigned)uid, strerror(errno));
		_exit(126);
	}
}

void tw_run(struct tw_run *r, const void *in, size_t in_len, uid_t uid, gid_t gid,
	    char *const argv[])
{
	int pin[2], pout[2], perr[2];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	buf_append(&r->out, &r->out_len, "", 0);
	buf_append(&r->err, &r->err_len, "", 0);
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC))
		t_fail("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		dup2(perr[1], 2);
		/* Only stdio, as from a shell: ctest and make leave descriptors
		 * open (LastTest.log, a jobserver pipe) that would take part of
		 * a command's low ulimit -n (t_nofile runs at 16). */
		close_range(3, ~0U, 0);
		alarm(0);
		become(uid, gid);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	if (!in || !in_len) {
		close(pin[1]);
		pin[1] = -1;
	} else {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}

	struct pollfd pf[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 },
				{ pin[1], POLLOUT, 0 } };
	size_t done = 0;
	char buf[65536];

	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			t_fail("poll: %s", strerror(errno));
		}
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(pf[i].fd, buf, sizeof(buf));

			if (n > 0) {
				if (i == 0)
					buf_append(&r->out, &r->out_len, buf, (size_t)n);
				else
					buf_append(&r->err, &r->err_len, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
		if (pf[2].fd >= 0 && (pf[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(pf[2].fd, (const char *)in + done, in_len - done);

			if (n > 0)
				done += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || done == in_len) {
				close(pf[2].fd);
				pf[2].fd = -1;
			}
		}
	}
	if (pf[2].fd >= 0)
		close(pf[2].fd);
	r->status = tw_wait(pid);
}

void tw_runl(struct tw_run *r, const char *arg0, ...)
{
	char *argv[64];
	int n = 0;
	va_list ap;

	argv[n++] = (char *)arg0;
	va_start(ap, arg0);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

void tw_run_free(struct tw_run *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

pid_t tw_spawn(char *const argv[], const char *stdin_path, const char *out_path)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		t_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		int in = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
		int out = out_path ? open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644) :
				     open("/dev/null", O_WRONLY);

		alarm(0);
		setpgid(0, 0);
		if (in < 0 || out < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	/* here too: a kill(-pid) right after the fork must not find the
	 * group not yet made (ESRCH, and the child runs on unsignalled) */
	setpgid(pid, pid);
	return pid;
}

int tw_wait(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			t_fail("waitpid %d: %s", (int)pid, strerror(errno));
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* What pid has read and written so far (rchar + wchar), 0 once it is gone. */
static uint64_t io_chars(pid_t pid)
{
	char path[64], line[128];
	uint64_t sum = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "rchar: %llu", &v) == 1 || sscanf(line, "wchar: %llu", &v) == 1)
			sum += v;
	}
	fclose(f);
	return sum;
}

int tw_wait_progress(pid_t pid, const char *dir, unsigned stall_secs, const char *what)
{
	uint64_t last = UINT64_MAX;

	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0 && errno != EINTR)
			t_fail("waitpid %d: %s", (int)pid, strerror(errno));
		struct statvfs sv;
		uint64_t now = io_chars(pid);

		if (statvfs(dir, &sv) == 0)
			now += (uint64_t)(sv.f_files - sv.f_ffree) + (uint64_t)(sv.f_blocks - sv.f_bfree);
		if (now != last)
			t_watchdog(stall_secs, what);   /* progress: the stall clock starts again */
		last = now;
		tw_sleep_ns(500 * 1000 * 1000);
	}
}

void tw_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void tw_settle(void)
{
	tw_sleep_ns(30 * 1000000u);
}

/* ------------------------------------------------------------ names */

const char *tw_esc(const char *s)
{
	static __thread char bufs[4][1024];
	static __thread int slot;
	char *b = bufs[slot++ & 3];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && o + 6 < sizeof(bufs[0]); p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '\\')
			b[o++] = (char)*p;
		else
			o += (size_t)snprintf(b + o, sizeof(bufs[0]) - o, "\\x%02x", *p);
	}
	if (s[0] && o + 6 >= sizeof(bufs[0]))
		memcpy(b + sizeof(bufs[0]) - 4, "...", 4), o = sizeof(bufs[0]) - 1;
	b[o] = '\0';
	return b;
}

static char *join_rel(const char *rel, const char *name)
{
	return *rel ? t_pathf("%s/%s", rel, name) : t_pathf("%s", name);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the directory at fd (without . and ..); *n gets the count. */
static char **list_names(int fd, size_t *n)
{
	int d2 = dup(fd);
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (d2 < 0)
		t_fail("dup: %s", strerror(errno));
	lseek(d2, 0, SEEK_SET);
	d = fdopendir(d2);
	if (!d)
		t_fail("fdopendir: %s", strerror(errno));
	rewinddir(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				t_fail("out of memory");
		}
		v[(*n)++] = strdup(de->d_name);
	}
	closedir(d);
	if (*n > 1)
		qsort(v, *n, sizeof(*v), name_cmp);
	return v;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool ignored(const char *const *ignore, const char *name)
{
	for (size_t i = 0; ignore && ignore[i]; i++)
		if (!strcmp(ignore[i], name))
			return true;
	return false;
}

/* ------------------------------------------------------------ tree diff */

struct ipair {
	dev_t da;
	ino_t ia;
	dev_t db;
	ino_t ib;
	char *rel;
};

struct dctx {
	unsigned flags;
	char *msg;
	size_t len, used;
	int n;
	struct ipair *pairs;
	size_t npairs, cap;
};

static void diff_note(struct dctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diff_note(struct dctx *c, const char *fmt, ...)
{
	va_list ap;

	c->n++;
	if (c->n > 12 || !c->len || c->used + 2 >= c->len)
		return;
	if (c->used)
		c->used += (size_t)snprintf(c->msg + c->used, c->len - c->used, "; ");
	if (c->used >= c->len)
		return;
	va_start(ap, fmt);
	c->used += (size_t)vsnprintf(c->msg + c->used, c->len - c->used, fmt, ap);
	va_end(ap);
	if (c->used >= c->len)
		c->used = c->len - 1;
}

static int xattr_list(int dfd, const char *name, char ***names, size_t *n)
{
	char path[64 + NAME_MAX], *buf;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	*names = NULL;
	*n = 0;
	k = llistxattr(path, NULL, 0);
	if (k < 0)
		return errno == ENOTSUP ? 0 : -errno;
	if (k == 0)
		return 0;
	buf = malloc((size_t)k);
	if (!buf)
		t_fail("out of memory");
	k = llistxattr(path, buf, (size_t)k);
	if (k < 0) {
		free(buf);
		return -errno;
	}
	for (char *p = buf; p < buf + k; p += strlen(p) + 1) {
		/* security.* and system.* differ by file system and policy */
		if (strncmp(p, "user.", 5) && strncmp(p, "trusted.", 8))
			continue;
		*names = realloc(*names, (*n + 1) * sizeof(**names));
		(*names)[(*n)++] = strdup(p);
	}
	free(buf);
	if (*n)
		qsort(*names, *n, sizeof(**names), name_cmp);
	return 0;
}

static ssize_t xattr_get(int dfd, const char *name, const char *key, char *val, size_t len)
{
	char path[64 + NAME_MAX];

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	return lgetxattr(path, key, val, len);
}

static void diff_xattrs(struct dctx *c, int fa, int fb, const char *name, const char *rel)
{
	char **na, **nb;
	size_t ka, kb;
	int ra = xattr_list(fa, name, &na, &ka), rb = xattr_list(fb, name, &nb, &kb);

	if (ra < 0 || rb < 0) {
		diff_note(c, "%s: listxattr failed (%s / %s)", tw_esc(rel), strerror(-ra), strerror(-rb));
	} else if (ka != kb) {
		diff_note(c, "%s: %zu xattrs vs %zu", tw_esc(rel), ka, kb);
	} else {
		for (size_t i = 0; i < ka; i++) {
			char va[4096], vb[4096];
			ssize_t la, lb;

			if (strcmp(na[i], nb[i])) {
				diff_note(c, "%s: xattr %s vs %s", tw_esc(rel), na[i], nb[i]);
				continue;
			}
			la = xattr_get(fa, name, na[i], va, sizeof(va));
			lb = xattr_get(fb, name, nb[i], vb, sizeof(vb));
			if (la != lb || (la > 0 && memcmp(va, vb, (size_t)la)))
				diff_note(c, "%s: xattr %s value differs", tw_esc(rel), na[i]);
		}
	}
	free_names(na, ka);
	free_names(nb, kb);
}

static void diff_contents(struct dctx *c, int fa, int fb, const char *name, const char *rel)
{
	int a = openat(fa, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int b = openat(fb, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	static __thread char ba[1 << 16], bb[1 << 16];
	uint64_t off = 0;

	if (a < 0 || b < 0) {
		diff_note(c, "%s: cannot open (%s)", tw_esc(rel), strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t ka = pread(a, ba, sizeof(ba), (off_t)off);
		ssize_t kb = pread(b, bb, sizeof(bb), (off_t)off);

		if (ka < 0 || kb < 0) {
			diff_note(c, "%s: read error at %llu", tw_esc(rel), (unsigned long long)off);
			break;
		}
		if (ka != kb || memcmp(ba, bb, (size_t)ka)) {
			size_t i = 0;

			while (i < (size_t)MIN(ka, kb) && ba[i] == bb[i])
				i++;
			diff_note(c, "%s: bytes differ at offset %llu", tw_esc(rel),
				  (unsigned long long)(off + i));
			break;
		}
		if (ka == 0)
			break;
		off += (uint64_t)ka;
	}
out:
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
}

static void diff_meta(struct dctx *c, const struct stat *a, const struct stat *b, const char *rel)
{
	const char *r = tw_esc(rel);

	if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT)) {
		diff_note(c, "%s: type %o vs %o", r, a->st_mode & S_IFMT, b->st_mode & S_IFMT);
		return;
	}
	if ((c->flags & TW_MODE) && !S_ISLNK(a->st_mode) && (a->st_mode & 07777) != (b->st_mode & 07777))
		diff_note(c, "%s: mode %04o vs %04o", r, a->st_mode & 07777, b->st_mode & 07777);
	if ((c->flags & TW_OWNER) && (a->st_uid != b->st_uid || a->st_gid != b->st_gid))
		diff_note(c, "%s: owner %u:%u vs %u:%u", r, a->st_uid, a->st_gid, b->st_uid, b->st_gid);
	if ((S_ISREG(a->st_mode) || S_ISLNK(a->st_mode)) && a->st_size != b->st_size)
		diff_note(c, "%s: size %lld vs %lld", r, (long long)a->st_size, (long long)b->st_size);
	if ((S_ISCHR(a->st_mode) || S_ISBLK(a->st_mode)) && a->st_rdev != b->st_rdev)
		diff_note(c, "%s: rdev %u:%u vs %u:%u", r, major(a->st_rdev), minor(a->st_rdev),
			  major(b->st_rdev), minor(b->st_rdev));
	if ((c->flags & TW_MTIME) && (a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
				      a->st_mtim.tv_nsec != b->st_mtim.tv_nsec))
		diff_note(c, "%s: mtime %lld.%09ld vs %lld.%09ld", r, (long long)a->st_mtim.tv_sec,
			  a->st_mtim.tv_nsec, (long long)b->st_mtim.tv_sec, b->st_mtim.tv_nsec);
	if ((c->flags & TW_ATIME) && (a->st_atim.tv_sec != b->st_atim.tv_sec ||
				      a->st_atim.tv_nsec != b->st_atim.tv_nsec))
		diff_note(c, "%s: atime %lld.%09ld vs %lld.%09ld", r, (long long)a->st_atim.tv_sec,
			  a->st_atim.tv_nsec, (long long)b->st_atim.tv_sec, b->st_atim.tv_nsec);
	if ((c->flags & TW_LINKS) && !S_ISDIR(a->st_mode) && a->st_nlink != b->st_nlink)
		diff_note(c, "%s: link count %lu vs %lu", r, (unsigned long)a->st_nlink,
			  (unsigned long)b->st_nlink);
}

static void diff_dir(struct dctx *c, int fa, int fb, const char *rel, const char *const *ignore)
{
	size_t na, nb, i = 0, j = 0;
	char **va = list_names(fa, &na), **vb = list_names(fb, &nb);

	while (i < na || j < nb) {
		int cmp = i == na ? 1 : j == nb ? -1 : strcmp(va[i], vb[j]);

		if (cmp < 0) {
			if (!(ignore && ignored(ignore, va[i]))) {
				char *p = join_rel(rel, va[i]);

				diff_note(c, "%s: missing in the copy", tw_esc(p));
				free(p);
			}
			i++;
			continue;
		}
		if (cmp > 0) {
			if (!(ignore && ignored(ignore, vb[j]))) {
				char *p = join_rel(rel, vb[j]);

				diff_note(c, "%s: only in the copy", tw_esc(p));
				free(p);
			}
			j++;
			continue;
		}
		const char *name = va[i];
		char *p = join_rel(rel, name);
		struct stat sa, sb;

		i++;
		j++;
		if (ignore && ignored(ignore, name)) {
			free(p);
			continue;
		}
		if (fstatat(fa, name, &sa, AT_SYMLINK_NOFOLLOW) < 0 ||
		    fstatat(fb, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			diff_note(c, "%s: lstat: %s", tw_esc(p), strerror(errno));
			free(p);
			continue;
		}
		diff_meta(c, &sa, &sb, p);
		if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
			free(p);
			continue;
		}
		if (c->flags & TW_XATTRS)
			diff_xattrs(c, fa, fb, name, p);
		if (S_ISREG(sa.st_mode)) {
			diff_contents(c, fa, fb, name, p);
		} else if (S_ISLNK(sa.st_mode)) {
			char ta[PATH_MAX + 1], tb[PATH_MAX + 1];
			ssize_t la = readlinkat(fa, name, ta, PATH_MAX), lb = readlinkat(fb, name, tb, PATH_MAX);

			if (la < 0 || lb < 0 || la != lb || memcmp(ta, tb, (size_t)la)) {
				ta[la < 0 ? 0 : la] = tb[lb < 0 ? 0 : lb] = '\0';
				diff_note(c, "%s: symlink target '%s' vs '%s'", tw_esc(p), tw_esc(ta), tw_esc(tb));
			}
		}
		if (!S_ISDIR(sa.st_mode) && (sa.st_nlink > 1 || sb.st_nlink > 1)) {
			if (c->npairs == c->cap) {
				c->cap = c->cap ? c->cap * 2 : 64;
				c->pairs = realloc(c->pairs, c->cap * sizeof(*c->pairs));
				if (!c->pairs)
					t_fail("out of memory");
			}
			c->pairs[c->npairs++] = (struct ipair){ sa.st_dev, sa.st_ino, sb.st_dev, sb.st_ino,
								 strdup(p) };
		}
		if (S_ISDIR(sa.st_mode)) {
			int da = openat(fa, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int db = openat(fb, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (da < 0 || db < 0)
				diff_note(c, "%s: cannot open directory: %s", tw_esc(p), strerror(errno));
			else
				diff_dir(c, da, db, p, NULL);
			if (da >= 0)
				close(da);
			if (db >= 0)
				close(db);
		}
		free(p);
	}
	free_names(va, na);
	free_names(vb, nb);
}

int tw_tree_diff(const char *a, const char *b, unsigned flags, const char *const *ignore,
		 char *msg, size_t len)
{
	struct dctx c = { .flags = flags, .msg = msg, .len = len };
	int fa = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fb = open(b, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (len)
		msg[0] = '\0';
	if (fa < 0 || fb < 0) {
		diff_note(&c, "cannot open %s or %s: %s", a, b, strerror(errno));
		goto out;
	}
	if (flags & TW_TOP) {
		struct stat sa, sb;

		fstat(fa, &sa);
		fstat(fb, &sb);
		diff_meta(&c, &sa, &sb, ".");
		if (flags & TW_XATTRS) {
			char pa[PATH_MAX], pb[PATH_MAX];
			int pfa, pfb;

			/* the top directories' xattrs: through their parents */
			snprintf(pa, sizeof(pa), "%s/..", a);
			snprintf(pb, sizeof(pb), "%s/..", b);
			pfa = open(pa, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			pfb = open(pb, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (pfa >= 0 && pfb >= 0) {
				const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');

				ba = ba ? ba + 1 : a;
				bb = bb ? bb + 1 : b;
				char **na, **nb;
				size_t ka, kb;

				xattr_list(pfa, ba, &na, &ka);
				xattr_list(pfb, bb, &nb, &kb);
				if (ka != kb)
					diff_note(&c, ".: %zu xattrs vs %zu", ka, kb);
				free_names(na, ka);
				free_names(nb, kb);
			}
			if (pfa >= 0)
				close(pfa);
			if (pfb >= 0)
				close(pfb);
		}
	}
	diff_dir(&c, fa, fb, "", ignore);
	/* Hard links: a's groups map one to one onto b's. */
	for (size_t i = 0; i < c.npairs; i++) {
		for (size_t k = i + 1; k < c.npairs; k++) {
			bool sa = c.pairs[i].da == c.pairs[k].da && c.pairs[i].ia == c.pairs[k].ia;
			bool sb = c.pairs[i].db == c.pairs[k].db && c.pairs[i].ib == c.pairs[k].ib;

			if (sa != sb)
				diff_note(&c, "%s and %s: %s", tw_esc(c.pairs[i].rel), tw_esc(c.pairs[k].rel),
					  sa ? "one inode in the original, two in the copy" :
					       "two inodes in the original, one in the copy");
		}
	}
out:
	for (size_t i = 0; i < c.npairs; i++)
		free(c.pairs[i].rel);
	free(c.pairs);
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	if (c.n > 12 && len)
		snprintf(msg + strlen(msg), len - strlen(msg), " (%d differences in all)", c.n);
	return c.n;
}

/* ------------------------------------------------------------ leftovers */

static void leftovers_dir(int fd, const char *rel, bool journal, int *n, char *msg, size_t len)
{
	size_t k;
	char **v = list_names(fd, &k);

	for (size_t i = 0; i < k; i++) {
		char *p = join_rel(rel, v[i]);
		struct stat st;

		if (!strncmp(v[i], ".bfo-tmp.", 9) || (journal && !strcmp(v[i], ".bfo-journal"))) {
			(*n)++;
			if (len && strlen(msg) + 100 < len) {
				size_t l = strlen(msg);

				snprintf(msg + l, len - l, "%s%s", l ? ", " : "", tw_esc(p));
				if (!strcmp(v[i], ".bfo-journal")) {
					int jd = openat(fd, v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

					if (jd >= 0) {
						size_t jn;
						char **jv = list_names(jd, &jn);

						l = strlen(msg);
						snprintf(msg + l, len - l, " (holding %zu: %s)", jn,
							 jn ? tw_esc(jv[0]) : "");
						free_names(jv, jn);
						close(jd);
					}
				}
			}
		}
		if (fstatat(fd, v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
			int d = openat(fd, v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (d >= 0) {
				leftovers_dir(d, p, journal, n, msg, len);
				close(d);
			}
		}
		free(p);
	}
	free_names(v, k);
}

int tw_leftovers(const char *root, bool journal, char *msg, size_t len)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;

	if (len)
		msg[0] = '\0';
	if (fd < 0)
		t_fail("open %s: %s", root, strerror(errno));
	leftovers_dir(fd, "", journal, &n, msg, len);
	close(fd);
	return n;
}

/* ------------------------------------------------------------ snapshots */

struct snap_ent {
	char *rel;
	struct stat st;
	uint64_t hash;          /* regular files: bytes; symlinks: target */
};

struct tw_snap {
	struct snap_ent *e;
	size_t n, cap;
};

static uint64_t hash_at(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	XXH3_state_t *s;
	static __thread char buf[1 << 16];
	uint64_t h;

	if (fd < 0)
		return 0;
	s = XXH3_createState();
	XXH3_64bits_reset(s);
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k <= 0)
			break;
		XXH3_64bits_update(s, buf, (size_t)k);
	}
	h = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	close(fd);
	return h;
}

static void snap_dir(struct tw_snap *s, int fd, const char *rel)
{
	size_t k;
	char **v = list_names(fd, &k);

	for (size_t i = 0; i < k; i++) {
		struct snap_ent e = { .rel = join_rel(rel, v[i]) };

		if (fstatat(fd, v[i], &e.st, AT_SYMLINK_NOFOLLOW) < 0) {
			free(e.rel);
			continue;
		}
		if (S_ISREG(e.st.st_mode)) {
			e.hash = hash_at(fd, v[i]);
		} else if (S_ISLNK(e.st.st_mode)) {
			char t[PATH_MAX];
			ssize_t l = readlinkat(fd, v[i], t, sizeof(t));

			e.hash = XXH3_64bits(t, l > 0 ? (size_t)l : 0);
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 256;
			s->e = realloc(s->e, s->cap * sizeof(*s->e));
			if (!s->e)
				t_fail("out of memory");
		}
		s->e[s->n++] = e;
		if (S_ISDIR(e.st.st_mode)) {
			int d = openat(fd, v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (d >= 0) {
				snap_dir(s, d, e.rel);
				close(d);
			}
		}
	}
	free_names(v, k);
}

static int snap_cmp(const void *a, const void *b)
{
	return strcmp(((const struct snap_ent *)a)->rel, ((const struct snap_ent *)b)->rel);
}

struct tw_snap *tw_snapshot(const char *root)
{
	struct tw_snap *s = calloc(1, sizeof(*s));
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (!s || fd < 0)
		t_fail("snapshot of %s: %s", root, strerror(errno));
	snap_dir(s, fd, "");
	close(fd);
	if (s->n > 1)
		qsort(s->e, s->n, sizeof(*s->e), snap_cmp);
	return s;
}

size_t tw_snap_count(const struct tw_snap *s)
{
	return s->n;
}

void tw_snap_free(struct tw_snap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].rel);
	free(s->e);
	free(s);
}

/* rel is no longer expected as it was (it was replaced as it may be). */
static void snap_forget(struct tw_snap *s, const char *rel)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].rel, rel)) {
			free(s->e[i].rel);
			memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(s->e[0]));
			s->n--;
			return;
		}
}

int tw_snap_diff(const struct tw_snap *s, const char *root, bool allow_new, char *msg, size_t len)
{
	struct tw_snap *now = tw_snapshot(root);
	struct dctx c = { .msg = msg, .len = len };
	size_t i = 0, j = 0;

	if (len)
		msg[0] = '\0';
	while (i < s->n || j < now->n) {
		int cmp = i == s->n ? 1 : j == now->n ? -1 : strcmp(s->e[i].rel, now->e[j].rel);

		if (cmp < 0) {
			diff_note(&c, "%s: gone", tw_esc(s->e[i].rel));
			i++;
			continue;
		}
		if (cmp > 0) {
			if (!allow_new)
				diff_note(&c, "%s: appeared", tw_esc(now->e[j].rel));
			j++;
			continue;
		}
		const struct snap_ent *a = &s->e[i++], *b = &now->e[j++];
		const char *r = tw_esc(a->rel);

		if (a->st.st_ino != b->st.st_ino || (a->st.st_mode & S_IFMT) != (b->st.st_mode & S_IFMT)) {
			diff_note(&c, "%s: replaced (inode %lu -> %lu)", r, (unsigned long)a->st.st_ino,
				  (unsigned long)b->st.st_ino);
			continue;
		}
		if (S_ISDIR(a->st.st_mode) && allow_new)
			continue;
		if (a->st.st_mode != b->st.st_mode || a->st.st_uid != b->st.st_uid ||
		    a->st.st_gid != b->st.st_gid)
			diff_note(&c, "%s: mode/owner changed (%o %u:%u -> %o %u:%u)", r, a->st.st_mode,
				  a->st.st_uid, a->st.st_gid, b->st.st_mode, b->st.st_uid, b->st.st_gid);
		if (!S_ISDIR(a->st.st_mode) && (a->st.st_size != b->st.st_size || a->hash != b->hash))
			diff_note(&c, "%s: contents changed (size %lld -> %lld)", r, (long long)a->st.st_size,
				  (long long)b->st.st_size);
		if (a->st.st_mtim.tv_sec != b->st.st_mtim.tv_sec ||
		    a->st.st_mtim.tv_nsec != b->st.st_mtim.tv_nsec)
			diff_note(&c, "%s: mtime changed", r);
		if (a->st.st_ctim.tv_sec != b->st.st_ctim.tv_sec ||
		    a->st.st_ctim.tv_nsec != b->st.st_ctim.tv_nsec)
			diff_note(&c, "%s: ctime changed (touched)", r);
		if (!S_ISDIR(a->st.st_mode) && a->st.st_nlink != b->st.st_nlink)
			diff_note(&c, "%s: link count %lu -> %lu", r, (unsigned long)a->st.st_nlink,
				  (unsigned long)b->st.st_nlink);
	}
	tw_snap_free(now);
	return c.n;
}

/* ------------------------------------------------------------ files */

int tw_open_deep(int dirfd, const char *rel, int flags)
{
	char *copy = strdup(rel), *save = NULL, *p, *next;
	int cur = dirfd == AT_FDCWD ? open(rel[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC) :
		  dup(dirfd);

	if (!copy || cur < 0)
		t_fail("out of memory / dup");
	p = strtok_r(copy, "/", &save);
	while (p) {
		next = strtok_r(NULL, "/", &save);
		int fd;

		if (next)
			fd = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			fd = openat(cur, p, flags | O_CLOEXEC);
		int e = errno;

		close(cur);
		if (fd < 0) {
			free(copy);
			return -e;
		}
		cur = fd;
		p = next;
	}
	free(copy);
	return cur;
}

int tw_file_check(int dirfd, const char *rel, const void *data, uint64_t len, char *why,
		  size_t whylen)
{
	int fd = tw_open_deep(dirfd, rel, O_RDONLY | O_NOFOLLOW);
	struct stat st;
	static __thread uint8_t buf[1 << 16];
	uint64_t off = 0;
	int ret = 0;

	if (whylen)
		why[0] = '\0';
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		close(fd);
		return 1;
	}
	if ((uint64_t)st.st_size != len) {
		snprintf(why, whylen, "size %lld, expected %llu", (long long)st.st_size,
			 (unsigned long long)len);
		close(fd);
		return 1;
	}
	while (off < len) {
		ssize_t k = pread(fd, buf, sizeof(buf), (off_t)off);

		if (k <= 0) {
			snprintf(why, whylen, "read at %llu: %s", (unsigned long long)off,
				 k < 0 ? strerror(errno) : "EOF");
			ret = 1;
			break;
		}
		if (memcmp(buf, (const uint8_t *)data + off, (size_t)k)) {
			size_t i = 0;

			while (buf[i] == ((const uint8_t *)data)[off + i])
				i++;
			snprintf(why, whylen, "bytes differ at offset %llu", (unsigned long long)(off + i));
			ret = 1;
			break;
		}
		off += (uint64_t)k;
	}
	close(fd);
	return ret;
}

bool tw_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

bool tw_exists_at(int dirfd, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	struct stat st;
	bool ok;

	if (!slash)
		return fstatat(dirfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
	char *dir = strndup(rel, (size_t)(slash - rel));
	int d = tw_open_deep(dirfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	free(dir);
	if (d < 0)
		return false;
	ok = fstatat(d, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(d);
	return ok;
}

void tw_mkdirs(const char *path)
{
	char *p = strdup(path);

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST)
				t_fail("mkdir %s: %s", p, strerror(errno));
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
}

void tw_xattr_add(struct tw_xbuf *x, const char *name, const void *val, uint32_t vlen)
{
	size_t need = strlen(name) + 1 + sizeof(uint32_t) + vlen;

	if (x->len + need > sizeof(x->buf))
		t_fail("xattr buffer too small");
	memcpy(x->buf + x->len, name, strlen(name) + 1);
	x->len += strlen(name) + 1;
	memcpy(x->buf + x->len, &vlen, sizeof(vlen));
	x->len += sizeof(vlen);
	memcpy(x->buf + x->len, val, vlen);
	x->len += vlen;
}

/*
 * A file system that refuses an xattr namespace (6.1's tmpfs, a VM's /tmp,
 * has no user.*; Debian 12's ext4 /tmp has): the xattr part of the test is
 * skipped there, said once with the reason, and everything else checked.
 */
static bool xattr_refused(const char *path, const char *key, int e)
{
	static bool said;

	if (e != EOPNOTSUPP)
		return false;
	if (!said)
		t_log("%s: the file system refuses the xattr %s (%s): this test's xattr checks are skipped "
		      "(file system of %s)", path, key, strerror(e), tw_fstype(path));
	said = true;
	return true;
}

void tw_xattr_apply(const struct tw_xbuf *x, const char *path)
{
	const uint8_t *p = x->buf, *end = x->buf + x->len;

	while (p < end) {
		const char *key = (const char *)p;
		uint32_t vl;

		p += strlen(key) + 1;
		memcpy(&vl, p, sizeof(vl));
		p += sizeof(vl);
		if (lsetxattr(path, key, p, vl, 0) < 0 && !xattr_refused(path, key, errno))
			t_fail("lsetxattr %s %s: %s", path, key, strerror(errno));
		p += vl;
	}
}

uint64_t tw_free_bytes(const char *path)
{
	struct statvfs sv;

	if (statvfs(path, &sv) < 0)
		t_fail("statvfs %s: %s", path, strerror(errno));
	return (uint64_t)sv.f_bavail * sv.f_frsize;
}

void tw_fill_fs(const char *dir, const char *name, uint64_t leave)
{
	char *p = t_path(dir, name);
	uint64_t fr = tw_free_bytes(dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		t_fail("create %s: %s", p, strerror(errno));
	if (fr > leave) {
		uint64_t want = fr - leave;

		/* in steps: fallocate of everything at once may fail on
		 * metadata reservations */
		for (uint64_t off = 0, step = 4 << 20; off < want; off += step) {
			uint64_t k = MIN(step, want - off);

			if (fallocate(fd, 0, (off_t)off, (off_t)k) < 0)
				break;
		}
	}
	close(fd);
	free(p);
}

void tw_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

const char *tw_fstype(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf) < 0)
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53: return "ext4";
	case 0x58465342: return "xfs";
	case 0x01021994: return "tmpfs";
	case 0x9123683E: return "btrfs";
	case 0x794c7630: return "overlayfs";
	}
	return "other";
}

int tw_list_prefix(const char *dir, const char *prefix, char *buf, size_t len)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	size_t k;
	char **v;

	if (len)
		buf[0] = '\0';
	if (fd < 0)
		return 0;
	v = list_names(fd, &k);
	close(fd);
	for (size_t i = 0; i < k; i++) {
		if (strncmp(v[i], prefix, strlen(prefix)))
			continue;
		n++;
		size_t l = strlen(buf);

		if (l + strlen(v[i]) + 2 < len)
			snprintf(buf + l, len - l, "%s%s", l ? "\n" : "", v[i]);
	}
	free_names(v, k);
	return n;
}

/* ------------------------------------------------------------ crash input */

struct tw_item {
	char rel[96];
	uint64_t size, seed;
	uint32_t mode;
	int64_t mtime;
	uint32_t mtime_ns;
	bool symlink;
	char target[64];
	bool pre;
};

struct tw_input {
	struct tw_item *items;
	int n;
	uint64_t maxsize;
	char *stream, *src;
	bool replaceable;       /* pre-existing files may be replaced whole */
};

void tw_input_replaceable(struct tw_input *in, bool on)
{
	in->replaceable = on;
}

#define IN_DIRS 24

struct tw_input *tw_input_make(const char *dir, int nfiles, uint64_t big, bool plain, int npre)
{
	struct tw_input *in = calloc(1, sizeof(*in));
	uint64_t seed = 2024;
	uint8_t *buf;
	FILE *f;

	in->items = calloc((size_t)nfiles + (size_t)nfiles / 97 + 2, sizeof(*in->items));
	in->stream = t_path(dir, "stream");
	in->src = t_path(dir, "src");
	in->maxsize = MAX(big, 512u << 10);
	buf = malloc(in->maxsize);
	if (!in->items || !buf)
		t_fail("out of memory");
	f = fopen(in->stream, "w");
	if (!f)
		t_fail("fopen %s: %s", in->stream, strerror(errno));
	for (int d = 0; d < IN_DIRS; d++) {
		fprintf(f, "d 755 - d%02d\n", d);
		if (plain)
			tw_mkdirs(tw_fmt("%s/d%02d", in->src, d));
	}
	for (int i = 0; i < nfiles; i++) {
		struct tw_item *it = &in->items[in->n++];
		uint64_t r = t_rand(&seed);

		snprintf(it->rel, sizeof(it->rel), "d%02d/f%04d", i % IN_DIRS, i);
		it->size = big && i == nfiles / 2 ? big : r % 100 < 3 ? 100000 + t_rand(&seed) % 400000 :
			   r % 100 < 8 ? 0 : t_rand(&seed) % 16384;
		it->seed = 5000 + (uint64_t)i;
		it->mode = i % 5 == 0 ? 0600 : i % 5 == 1 ? 0755 : 0644;
		it->mtime = 1500000000 + i;
		it->mtime_ns = (uint32_t)(i * 7919) % 1000000000u;
		t_fill_random(buf, it->size, it->seed);
		fprintf(f, "f %o %lld.%09u %llu %s\n", it->mode, (long long)it->mtime, it->mtime_ns,
			(unsigned long long)it->size, it->rel);
		if (it->size && fwrite(buf, 1, it->size, f) != it->size)
			t_fail("fwrite: %s", strerror(errno));
		if (plain) {
			char *p = t_path(in->src, it->rel);
			struct timespec ts[2] = { { it->mtime, it->mtime_ns }, { it->mtime, it->mtime_ns } };

			t_write_bytes(p, buf, it->size);
			if (chmod(p, it->mode) < 0 || utimensat(AT_FDCWD, p, ts, 0) < 0)
				t_fail("chmod/utimensat %s: %s", p, strerror(errno));
			free(p);
		}
		if (i % 97 == 0) {
			struct tw_item *l = &in->items[in->n++];

			snprintf(l->rel, sizeof(l->rel), "d%02d/link%04d", i % IN_DIRS, i);
			snprintf(l->target, sizeof(l->target), "f%04d", i);
			l->symlink = true;
			l->mtime = it->mtime;
			fprintf(f, "l 777 %lld %zu %s\n%s", (long long)it->mtime, strlen(l->target), l->rel,
				l->target);
			if (plain) {
				char *p = t_path(in->src, l->rel);
				struct timespec lt[2] = { { l->mtime, 0 }, { l->mtime, 0 } };

				if (symlink(l->target, p) < 0)
					t_fail("symlink %s: %s", p, strerror(errno));
				utimensat(AT_FDCWD, p, lt, AT_SYMLINK_NOFOLLOW);
				free(p);
			}
		}
	}
	if (fclose(f))
		t_fail("fclose: %s", strerror(errno));
	free(buf);
	for (int k = 0, i = 0; k < npre && i < in->n; i += MAX(1, nfiles / npre)) {
		if (in->items[i].symlink || in->items[i].size == big)
			continue;
		in->items[i].pre = true;
		k++;
	}
	return in;
}

const char *tw_input_stream(const struct tw_input *in) { return in->stream; }
const char *tw_input_src(const struct tw_input *in) { return in->src; }
int tw_input_count(const struct tw_input *in) { return in->n; }

int tw_input_expected(const struct tw_input *in)
{
	int n = 0;

	for (int i = 0; i < in->n; i++)
		n += !in->items[i].pre;
	return n;
}

void tw_input_free(struct tw_input *in)
{
	if (!in)
		return;
	free(in->items);
	free(in->stream);
	free(in->src);
	free(in);
}

void tw_input_pre_create(const struct tw_input *in, const char *dir, const char *prefix)
{
	tw_mkdirs(tw_fmt("%s/own/deeper", dir));
	for (int k = 0; k < 5; k++)
		t_write_bytes(tw_fmt("%s/own/keep%d", dir, k), "mine, not the batch's", 21);
	t_write_bytes(tw_fmt("%s/own/deeper/x", dir), "deep", 4);
	if (symlink("keep0", tw_fmt("%s/own/link", dir)) < 0)
		t_fail("symlink: %s", strerror(errno));
	for (int i = 0; i < in->n; i++) {
		if (!in->items[i].pre)
			continue;
		const char *p = tw_fmt("%s/%s%s", dir, prefix, in->items[i].rel);
		char *d = strdup(p);

		*strrchr(d, '/') = '\0';
		tw_mkdirs(d);
		free(d);
		t_write_bytes(p, tw_fmt("PRE-EXISTING %s", in->items[i].rel), 13 + strlen(in->items[i].rel));
	}
}

static const struct tw_input *chk_in;
static const char *chk_root;
static const char *chk_prefix;
static size_t chk_prefix_len;
static int chk_stray;
static char chk_msg[1024];

static bool input_has(const struct tw_input *in, const char *rel)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->items[i].rel, rel))
			return true;
	return false;
}

static int stray_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *rel = p + strlen(chk_root) + 1;

	(void)ftw;
	if (flag == FTW_D || flag == FTW_DP || S_ISDIR(st->st_mode))
		return 0;
	if (!strncmp(rel, "own/", 4) || !strcmp(rel, "lost+found"))
		return 0;
	if (!strncmp(rel, chk_prefix, chk_prefix_len) && input_has(chk_in, rel + chk_prefix_len))
		return 0;
	if (!chk_stray++)
		snprintf(chk_msg, sizeof(chk_msg), "%s", tw_esc(rel));
	return 0;
}

int tw_input_check(const struct tw_input *in, const char *dir, const char *prefix,
		   struct tw_snap *pre, const char *what, int *present)
{
	int bad = 0, rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint8_t *buf = malloc(in->maxsize);
	char msg[2048], why[256];

	*present = 0;
	if (rfd < 0 || !buf)
		t_fail("open %s: %s", dir, strerror(errno));
	for (int i = 0; i < in->n; i++) {
		const struct tw_item *it = &in->items[i];
		const char *rel = tw_fmt("%s%s", prefix, it->rel);
		struct stat st;

		if (it->pre && !in->replaceable)
			continue;           /* checked with the snapshot */
		if (it->pre) {
			/* the old file (the snapshot says so) or the new one whole */
			t_fill_random(buf, it->size, it->seed);
			if (!it->symlink && fstatat(rfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    tw_file_check(rfd, rel, buf, it->size, why, sizeof(why)) == 0 &&
			    (st.st_mode & 07777) == it->mode && st.st_mtim.tv_sec == it->mtime &&
			    (uint32_t)st.st_mtim.tv_nsec == it->mtime_ns) {
				(*present)++;
				snap_forget(pre, rel);
			}
			continue;
		}
		if (fstatat(rfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) {
				TW_CHECK(0, "[%s] %s: %s", what, rel, strerror(errno));
				bad++;
			}
			continue;
		}
		(*present)++;
		if (it->symlink) {
			char t[128];
			ssize_t k = readlinkat(rfd, rel, t, sizeof(t));

			if (!S_ISLNK(st.st_mode) || k != (ssize_t)strlen(it->target) ||
			    memcmp(t, it->target, (size_t)k)) {
				TW_CHECK(0, "[%s] symlink %s is not its target '%s'", what, rel, it->target);
				bad++;
			}
			continue;
		}
		t_fill_random(buf, it->size, it->seed);
		int r = tw_file_check(rfd, rel, buf, it->size, why, sizeof(why));

		if (r) {
			TW_CHECK(0, "[%s] %s is present but torn: %s", what, rel, r < 0 ? strerror(-r) : why);
			bad++;
			continue;
		}
		if ((st.st_mode & 07777) != it->mode || st.st_mtim.tv_sec != it->mtime ||
		    (uint32_t)st.st_mtim.tv_nsec != it->mtime_ns) {
			TW_CHECK(0, "[%s] %s is complete but its metadata was not finished: mode %o (want %o), "
				 "mtime %lld.%09ld (want %lld.%09u)", what, rel, st.st_mode & 07777, it->mode,
				 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)it->mtime,
				 it->mtime_ns);
			bad++;
		}
	}
	close(rfd);
	free(buf);
	int n = tw_leftovers(dir, true, msg, sizeof(msg));

	if (n) {
		TW_CHECK(0, "[%s] %d leftovers: %s", what, n, msg);
		bad++;
	}
	n = tw_snap_diff(pre, dir, true, msg, sizeof(msg));
	if (n) {
		TW_CHECK(0, "[%s] files that were there before changed: %s", what, msg);
		bad++;
	}
	chk_in = in;
	chk_root = dir;
	chk_prefix = prefix;
	chk_prefix_len = strlen(prefix);
	chk_stray = 0;
	nftw(dir, stray_cb, 16, FTW_PHYS);
	if (chk_stray) {
		TW_CHECK(0, "[%s] %d entries that are not the input's appeared, e.g. %s", what, chk_stray,
			 chk_msg);
		bad++;
	}
	return bad;
}

int tw_manifests(const char *root, char *first, size_t len)
{
	char buf[8192];
	int m = 0;

	if (len)
		first[0] = '\0';
	tw_list_prefix(tw_fmt("%s/.bfo-journal", root), "", buf, sizeof(buf));
	for (char *s = buf, *save = NULL, *t; (t = strtok_r(s, "\n", &save)); s = NULL) {
		size_t k = strlen(t);

		/* Batch manifests (b-*.m); a file arriving in pieces also has a
		 * record of its own (s-*.m) until it is complete. */
		if (k > 2 && !strcmp(t + k - 2, ".m") && !strncmp(t, "b-", 2)) {
			if (!m && len)
				snprintf(first, len, "%s/.bfo-journal/%s", root, t);
			m++;
		}
	}
	return m;
}

unsigned tw_manifest_seq(const char *root)
{
	char buf[8192];
	unsigned best = 0;

	tw_list_prefix(tw_fmt("%s/.bfo-journal", root), "", buf, sizeof(buf));
	for (char *p = buf, *save = NULL, *t; (t = strtok_r(p, "\n", &save)); p = NULL) {
		size_t k = strlen(t);
		char *dash = strrchr(t, '-');

		if (k > 2 && !strcmp(t + k - 2, ".m") && !strncmp(t, "b-", 2) && dash)
			best = MAX(best, (unsigned)strtoul(dash + 1, NULL, 10));
	}
	return best;
}

bool tw_wait_manifest(pid_t pid, const char *root, unsigned k)
{
	for (int i = 0; i < 400000; i++) {
		if (tw_manifest_seq(root) >= k)
			return true;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		tw_sleep_ns(50000);
	}
	return true;
}

/* ------------------------------------------------------------ a source tree */

static bool gen_root;
static int64_t gen_now;

void tw_gen_times(const char *p, int i)
{
	if (!gen_now) {
		uint32_t ns;

		tw_now(&gen_now, &ns);
	}
	struct timespec ts[2] = {
		{ gen_now + 3 * 86400 + i, (long)((uint64_t)i * 104729u % 1000000000u) },
		{ 978307200 + (int64_t)i * 3607, (long)((uint64_t)i * 7919u % 1000000000u) },
	};

	if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) < 0)
		t_fail("utimensat %s: %s", p, strerror(errno));
}

void tw_gen_mkdir(const char *p, mode_t mode)
{
	if (mkdir(p, 0700) < 0)
		t_fail("mkdir %s: %s", p, strerror(errno));
	if (chmod(p, mode) < 0)
		t_fail("chmod %s: %s", p, strerror(errno));
}

static void gen_own(const char *p, uid_t u, gid_t g)
{
	if (gen_root && lchown(p, u, g) < 0)
		t_fail("lchown %s: %s", p, strerror(errno));
}

void tw_gen_xattr(const char *p, const char *k, const char *v)
{
	if (lsetxattr(p, k, v, strlen(v), 0) < 0 && !xattr_refused(p, k, errno))
		t_fail("lsetxattr %s %s: %s", p, k, strerror(errno));
}

int tw_gen_tree(const char *src, uint64_t seed)
{
	static const char *dirs[] = { "", "a", "a/b", "a/b/c", "dir with space", "perm750", "sgid",
				      "sticky", "owned", "a/b/c/d", "a/b/c/d/e", "a/b/c/d/e/f" };
	static const mode_t dmodes[] = { 0755, 0755, 0755, 0755, 0755, 0750, 02755, 01777, 0700, 0755,
					 0755, 0755 };
	static const uint64_t special[] = { 0, 1, 4095, 4096, 4097, 65535, 65536, 65537, 1 << 20,
					    3 << 20 };
	char p[PATH_MAX], q[PATH_MAX];
	uint32_t ns;
	int n = 0;

	gen_root = t_is_root();
	tw_now(&gen_now, &ns);

	tw_mkdirs(src);
	for (size_t i = 1; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", src, dirs[i]);
		tw_mkdirs(p);
	}
	tw_gen_mkdir(tw_fmt("%s/empty1", src), 0755);
	tw_gen_mkdir(tw_fmt("%s/a/empty2", src), 0711);
	for (int i = 0; i < 150; i++) {
		uint64_t r = t_rand(&seed), size;

		if (i < (int)(sizeof(special) / sizeof(special[0])))
			size = special[i];
		else if (r % 100 < 70)
			size = t_rand(&seed) % 16384;
		else if (r % 100 < 96)
			size = 16384 + t_rand(&seed) % (256 << 10);
		else
			size = (256 << 10) + t_rand(&seed) % (3 << 20);
		snprintf(p, sizeof(p), "%s/%s%sf%03d", src, dirs[i % 12], *dirs[i % 12] ? "/" : "", i);
		t_write_random(p, size, seed + (uint64_t)i);
		chmod(p, i % 7 == 0 ? 0600 : i % 7 == 1 ? 0755 : i % 7 == 2 ? 0444 : 0644);
		if (i % 11 == 3)
			gen_own(p, 1000, 1000);
		if (i % 13 == 5)
			gen_own(p, 2000, 3000);
		if (i % 9 == 4)
			tw_gen_xattr(p, "user.note", tw_fmt("file %d", i));
		tw_gen_times(p, i);
		n++;
	}
	/* the big one (pieces) */
	snprintf(p, sizeof(p), "%s/a/big.bin", src);
	t_write_random(p, TW_GEN_BIG, seed ^ 0xb16);
	tw_gen_xattr(p, "user.big", "yes");
	tw_gen_times(p, 500);
	n++;
	/* odd names */
	static const char *odd[] = { "with space", "new\nline", "tab\there", "\xff\xfe-latin1",
				     "back\\slash", "-dash", ".hidden", "*glob?[x]", "\xc3\xbc\xc3\xb1\xc3\xad" };

	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", src, odd[i]);
		t_write_random(p, 100 + i * 37, seed + 700 + i);
		tw_gen_times(p, 600 + (int)i);
		n++;
	}
	tw_gen_mkdir(tw_fmt("%s/dir\nwith newline", src), 0755);
	t_write_bytes(tw_fmt("%s/dir\nwith newline/in", src), "x", 1);
	tw_gen_times(tw_fmt("%s/dir\nwith newline/in", src), 650);
	/* hard links: three names of one file */
	snprintf(p, sizeof(p), "%s/hl_a", src);
	t_write_random(p, 5000, seed + 800);
	chmod(p, 0640);
	gen_own(p, 1000, 2000);
	tw_gen_xattr(p, "user.links", "three");
	tw_gen_times(p, 700);
	if (link(p, tw_fmt("%s/a/hl_b", src)) < 0 || link(p, tw_fmt("%s/a/b/c/hl_c", src)) < 0)
		t_fail("link: %s", strerror(errno));
	n += 3;
	/* symbolic links */
	static const char *links[][2] = { { "a/rel", "../with space" }, { "abs", "/etc/hostname" },
					  { "dang", "no/such/file" }, { "a/b/todir", ".." },
					  { "odd\nlink", "new\nline" } };

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", src, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			t_fail("symlink %s: %s", p, strerror(errno));
		if (i == 1) {
			gen_own(p, 1000, 1000);
			if (gen_root)
				tw_gen_xattr(p, "trusted.onlink", "symlink attr");
		}
		tw_gen_times(p, 800 + (int)i);
		n++;
	}
	/* special files */
	snprintf(p, sizeof(p), "%s/fifo", src);
	if (mkfifo(p, 0640) < 0)
		t_fail("mkfifo: %s", strerror(errno));
	gen_own(p, 2000, 2000);
	tw_gen_times(p, 900);
	n++;
	/* a Unix socket's node: cp -a makes one with mknod */
	snprintf(p, sizeof(p), "%s/a/sock", src);
	if (mknod(p, S_IFSOCK | 0751, 0) < 0)
		t_fail("mknod socket: %s", strerror(errno));
	gen_own(p, 1000, 2000);
	tw_gen_times(p, 903);
	n++;
	if (gen_root) {
		snprintf(p, sizeof(p), "%s/chr", src);
		snprintf(q, sizeof(q), "%s/a/blk", src);
		if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) < 0 || mknod(q, S_IFBLK | 0660, makedev(7, 99)) < 0)
			t_fail("mknod: %s", strerror(errno));
		tw_gen_times(p, 901);
		tw_gen_times(q, 902);
		n += 2;
	}
	/* set-id files */
	snprintf(p, sizeof(p), "%s/suid", src);
	t_write_random(p, 3000, seed + 900);
	gen_own(p, 1000, 1000);
	if (chmod(p, 04755) < 0)
		t_fail("chmod");
	tw_gen_times(p, 910);
	snprintf(p, sizeof(p), "%s/sgidf", src);
	t_write_random(p, 3000, seed + 901);
	if (chmod(p, 02755) < 0)
		t_fail("chmod");
	tw_gen_times(p, 911);
	n += 2;
	/* directory metadata last, deepest first */
	tw_gen_xattr(tw_fmt("%s/a", src), "user.dir", "a directory's attribute");
	tw_gen_xattr(src, "user.top", "the top directory's attribute");
	gen_own(tw_fmt("%s/owned", src), 2000, 3000);
	for (int i = (int)(sizeof(dirs) / sizeof(dirs[0])) - 1; i >= 0; i--) {
		snprintf(p, sizeof(p), "%s%s%s", src, *dirs[i] ? "/" : "", dirs[i]);
		if (chmod(p, dmodes[i]) < 0)
			t_fail("chmod %s", p);
	}
	tw_gen_times(tw_fmt("%s/dir\nwith newline", src), 940);
	tw_gen_times(tw_fmt("%s/a/empty2", src), 941);
	tw_gen_times(tw_fmt("%s/empty1", src), 942);
	for (int i = (int)(sizeof(dirs) / sizeof(dirs[0])) - 1; i >= 0; i--) {
		snprintf(p, sizeof(p), "%s%s%s", src, *dirs[i] ? "/" : "", dirs[i]);
		tw_gen_times(p, 950 + i);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------ complete or absent */

static const char *inv_src, *inv_dst;
static int inv_bad;

static int inv_visit(const char *p, const struct stat *st, int type, struct FTW *f)
{
	char why[256];
	uint8_t *want;
	uint64_t len;
	const char *rel = p + strlen(inv_dst);

	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode) || strstr(p, "/.bfo-journal"))
		return 0;
	if (t_read_plain(tw_fmt("%s%s", inv_src, rel), &want, &len) != 0) {
		tw_check_fail(__FILE__, __LINE__, "source", "%s has no source", tw_esc(p));
		inv_bad++;
		return 0;
	}
	if (tw_file_check(AT_FDCWD, p, want, len, why, sizeof(why)) != 0) {
		tw_check_fail(__FILE__, __LINE__, "complete", "%s torn: %s", tw_esc(p), why);
		inv_bad++;
	}
	free(want);
	return 0;
}

int tw_complete_or_absent(const char *src, const char *dst)
{
	inv_src = src;
	inv_dst = dst;
	inv_bad = 0;
	nftw(dst, inv_visit, 64, FTW_PHYS);
	return inv_bad;
}

void tw_expect_copy(const char *ref, const char *dst, unsigned flags, const char *what)
{
	char msg[8192];
	int nd = tw_tree_diff(ref, dst, flags, NULL, msg, sizeof(msg));

	TW_CHECK(nd == 0, "[%s] %d differences from the reference copy: %s", what, nd, msg);
	nd = tw_leftovers(dst, true, msg, sizeof(msg));
	TW_CHECK(nd == 0, "[%s] leftovers: %s", what, msg);
}

int tw_count_regular(const char *dir)
{
	struct tw_run r;
	int n;

	/* one byte per file: names may hold newlines */
	tw_runl(&r, "sh", "-c", "find \"$1\" -type f -printf x 2>/dev/null | wc -c", "sh", dir,
		(char *)NULL);
	n = atoi(r.out);
	tw_run_free(&r);
	return n;
}

bool tw_wait_catching(pid_t pid, const char *prog, int sig)
{
	char path[64], exe[PATH_MAX], *want = realpath(prog, NULL);

	T_ASSERT(want, "realpath %s: %s", prog, strerror(errno));
	for (;;) {
		siginfo_t si = { 0 };
		char line[256];
		unsigned long long caught = 0;
		ssize_t n;
		FILE *f;

		/* past its exec (before it, the child is this program, with
		 * this program's handlers) */
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
			f = strcmp(exe, want) == 0 ? fopen(path, "re") : NULL;
			while (f && fgets(line, sizeof(line), f))
				if (sscanf(line, "SigCgt: %llx", &caught) == 1)
					break;
			if (f)
				fclose(f);
			if (caught & (1ull << (sig - 1))) {
				free(want);
				return true;
			}
		}
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
			free(want);
			return false;
		}
		tw_sleep_ns(1000000);
	}
}

char *tw_local_rsh(const char *dir)
{
	static const char sh[] = "#!/bin/sh\nshift\nexec sh -c \"$*\"\n";
	char *p = t_path(dir, "rsh");

	t_write_bytes(p, sh, sizeof(sh) - 1);
	T_ASSERT(chmod(p, 0755) == 0, "chmod %s", p);
	return p;
}

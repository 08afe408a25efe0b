/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_read_edge: every odd kind of path, with every engine (auto, uring,
 * portable): missing files, permission denied, directories, symbolic links
 * (followed, refused with BFO_READ_NOFOLLOW, dangling, looping), FIFOs (must
 * not block), sockets, character devices, empty, sparse and fallocated
 * files, the same path several times, over-long names and paths, names
 * that are not UTF-8 or hold spaces and a newline; then
 * BFO_READ_STOP_ON_ERROR against the default perform-all.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "t_helpers.h"

#define LARGE_FILE (128u << 10)
#define MAXC 64

/* Expected outcome: status 0 = plain bytes; type = S_IF* the entry's mode
 * must have when the status is negative (0: not checked). */
struct tcase {
	char *path;
	const char *what;
	int status, status_nofollow;
	unsigned type, type_nofollow;
};

static struct tcase cases[MAXC];
static int ncases;

static void add(char *path, const char *what, int st, unsigned type, int st_nf, unsigned type_nf)
{
	T_ASSERT(ncases < MAXC, "too many cases");
	cases[ncases++] = (struct tcase){ path, what, st, st_nf, type, type_nf };
}

static void check_run(int engine, bool nofollow)
{
	struct bfo_opts o;
	char *paths[MAXC];
	struct t_result *r = t_results_new(ncases);
	char msg[160];

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.large_file = LARGE_FILE;
	if (nofollow)
		o.flags |= BFO_READ_NOFOLLOW;
	for (int i = 0; i < ncases; i++)
		paths[i] = cases[i].path;
	snprintf(msg, sizeof(msg), "engine %s%s", t_engine(engine), nofollow ? ", nofollow" : "");
	t_batch(&o, paths, (size_t)ncases, r, NULL);
	for (int i = 0; i < ncases; i++) {
		const struct tcase *c = &cases[i];
		int want = nofollow ? c->status_nofollow : c->status;
		unsigned type = nofollow ? c->type_nofollow : c->type;
		char m[256];

		snprintf(m, sizeof(m), "%s: %s", msg, c->what);
		if (want == 0) {
			t_expect_plain(r, paths, (size_t)i, m);
		} else {
			t_expect_status(r, paths, (size_t)i, want, m);
			if (type && (r[i].mode & S_IFMT) != type)
				t_fail("[%s] mode 0%o, expected type 0%o", m, r[i].mode, type);
			if (r[i].engine != BFO_ENGINE_NONE && (want == -ENOENT || want == -EINVAL ||
							       want == -EISDIR || want == -ELOOP))
				t_fail("[%s] failed in the metadata phase but engine %s", m,
				       t_engine(r[i].engine));
		}
	}
	t_results_free(r, (size_t)ncases);
	t_log("%s: %d cases ok", msg, ncases);
}

/* Permission denied: a chmod 000 file and a file in a 0700 directory, as
 * a user who cannot read them (root forks a child that drops to nobody).
 * With the physical order the metadata phase opens files (for FIEMAP) on a
 * rotational device; with the inode order the first open is phase 2's. */
static const char *eacces_dir;

static void check_eacces(int engine, int order)
{
	const char *dir = eacces_dir;
	char *secret = t_path(dir, "secret"), *pdir = t_path(dir, "private");
	char *inpriv = t_path(pdir, "file"), *open_f = t_path(dir, "readable");
	char *paths[3] = { secret, inpriv, open_f };

	if (access(open_f, F_OK) != 0) {
		t_write_random(secret, 5000, 7);
		t_write_random(open_f, 5000, 8);
		if (mkdir(pdir, 0700) < 0)
			t_fail("mkdir %s", pdir);
		t_write_random(inpriv, 5000, 9);
		if (chmod(secret, 0) < 0)
			t_fail("chmod %s", secret);
	}
	bool was_root = t_is_root();

	if (was_root) {
		/* This runs in a sub-test's own process: drop privileges here. */
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			t_fail("dropping to uid 65534: %s", strerror(errno));
	}
	if (access(secret, R_OK) == 0)
		t_skip("uid %d can read a mode 000 file", (int)geteuid());

	struct bfo_opts o;
	struct t_result *r = t_results_new(3);
	char msg[96];

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.order = (uint32_t)order;
	snprintf(msg, sizeof(msg), "EACCES, engine %s, order %s, uid %d", t_engine(engine),
		 order == BFO_ORDER_INODE ? "inode" : "physical", (int)geteuid());
	t_batch(&o, paths, 3, r, NULL);
	t_expect_status(r, paths, 0, -EACCES, msg);
	if (was_root)
		t_expect_status(r, paths, 1, -EACCES, msg);
	else
		t_expect_plain(r, paths, 1, msg);    /* our own 0700 directory */
	t_expect_plain(r, paths, 2, msg);
	t_results_free(r, 3);
	t_log("%s: ok", msg);
	free(secret);
	free(inpriv);
	free(pdir);
	free(open_f);
}

/* STOP_ON_ERROR: the batch ends right after the first failure is
 * delivered; perform-all delivers everything. */
static void check_stop_on_error(const char *dir, int engine)
{
	enum { N = 300, BAD = 150 };
	char *paths[N];
	struct bfo_opts o;
	char msg[96];

	for (int i = 0; i < N; i++) {
		paths[i] = t_pathf("%s/s%03d", dir, i);
		if (i != BAD && access(paths[i], F_OK) != 0)
			t_write_random(paths[i], (uint64_t)(100 + i * 37), (uint64_t)i);
	}
	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.window_files = 16;
	o.flags = BFO_READ_STOP_ON_ERROR;
	snprintf(msg, sizeof(msg), "stop-on-error, engine %s", t_engine(engine));
	struct bfo_ctx *ctx = t_ctx(&o);
	struct t_result *r = t_results_new(N);
	struct bfo_file f[32];
	int k, submitted = 0, got = 0, failures = 0;
	bool after_failure = false;

	bool finished = false, refused = false;

	for (;;) {
		if (submitted < N && !after_failure && !refused) {
			k = bfo_read_submit(ctx, (const char *const *)paths + submitted,
					    (unsigned)(N - submitted));
			/* The failure may already have stopped the batch. */
			if (k == -ECANCELED && submitted > BAD)
				refused = true;
			else
				T_ASSERT(k >= 0, "[%s] submit returned %d", msg, k);
			if (k > 0)
				submitted += k;
		}
		if ((submitted == N || refused) && !finished) {
			T_OK(bfo_read_finish(ctx));
			finished = true;
		}
		k = bfo_read_wait(ctx, f, 32, -1);
		if (k == -EAGAIN && !finished)
			continue;
		if (k <= 0)
			break;
		T_ASSERT(!after_failure, "[%s] %d entries delivered after the failing one", msg, k);
		for (int i = 0; i < k; i++) {
			uint64_t x = f[i].index;

			T_ASSERT(x < N, "index %llu", (unsigned long long)x);
			T_ASSERT(!r[x].last, "[%s] index %llu twice", msg, (unsigned long long)x);
			r[x].last = true;
			r[x].status = f[i].status;
			got++;
			if (f[i].status < 0) {
				failures++;
				T_ASSERT(x == BAD && f[i].status == -ENOENT,
					 "[%s] index %llu failed with %d", msg, (unsigned long long)x,
					 f[i].status);
				T_ASSERT(i == k - 1, "[%s] entries after the failure in the same wait", msg);
				after_failure = true;
			} else {
				uint8_t *b;
				uint64_t len;

				T_ASSERT(t_read_plain(paths[x], &b, &len) == 0, "read %s", paths[x]);
				T_ASSERT(len == f[i].length && memcmp(b, f[i].data, len) == 0,
					 "[%s] %s: bytes differ", msg, paths[x]);
				free(b);
			}
		}
		T_OK(bfo_read_release(ctx, f, (unsigned)k));
		if (after_failure) {
			/* Stopped, not yet drained: new paths are refused. */
			k = bfo_read_submit(ctx, (const char *const *)paths, 1);
			T_ASSERT(k == -ECANCELED, "[%s] submit after the stop returned %d, expected -ECANCELED",
				 msg, k);
		}
	}
	T_ASSERT(k == 0, "[%s] wait returned %d", msg, k);
	T_ASSERT(failures == 1, "[%s] %d failures delivered", msg, failures);
	t_log("%s: %d of %d delivered, ending with the failure", msg, got, N);

	/* The same context then runs a complete batch (no failure in it). */
	char *good[N - 1];
	int ng = 0;

	for (int i = 0; i < N; i++)
		if (i != BAD)
			good[ng++] = paths[i];
	t_batch_ctx(ctx, good, (size_t)ng, r, NULL, 0);
	for (int i = 0; i < ng; i++)
		t_expect_plain(r, good, (size_t)i, msg);
	t_results_free(r, N);
	bfo_ctx_destroy(ctx);

	/* Perform-all: everything delivered, the missing file with -ENOENT. */
	o.flags = 0;
	r = t_results_new(N);
	t_batch(&o, paths, N, r, NULL);
	for (int i = 0; i < N; i++) {
		if (i == BAD)
			t_expect_status(r, paths, (size_t)i, -ENOENT, "perform-all");
		else
			t_expect_plain(r, paths, (size_t)i, "perform-all");
	}
	t_results_free(r, N);
	for (int i = 0; i < N; i++)
		free(paths[i]);
	t_log("%s: perform-all delivers all %d", msg, N);
}

struct sub {
	int engine, arg;
};

static const char *stop_dir;

static void sub_cases(void *p)
{
	const struct sub *a = p;

	check_run(a->engine, a->arg != 0);
}

static void sub_eacces(void *p)
{
	const struct sub *a = p;

	check_eacces(a->engine, a->arg);
}

static void sub_stop(void *p)
{
	const struct sub *a = p;

	check_stop_on_error(stop_dir, a->engine);
}

/* Missing paths, and paths through things that are not directories; a
 * directory; symbolic links. */
static void cases_missing(const char *dir)
{
	char *p;
	char tmp[PATH_MAX];

	/* missing, and paths through things that are not directories */
	add(t_path(dir, "nonexistent"), "missing file", -ENOENT, 0, -ENOENT, 0);
	add(t_path(dir, "nodir/file"), "missing directory", -ENOENT, 0, -ENOENT, 0);
	p = t_path(dir, "regular");
	t_write_random(p, 12345, 1);
	add(p, "regular file", 0, 0, 0, 0);
	add(t_path(dir, "regular/below"), "path through a file", -ENOTDIR, 0, -ENOTDIR, 0);
	add(t_path(dir, "regular/"), "file with a trailing slash", -ENOTDIR, 0, -ENOTDIR, 0);
	add(t_pathf("%s", ""), "empty path", -ENOENT, 0, -ENOENT, 0);

	/* a directory */
	p = t_path(dir, "adir");
	if (mkdir(p, 0755) < 0)
		t_fail("mkdir");
	add(p, "directory", -EISDIR, S_IFDIR, -EISDIR, S_IFDIR);

	/* symbolic links */
	snprintf(tmp, sizeof(tmp), "%s/target", dir);
	t_write_random(tmp, 70000, 2);
	p = t_path(dir, "link");
	if (symlink("target", p) < 0)
		t_fail("symlink");
	add(p, "symlink to a file", 0, 0, -ELOOP, S_IFLNK);
	p = t_path(dir, "dangling");
	if (symlink("no-such-target", p) < 0)
		t_fail("symlink");
	add(p, "dangling symlink", -ENOENT, 0, -ELOOP, S_IFLNK);
	p = t_path(dir, "loop1");
	snprintf(tmp, sizeof(tmp), "%s/loop2", dir);
	if (symlink("loop2", p) < 0 || symlink("loop1", tmp) < 0)
		t_fail("symlink");
	add(p, "symlink loop", -ELOOP, 0, -ELOOP, 0);
	p = t_path(dir, "dirlink");
	if (symlink("adir", p) < 0)
		t_fail("symlink");
	add(p, "symlink to a directory", -EISDIR, S_IFDIR, -ELOOP, S_IFLNK);
}

/* Special files (refused with -EINVAL, never opened for long); empty,
 * sparse and fallocated files. */
static void cases_special(const char *dir)
{
	char *p;
	int fd;

	/* special files: refused with -EINVAL, never opened for long */
	p = t_path(dir, "fifo");
	if (mkfifo(p, 0644) < 0)
		t_fail("mkfifo: %s", strerror(errno));
	add(p, "FIFO without a writer", -EINVAL, S_IFIFO, -EINVAL, S_IFIFO);
	p = t_path(dir, "sock");
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		T_ASSERT(strlen(p) < sizeof(sa.sun_path), "socket path too long");
		strcpy(sa.sun_path, p);
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			t_fail("socket: %s", strerror(errno));
		close(s);
	}
	add(p, "UNIX socket", -EINVAL, S_IFSOCK, -EINVAL, S_IFSOCK);
	add(t_pathf("/dev/null"), "/dev/null", -EINVAL, S_IFCHR, -EINVAL, S_IFCHR);

	/* empty, sparse and fallocated files */
	p = t_path(dir, "empty");
	t_write_bytes(p, "", 0);
	add(p, "empty file", 0, 0, 0, 0);
	p = t_path(dir, "sparse-small");
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || ftruncate(fd, 48 << 10) < 0 || pwrite(fd, "in the middle", 13, 20000) != 13)
		t_fail("sparse file");
	close(fd);
	add(p, "sparse file", 0, 0, 0, 0);
	p = t_path(dir, "sparse-large");
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20) < 0 || pwrite(fd, "xyz", 3, 500000) != 3 ||
	    pwrite(fd, "end", 3, (1 << 20) - 3) != 3)
		t_fail("sparse file");
	close(fd);
	add(p, "sparse file in pieces", 0, 0, 0, 0);
	p = t_path(dir, "sparse-tail");
	t_write_random(p, 5000, 3);
	if (truncate(p, 40000) < 0)
		t_fail("truncate");
	add(p, "file with a hole at its end", 0, 0, 0, 0);
	p = t_path(dir, "falloc");
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0)
		t_fail("open");
	if (fallocate(fd, 0, 0, 200 << 10) < 0) {
		t_log("fallocate not supported here (%s): plain sparse file instead", strerror(errno));
		if (ftruncate(fd, 200 << 10) < 0)
			t_fail("ftruncate");
	}
	if (pwrite(fd, "written inside unwritten extents", 32, 70000) != 32)
		t_fail("pwrite");
	close(fd);
	add(p, "fallocated file (unwritten extents)", 0, 0, 0, 0);
	p = t_path(dir, "falloc-keep");
	t_write_random(p, 10000, 4);
	fd = open(p, O_WRONLY);
	if (fd < 0)
		t_fail("open");
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) < 0)
		t_log("fallocate KEEP_SIZE not supported here (%s)", strerror(errno));
	close(fd);
	add(p, "fallocated beyond EOF (KEEP_SIZE)", 0, 0, 0, 0);
}

/* Two names of one inode; the same path several times. */
static void cases_names(const char *dir)
{
	char *p;
	char tmp[PATH_MAX];

	/* two names of one inode (nlink 2) */
	p = t_path(dir, "hardlink");
	snprintf(tmp, sizeof(tmp), "%s/regular", dir);
	if (link(tmp, p) < 0)
		t_fail("link: %s", strerror(errno));
	add(p, "hard link", 0, 0, 0, 0);

	/* the same path several times */
	p = t_path(dir, "dup");
	t_write_random(p, 33333, 5);
	add(p, "same path #1", 0, 0, 0, 0);
	add(p, "same path #2", 0, 0, 0, 0);
	add(p, "same path #3", 0, 0, 0, 0);
	p = t_path(dir, "dup-large");
	t_write_random(p, 3 * LARGE_FILE + 17, 6);
	add(p, "same large path #1", 0, 0, 0, 0);
	add(p, "same large path #2", 0, 0, 0, 0);
}

/* Over-long names and paths; a valid path of PATH_MAX - 1 bytes; names
 * that are not UTF-8, with spaces and a newline. */
static void cases_long(const char *dir)
{
	char *p;
	char tmp[PATH_MAX];

	/* over-long names and paths */
	{
		char name[301];

		memset(name, 'a', 300);
		name[300] = '\0';
		add(t_path(dir, name), "300-byte component", -ENAMETOOLONG, 0, -ENAMETOOLONG, 0);

		size_t len = strlen(dir) + 2 * 2100 + 16;
		char *lp = malloc(len);

		T_ASSERT(lp != NULL, "malloc");
		strcpy(lp, dir);
		for (int i = 0; i < 2100; i++)
			strcat(lp, "/.");
		strcat(lp, "/regular");
		T_ASSERT(strlen(lp) > PATH_MAX, "path not long enough");
		add(lp, "path longer than PATH_MAX", -ENAMETOOLONG, 0, -ENAMETOOLONG, 0);
	}

	/* a valid path of PATH_MAX - 1 bytes (the longest a kernel takes) */
	{
		char name[256];
		size_t len = strlen(dir);

		memset(name, 'd', 255);
		name[255] = '\0';
		snprintf(tmp, sizeof(tmp), "%s", dir);
		/* directories of 200 bytes while the rest needs more than one name */
		while (PATH_MAX - 1 - len - 1 > 255) {
			snprintf(tmp + len, sizeof(tmp) - len, "/%.200s", name);
			len += 201;
			if (mkdir(tmp, 0755) < 0)
				t_fail("mkdir (long path): %s", strerror(errno));
		}
		snprintf(tmp + len, sizeof(tmp) - len, "/%.*s", (int)(PATH_MAX - 2 - len), name);
		t_write_random(tmp, 6000, 13);
		p = t_pathf("%s", tmp);
		T_ASSERT(strlen(p) == PATH_MAX - 1, "long path of %zu bytes", strlen(p));
		add(p, "path of PATH_MAX - 1 bytes", 0, 0, 0, 0);
	}

	/* names that are not UTF-8, with spaces and a newline */
	p = t_path(dir, "bad-\xff\xfe-utf8");
	t_write_random(p, 4096, 10);
	add(p, "name with bytes 0xff 0xfe", 0, 0, 0, 0);
	p = t_path(dir, "with spaces and a\nnewline ");
	t_write_random(p, 777, 11);
	add(p, "name with spaces and a newline", 0, 0, 0, 0);
	p = t_path(dir, " leading-space");
	t_write_random(p, 1, 12);
	add(p, "name with a leading space", 0, 0, 0, 0);
}

/* Every case through every engine, in sub-tests of their own. */
static void run_cases(const char *dir)
{
	for (int ei = 0; ei < 3; ei++) {
		for (int nf = 0; nf < 2; nf++) {
			struct sub a = { t_engines_nonraw[ei], nf };
			char name[96];

			snprintf(name, sizeof(name), "odd paths, engine %s%s", t_engine(a.engine),
				 nf ? ", nofollow" : "");
			t_subtest(name, 30, sub_cases, &a);
		}
	}
	eacces_dir = dir;
	for (int ei = 0; ei < 3; ei++) {
		for (int ord = 0; ord < 2; ord++) {
			struct sub a = { t_engines_nonraw[ei], ord ? BFO_ORDER_INODE : BFO_ORDER_PHYSICAL };
			char name[96];

			snprintf(name, sizeof(name), "permission denied, engine %s, order %s",
				 t_engine(a.engine), ord ? "inode" : "physical");
			t_subtest(name, 30, sub_eacces, &a);
		}
	}
	stop_dir = dir;
	for (int ei = 0; ei < 3; ei++) {
		struct sub a = { t_engines_nonraw[ei], 0 };
		char name[96];

		snprintf(name, sizeof(name), "stop-on-error, engine %s", t_engine(a.engine));
		t_subtest(name, 30, sub_stop, &a);
	}
}

int main(void)
{
	const char *dir;

	t_init("t_read_edge", 300);
	dir = t_tmpdir();
	cases_missing(dir);
	cases_special(dir);
	cases_names(dir);
	cases_long(dir);
	run_cases(dir);
	for (int i = 0; i < ncases; i++)
		if (i == 0 || cases[i].path != cases[i - 1].path)
			free(cases[i].path);
	t_done();
	return 0;
}

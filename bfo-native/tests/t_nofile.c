/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_nofile: libbfo and the bfo command within an ordinary user's
 * descriptor limit (src/common/fdlimit.h).
 *  - The command as uid 65534 (as root; else as the user running it) at
 *    `ulimit -n` 1024 (a login's default), 256 and 20, over 5,200 files in
 *    26 directories: `bfo read --checksum` equals xxh128sum; `bfo cp -a`
 *    (batched and io_uring writers) and `bfo send -a | bfo recv -a` equal
 *    `cp -a` made by the same user (modes, times with nanoseconds, bytes,
 *    symbolic links, hard links); each exits 0 and says nothing.  Before
 *    the budget, 16 failed: cp and recv "Too many open files".  20 is the
 *    floor: a copy holds 12 descriptors of its own for the whole run (two
 *    on the destination, the journal's directory, lock, batch files and
 *    ids, an eventfd, the read ring, mountinfo) besides stdio, and the
 *    io_uring writer needs a ring, a directory and a file more; at 16
 *    it has one, and its files fail with EMFILE, each reported.
 *  - Sizing: with 40 descriptors free, a context asked for 64 threads
 *    runs a quarter of what is free (bfo_ctx_describe), a walk likewise.
 *  - An open refused for descriptors libbfo holds waits for one of them:
 *    the test holds a descriptor counted as libbfo's and fills the table;
 *    a read's pool thread meets EMFILE at its first open and waits
 *    (fd_retry), the test gives its descriptor back, and every file is
 *    read through the one descriptor free and equals read(); without the
 *    wait, the first file fails with -EMFILE.
 *  - The io_uring writer's chains when the table fills after its wave
 *    began: see uring_chains_short.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdlimit.h"
#include "t_wutil.h"
#include "test_hooks.h"

#define NDIRS  26
#define PERDIR 200
#define NFILES (NDIRS * PERDIR)

static uid_t as_uid = (uid_t)-1;
static gid_t as_gid = (gid_t)-1;
static char *paths[NFILES];

/* ------------------------------------------------------------ the tree */

static void set_times(const char *p, int i)
{
	int64_t now;
	uint32_t ns;
	struct timespec ts[2];

	tw_now(&now, &ns);
	/* atime ahead of now: no read here makes it newer (relatime), so
	 * every copy sees the same one; mtime in the past, with nanoseconds */
	ts[0] = (struct timespec){ .tv_sec = now + 86400 + i, .tv_nsec = (i * 7919) % 1000000000 };
	ts[1] = (struct timespec){ .tv_sec = 1500000000 + i * 977, .tv_nsec = (i * 104729) % 1000000000 };
	if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) < 0)
		t_fail("utimensat %s: %s", p, strerror(errno));
}

static void make_tree(const char *src)
{
	uint64_t seed = 34;

	tw_mkdirs(src);
	for (int d = 0; d < NDIRS; d++)
		tw_mkdirs(tw_fmt("%s/d%02d", src, d));
	for (int i = 0; i < NFILES; i++) {
		paths[i] = t_pathf("%s/d%02d/f%04d", src, i % NDIRS, i);
		t_write_random(paths[i], t_rand_range(&seed, 0, 16384), (uint64_t)i + 1);
		if (chmod(paths[i], i % 7 == 0 ? 0444 : i % 5 == 0 ? 0755 : 0644) < 0)
			t_fail("chmod %s: %s", paths[i], strerror(errno));
		set_times(paths[i], i);
	}
	for (int d = 0; d < NDIRS; d++) {
		const char *dir = tw_fmt("%s/d%02d", src, d);

		if (symlink(d % 2 ? "f0001" : "../d00/nowhere", tw_fmt("%s/link", dir)) < 0 ||
		    link(paths[d], tw_fmt("%s/hard%02d", dir, d)) < 0)
			t_fail("links in %s: %s", dir, strerror(errno));
		set_times(tw_fmt("%s/link", dir), NFILES + d);
	}
	for (int d = 0; d < NDIRS; d++)
		set_times(tw_fmt("%s/d%02d", src, d), 2 * NFILES + d);
	set_times(src, 3 * NFILES);
}

/* ------------------------------------------------------------ the command */

/* bash -c SCRIPT as the user at the descriptor limit lim ($1), with the
 * NULL-terminated arguments after it as $2...; status and output in r. */
static void run_as(struct tw_run *r, unsigned lim, const char *script, ...)
{
	char ls[16], body[512];
	char *argv[16] = { "bash", "-c", body, "t_nofile", ls };
	int n = 5;
	va_list ap;

	snprintf(ls, sizeof(ls), "%u", lim);
	snprintf(body, sizeof(body), "set -o pipefail; ulimit -n \"$1\" || exit 99; %s", script);
	va_start(ap, script);
	for (char *a; n < 15 && (a = va_arg(ap, char *));)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	tw_run(r, NULL, 0, as_uid, as_gid, argv);
}

/* A directory the user may write. */
static char *user_dir(const char *path)
{
	char *p = strdup(path);

	tw_mkdirs(p);
	if (as_uid != (uid_t)-1 && chown(p, as_uid, as_gid) < 0)
		t_fail("chown %s: %s", p, strerror(errno));
	return p;
}

static void expect_quiet(struct tw_run *r, const char *what, unsigned lim)
{
	TW_CHECK(r->status == 0 && r->err_len == 0, "%s at ulimit -n %u: exit %d, stderr: %.300s", what, lim,
		 r->status, r->err);
	tw_run_free(r);
}

static void commands_at(const char *base, const char *src, const char *ref, unsigned lim)
{
	static const char *const engines[] = { "auto", "uring" };
	unsigned flags = (TW_CP_A & ~TW_OWNER) | TW_TOP;
	struct tw_run r, p;
	char *work = user_dir(tw_fmt("%s/at%u", base, lim));
	char what[128];

	/* read --checksum against xxh128sum of the same files */
	run_as(&r, lim, "\"$2\" read --checksum \"$3\" | LC_ALL=C sort -k2", BFO_CLI, src, (char *)NULL);
	run_as(&p, lim, "find \"$2\" \\( -type f -o -type l -xtype f \\) -print0 | xargs -0 xxh128sum | LC_ALL=C sort -k2", src,
	       (char *)NULL);
	T_ASSERT(p.status == 0, "xxh128sum: exit %d %s", p.status, p.err);
	TW_CHECK(r.out_len == p.out_len && memcmp(r.out, p.out, r.out_len) == 0,
		 "ulimit -n %u: bfo read --checksum (%zu bytes) differs from xxh128sum (%zu bytes)", lim,
		 r.out_len, p.out_len);
	tw_run_free(&p);
	expect_quiet(&r, "bfo read --checksum", lim);

	/* cp -a with each writer, and send | recv, against cp -a */
	for (int e = 0; e < 2; e++) {
		char *dst = user_dir(tw_fmt("%s/cp-%s", work, engines[e]));

		snprintf(what, sizeof(what), "bfo cp -a --write-engine %s", engines[e]);
		run_as(&r, lim, "exec \"$2\" cp -a --write-engine \"$3\" \"$4\" \"$5\"/", BFO_CLI, engines[e], src,
		       dst, (char *)NULL);
		expect_quiet(&r, what, lim);
		snprintf(what, sizeof(what), "ulimit -n %u: bfo cp -a --write-engine %s", lim, engines[e]);
		tw_expect_copy(ref, tw_fmt("%s/src", dst), flags, what);
		t_sh("rm -rf '%s'", dst);
		free(dst);
	}
	char *dst = user_dir(tw_fmt("%s/recv", work));

	run_as(&r, lim, "\"$2\" send -a \"$3\" | \"$2\" recv -a \"$4\"/", BFO_CLI, src, dst, (char *)NULL);
	expect_quiet(&r, "bfo send -a | bfo recv -a", lim);
	snprintf(what, sizeof(what), "ulimit -n %u: bfo send -a | bfo recv -a", lim);
	tw_expect_copy(ref, tw_fmt("%s/src", dst), flags, what);
	t_sh("rm -rf '%s'", work);
	free(dst);
	free(work);
	t_log("ulimit -n %u: read --checksum checked against xxh128sum; cp -a (batched, uring) and "
	      "send | recv against cp -a", lim);
}

/* ------------------------------------------------------------ sizing */

/* Soft limit so that `left` descriptors are free now; the old limit back. */
static struct rlimit limit_free(unsigned left)
{
	struct rlimit old, rl;

	if (getrlimit(RLIMIT_NOFILE, &old) < 0)
		t_fail("getrlimit: %s", strerror(errno));
	rl = old;
	rl.rlim_cur = (rlim_t)t_open_fds() + left;
	if (rl.rlim_cur > rl.rlim_max || setrlimit(RLIMIT_NOFILE, &rl) < 0)
		t_fail("setrlimit %llu: %s", (unsigned long long)rl.rlim_cur, strerror(errno));
	return old;
}

static void sizing(void)
{
	struct rlimit old = limit_free(40);
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	char desc[512];
	unsigned threads = 0, share = fdl_share(64, 1);
	const char *t;

	/* 40 free (less what t_open_fds' listing costs): a quarter */
	T_ASSERT(share >= 9 && share <= 10, "fdl_share(64) with 40 descriptors free: %u", share);
	bfo_opts_init(&o);
	o.threads = 64;
	ctx = t_ctx(&o);
	bfo_ctx_describe(ctx, desc, sizeof(desc));
	t = strstr(desc, "threads ");
	T_ASSERT(t && sscanf(t, "threads %u", &threads) == 1, "no thread count in '%s'", desc);
	T_ASSERT(threads >= 8 && threads <= 10, "64 threads asked with 40 descriptors free: %u run", threads);
	bfo_ctx_destroy(ctx);
	if (setrlimit(RLIMIT_NOFILE, &old) < 0)
		t_fail("setrlimit back: %s", strerror(errno));
	t_log("sizing: 64 threads asked, %u run with 40 descriptors free", threads);
}

/* Every free descriptor taken (dup of stdin): [*from, *to), for closing. */
static void fill_table(int *from, int *to)
{
	int fd;

	while ((fd = dup(0)) >= 0) {
		if (*from < 0)
			*from = fd;
		*to = fd + 1;
	}
}

/* ------------------------------------------------------------ the wait */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool waited, done;
	struct bfo_ctx *ctx;
	struct t_result *r;
} W = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void retry_began(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&W.lock);
	W.waited = true;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
}

static void *batch_main(void *arg)
{
	(void)arg;
	t_batch_ctx(W.ctx, paths, NFILES, W.r, NULL, 0);
	pthread_mutex_lock(&W.lock);
	W.done = true;
	pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
	return NULL;
}

/*
 * This thread holds a descriptor counted as libbfo's (fdl_open) and fills
 * the table; the batch's one pool thread then meets EMFILE at its first
 * open and waits (fd_retry), and this thread gives its descriptor back:
 * the pool thread opens again, and from then on reads every file through
 * the one descriptor free.
 */
static void waits_for_its_own(void)
{
	struct rlimit old = limit_free(64);
	struct bfo_opts o;
	pthread_t t;
	int held, fd, fill_from = -1, fill_to = -1;

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_PORTABLE;
	o.threads = 1;
	W.ctx = t_ctx(&o);
	W.r = t_results_new(NFILES);
	held = fdl_open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	T_ASSERT(held >= 0, "open /: %s", strerror(errno));
	fill_table(&fill_from, &fill_to);
	T_ASSERT(errno == EMFILE, "filling the table: %s", strerror(errno));
	bfo_test_hooks.fd_retry = retry_began;
	t_watchdog(300, "a read waiting for libbfo's own descriptor");
	if (pthread_create(&t, NULL, batch_main, NULL) != 0)
		t_fail("pthread_create");
	pthread_mutex_lock(&W.lock);
	while (!W.waited && !W.done)
		pthread_cond_wait(&W.cond, &W.lock);
	pthread_mutex_unlock(&W.lock);
	fdl_close(held);
	pthread_join(t, NULL);
	bfo_test_hooks.fd_retry = NULL;
	for (fd = fill_from; fd >= 0 && fd < fill_to; fd++)
		close(fd);
	bfo_ctx_destroy(W.ctx);
	if (setrlimit(RLIMIT_NOFILE, &old) < 0)
		t_fail("setrlimit back: %s", strerror(errno));
	TW_CHECK(W.waited, "no open waited for the descriptor libbfo held (first file: status %d)",
		 W.r[0].status);
	for (int i = 0; i < NFILES; i++)
		t_expect_plain(W.r, paths, (size_t)i, "reads through one descriptor after a wait");
	t_results_free(W.r, NFILES);
	t_log("an open refused for libbfo's own descriptors waited for it: %d files read, equal to read()",
	      NFILES);
}

/* ------------------------------------------------------------ uring chains */

#define UFILES 96
#define UQD    8

static struct {
	int from, to;
	bool filled;
	unsigned waits;
} F = { .from = -1, .to = -1 };

/* An open met EMFILE while a chain held the descriptor: it waits for it. */
static void chain_waits(void *arg)
{
	(void)arg;
	F.waits++;
}

/* The writer opened the files' directory: every descriptor but one taken. */
static void fill_but_one(void *arg, const char *dir)
{
	(void)arg;
	/* the files' directory, not the root's (the batch's directory entry) */
	if (F.filled || strcmp(dir, "d") != 0)
		return;
	F.filled = true;
	fill_table(&F.from, &F.to);
	if (F.to > F.from)
		close(--F.to);
}

/*
 * The io_uring writer (8 chains) when, once its wave's directory is open,
 * one descriptor is left: of each round of opens one gets it and the rest
 * meet EMFILE while that chain holds it, so they wait to open again, one
 * at a time.  The writer once opened new files while others waited, each
 * meeting EMFILE too, past the end of its list of 8 (a heap overflow, which
 * the sanitizer build reports); an EMFILE completed before the open that
 * took the descriptor looked like the program's and the file failed; and
 * a list cleared of "ready" with entries left could wait for nothing.  Every
 * file is written, equal to its bytes.
 */
static void uring_chains_short(void)
{
	struct bfo_write_opts o = { .size = sizeof(o), .engine = BFO_WENGINE_URING, .threads = 1,
				    .queue_depth = UQD, .durability = BFO_DURABILITY_BATCH };
	struct bfo_wentry e[UFILES + 1];
	static char data[UFILES][1024];
	char names[UFILES][16];
	char *root = t_path(t_tmpdir(), "uring-short");
	struct bfo_writer *w = NULL;
	struct rlimit old;
	int ret, failed = 0;

	/* Free enough that the writer's share is not scaled down (3 per
	 * thread, 256 directories, the 8 chains: a quarter of what is free). */
	if (getrlimit(RLIMIT_NOFILE, &old) < 0 || old.rlim_max < (rlim_t)t_open_fds() + 1100) {
		t_log("uring chains: skipped, the hard limit leaves fewer than 1,100 descriptors");
		free(root);
		return;
	}
	old = limit_free(1100);

	memset(e, 0, sizeof(e));
	e[0] = (struct bfo_wentry){ .path = "d", .type = BFO_WTYPE_DIR, .mode = 0755 };
	for (int i = 0; i < UFILES; i++) {
		t_fill_random(data[i], sizeof(data[i]), 7000 + (uint64_t)i);
		snprintf(names[i], sizeof(names[i]), "d/f%02d", i);
		e[i + 1] = (struct bfo_wentry){ .path = names[i], .type = BFO_WTYPE_FILE, .mode = 0644,
						.data = data[i], .length = sizeof(data[i]) };
	}
	ret = bfo_writer_open(&w, root, &o);
	if (ret == -ENOSYS || ret == -EOPNOTSUPP || ret == -EPERM) {
		t_log("uring chains: skipped, no io_uring writer here (%s)", strerror(-ret));
		setrlimit(RLIMIT_NOFILE, &old);
		free(root);
		return;
	}
	T_ASSERT(ret == 0, "bfo_writer_open: %s", strerror(-ret));
	bfo_test_hooks.dir_opened = fill_but_one;
	bfo_test_hooks.fd_retry = chain_waits;
	t_watchdog(300, "the io_uring writer with one descriptor free");
	ret = bfo_writer_write(w, e, UFILES + 1);
	bfo_test_hooks.dir_opened = NULL;
	bfo_test_hooks.fd_retry = NULL;
	for (int fd = F.from; fd >= 0 && fd < F.to; fd++)
		close(fd);
	if (setrlimit(RLIMIT_NOFILE, &old) < 0)
		t_fail("setrlimit back: %s", strerror(errno));
	TW_CHECK(F.filled, "the writer never opened its directory through the io_uring path");
	TW_CHECK(F.waits > 0, "no open met EMFILE beside a chain holding the descriptor: nothing tested");
	int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	T_ASSERT(dfd >= 0, "open %s: %s", root, strerror(errno));
	for (int i = 0; i < UFILES; i++) {
		char why[256];

		if (e[i + 1].status || e[i + 1].engine != BFO_WENGINE_URING)
			failed++;
		TW_CHECK(e[i + 1].status == 0, "%s: %s", names[i], strerror(-e[i + 1].status));
		TW_CHECK(e[i + 1].status || e[i + 1].engine == BFO_WENGINE_URING, "%s written by %s", names[i],
			 bfo_wengine_name(e[i + 1].engine));
		TW_CHECK(tw_file_check(dfd, names[i], data[i], sizeof(data[i]), why, sizeof(why)) == 0,
			 "%s: %s", names[i], why);
	}
	close(dfd);
	TW_CHECK(ret == failed, "bfo_writer_write: %d, %d files failed", ret, failed);
	TW_CHECK(bfo_writer_close(w) == 0, "bfo_writer_close");
	t_log("uring chains: %d files through %d chains with one descriptor free, %u waits, %d failed", UFILES,
	      UQD, F.waits, failed);
	free(root);
}

int main(void)
{
	const char *tmp;
	char *src, *ref;
	struct tw_run r;

	t_init("t_nofile", 1200);
	if (!t_have_prog("xxh128sum") || !t_have_prog("cp"))
		t_skip("xxh128sum or cp missing");
	if (t_is_root()) {
		as_uid = 65534;
		as_gid = 65534;
	}
	tmp = t_tmpdir();
	src = t_pathf("%s/src", tmp);
	make_tree(src);
	t_log("%d files in %d directories, as uid %u", NFILES, NDIRS,
	      (unsigned)(as_uid == (uid_t)-1 ? getuid() : as_uid));

	sizing();
	waits_for_its_own();
	uring_chains_short();

	/* the reference: cp -a by the same user */
	ref = user_dir(tw_fmt("%s/ref", tmp));
	run_as(&r, 1024, "exec cp -a \"$2\" \"$3\"/", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: exit %d %s", r.status, r.err);
	tw_run_free(&r);
	char *refsrc = t_pathf("%s/src", ref);

	static const unsigned limits[] = { 1024, 256, 20 };

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		t_watchdog(600, tw_fmt("the commands at ulimit -n %u", limits[i]));
		commands_at(tmp, src, refsrc, limits[i]);
	}
	tw_checks_end();
	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	free(src);
	free(ref);
	free(refsrc);
	t_log("PASS");
	return 0;
}

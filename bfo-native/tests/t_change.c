/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_change: files that change while their batch is read.  The internal
 * fault-injection hooks change files between phase 1 and phase 2
 * (after_plan: append, truncate, truncate to zero, rename another file over
 * one with a different size and with the same size, unlink, overwrite in
 * place with a new mtime) and after a file's bytes were read but before
 * they are verified (after_data: overwrite with the same size and a new
 * mtime, a small file and a file read in pieces).
 *
 * For every engine (and raw on a loop-mounted ext4 when root) each changed
 * file is delivered either with status 0, its bytes AND its size/mtime
 * equal to what read()/stat() give after the batch, or with -ESTALE; the
 * deleted one with -ENOENT; never old metadata with new bytes or new
 * metadata with old bytes.  Untouched files are exact.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_helpers.h"

#define LARGE_FILE (64u << 10)
#define NUNTOUCHED 24

enum {
	F_GROW, F_SHRINK, F_ZERO, F_REPL_DIFF, F_REPL_SAME, F_DELETED, F_INPLACE_PLAN,
	F_LARGE_GROW, F_BECAME_FIFO, F_BECAME_DIR, F_BECAME_LINK,
	F_DATA_SMALL, F_DATA_LARGE, F_DATA_MID, NCHANGED
};

static const char *names[NCHANGED] = {
	"grows", "shrinks", "to-zero", "replaced-other-size", "replaced-same-size", "deleted",
	"rewritten-after-plan", "large-grows", "became-fifo", "became-dir", "became-symlink",
	"rewritten-after-data", "large-rewritten-after-data", "rewritten-after-data-2",
};

struct state {
	char *path[NCHANGED];
	char *repl_diff, *repl_same, *link_target;
	atomic_int plan_calls;
	atomic_bool planned;
	atomic_bool data_done[NCHANGED];
	atomic_int data_calls;
	int errors;
	char err[256];
};

static struct state S;

static void hook_fail(const char *what, const char *path)
{
	/* Recorded, failed in the main thread (hooks run in library threads). */
	if (!S.errors++)
		snprintf(S.err, sizeof(S.err), "%s %s: %s", what, path, strerror(errno));
}

static void bump_mtime(int fd, const char *path)
{
	struct stat st;
	struct timespec ts[2];

	if (fstat(fd, &st) < 0)
		return hook_fail("fstat", path);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	ts[1].tv_sec += 1;          /* visible on any kernel, any granularity */
	if (futimens(fd, ts) < 0)
		hook_fail("futimens", path);
}

/* Overwrite in place with other bytes of the same size, new mtime. */
static void rewrite_same_size(const char *path, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0)
		return hook_fail("open", path);
	uint8_t *b = malloc((size_t)st.st_size + 1);

	t_fill_random(b, (size_t)st.st_size, seed);
	if (pwrite(fd, b, (size_t)st.st_size, 0) != st.st_size)
		hook_fail("pwrite", path);
	bump_mtime(fd, path);
	free(b);
	close(fd);
}

static void after_plan(void *arg, uint32_t nfiles)
{
	(void)arg;
	(void)nfiles;
	atomic_fetch_add(&S.plan_calls, 1);
	if (atomic_exchange(&S.planned, true))
		return;

	int fd = open(S.path[F_GROW], O_WRONLY | O_APPEND | O_CLOEXEC);
	uint8_t more[5000];

	t_fill_random(more, sizeof(more), 99);
	if (fd < 0 || write(fd, more, sizeof(more)) != (ssize_t)sizeof(more))
		hook_fail("append", S.path[F_GROW]);
	if (fd >= 0)
		close(fd);
	if (truncate(S.path[F_SHRINK], 10000) < 0)
		hook_fail("truncate", S.path[F_SHRINK]);
	if (truncate(S.path[F_ZERO], 0) < 0)
		hook_fail("truncate", S.path[F_ZERO]);
	if (rename(S.repl_diff, S.path[F_REPL_DIFF]) < 0)
		hook_fail("rename", S.path[F_REPL_DIFF]);
	if (rename(S.repl_same, S.path[F_REPL_SAME]) < 0)
		hook_fail("rename", S.path[F_REPL_SAME]);
	if (unlink(S.path[F_DELETED]) < 0)
		hook_fail("unlink", S.path[F_DELETED]);
	rewrite_same_size(S.path[F_INPLACE_PLAN], 1234);
	fd = open(S.path[F_LARGE_GROW], O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0 || write(fd, more, sizeof(more)) != (ssize_t)sizeof(more))
		hook_fail("append", S.path[F_LARGE_GROW]);
	if (fd >= 0)
		close(fd);
	/* replaced by things that are not regular files (no writer on the
	 * FIFO: nothing may block on it), and by a link to another file */
	if (unlink(S.path[F_BECAME_FIFO]) < 0 || mkfifo(S.path[F_BECAME_FIFO], 0644) < 0)
		hook_fail("mkfifo", S.path[F_BECAME_FIFO]);
	if (unlink(S.path[F_BECAME_DIR]) < 0 || mkdir(S.path[F_BECAME_DIR], 0755) < 0)
		hook_fail("mkdir", S.path[F_BECAME_DIR]);
	if (unlink(S.path[F_BECAME_LINK]) < 0 || symlink(S.link_target, S.path[F_BECAME_LINK]) < 0)
		hook_fail("symlink", S.path[F_BECAME_LINK]);
}

static void unlink_hook(void *arg, uint32_t nfiles)
{
	(void)arg;
	(void)nfiles;
	if (!atomic_exchange(&S.planned, true) && unlink(S.path[F_DELETED]) < 0)
		hook_fail("unlink", S.path[F_DELETED]);
}

static void after_data(void *arg, const char *path)
{
	(void)arg;
	atomic_fetch_add(&S.data_calls, 1);
	for (int i = F_DATA_SMALL; i <= F_DATA_MID; i++) {
		if (strcmp(path, S.path[i]) == 0 && !atomic_exchange(&S.data_done[i], true))
			rewrite_same_size(path, 5000 + (uint64_t)i);
	}
}

static void make_files(const char *dir, char **untouched)
{
	static const uint64_t sizes[NCHANGED] = {
		20000, 30000, 5000, 15000, 15000, 8000, 9000, 200 << 10, 7000, 7000, 7000,
		12000, 200 << 10, 40000,
	};

	for (int i = 0; i < NCHANGED; i++) {
		free(S.path[i]);
		S.path[i] = t_path(dir, names[i]);
		struct stat st;

		if (lstat(S.path[i], &st) == 0 && (S_ISDIR(st.st_mode) ? rmdir(S.path[i]) : unlink(S.path[i])))
			t_fail("cannot remove %s", S.path[i]);
		t_write_random(S.path[i], sizes[i], 100 + (uint64_t)i);
	}
	free(S.link_target);
	S.link_target = t_path(dir, "link-target");
	t_write_random(S.link_target, 3333, 302);
	free(S.repl_diff);
	free(S.repl_same);
	S.repl_diff = t_path(dir, "new-other-size");
	S.repl_same = t_path(dir, "new-same-size");
	t_write_random(S.repl_diff, 25000, 300);
	t_write_random(S.repl_same, 15000, 301);
	for (int i = 0; i < NUNTOUCHED; i++) {
		if (!untouched[i])
			untouched[i] = t_pathf("%s/untouched-%02d", dir, i);
		t_write_random(untouched[i], 1000 + (uint64_t)i * 3001, 500 + (uint64_t)i);
	}
}

static void run(const char *dir, int engine, const char *where)
{
	enum { N = NCHANGED + NUNTOUCHED };
	char *untouched[NUNTOUCHED] = { 0 };
	char *paths[N];
	struct bfo_opts o;
	struct bfo_stats st;
	struct t_result *r = t_results_new(N);
	char msg[128];
	int stale = 0;

	make_files(dir, untouched);
	/* Interleave changed and untouched files. */
	for (int i = 0, c = 0, u = 0; i < N; i++)
		paths[i] = (i % 3 == 1 && c < NCHANGED) || u == NUNTOUCHED ? S.path[c++] : untouched[u++];
	atomic_store(&S.plan_calls, 0);
	atomic_store(&S.planned, false);
	atomic_store(&S.data_calls, 0);
	for (int i = 0; i < NCHANGED; i++)
		atomic_store(&S.data_done[i], false);
	S.errors = 0;
	bfo_test_hooks.arg = &S;
	bfo_test_hooks.after_plan = after_plan;
	bfo_test_hooks.after_data = after_data;

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.large_file = LARGE_FILE;
	snprintf(msg, sizeof(msg), "%s, engine %s", where, t_engine(engine));
	t_batch(&o, paths, N, r, &st);
	bfo_test_hooks.after_plan = NULL;
	bfo_test_hooks.after_data = NULL;
	bfo_test_hooks.arg = NULL;

	if (S.errors)
		t_fail("[%s] a hook could not change a file: %s", msg, S.err);
	T_ASSERT(atomic_load(&S.planned), "[%s] after_plan never ran", msg);
	for (int i = F_DATA_SMALL; i <= F_DATA_MID; i++)
		T_ASSERT(atomic_load(&S.data_done[i]), "[%s] after_data never ran for %s", msg,
			 S.path[i]);
	for (int i = 0; i < N; i++) {
		bool changed = false;
		char m[256];

		for (int c = 0; c < NCHANGED; c++)
			changed |= paths[i] == S.path[c];
		snprintf(m, sizeof(m), "%s: %s", msg, strrchr(paths[i], '/') + 1);
		if (paths[i] == S.path[F_DELETED]) {
			t_expect_status(r, paths, (size_t)i, -ENOENT, m);
		} else if (paths[i] == S.path[F_BECAME_FIFO] && r[i].status != -ESTALE) {
			t_expect_status(r, paths, (size_t)i, -EINVAL, m);
		} else if (paths[i] == S.path[F_BECAME_DIR] && r[i].status != -ESTALE) {
			t_expect_status(r, paths, (size_t)i, -EISDIR, m);
		} else if (changed && r[i].status == -ESTALE) {
			stale++;
			t_expect_status(r, paths, (size_t)i, -ESTALE, m);
		} else {
			t_expect_plain(r, paths, (size_t)i, m);
		}
		if (!changed && engine == BFO_ENGINE_RAW && r[i].size <= LARGE_FILE &&
		    r[i].engine != BFO_ENGINE_RAW)
			t_fail("[%s] untouched file read by %s, not raw", m, t_engine(r[i].engine));
	}
	t_log("%s: ok (%d of %d changed files -ESTALE, %llu fallbacks, after_plan ran %d times, "
	      "after_data %d times)", msg, stale, NCHANGED - 1, (unsigned long long)st.fallback_files,
	      atomic_load(&S.plan_calls), atomic_load(&S.data_calls));
	t_results_free(r, N);
	for (int i = 0; i < NUNTOUCHED; i++)
		free(untouched[i]);
	for (int i = 0; i < NCHANGED; i++) {
		free(S.path[i]);
		S.path[i] = NULL;
	}
	free(S.repl_diff);
	free(S.repl_same);
	free(S.link_target);
	S.repl_diff = S.repl_same = S.link_target = NULL;
}

/* BFO_READ_STOP_ON_ERROR with a failure found in phase 2 (a file deleted
 * after the plan): the failure is the last entry delivered, then 0. */
static void stop_in_phase2(const char *dir, int engine)
{
	enum { N = NCHANGED + NUNTOUCHED };
	char *untouched[NUNTOUCHED] = { 0 };
	char *paths[N];
	struct bfo_opts o;
	struct bfo_file f[16];
	char msg[96];
	int k, n = 0, failures = 0;
	bool after = false;

	make_files(dir, untouched);
	for (int i = 0; i < NUNTOUCHED; i++)
		paths[n++] = untouched[i];
	paths[n++] = S.path[F_DELETED];
	atomic_store(&S.planned, false);
	/* only the unlink this time */
	bfo_test_hooks.after_plan = NULL;
	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.flags = BFO_READ_STOP_ON_ERROR;
	snprintf(msg, sizeof(msg), "stop-on-error in phase 2, engine %s", t_engine(engine));

	struct bfo_ctx *ctx = t_ctx(&o);

	bfo_test_hooks.after_plan = unlink_hook;
	T_EQ(bfo_read_submit(ctx, (const char *const *)paths, (unsigned)n), n);
	T_OK(bfo_read_finish(ctx));
	while ((k = bfo_read_wait(ctx, f, 16, -1)) > 0) {
		T_ASSERT(!after, "[%s] entries after the failure", msg);
		for (int i = 0; i < k; i++) {
			if (f[i].status < 0) {
				failures++;
				T_ASSERT(i == k - 1 && f[i].status == -ENOENT &&
					 !strcmp(f[i].path, S.path[F_DELETED]),
					 "[%s] %s failed with %s", msg, f[i].path, bfo_strerror(f[i].status));
				after = true;
			}
		}
		T_OK(bfo_read_release(ctx, f, (unsigned)k));
	}
	bfo_test_hooks.after_plan = NULL;
	T_ASSERT(k == 0, "[%s] wait returned %d", msg, k);
	T_EQ(failures, 1);
	bfo_ctx_destroy(ctx);
	for (int i = 0; i < NUNTOUCHED; i++)
		free(untouched[i]);
	t_log("%s: ok", msg);
}

struct conf {
	const char *dir;
	int engine;
	const char *where;
};

static void run_sub(void *arg)
{
	const struct conf *c = arg;

	run(c->dir, c->engine, c->where);
}

static void stop_sub(void *arg)
{
	const struct conf *c = arg;

	stop_in_phase2(c->dir, c->engine);
}

static void sub(const char *dir, int engine, const char *where)
{
	struct conf c = { dir, engine, where };
	char name[128];

	snprintf(name, sizeof(name), "%s, engine %s", where, t_engine(engine));
	t_subtest(name, 30, run_sub, &c);
}

int main(void)
{
	t_init("t_change", 300);

	const char *dir = t_tmpdir();

	for (int ei = 0; ei < 3; ei++)
		sub(dir, t_engines_nonraw[ei], "tmp dir");
	if (t_is_root()) {
		char why[2048];
		const char *mnt = t_loop_fs("ext4", 64, NULL, NULL, why, sizeof(why));

		if (mnt) {
			sub(mnt, BFO_ENGINE_RAW, "loop ext4");
			sub(mnt, BFO_ENGINE_AUTO, "loop ext4");
			sub(mnt, BFO_ENGINE_URING, "loop ext4");
			sub(mnt, BFO_ENGINE_PORTABLE, "loop ext4");
			static const int se[3] = { BFO_ENGINE_RAW, BFO_ENGINE_URING,
						   BFO_ENGINE_PORTABLE };

			for (int i = 0; i < 3; i++) {
				struct conf c = { mnt, se[i], "loop ext4" };
				char name[96];

				snprintf(name, sizeof(name), "stop-on-error in phase 2, engine %s",
					 t_engine(se[i]));
				t_subtest(name, 30, stop_sub, &c);
			}
		} else {
			t_log("raw on loop ext4 not checked: %s", why);
		}
	} else {
		t_log("raw on loop ext4 not checked: not root");
	}
	t_done();
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_stall: the scheduler never stalls on arena space (issue 33: a read
 * slept for ever, the arena held by groups whose changed files waited in
 * the slow queue behind a large file's piece that waited for that space).
 *
 * The mix that hung, made deterministic: a small arena (4 MiB: groups of
 * 2 MiB, large_file 512 KiB), enough files to fill it with groups, large
 * files routed in pieces (one dense, one sparse), files with holes and
 * with unwritten extents, and a third of the small files changed after
 * their bytes were read and before they were verified (after_data: a new
 * mtime), so each is read again into the buffer its group holds while the
 * large files' pieces wait for memory.  200 rounds on each engine (raw on
 * a loop-mounted ext4 as root, uring, portable), each bounded by the
 * test's watchdog; every file's bytes and metadata equal read() and
 * stat() after the round.
 *
 * Then 50 rounds on each where every 20th small file also grows by 1 MiB
 * after its window's plan: it no longer fits its group's buffer and waits
 * for memory of its own, so the stall is broken by failing it (-ESTALE)
 * when nothing else can move; its group then gives its buffer back from
 * the dispatcher's own thread, which must go on with the waiting pieces
 * instead of sleeping (it slept, with nothing left to wake it).  A grown
 * file is -ESTALE or equal to read(); every other file equal to read().
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

#define ROUNDS 200
#define NSMALL 200
#define NFILES (NSMALL + 4)

#define GROW_EVERY 20
#define GROWN_ROUNDS 50

struct stall {
	char *paths[NFILES];
	bool grow;
	atomic_bool changed;
	int64_t round_sec;
	atomic_int hook_errors;
};

static struct stall S;

/* A small file's size as made (holes and unwritten extents past it aside:
 * those files are not grown). */
static uint64_t small_size(int i)
{
	return 16384 + (uint64_t)(i % 7) * 4096 + (uint64_t)i;
}

/* A third of the small files get a new mtime, once a round; with grow,
 * every 20th grows too. */
static void change_third(void *arg, uint32_t nfiles)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = S.round_sec } };

	if (atomic_exchange(&S.changed, true))
		return;
	for (int i = 0; i < NSMALL; i += 3)
		if (utimensat(AT_FDCWD, S.paths[i], ts, 0) < 0)
			atomic_fetch_add(&S.hook_errors, 1);
	for (int i = GROW_EVERY / 2; S.grow && i < NSMALL; i += GROW_EVERY)
		if (truncate(S.paths[i], small_size(i) + (1u << 20)) < 0)
			atomic_fetch_add(&S.hook_errors, 1);
}

/* The grown files back to their size, before a round's plan. */
static void shrink_grown(void)
{
	for (int i = GROW_EVERY / 2; i < NSMALL; i += GROW_EVERY)
		if (truncate(S.paths[i], small_size(i)) < 0)
			t_fail("truncate %s: %s", S.paths[i], strerror(errno));
}

static void make_tree(const char *dir)
{
	for (int i = 0; i < NSMALL; i++) {
		char name[32];

		snprintf(name, sizeof(name), "s%03d", i);
		S.paths[i] = t_path(dir, name);
		t_write_random(S.paths[i], small_size(i), 1000 + i);
		if (i % 10 == 1) {             /* a hole before its last bytes */
			int fd = open(S.paths[i], O_WRONLY);

			T_ASSERT(fd >= 0 && pwrite(fd, "tail", 4, 60000) == 4, "%s", S.paths[i]);
			close(fd);
		} else if (i % 10 == 2) {      /* unwritten extents past its bytes */
			int fd = open(S.paths[i], O_WRONLY);

			T_ASSERT(fd >= 0 && fallocate(fd, 0, 0, 49152) == 0, "fallocate %s", S.paths[i]);
			close(fd);
		}
	}
	S.paths[NSMALL] = t_path(dir, "large-dense");
	t_write_random(S.paths[NSMALL], (1u << 20) + 12345, 7);
	S.paths[NSMALL + 1] = t_path(dir, "large-sparse");
	{
		int fd = open(S.paths[NSMALL + 1], O_CREAT | O_WRONLY | O_TRUNC, 0644);

		T_ASSERT(fd >= 0 && pwrite(fd, "start", 5, 0) == 5 &&
			 pwrite(fd, "end", 3, (3u << 20) - 3) == 3, "sparse file");
		close(fd);
	}
	S.paths[NSMALL + 2] = t_path(dir, "large-unwritten");
	{
		int fd = open(S.paths[NSMALL + 2], O_CREAT | O_WRONLY | O_TRUNC, 0644);

		T_ASSERT(fd >= 0 && fallocate(fd, 0, 0, 2u << 20) == 0 &&
			 pwrite(fd, "middle", 6, 1u << 20) == 6, "unwritten file");
		close(fd);
	}
	S.paths[NSMALL + 3] = t_path(dir, "empty");
	t_write_bytes(S.paths[NSMALL + 3], "", 0);
	sync();
}

static bool grown(size_t i)
{
	return S.grow && i < NSMALL && i % GROW_EVERY == GROW_EVERY / 2;
}

static void rounds(int engine, const char *what, int nrounds)
{
	struct bfo_opts o;
	struct t_result *r = t_results_new(NFILES);
	struct bfo_ctx *ctx;
	char msg[96];

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.arena_bytes = 4u << 20;
	ctx = t_ctx(&o);
	bfo_test_hooks.after_plan = change_third;
	for (int round = 0; round < nrounds; round++) {
		struct bfo_stats st;

		snprintf(msg, sizeof(msg), "%s round %d", what, round);
		t_watchdog(60, msg);
		S.round_sec = 1000000000 + round;
		if (S.grow)
			shrink_grown();
		atomic_store(&S.changed, false);
		t_batch_ctx(ctx, S.paths, NFILES, r, &st, 0);
		T_EQ(atomic_load(&S.hook_errors), 0);
		for (size_t i = 0; i < NFILES; i++)
			if (!grown(i) || r[i].status != -ESTALE)
				t_expect_plain(r, S.paths, i, msg);
		/* The mix happened: changed files were read again. */
		T_ASSERT(st.fallback_files >= NSMALL / 3, "[%s] %llu files read again", msg,
			 (unsigned long long)st.fallback_files);
		t_results_free(r, NFILES);
		r = t_results_new(NFILES);
	}
	bfo_test_hooks.after_plan = NULL;
	t_results_free(r, NFILES);
	bfo_ctx_destroy(ctx);
	t_log("%s: %d rounds", what, nrounds);
}

static void both_mixes(int engine, const char *what)
{
	char grown_what[64];

	S.grow = false;
	rounds(engine, what, ROUNDS);
	snprintf(grown_what, sizeof(grown_what), "%s, files grown", what);
	S.grow = true;
	rounds(engine, grown_what, GROWN_ROUNDS);
	S.grow = false;
	shrink_grown();
}

static void free_tree(char *dir)
{
	for (int i = 0; i < NFILES; i++)
		free(S.paths[i]);
	free(dir);
}

static void run_uring(void *arg)
{
	char *dir = t_mkdtemp_in(arg);

	make_tree(dir);
	both_mixes(BFO_ENGINE_URING, "uring");
	free_tree(dir);
}

static void run_portable(void *arg)
{
	char *dir = t_mkdtemp_in(arg);

	make_tree(dir);
	both_mixes(BFO_ENGINE_PORTABLE, "portable");
	free_tree(dir);
}

static void run_raw(void *arg)
{
	const char *mnt;
	char *dir;

	(void)arg;
	if (!t_is_root())
		t_skip("raw: needs root for a loop-mounted ext4");

	mnt = t_loop_fs_or_skip("ext4", 128, NULL, NULL);
	dir = t_mkdtemp_in(mnt);
	make_tree(dir);
	both_mixes(BFO_ENGINE_RAW, "raw");
	free_tree(dir);
}

int main(void)
{
	t_init("t_stall", 1500);
	t_subtest("uring", 1200, run_uring, (void *)t_tmpdir());
	t_subtest("portable", 1200, run_portable, (void *)t_tmpdir());
	t_subtest("raw", 1200, run_raw, NULL);
	t_done();
	return 0;
}

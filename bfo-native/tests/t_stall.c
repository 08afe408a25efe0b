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
 */
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

struct stall {
	char *paths[NFILES];
	atomic_bool changed;
	int64_t round_sec;
	atomic_int hook_errors;
};

static struct stall S;

/* A third of the small files get a new mtime, once a round. */
static void change_third(void *arg, uint32_t nfiles)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = S.round_sec } };

	if (atomic_exchange(&S.changed, true))
		return;
	for (int i = 0; i < NSMALL; i += 3)
		if (utimensat(AT_FDCWD, S.paths[i], ts, 0) < 0)
			atomic_fetch_add(&S.hook_errors, 1);
}

static void make_tree(const char *dir)
{
	for (int i = 0; i < NSMALL; i++) {
		char name[32];

		snprintf(name, sizeof(name), "s%03d", i);
		S.paths[i] = t_path(dir, name);
		t_write_random(S.paths[i], 16384 + (uint64_t)(i % 7) * 4096 + (uint64_t)i, 1000 + i);
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

static void rounds(int engine, const char *what)
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
	for (int round = 0; round < ROUNDS; round++) {
		struct bfo_stats st;

		snprintf(msg, sizeof(msg), "%s round %d", what, round);
		t_watchdog(60, msg);
		S.round_sec = 1000000000 + round;
		atomic_store(&S.changed, false);
		t_batch_ctx(ctx, S.paths, NFILES, r, &st, 0);
		T_EQ(atomic_load(&S.hook_errors), 0);
		for (size_t i = 0; i < NFILES; i++)
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
	t_log("%s: %d rounds", what, ROUNDS);
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
	rounds(BFO_ENGINE_URING, "uring");
	free_tree(dir);
}

static void run_portable(void *arg)
{
	char *dir = t_mkdtemp_in(arg);

	make_tree(dir);
	rounds(BFO_ENGINE_PORTABLE, "portable");
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
	rounds(BFO_ENGINE_RAW, "raw");
	free_tree(dir);
}

int main(void)
{
	t_init("t_stall", 1800);
	t_subtest("uring", 1200, run_uring, (void *)t_tmpdir());
	t_subtest("portable", 1200, run_portable, (void *)t_tmpdir());
	t_subtest("raw", 1200, run_raw, NULL);
	t_done();
	return 0;
}

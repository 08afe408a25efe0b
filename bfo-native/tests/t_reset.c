/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_reset: a context reused through bfo_ctx_reset() serves every batch as
 * a new one would.  One context (stop-on-error, 1 MiB arena) goes through
 * batches that end in every way, each followed by a reset and a clean
 * batch that must equal read() and stat() with stats of its own:
 *  - a batch stopped by a missing file (stop-on-error must not carry over);
 *  - a batch cancelled half-way;
 *  - a batch abandoned with entries still held, 300 times (a reset that
 *    did not release them would fill the 1 MiB arena: -ENOBUFS), whose
 *    stale entries are refused by bfo_read_release() afterwards;
 *  - a reset of a context that ran nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_helpers.h"

#define N 32

static void clean_batch(struct bfo_ctx *ctx, char **paths, const char *msg)
{
	struct t_result *r = t_results_new(N);
	struct bfo_stats st;

	t_batch_ctx(ctx, paths, N, r, &st, 0);
	for (int i = 0; i < N; i++)
		t_expect_plain(r, paths, (size_t)i, msg);
	T_ASSERT(st.files == N && st.files_ok == N && st.files_failed == 0 && st.bytes == N * 16384ull,
		 "%s: stats files %llu ok %llu failed %llu bytes %llu", msg, (unsigned long long)st.files,
		 (unsigned long long)st.files_ok, (unsigned long long)st.files_failed,
		 (unsigned long long)st.bytes);
	t_results_free(r, N);
}

static void expect_zero_stats(struct bfo_ctx *ctx, const char *msg)
{
	struct bfo_stats st;

	T_OK(bfo_read_stats(ctx, &st));
	T_ASSERT(st.files == 0 && st.files_ok == 0 && st.files_failed == 0 && st.bytes == 0,
		 "%s: stats not cleared by the reset (files %llu)", msg, (unsigned long long)st.files);
}

int main(void)
{
	t_init("t_reset", 240);
	const char *dir = t_tmpdir();
	char *paths[N], *bad[N];
	struct bfo_opts o;
	struct bfo_file f[8];

	for (int i = 0; i < N; i++) {
		paths[i] = t_pathf("%s/f%02d", dir, i);
		t_write_random(paths[i], 16384, (uint64_t)i + 1);
		bad[i] = i == 0 ? t_pathf("%s/missing", dir) : paths[i];
	}
	bfo_opts_init(&o);
	o.flags = BFO_READ_STOP_ON_ERROR;
	o.arena_bytes = 1 << 20;
	o.threads = 4;
	struct bfo_ctx *ctx = t_ctx(&o);

	T_OK(bfo_ctx_reset(ctx));
	T_ASSERT(bfo_ctx_reset(NULL) == -EINVAL, "reset(NULL)");
	clean_batch(ctx, paths, "first batch");

	/* stopped by the missing file */
	{
		struct t_result *r = t_results_new(N);

		t_batch_ctx(ctx, bad, N, r, NULL, T_PARTIAL);
		t_expect_status(r, bad, 0, -ENOENT, "stopped batch");
		t_results_free(r, N);
	}
	T_OK(bfo_ctx_reset(ctx));
	expect_zero_stats(ctx, "after a stopped batch");
	clean_batch(ctx, paths, "after a stopped batch");

	/* cancelled half-way: submitted, one entry taken, cancelled, not drained */
	T_ASSERT(bfo_read_submit(ctx, (const char *const *)paths, N) == N, "submit");
	T_OK(bfo_read_finish(ctx));
	T_ASSERT(bfo_read_wait(ctx, f, 1, -1) == 1, "wait");
	T_OK(bfo_read_release(ctx, f, 1));
	T_OK(bfo_read_cancel(ctx));
	T_OK(bfo_ctx_reset(ctx));
	expect_zero_stats(ctx, "after a cancelled batch");
	clean_batch(ctx, paths, "after a cancelled batch");

	/* abandoned with entries held: 300 x 8 x 16 KiB is far beyond 1 MiB */
	for (int k = 0; k < 300; k++) {
		T_ASSERT(bfo_read_submit(ctx, (const char *const *)paths, N) == N, "submit");
		T_OK(bfo_read_finish(ctx));
		int got = 0;

		while (got < 8) {
			int n = bfo_read_wait(ctx, f + got, 8 - got, -1);

			T_ASSERT(n > 0, "wait: %d", n);
			got += n;
		}
		T_OK(bfo_ctx_reset(ctx));
		T_ASSERT(bfo_read_release(ctx, f, 8) == -EINVAL, "a stale entry was accepted after the reset");
	}
	expect_zero_stats(ctx, "after abandoned batches");
	clean_batch(ctx, paths, "after abandoned batches");
	bfo_ctx_destroy(ctx);

	for (int i = 0; i < N; i++)
		free(paths[i]);
	free(bad[0]);
	t_done();
	return 0;
}

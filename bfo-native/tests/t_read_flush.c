/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_read_flush: a batch fed in lots, each followed by bfo_read_flush(),
 * delivers every lot without bfo_read_finish(), with indices counting on
 * across lots, and each file equals read() and stat(); without a flush a
 * lot smaller than a window is not planned (-EAGAIN); the argument and
 * state checks (no batch, a finished batch, a cancelled one).  Engines
 * auto, uring and portable; default windows (65536 files, so only the
 * flush can start a lot) and 8-file windows (a lot spans several).
 * With the dispatcher kept from retiring delivered windows (a test hook:
 * what a slow machine shows for a moment), a poll still says what bfo.h
 * promises: -EAGAIN once a lot is out, -ETIME while flushed paths wait for
 * room in the lookahead, 0 once a finished batch is out (also for a new
 * batch beside such windows), and the ended batch's stats stay as they were.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx.h"
#include "test_hooks.h"
#include "t_helpers.h"

#define NFILES 300
static const unsigned lots[] = { 1, 99, 200 };  /* NFILES in all */
static char **paths;

static void take(const struct bfo_file *f, uint8_t **got, uint64_t *len, bool *done, const char *msg)
{
	uint64_t i = f->index;

	if (i >= NFILES)
		t_fail("[%s] index %llu out of range", msg, (unsigned long long)i);
	if (f->status < 0)
		t_fail("[%s] %s: %s", msg, paths[i], bfo_strerror(f->status));
	if (strcmp(f->path, paths[i]) != 0)
		t_fail("[%s] index %llu is %s, submitted %s", msg, (unsigned long long)i, f->path, paths[i]);
	if (done[i])
		t_fail("[%s] %s delivered twice", msg, paths[i]);
	if (f->offset != len[i])
		t_fail("[%s] %s: piece at %llu after %llu bytes", msg, paths[i],
		       (unsigned long long)f->offset, (unsigned long long)len[i]);
	got[i] = realloc(got[i], len[i] + f->length + 1);
	if (f->length)
		memcpy(got[i] + len[i], f->data, f->length);
	len[i] += f->length;
	if (f->flags & BFO_FILE_LAST) {
		uint8_t *plain;
		uint64_t plen;
		struct stat sb;

		done[i] = true;
		if (t_read_plain(paths[i], &plain, &plen) != 0 || stat(paths[i], &sb) != 0)
			t_fail("[%s] read() or stat() of %s failed", msg, paths[i]);
		if (plen != len[i] || (plen && memcmp(plain, got[i], plen) != 0))
			t_fail("[%s] %s: %llu bytes differ from read()'s %llu", msg, paths[i],
			       (unsigned long long)len[i], (unsigned long long)plen);
		if (f->size != (uint64_t)sb.st_size || f->ino != (uint64_t)sb.st_ino ||
		    f->mtime_sec != (int64_t)sb.st_mtim.tv_sec || f->mode != sb.st_mode)
			t_fail("[%s] %s: metadata differs from stat()", msg, paths[i]);
		free(plain);
	}
}

static void run(void *arg)
{
	const int *cfg = arg;
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_file fs[64];
	uint8_t **got = calloc(NFILES, sizeof(*got));
	uint64_t *len = calloc(NFILES, sizeof(*len));
	bool *done = calloc(NFILES, sizeof(*done));
	unsigned first = 0;
	char msg[96];
	int k;

	bfo_opts_init(&o);
	o.engine = (uint32_t)cfg[0];
	o.large_file = 16 << 10;        /* the larger files come in pieces */
	if (cfg[1])
		o.window_files = 8;
	snprintf(msg, sizeof(msg), "engine %s, %s windows", t_engine(cfg[0]), cfg[1] ? "8-file" : "default");
	ctx = t_ctx(&o);

	T_EQ(bfo_read_flush(ctx), -EINVAL);             /* no batch yet */
	for (unsigned l = 0; l < sizeof(lots) / sizeof(lots[0]); l++) {
		unsigned end = first + lots[l];

		unsigned sub = first;
		bool flushed = false;

		for (unsigned have = first; have < end;) {
			if (sub < end) {        /* the input queue holds two windows */
				k = bfo_read_submit(ctx, (const char *const *)paths + sub, end - sub);
				T_ASSERT(k >= 0, "[%s] submit: %s", msg, bfo_strerror(k));
				sub += (unsigned)k;
			}
			if (sub == end && !flushed) {
				if (!cfg[1])    /* below a window and no flush: nothing is planned */
					T_EQ(bfo_read_wait(ctx, fs, 64, 0), -EAGAIN);
				T_EQ(bfo_read_flush(ctx), 0);
				flushed = true;
			}
			k = bfo_read_wait(ctx, fs, 64, 20000);
			if (k <= 0)
				t_fail("[%s] lot %u: wait returned %d (%s) with %u of %u files delivered",
				       msg, l, k, bfo_strerror(k), have - first, lots[l]);
			for (int j = 0; j < k; j++) {
				if (fs[j].index < first || fs[j].index >= end)
					t_fail("[%s] lot %u (indices %u..%u) delivered index %llu", msg, l,
					       first, end - 1, (unsigned long long)fs[j].index);
				take(&fs[j], got, len, done, msg);
				have += (fs[j].flags & BFO_FILE_LAST) != 0;
			}
			T_EQ(bfo_read_release(ctx, fs, (unsigned)k), 0);
		}
		/* the lot is out and the batch goes on: nothing in flight */
		T_EQ(bfo_read_wait(ctx, fs, 64, 0), -EAGAIN);
		first = end;
	}
	T_EQ(first, NFILES);
	T_EQ(bfo_read_finish(ctx), 0);
	T_EQ(bfo_read_flush(ctx), 0);                   /* finished: nothing to do */
	T_EQ(bfo_read_wait(ctx, fs, 64, 20000), 0);     /* the batch ended */
	for (unsigned i = 0; i < NFILES; i++)
		T_ASSERT(done[i], "[%s] %s never delivered", msg, paths[i]);
	{
		struct bfo_stats st;

		T_EQ(bfo_read_stats(ctx, &st), 0);
		T_EQ(st.files, NFILES);
		T_EQ(st.files_ok, NFILES);
		T_ASSERT(st.windows >= 3, "[%s] %llu windows for 3 flushed lots", msg,
			 (unsigned long long)st.windows);
	}

	/* a cancelled batch refuses a flush until drained; a new batch restarts at 0 */
	T_EQ(bfo_read_submit(ctx, (const char *const *)paths, 5), 5);
	T_EQ(bfo_read_cancel(ctx), 0);
	k = bfo_read_flush(ctx);
	T_ASSERT(k == -ECANCELED || k == -EINVAL, "[%s] flush after cancel: %d", msg, k);
	while ((k = bfo_read_wait(ctx, fs, 64, 20000)) > 0)
		bfo_read_release(ctx, fs, (unsigned)k);
	T_EQ(k, 0);
	T_EQ(bfo_read_submit(ctx, (const char *const *)paths, 1), 1);
	T_EQ(bfo_read_flush(ctx), 0);
	k = bfo_read_wait(ctx, fs, 1, 20000);
	T_EQ(k, 1);
	T_EQ(fs[0].index, 0);
	bfo_read_release(ctx, fs, 1);
	bfo_ctx_destroy(ctx);
	T_EQ(bfo_read_flush(NULL), -EINVAL);
	for (unsigned i = 0; i < NFILES; i++)
		free(got[i]);
	free(got);
	free(len);
	free(done);
	t_log("%s: ok", msg);
}

static atomic_bool hold;

static bool hold_retire(void *arg)
{
	(void)arg;
	return atomic_load(&hold);
}

static void let_go(struct bfo_ctx *ctx)
{
	atomic_store(&hold, false);
	pthread_mutex_lock(&ctx->lock);
	ctx_wake_dispatcher(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

/* Take and release `want` files, each whole and well, of the lot of n paths
 * from paths[first] that has indices from idx. */
static void take_lot(struct bfo_ctx *ctx, unsigned first, unsigned idx, unsigned n,
		     unsigned want, const char *msg)
{
	struct bfo_file fs[64];

	for (unsigned have = 0; have < want;) {
		int k = bfo_read_wait(ctx, fs, 64, 20000);

		if (k <= 0)
			t_fail("[%s] wait returned %d (%s) with %u of %u files delivered", msg, k,
			       bfo_strerror(k), have, want);
		for (int j = 0; j < k; j++) {
			uint64_t i = fs[j].index;

			T_ASSERT(i >= idx && i < idx + n && fs[j].status == 0 &&
				 (fs[j].flags & BFO_FILE_LAST) && !strcmp(fs[j].path, paths[first + i - idx]),
				 "[%s] entry %llu (%s), status %d, flags %u, of lot %u..%u", msg,
				 (unsigned long long)i, fs[j].path, fs[j].status, fs[j].flags, idx, idx + n - 1);
		}
		have += (unsigned)k;
		T_EQ(bfo_read_release(ctx, fs, (unsigned)k), 0);
	}
}

/* Submit paths [first, first + n), flush (or finish), and take the first
 * `want` files of them. */
static void lot(struct bfo_ctx *ctx, unsigned first, unsigned idx, unsigned n, bool finish,
		unsigned want, const char *msg)
{
	unsigned sub = first;

	while (sub < first + n) {       /* the input queue holds two windows */
		int k = bfo_read_submit(ctx, (const char *const *)paths + sub, first + n - sub);

		T_ASSERT(k > 0, "[%s] submit: %s", msg, bfo_strerror(k));
		sub += (unsigned)k;
	}
	T_EQ(finish ? bfo_read_finish(ctx) : bfo_read_flush(ctx), 0);
	take_lot(ctx, first, idx, n, want, msg);
}

static void held(void *arg)
{
	const int *engine = arg;
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_stats st, later;
	struct bfo_file fs[4];
	char msg[96];

	bfo_opts_init(&o);
	o.engine = (uint32_t)*engine;
	o.window_files = 8;
	ctx = t_ctx(&o);
	bfo_test_hooks.hold_retire = hold_retire;
	atomic_store(&hold, true);

	/* one lot below a window, out and released: nothing in flight */
	snprintf(msg, sizeof(msg), "engine %s, retire held, lot of 5", t_engine(*engine));
	lot(ctx, 0, 0, 5, false, 5, msg);
	T_EQ(bfo_read_wait(ctx, fs, 4, 0), -EAGAIN);
	/* 8 + 8 planned beside the held window fill the lookahead; the 3
	 * flushed paths left are in flight, not a reason for -EAGAIN */
	snprintf(msg, sizeof(msg), "engine %s, retire held, lot of 19", t_engine(*engine));
	lot(ctx, 5, 5, 19, false, 16, msg);
	T_EQ(bfo_read_wait(ctx, fs, 4, 0), -ETIME);
	let_go(ctx);
	take_lot(ctx, 21, 21, 3, 3, msg);
	T_EQ(bfo_read_wait(ctx, fs, 4, 0), -EAGAIN);

	/* a finished batch ends when its last file is out */
	atomic_store(&hold, true);
	snprintf(msg, sizeof(msg), "engine %s, retire held, finished batch", t_engine(*engine));
	lot(ctx, 24, 24, 2, true, 2, msg);
	T_EQ(bfo_read_wait(ctx, fs, 4, 0), 0);
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 26);
	/* and the next batch starts at 0 beside its held windows */
	snprintf(msg, sizeof(msg), "engine %s, retire held, next batch", t_engine(*engine));
	lot(ctx, 30, 0, 3, true, 3, msg);
	T_EQ(bfo_read_wait(ctx, fs, 4, 0), 0);
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 3);
	T_EQ(st.files_ok, 3);
	T_ASSERT(st.ns_data <= st.ns_total && st.ns_meta <= st.ns_total,
		 "[%s] meta %llu and data %llu ns of %llu", msg, (unsigned long long)st.ns_meta,
		 (unsigned long long)st.ns_data, (unsigned long long)st.ns_total);
	/* retiring the ended batch's windows leaves its stats as they were */
	let_go(ctx);
	for (bool busy = true; busy;) {
		pthread_mutex_lock(&ctx->lock);
		busy = ctx->active != NULL;
		pthread_mutex_unlock(&ctx->lock);
		if (busy)
			usleep(1000);
	}
	T_OK(bfo_read_stats(ctx, &later));
	T_ASSERT(!memcmp(&st, &later, sizeof(st)), "[%s] stats changed after the batch ended "
		 "(data %llu -> %llu ns)", msg, (unsigned long long)st.ns_data,
		 (unsigned long long)later.ns_data);
	bfo_ctx_destroy(ctx);
	t_log("engine %s, retire held: ok", t_engine(*engine));
}

int main(void)
{
	t_init("t_read_flush", 300);

	const char *dir = t_tmpdir();
	uint64_t seed = 7;

	paths = calloc(NFILES, sizeof(*paths));
	for (int i = 0; i < NFILES; i++) {
		paths[i] = t_pathf("%s/f%03d", dir, i);
		t_write_random(paths[i], i % 10 == 0 ? 0 : t_rand_range(&seed, 1, 40 << 10), 500 + (uint64_t)i);
	}
	for (int e = 0; e < 3; e++) {
		for (int w = 0; w < 2; w++) {
			int cfg[2] = { t_engines_nonraw[e], w };
			char name[64];

			snprintf(name, sizeof(name), "%s, %s windows", t_engine(cfg[0]), w ? "8-file" : "default");
			t_subtest(name, 60, run, cfg);
		}
		char name[64];

		snprintf(name, sizeof(name), "%s, retire held", t_engine(t_engines_nonraw[e]));
		t_subtest(name, 60, held, (void *)&t_engines_nonraw[e]);
	}
	t_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_arena: small arenas.  The arena is a ring reclaimed in allocation
 * order; with an arena of a few MiB (window_bytes and large_file shrink with
 * it), a mix of small files (read in groups, one chunk per group) and files
 * above large_file (read in pieces, one chunk per piece), and a caller that
 * holds each wait's entries until its next wait (releasing them on
 * -ENOBUFS), every batch must complete: bfo_read_wait() never blocks for
 * good while the caller holds nothing, and every file equals read() and
 * stat().  Then a consumer that holds a random number of entries and
 * releases random ones out of order (holes in the middle of the ring),
 * across several windows: -ENOBUFS only while it holds something, never a
 * hang, every entry's bytes right while held.  Each configuration runs in
 * its own process with a watchdog.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "t_helpers.h"

#define NFILES 400
#define LARGE_FILE (64u << 10)

static char *paths[NFILES];
static uint8_t *plain[NFILES];
static uint64_t plain_len[NFILES];

struct conf {
	int engine;
	unsigned arena_mb, threads;
};

static void run_one(void *arg)
{
	const struct conf *c = arg;
	struct bfo_opts o;
	struct bfo_stats st;
	struct t_result *r = t_results_new(NFILES);
	char msg[128];

	bfo_opts_init(&o);
	o.engine = (uint32_t)c->engine;
	o.arena_bytes = (uint64_t)c->arena_mb << 20;
	o.large_file = LARGE_FILE;
	o.threads = c->threads;
	snprintf(msg, sizeof(msg), "engine %s, arena %u MiB, %u threads", t_engine(c->engine),
		 c->arena_mb, c->threads);
	t_batch(&o, paths, NFILES, r, &st);
	for (int i = 0; i < NFILES; i++)
		t_expect_plain(r, paths, (size_t)i, msg);
	t_log("%s: ok (%llu windows)", msg, (unsigned long long)st.windows);
	t_results_free(r, NFILES);
}

struct chaos {
	int engine;
	unsigned arena_mb, window_files, max_hold;
	uint64_t seed;
};

static void check_entry(const struct bfo_file *f, uint64_t *next_off, const char *msg)
{
	uint64_t x = f->index;

	T_ASSERT(x < NFILES, "[%s] index %llu", msg, (unsigned long long)x);
	T_ASSERT(f->status == 0, "[%s] %s: %s", msg, f->path, bfo_strerror(f->status));
	T_ASSERT(f->size == plain_len[x] && f->offset == next_off[x] &&
		 f->offset + f->length <= plain_len[x], "[%s] %s: piece %llu+%llu of %llu, expected offset %llu",
		 msg, f->path, (unsigned long long)f->offset, (unsigned long long)f->length,
		 (unsigned long long)f->size, (unsigned long long)next_off[x]);
	T_ASSERT(f->length == 0 || memcmp(f->data, plain[x] + f->offset, f->length) == 0,
		 "[%s] %s: bytes at %llu differ from read()", msg, f->path, (unsigned long long)f->offset);
}

static void chaos_one(void *arg)
{
	const struct chaos *c = arg;
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_file *held = calloc(c->max_hold + 64, sizeof(*held)), f[64];
	uint64_t next_off[NFILES] = { 0 }, seed = c->seed, done = 0;
	unsigned nheld = 0, nobufs = 0;
	char msg[160];
	int k;

	bfo_opts_init(&o);
	o.engine = (uint32_t)c->engine;
	o.arena_bytes = (uint64_t)c->arena_mb << 20;
	o.large_file = LARGE_FILE;
	if (c->window_files)
		o.window_files = c->window_files;
	snprintf(msg, sizeof(msg), "random holding: engine %s, arena %u MiB, window %u, hold <= %u",
		 t_engine(c->engine), c->arena_mb, c->window_files, c->max_hold);
	ctx = t_ctx(&o);
	size_t next = 0;
	bool finished = false;

	for (;;) {
		if (next < NFILES) {
			k = bfo_read_submit(ctx, (const char *const *)paths + next, (unsigned)(NFILES - next));
			T_ASSERT(k >= 0, "[%s] submit %d", msg, k);
			next += (size_t)k;
		}
		if (next == NFILES && !finished) {
			T_OK(bfo_read_finish(ctx));
			finished = true;
		}
		k = bfo_read_wait(ctx, f, (unsigned)t_rand_range(&seed, 1, 64), -1);
		if (k == -EAGAIN && !finished)
			continue;
		if (k == -ENOBUFS) {
			T_ASSERT(nheld > 0, "[%s] -ENOBUFS while holding nothing", msg);
			nobufs++;
			/* give back a random part, at least one, out of order */
			unsigned give = (unsigned)t_rand_range(&seed, 1, nheld);

			for (unsigned i = 0; i < give; i++) {
				unsigned j = (unsigned)(t_rand(&seed) % nheld);

				T_OK(bfo_read_release(ctx, &held[j], 1));
				held[j] = held[--nheld];
			}
			continue;
		}
		T_ASSERT(k >= 0, "[%s] wait %d (%s)", msg, k, bfo_strerror(k));
		if (k == 0)
			break;
		for (int i = 0; i < k; i++) {
			check_entry(&f[i], next_off, msg);
			next_off[f[i].index] += f[i].length;
			if (f[i].flags & BFO_FILE_LAST) {
				T_ASSERT(next_off[f[i].index] == plain_len[f[i].index], "[%s] %s short", msg, f[i].path);
				done++;
			}
			held[nheld++] = f[i];
		}
		/* keep a random number of entries, release random others */
		unsigned keep = (unsigned)t_rand_range(&seed, 0, c->max_hold);

		while (nheld > keep) {
			unsigned j = (unsigned)(t_rand(&seed) % nheld);

			/* still intact while held */
			T_ASSERT(held[j].length == 0 ||
				 memcmp(held[j].data, plain[held[j].index] + held[j].offset, held[j].length) == 0,
				 "[%s] %s: bytes changed while held", msg, held[j].path);
			T_OK(bfo_read_release(ctx, &held[j], 1));
			held[j] = held[--nheld];
		}
	}
	for (unsigned i = 0; i < nheld; i++)
		T_ASSERT(held[i].length == 0 ||
			 memcmp(held[i].data, plain[held[i].index] + held[i].offset, held[i].length) == 0,
			 "[%s] %s: bytes changed while held", msg, held[i].path);
	T_OK(bfo_read_release(ctx, held, nheld));
	T_EQ(done, NFILES);
	bfo_ctx_destroy(ctx);
	free(held);
	t_log("%s: ok (%u times -ENOBUFS)", msg, nobufs);
}

int main(void)
{
	t_init("t_arena", 290);

	const char *dir = t_tmpdir();
	uint64_t seed = 42;

	for (int i = 0; i < NFILES; i++) {
		uint64_t kind = t_rand(&seed) % 10, size;

		if (kind < 3)
			size = t_rand_range(&seed, LARGE_FILE + 1, 300 << 10);
		else
			size = t_rand_range(&seed, 1, 32 << 10);
		paths[i] = t_pathf("%s/f%04d", dir, i);
		t_write_random(paths[i], size, (uint64_t)i);
		if (t_read_plain(paths[i], &plain[i], &plain_len[i]))
			t_fail("read %s", paths[i]);
	}
	static const struct conf confs[] = {
		{ BFO_ENGINE_PORTABLE, 1, 8 },
		{ BFO_ENGINE_PORTABLE, 1, 2 },
		{ BFO_ENGINE_PORTABLE, 2, 16 },
		{ BFO_ENGINE_PORTABLE, 4, 4 },
		{ BFO_ENGINE_URING, 1, 8 },
		{ BFO_ENGINE_URING, 2, 2 },
		{ BFO_ENGINE_AUTO, 1, 8 },
	};
	for (size_t i = 0; i < sizeof(confs) / sizeof(confs[0]); i++) {
		char name[96];

		snprintf(name, sizeof(name), "engine %s, arena %u MiB, %u threads",
			 t_engine(confs[i].engine), confs[i].arena_mb, confs[i].threads);
		t_subtest(name, 20, run_one, (void *)&confs[i]);
	}
	static const struct chaos ch[] = {
		{ BFO_ENGINE_PORTABLE, 1, 0, 8, 1 },
		{ BFO_ENGINE_PORTABLE, 2, 32, 100, 2 },
		{ BFO_ENGINE_URING, 1, 0, 8, 3 },
		{ BFO_ENGINE_URING, 2, 32, 100, 4 },
		{ BFO_ENGINE_AUTO, 1, 16, 30, 5 },
		{ BFO_ENGINE_PORTABLE, 1, 16, 0, 6 },
	};
	for (size_t i = 0; i < sizeof(ch) / sizeof(ch[0]); i++) {
		char name[128];

		snprintf(name, sizeof(name), "random holding: engine %s, arena %u MiB, window %u, hold <= %u",
			 t_engine(ch[i].engine), ch[i].arena_mb, ch[i].window_files, ch[i].max_hold);
		t_subtest(name, 20, chaos_one, (void *)&ch[i]);
	}
	for (int i = 0; i < NFILES; i++) {
		free(paths[i]);
		free(plain[i]);
	}
	t_done();
	return 0;
}

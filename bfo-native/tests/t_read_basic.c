/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_read_basic: a random tree of a few hundred files (0..300 KiB, some exact
 * multiples of 4096, some above a small opts.large_file so they arrive in
 * pieces) read with the engines auto, uring and portable, with default and
 * with small windows/groups/queues: every file equals read() and stat(), and
 * the statistics agree with what was delivered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t_helpers.h"

#define NFILES 400
#define LARGE_FILE (64u << 10)

struct sub {
	int cfg, engine;
};

#define NCFG 5
static const char *cfg_names[NCFG] = {
	"defaults", "16-file windows, 256 KiB groups, queue depth 2, 1 thread",
	"physical order, queue depth 256, 16 threads", "1-file windows, queue depth 1, 1 thread",
	"1 MiB arena",
};
static char **paths;
static uint64_t total;

static void run_one(void *arg)
{
	const struct sub *a = arg;
	int cfg = a->cfg, engine = a->engine;
	struct t_result *r = t_results_new(NFILES);
	struct bfo_opts o;
	struct bfo_stats st;
	char msg[160];

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.large_file = LARGE_FILE;
	if (cfg == 1) {
		/* many windows, many groups, few I/Os in flight */
		o.window_files = 16;
		o.window_bytes = 256 << 10;
		o.queue_depth = 2;
		o.threads = 1;
	} else if (cfg == 2) {
		o.order = BFO_ORDER_PHYSICAL;
		o.queue_depth = 256;
		o.threads = 16;
	} else if (cfg == 3) {
		/* one file per window, one I/O at a time */
		o.window_files = 1;
		o.queue_depth = 1;
		o.threads = 1;
		o.order = BFO_ORDER_INODE;
	} else if (cfg == 4) {
		/* the smallest arena: the ring wraps all the time and the
		 * runner meets -ENOBUFS while it holds entries */
		o.arena_bytes = 1 << 20;
	}
	snprintf(msg, sizeof(msg), "engine %s, config %d (%s)", t_engine(engine), cfg, cfg_names[cfg]);
	t_batch(&o, paths, NFILES, r, &st);
	for (int i = 0; i < NFILES; i++) {
		t_expect_plain(r, paths, (size_t)i, msg);
		if (engine == BFO_ENGINE_PORTABLE && r[i].engine != BFO_ENGINE_PORTABLE &&
		    r[i].engine != BFO_ENGINE_NONE)
			t_fail("[%s] %s read by engine %s", msg, paths[i], t_engine(r[i].engine));
		if (engine == BFO_ENGINE_URING && r[i].engine == BFO_ENGINE_RAW)
			t_fail("[%s] %s read by engine raw", msg, paths[i]);
		uint64_t want = r[i].size > LARGE_FILE ? (r[i].size + LARGE_FILE - 1) / LARGE_FILE : 1;

		if (r[i].pieces != want)
			t_fail("[%s] %s: %llu bytes in %u piece(s), expected %llu (large_file %u)", msg,
			       paths[i], (unsigned long long)r[i].size, r[i].pieces,
			       (unsigned long long)want, LARGE_FILE);
	}
	T_EQ(st.files, NFILES);
	T_EQ(st.files_ok, NFILES);
	T_EQ(st.files_failed, 0);
	T_EQ(st.bytes, total);
	if (engine == BFO_ENGINE_PORTABLE) {
		T_ASSERT((st.engines & ~((1u << BFO_ENGINE_PORTABLE) | (1u << BFO_ENGINE_NONE))) == 0,
			 "[%s] engines 0x%x", msg, st.engines);
		T_EQ(st.engine, BFO_ENGINE_PORTABLE);
	}
	if (engine == BFO_ENGINE_URING)
		T_ASSERT(st.files_by_engine[BFO_ENGINE_URING] > 0, "[%s] no file read by uring", msg);
	if (cfg == 3)
		T_EQ(st.windows, NFILES);
	if (cfg == 1)
		T_ASSERT(st.windows > 1, "[%s] %llu windows with window_files 16", msg,
			 (unsigned long long)st.windows);
	t_log("%s: ok (engine %s, %llu I/Os, %llu windows)", msg, t_engine((int)st.engine),
	      (unsigned long long)st.ios, (unsigned long long)st.windows);
	t_results_free(r, NFILES);
}

int main(void)
{
	t_init("t_read_basic", 300);

	const char *dir = t_tmpdir();
	uint64_t seed = 42, nlarge = 0, nzero = 0, naligned = 0;

	paths = calloc(NFILES, sizeof(*paths));

	for (int d = 0; d < 8; d++) {
		char *sub = t_pathf("%s/d%d", dir, d);

		if (mkdir(sub, 0755) < 0)
			t_fail("mkdir %s", sub);
		free(sub);
	}
	for (int i = 0; i < NFILES; i++) {
		uint64_t size;
		uint64_t kind = t_rand(&seed) % 10;

		if (i < 4)
			size = 0;
		else if (kind < 2)
			size = 4096 * t_rand_range(&seed, 1, 75);          /* exact pages */
		else if (kind < 3)
			size = t_rand_range(&seed, LARGE_FILE + 1, 300 << 10);  /* pieces */
		else if (kind < 4)
			size = t_rand_range(&seed, 1, 100);
		else if (kind < 5)
			size = t_rand_range(&seed, 1, 300 << 10);
		else
			size = t_rand_range(&seed, 1, 32 << 10);
		if (i == 4)
			size = LARGE_FILE;             /* exactly at the threshold: one piece */
		if (i == 5)
			size = LARGE_FILE + 1;         /* one byte over: two pieces */
		if (i == 6)
			size = 3 * LARGE_FILE;         /* an exact number of pieces */
		paths[i] = t_pathf("%s/d%d/f%04d", dir, i % 8, i);
		t_write_random(paths[i], size, 1000 + (uint64_t)i);
		total += size;
		nlarge += size > LARGE_FILE;
		nzero += size == 0;
		naligned += size && size % 4096 == 0;
	}
	t_log("%d files, %llu bytes, %llu empty, %llu page multiples, %llu above large_file %u",
	      NFILES, (unsigned long long)total, (unsigned long long)nzero,
	      (unsigned long long)naligned, (unsigned long long)nlarge, LARGE_FILE);

	for (int cfg = 0; cfg < NCFG; cfg++) {
		for (int ei = 0; ei < 3; ei++) {
			struct sub a = { cfg, t_engines_nonraw[ei] };
			char name[96];

			snprintf(name, sizeof(name), "engine %s, config %d (%s)", t_engine(a.engine), cfg,
				 cfg_names[cfg]);
			t_subtest(name, 60, run_one, &a);
		}
	}
	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	free(paths);
	t_done();
	return 0;
}

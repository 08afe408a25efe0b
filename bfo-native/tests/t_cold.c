/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cold: cold-cache reads.  As root, a loop-mounted ext4 with a few
 * thousand small files: for each engine (auto, raw, uring in inode and
 * physical order, portable) the caches are dropped, the batch is read, and
 * then, in a separate pass, every file is compared with read() and stat().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t_helpers.h"

#if T_ASAN
#define NFILES 800
#else
#define NFILES 4000
#endif

int main(void)
{
	t_init("t_cold", 300);
	if (!t_is_root())
		t_skip("not root: loop devices and drop_caches need root");
	if (!t_drop_caches())
		t_skip("drop_caches refused");
	if (T_ASAN)
		t_log("sanitizer build: %d files instead of 4000", NFILES);

	const char *mnt = t_loop_fs_or_skip("ext4", 256, NULL, NULL);
	char **paths = calloc(NFILES, sizeof(*paths));
	uint64_t seed = 17;

	for (int d = 0; d < 40; d++) {
		char *p = t_pathf("%s/dir%02d", mnt, d);

		if (mkdir(p, 0755) < 0)
			t_fail("mkdir %s: %s", p, strerror(errno));
		free(p);
	}
	for (int i = 0; i < NFILES; i++) {
		paths[i] = t_pathf("%s/dir%02d/file%05d", mnt, (int)(t_rand(&seed) % 40), i);
		t_write_random(paths[i], t_rand_range(&seed, 1, 16384), (uint64_t)i);
	}

	static const struct { int engine, order; const char *name; } runs[] = {
		{ BFO_ENGINE_AUTO, BFO_ORDER_AUTO, "auto" },
		{ BFO_ENGINE_RAW, BFO_ORDER_AUTO, "raw" },
		{ BFO_ENGINE_URING, BFO_ORDER_INODE, "uring, inode order" },
		{ BFO_ENGINE_URING, BFO_ORDER_PHYSICAL, "uring, physical order" },
		{ BFO_ENGINE_PORTABLE, BFO_ORDER_AUTO, "portable" },
	};
	struct t_result *r = t_results_new(NFILES);

	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct bfo_opts o;
		struct bfo_stats st;
		char msg[96];

		bfo_opts_init(&o);
		o.engine = (uint32_t)runs[k].engine;
		o.order = (uint32_t)runs[k].order;
		snprintf(msg, sizeof(msg), "cold, engine %s", runs[k].name);
		if (!t_drop_caches())
			t_fail("drop_caches refused");
		t_watchdog(120, msg);
		t_batch(&o, paths, NFILES, r, &st);
		/* separate pass: the plain path, after the batch */
		for (int i = 0; i < NFILES; i++)
			t_expect_plain(r, paths, (size_t)i, msg);
		if (runs[k].engine == BFO_ENGINE_RAW)
			T_EQ(st.engine, BFO_ENGINE_RAW);
		if (runs[k].engine == BFO_ENGINE_URING)
			T_EQ(st.engine, BFO_ENGINE_URING);
		if (runs[k].engine == BFO_ENGINE_PORTABLE)
			T_EQ(st.engine, BFO_ENGINE_PORTABLE);
		t_log("%s: ok (engine %s, %llu I/Os, %llu regions)", msg, t_engine((int)st.engine),
		      (unsigned long long)st.ios, (unsigned long long)st.regions);
		for (int i = 0; i < NFILES; i++) {
			free(r[i].data);
			r[i].data = NULL;
		}
	}
	t_results_free(r, NFILES);
	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	free(paths);
	t_log("PASS");
	return 0;
}

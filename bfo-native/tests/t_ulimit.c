/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_ulimit: with RLIMIT_NOFILE's soft limit at 256, 5,000 files read with
 * every engine (and raw on a loop-mounted ext4 when root), with the default
 * options and with many threads and a deep queue, all equal read() and
 * stat(): the library bounds its descriptors (no -EMFILE per file).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "t_helpers.h"

#define NFILES 5000
#define NOFILE 256

static char *paths[NFILES];

static void make(const char *dir)
{
	uint64_t seed = 11;

	for (int d = 0; d < 10; d++) {
		char *sub = t_pathf("%s/d%d", dir, d);

		if (mkdir(sub, 0755) < 0)
			t_fail("mkdir %s: %s", sub, strerror(errno));
		free(sub);
	}
	for (int i = 0; i < NFILES; i++) {
		free(paths[i]);
		paths[i] = t_pathf("%s/d%d/f%04d", dir, i % 10, i);
		t_write_random(paths[i], t_rand_range(&seed, 1, 8192), (uint64_t)i);
	}
}

static void check(int engine, int cfg, const char *where)
{
	struct bfo_opts o;
	struct bfo_stats st;
	struct t_result *r = t_results_new(NFILES);
	char msg[128];

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	if (cfg) {
		o.threads = 64;
		o.queue_depth = 1024;
		o.window_files = 1000;
	}
	snprintf(msg, sizeof(msg), "%s, engine %s, %s", where, t_engine(engine),
		 cfg ? "64 threads, queue depth 1024" : "defaults");
	t_watchdog(120, msg);
	t_batch(&o, paths, NFILES, r, &st);
	for (int i = 0; i < NFILES; i++)
		t_expect_plain(r, paths, (size_t)i, msg);
	if (engine == BFO_ENGINE_RAW)
		T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] > 0, "[%s] no file read raw", msg);
	t_log("%s: ok (engine %s, %d fds open now)", msg, t_engine((int)st.engine), t_open_fds());
	t_results_free(r, NFILES);
}

int main(void)
{
	struct rlimit rl;

	t_init("t_ulimit", 300);
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		t_fail("getrlimit: %s", strerror(errno));
	rl.rlim_cur = NOFILE;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE)
		rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		t_fail("setrlimit: %s", strerror(errno));
	t_log("RLIMIT_NOFILE soft limit %llu, %d descriptors open", (unsigned long long)rl.rlim_cur,
	      t_open_fds());

	/* The loop file system first (mounting needs no descriptors later). */
	const char *mnt = NULL;
	char why[2048] = "not root";

	if (t_is_root())
		mnt = t_loop_fs("ext4", 128, NULL, NULL, why, sizeof(why));
	make(t_tmpdir());
	for (int cfg = 0; cfg < 2; cfg++)
		for (int ei = 0; ei < 3; ei++)
			check(t_engines_nonraw[ei], cfg, "tmp dir");
	if (mnt) {
		make(mnt);
		for (int cfg = 0; cfg < 2; cfg++) {
			check(BFO_ENGINE_RAW, cfg, "loop ext4");
			check(BFO_ENGINE_AUTO, cfg, "loop ext4");
		}
	} else {
		t_log("raw on loop ext4 not checked: %s", why);
	}
	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	t_log("PASS");
	return 0;
}

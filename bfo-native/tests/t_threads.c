/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_threads: contexts are independent.  Six threads, each with its own
 * context (engines auto, uring, portable, two each), read the same files
 * several times at once; meanwhile another thread polls bfo_read_stats()
 * on every context (safe while a batch runs) and checks the counters are
 * consistent (delivered <= submitted).  Every file equals read() and stat().
 */
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t_helpers.h"

#define NFILES 600
#define NTHREADS 6
#define ROUNDS 3

static char *paths[NFILES];
static struct bfo_ctx *ctxs[NTHREADS];
static atomic_bool stop_polling;
static atomic_int polls;

static void *reader(void *arg)
{
	int t = (int)(intptr_t)arg;
	struct t_result *r = t_results_new(NFILES);
	char msg[64];

	snprintf(msg, sizeof(msg), "thread %d, engine %s", t, t_engine(t_engines_nonraw[t % 3]));
	for (int round = 0; round < ROUNDS; round++) {
		t_batch_ctx(ctxs[t], paths, NFILES, r, NULL, 0);
		for (int i = 0; i < NFILES; i++) {
			t_expect_plain(r, paths, (size_t)i, msg);
			free(r[i].data);
			r[i].data = NULL;
		}
	}
	t_results_free(r, NFILES);
	return NULL;
}

static void *poller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_polling)) {
		for (int t = 0; t < NTHREADS; t++) {
			struct bfo_stats st;

			T_OK(bfo_read_stats(ctxs[t], &st));
			T_ASSERT(st.files_ok + st.files_failed <= st.files || st.files == 0,
				 "stats: %llu ok + %llu failed of %llu files", (unsigned long long)st.files_ok,
				 (unsigned long long)st.files_failed, (unsigned long long)st.files);
			T_ASSERT(st.files_ok <= NFILES, "files_ok %llu", (unsigned long long)st.files_ok);
			atomic_fetch_add(&polls, 1);
		}
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(void)
{
	t_init("t_threads", 300);

	const char *dir = t_tmpdir();
	uint64_t seed = 99;
	pthread_t th[NTHREADS], pt;

	for (int i = 0; i < NFILES; i++) {
		paths[i] = t_pathf("%s/f%04d", dir, i);
		t_write_random(paths[i], t_rand_range(&seed, 0, i % 20 ? 20000 : 400000), (uint64_t)i);
	}
	for (int t = 0; t < NTHREADS; t++) {
		struct bfo_opts o;

		bfo_opts_init(&o);
		o.engine = (uint32_t)t_engines_nonraw[t % 3];
		o.large_file = 128 << 10;
		o.window_files = t < 3 ? 64 : 0;
		o.threads = 4;
		ctxs[t] = t_ctx(&o);
	}
	T_ASSERT(pthread_create(&pt, NULL, poller, NULL) == 0, "pthread_create");
	for (int t = 0; t < NTHREADS; t++)
		T_ASSERT(pthread_create(&th[t], NULL, reader, (void *)(intptr_t)t) == 0, "pthread_create");
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	atomic_store(&stop_polling, true);
	pthread_join(pt, NULL);
	for (int t = 0; t < NTHREADS; t++)
		bfo_ctx_destroy(ctxs[t]);
	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	t_log("%d threads x %d batches of %d files: ok (%d stats polls)", NTHREADS, ROUNDS, NFILES,
	      atomic_load(&polls));
	t_log("PASS");
	return 0;
}

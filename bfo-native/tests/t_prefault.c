/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_prefault: the arena's pages are populated ahead of use on the pool,
 * lazily and bounded.  A context with a 256 MiB arena, before any batch:
 * its resident memory does not grow by the arena (nothing is populated
 * before the first allocation); after a batch of 32 x 4 KiB files it has
 * grown by a few MiB at most (populating starts at one huge page ahead and
 * grows with what the arena handed out); after a large batch by no more
 * than the 32 MiB populated ahead plus what was used.  Then batches whose
 * data goes round the whole ring while pages are still being populated
 * ahead of the copies: every file equals read() and stat().  Destroying a
 * context while it populates returns at once, 20 times over.  Skipped
 * where the kernel lacks MADV_POPULATE_WRITE (5.14), which the arena then
 * does without.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "t_helpers.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define NFILES 600
#define SMALL 32
/* Stacks of the threads started, no arena; under ASan also the shadow and
 * redzones of the context's own allocations (1.2 MiB seen).  An arena
 * populated at all would be megabytes past either. */
#define IDLE_SLACK_KB (T_ASAN ? 4u << 10 : 1u << 10)
#define SMALL_SLACK_KB (8u << 10)   /* a huge page ahead, the touched ones, slack */

/* Transparent huge pages "always" (6.1 in the VM; madvise on this
 * machine): a thread's stack may then be faulted in 2 MiB at a time, so
 * each thread the context starts (its pool, the dispatcher) may make
 * 2 MiB resident without any arena page. */
static unsigned thp_stack_kb(unsigned threads)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return strstr(buf, "[always]") ? threads * (2u << 10) : 0;
}

static bool kernel_populates(void)
{
	void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok = p != MAP_FAILED && madvise(p, 1 << 20, MADV_POPULATE_WRITE) == 0;

	if (p != MAP_FAILED)
		munmap(p, 1 << 20);
	return ok;
}

int main(void)
{
	t_init("t_prefault", 240);
	if (!kernel_populates())
		t_skip("madvise(MADV_POPULATE_WRITE) refused (kernel before 5.14): the arena faults pages on use");

	const char *dir = t_tmpdir();
	char *paths[NFILES], *small[SMALL];
	uint64_t seed = 7, total = 0;

	for (int i = 0; i < NFILES; i++) {
		uint64_t size = t_rand_range(&seed, 1, 900 << 10);

		paths[i] = t_pathf("%s/f%04d", dir, i);
		t_write_random(paths[i], size, (uint64_t)i + 100);
		total += size;
	}
	for (int i = 0; i < SMALL; i++) {
		small[i] = t_pathf("%s/s%02d", dir, i);
		t_write_random(small[i], 4096, (uint64_t)i + 7000);
	}

	struct bfo_opts o;
	long before, now;

	bfo_opts_init(&o);
	o.arena_bytes = 256ull << 20;
	o.threads = 2;
	before = t_rss_kb();
	T_ASSERT(before > 0, "no VmRSS in /proc/self/status");
	struct bfo_ctx *ctx = t_ctx(&o);

	usleep(300 * 1000);     /* time to populate, were it eager */
	now = t_rss_kb();
	unsigned stacks = thp_stack_kb(o.threads + 1);

	t_log("idle context, arena 256 MiB: resident memory +%ld KiB (%u KiB allowed for stacks in huge "
	      "pages)", now - before, stacks);
	T_ASSERT(now - before <= IDLE_SLACK_KB + stacks,
		 "an idle context made %ld KiB resident: its arena was populated before any use", now - before);

	{
		struct t_result *r = t_results_new(SMALL);
		struct bfo_stats st;
		unsigned slack = SMALL_SLACK_KB + stacks;

		t_batch_ctx(ctx, small, SMALL, r, &st, 0);
		for (int i = 0; i < SMALL; i++)
			t_expect_plain(r, small, (size_t)i, "small batch");
		t_results_free(r, SMALL);
		/* where the raw engine read them (a VM's scratch disk; not this
		 * machine's /tmp, whose device root cannot open), its region
		 * buffers came too: at most 32 MiB, pinned (dispatch_ring.c, RBUF_BUDGET),
		 * not the arena's */
		if (st.files_by_engine[BFO_ENGINE_RAW])
			slack += 33u << 10;
		usleep(300 * 1000);
		now = t_rss_kb();
		t_log("after %d files (%llu raw): resident memory +%ld KiB", SMALL,
		      (unsigned long long)st.files_by_engine[BFO_ENGINE_RAW], now - before);
		T_ASSERT(now - before <= slack, "a %d-file batch made %ld KiB resident, more than %u KiB", SMALL,
			 now - before, slack);
	}

	/* About 260 MiB per batch through a 256 MiB ring, three times: every
	 * page is populated ahead of, or concurrently with, the copies. */
	for (int round = 0; round < 3; round++) {
		struct t_result *r = t_results_new(NFILES);
		char msg[64];

		snprintf(msg, sizeof(msg), "round %d (%llu MiB)", round, (unsigned long long)(total >> 20));
		t_watchdog(120, msg);
		t_batch_ctx(ctx, paths, NFILES, r, NULL, 0);
		for (int i = 0; i < NFILES; i++)
			t_expect_plain(r, paths, (size_t)i, msg);
		t_results_free(r, NFILES);
	}
	bfo_ctx_destroy(ctx);

	t_watchdog(60, "destroying contexts while they populate");
	for (int k = 0; k < 20; k++)
		bfo_ctx_destroy(t_ctx(&o));

	for (int i = 0; i < NFILES; i++)
		free(paths[i]);
	for (int i = 0; i < SMALL; i++)
		free(small[i]);
	t_done();
	return 0;
}

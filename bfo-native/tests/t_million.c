/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_million: one batch of 1,000,000 paths (2,000 distinct small files of
 * 16..512 bytes, each path 500 times, interleaved) streams through with
 * bounded memory and descriptors: every entry is delivered exactly once
 * with the bytes read() gives (checked by hash as results arrive, not
 * stored), peak RSS (VmHWM) stays under 512 MiB and the process's open
 * descriptors, sampled every 10,000 results, stay under 1,024.
 * Under ASan: 100,000 paths and no RSS check (the sanitizer's shadow
 * memory and quarantine are not the library's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t_helpers.h"

#define NDISTINCT 2000u
#if T_ASAN
#define NPATHS 100000u
#else
#define NPATHS 1000000u
#endif
#define RSS_LIMIT_KB (512l * 1024)
#define FD_LIMIT 1024
#define WAIT_MAX 256u

int main(void)
{
	t_init("t_million", 300);
	if (T_ASAN)
		t_log("sanitizer build: %u paths instead of 1,000,000, RSS limit not checked", NPATHS);

	const char *dir = t_tmpdir();
	char **distinct = calloc(NDISTINCT, sizeof(*distinct));
	uint64_t *hash = calloc(NDISTINCT, sizeof(*hash)), *size = calloc(NDISTINCT, sizeof(*size));
	uint64_t seed = 7, total = 0;

	for (unsigned d = 0; d < 20; d++) {
		char *sub = t_pathf("%s/d%02u", dir, d);

		if (mkdir(sub, 0755) < 0)
			t_fail("mkdir %s: %s", sub, strerror(errno));
		free(sub);
	}
	for (unsigned i = 0; i < NDISTINCT; i++) {
		distinct[i] = t_pathf("%s/d%02u/file-%04u", dir, i % 20, i);
		t_write_random(distinct[i], t_rand_range(&seed, 16, 512), i);
		if (t_hash_file(distinct[i], &hash[i], &size[i]))
			t_fail("read %s", distinct[i]);
	}

	const char **paths = malloc(NPATHS * sizeof(*paths));
	uint8_t *seen = calloc(NPATHS / 8 + 1, 1);

	if (!paths || !seen)
		t_fail("out of memory");
	for (unsigned i = 0; i < NPATHS; i++) {
		paths[i] = distinct[i % NDISTINCT];
		total += size[i % NDISTINCT];
	}

	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_file *f = calloc(WAIT_MAX, sizeof(*f));
	uint64_t next = 0, got = 0, next_sample = 0, bytes = 0;
	int max_fds = 0, k;
	bool finished = false;

	bfo_opts_init(&o);
	ctx = t_ctx(&o);
	t_watchdog(280, "the million-path batch");
	for (;;) {
		while (next < NPATHS) {
			unsigned want = (unsigned)(NPATHS - next < 65536 ? NPATHS - next : 65536);

			k = bfo_read_submit(ctx, paths + next, want);
			if (k < 0)
				t_fail("submit: %s", bfo_strerror(k));
			next += (uint64_t)k;
			if ((unsigned)k < want)
				break;
		}
		if (next == NPATHS && !finished) {
			T_OK(bfo_read_finish(ctx));
			finished = true;
		}
		k = bfo_read_wait(ctx, f, WAIT_MAX, -1);
		if (k == -EAGAIN && !finished)
			continue;
		if (k < 0)
			t_fail("wait: %d (%s) after %llu results", k, bfo_strerror(k),
			       (unsigned long long)got);
		if (k == 0)
			break;
		for (int i = 0; i < k; i++) {
			uint64_t x = f[i].index;
			unsigned d = (unsigned)(x % NDISTINCT);

			if (x >= NPATHS)
				t_fail("index %llu", (unsigned long long)x);
			if (seen[x / 8] & (1u << (x % 8)))
				t_fail("index %llu delivered twice", (unsigned long long)x);
			seen[x / 8] |= (uint8_t)(1u << (x % 8));
			if (f[i].status != 0)
				t_fail("index %llu (%s): %s", (unsigned long long)x, paths[x],
				       bfo_strerror(f[i].status));
			if (!(f[i].flags & BFO_FILE_LAST) || f[i].offset != 0 ||
			    f[i].length != size[d] || f[i].size != size[d])
				t_fail("index %llu (%s): offset %llu length %llu size %llu flags %u, "
				       "read() gives %llu bytes", (unsigned long long)x, paths[x],
				       (unsigned long long)f[i].offset, (unsigned long long)f[i].length,
				       (unsigned long long)f[i].size, f[i].flags,
				       (unsigned long long)size[d]);
			if (strcmp(f[i].path, paths[x]) != 0)
				t_fail("index %llu: path %s, submitted %s", (unsigned long long)x,
				       f[i].path, paths[x]);
			if (t_hash(f[i].data, f[i].length) != hash[d])
				t_fail("index %llu (%s): bytes differ from read()", (unsigned long long)x,
				       paths[x]);
			bytes += f[i].length;
		}
		T_OK(bfo_read_release(ctx, f, (unsigned)k));
		got += (uint64_t)k;
		if (got >= next_sample) {
			int fds = t_open_fds();

			if (fds > max_fds)
				max_fds = fds;
			if (fds >= FD_LIMIT)
				t_fail("%d open descriptors after %llu results", fds,
				       (unsigned long long)got);
			next_sample += 10000;
		}
	}

	struct bfo_stats st;

	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(got, NPATHS);
	T_EQ(st.files, NPATHS);
	T_EQ(st.files_ok, NPATHS);
	T_EQ(st.files_failed, 0);
	T_EQ(st.bytes, total);
	T_EQ(bytes, total);
	bfo_ctx_destroy(ctx);

	long rss = t_rss_peak_kb();

	t_log("%u paths, %llu bytes, engine %s, %llu windows, peak RSS %ld KiB, at most %d fds",
	      NPATHS, (unsigned long long)total, t_engine((int)st.engine),
	      (unsigned long long)st.windows, rss, max_fds);
	T_ASSERT(rss > 0, "no VmHWM");
	if (!T_ASAN && rss >= RSS_LIMIT_KB)
		t_fail("peak RSS %ld KiB, limit %ld KiB", rss, RSS_LIMIT_KB);

	for (unsigned i = 0; i < NDISTINCT; i++)
		free(distinct[i]);
	free(distinct);
	free(hash);
	free(size);
	free(paths);
	free(seen);
	free(f);
	t_log("PASS");
	return 0;
}

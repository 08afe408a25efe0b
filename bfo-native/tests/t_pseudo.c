/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_pseudo: files whose st_size is not their size (procfs: 0, sysfs: 4096)
 * are read to EOF, as read() until it returns 0 (cat, xxh128sum, cp) reads
 * them.
 *
 *  - Stable pseudo files (/proc/version, /proc/sys/kernel/ostype and
 *    osrelease, sysfs attributes, /proc/kallsyms when two plain reads of it
 *    agree: megabytes, so the buffer grows several times) are read through
 *    each engine (auto, raw, uring, portable): status 0, the bytes of
 *    read() to EOF, size == the bytes delivered, the portable engine (never
 *    raw, never mapped).
 *  - With large_file 64 KiB, a pseudo file above it fails with -EFBIG (the
 *    memory cap), and the small ones are still read.
 *  - `bfo cp` of those files into a directory equals `cp` of them
 *    (names, types, sizes, bytes).
 * Skipped (77) when none of the candidates is readable and stable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_wutil.h"

#define NCAND 8
#define SMALL_CAP (64u << 10)

static const char *const candidates[NCAND] = {
	"/proc/version",
	"/proc/sys/kernel/ostype",
	"/proc/sys/kernel/osrelease",
	"/sys/kernel/mm/transparent_hugepage/enabled",
	"/sys/kernel/mm/transparent_hugepage/hpage_pmd_size",
	"/sys/devices/system/cpu/possible",
	"/sys/module/kernel/parameters/panic",
	"/proc/kallsyms",
};

static char *paths[NCAND];
static uint8_t *want[NCAND];
static uint64_t want_len[NCAND];
static size_t npaths;

/* Candidates that read() to EOF gives twice alike, with their bytes. */
static void pick(void)
{
	for (size_t i = 0; i < NCAND; i++) {
		uint8_t *a = NULL, *b = NULL;
		uint64_t la = 0, lb = 0;

		if (t_read_plain(candidates[i], &a, &la) || t_read_plain(candidates[i], &b, &lb) ||
		    la == 0 || la != lb || memcmp(a, b, la)) {
			t_log("%s: not readable or not stable, not used", candidates[i]);
			free(a);
			free(b);
			continue;
		}
		free(b);
		paths[npaths] = (char *)candidates[i];
		want[npaths] = a;
		want_len[npaths++] = la;
	}
}

static void check_engine(int engine)
{
	struct bfo_opts o;
	struct t_result *r = t_results_new(npaths);
	char what[64];

	bfo_opts_init(&o);
	o.engine = engine;
	snprintf(what, sizeof(what), "engine %s", t_engine(engine));
	t_batch(&o, paths, npaths, r, NULL);
	for (size_t i = 0; i < npaths; i++) {
		TW_CHECK(r[i].status == 0, "[%s] %s: status %d (%s)", what, paths[i], r[i].status,
			 bfo_strerror(r[i].status));
		TW_CHECK(r[i].len == want_len[i] && r[i].size == want_len[i] &&
			 (!r[i].len || !memcmp(r[i].data, want[i], r[i].len)),
			 "[%s] %s: %llu bytes (size %llu), read() gives %llu", what, paths[i],
			 (unsigned long long)r[i].len, (unsigned long long)r[i].size,
			 (unsigned long long)want_len[i]);
		TW_CHECK(r[i].engine == BFO_ENGINE_PORTABLE, "[%s] %s: delivered by %s", what,
			 paths[i], t_engine(r[i].engine));
	}
	t_results_free(r, npaths);
	t_log("%s: %zu pseudo files equal read() to EOF", what, npaths);
}

static void check_cap(void)
{
	struct bfo_opts o;
	struct t_result *r = t_results_new(npaths);
	int big = 0;

	bfo_opts_init(&o);
	o.large_file = SMALL_CAP;
	t_batch(&o, paths, npaths, r, NULL);
	for (size_t i = 0; i < npaths; i++) {
		if (want_len[i] > SMALL_CAP) {
			TW_CHECK(r[i].status == -EFBIG, "[large_file 64 KiB] %s (%llu bytes): status %d",
				 paths[i], (unsigned long long)want_len[i], r[i].status);
			big++;
		} else {
			TW_CHECK(r[i].status == 0 && r[i].len == want_len[i] &&
				 !memcmp(r[i].data, want[i], r[i].len),
				 "[large_file 64 KiB] %s: status %d, %llu bytes", paths[i], r[i].status,
				 (unsigned long long)r[i].len);
		}
	}
	t_results_free(r, npaths);
	t_log("large_file 64 KiB: %d pseudo file(s) above it failed with -EFBIG", big);
}

static void check_cp(const char *tmp)
{
	char *dst = t_path(tmp, "bfo"), *ref = t_path(tmp, "cp");
	char *argv[NCAND + 4];
	struct tw_run r;
	char msg[4096];
	int n = 0;

	tw_mkdirs(dst);
	tw_mkdirs(ref);
	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	for (size_t i = 0; i < npaths; i++)
		argv[n++] = paths[i];
	argv[n++] = dst;
	argv[n] = NULL;
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	TW_CHECK(r.status == 0 && r.err_len == 0, "[bfo cp] exit %d, stderr: %s", r.status, r.err);
	tw_run_free(&r);
	argv[0] = "cp";
	for (int k = 1; k < n - 1; k++)
		argv[k] = argv[k + 1];
	argv[n - 2] = ref;
	argv[n - 1] = NULL;
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 0, "cp: %s", r.err);
	tw_run_free(&r);
	int nd = tw_tree_diff(ref, dst, 0, NULL, msg, sizeof(msg));

	TW_CHECK(nd == 0, "[bfo cp] %d differences from cp: %s", nd, msg);
	t_log("bfo cp of %zu pseudo files: compared with cp", npaths);
	free(dst);
	free(ref);
}

int main(void)
{
	static const int engines[] = { BFO_ENGINE_AUTO, BFO_ENGINE_RAW, BFO_ENGINE_URING,
				       BFO_ENGINE_PORTABLE };

	t_init("t_pseudo", 120);
	pick();
	if (!npaths)
		t_skip("no stable, readable pseudo file among the candidates (no /proc or /sys?)");
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++)
		check_engine(engines[i]);
	check_cap();
	check_cp(t_tmpdir());
	tw_checks_end();
	t_log("PASS");
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_crash: SIGKILL the writer at random points, then recover.
 *
 * On a loop-mounted ext4 (batched engine) and a loop-mounted XFS (the
 * stem engine, by name: auto is batched there too), a stream of about
 * 2,000 files (0 bytes to 512 KiB, one of 20 MiB that is written in
 * pieces, symbolic links, directories) is written
 * with `bfo write --batch-files 300 --batch-bytes 4M` (several batches per
 * run), `bfo write --write-engine uring`, or copied from a plain tree with `bfo cp -a`.
 * Each destination already holds files of its own: some elsewhere, some at
 * paths the stream also writes (bfo write must refuse those, -EEXIST; bfo
 * cp replaces them, since they differ from the source, atomically).
 * First one run to the end (everything written; bfo write exits 1 naming
 * exactly the pre-existing paths, bfo cp 0), which also gives the duration
 * T; then 30 runs per
 * file system are killed with SIGKILL: even runs after a random delay in
 * [0, 1.1 T], odd runs when the k-th batch's manifest (k random in 1..5)
 * has just appeared plus a random 0-3 ms (inside a batch for sure; a fixed
 * seed picks everything), and recovered with `bfo recover DIR`, or, every
 * fourth run, by opening a new writer (`bfo write DIR < /dev/null`).
 * After recovery:
 *  - every file of the input is absent or complete: its exact size, bytes,
 *    mode and mtime; every symlink absent or with its exact target;
 *  - no .bfo-tmp.* anywhere, no .bfo-journal;
 *  - the files that were there before are untouched (inode, ctime, mtime,
 *    mode, bytes), those at the stream's paths included (bfo cp: or
 *    replaced by their new version, complete);
 *  - nothing else appeared (no file or link outside the input);
 *  - recovery itself exits 0.
 * At least one run per file system must have left an unfinished batch
 * (a manifest) for recovery to act on.
 * And once per file system, deterministically: `bfo write` is killed
 * while it waits on stdin between the pieces of a large file (its first
 * piece written and its batch finished): recovery must leave no temporary
 * either.
 * Under ASan fewer runs and files (said in the output).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t_wutil.h"

#if T_ASAN
#define NFILES 600
#define NRUNS 8
#else
#define NFILES 2000
#define NRUNS 30
#endif
#define BIGSIZE ((20u << 20) + 333)
#define NPRE 6                    /* pre-existing files at the stream's paths */

static struct tw_input *in;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ runs */

enum mode { M_WRITE, M_URING, M_CP };
static const char *mode_name[] = { "bfo write", "bfo write --write-engine uring", "bfo cp -a" };

/* stem: `bfo write` (not uring) takes the stem engine (XFS) */
static pid_t start(enum mode m, const char *dir, const char *log, bool stem)
{
	static char dst[PATH_MAX];

	if (m == M_CP) {
		snprintf(dst, sizeof(dst), "%s/c", dir);
		char *argv[] = { BFO_CLI, "cp", "-a", (char *)tw_input_src(in), dst, NULL };

		return tw_spawn(argv, NULL, log);
	}
	snprintf(dst, sizeof(dst), "%s", dir);
	if (m == M_URING) {
		char *argv[] = { BFO_CLI, "write", "--batch-files", "300", "--batch-bytes", "4M", "--write-engine", "uring",
				 dst, NULL };

		return tw_spawn(argv, (char *)tw_input_stream(in), log);
	}
	char *argv[] = { BFO_CLI, "write", "--batch-files", "300", "--batch-bytes", "4M",
			 "--write-engine", stem ? "stem" : "auto", dst, NULL };

	return tw_spawn(argv, (char *)tw_input_stream(in), log);
}

static const char *prefix_of(enum mode m)
{
	return m == M_CP ? "c/src/" : "";
}

struct fsarg {
	const char *mnt;
	const char *name;
};

static void crash_runs(void *arg)
{
	const struct fsarg *fa = arg;
	char *log = t_pathf("%s/log", fa->mnt);
	uint64_t seed = 77, t_full = 0;
	int unfinished = 0, killed_mid = 0, total_present = 0, auto_rec = 0;
	struct tw_run r;

	/* one complete run first: the reference duration and a sanity check */
	for (int m = 0; m < 3; m++) {
		char *dir = t_pathf("%s/full%d", fa->mnt, m);

		tw_mkdirs(dir);
		if (m == M_CP)
			tw_mkdirs(tw_fmt("%s/c", dir));
		tw_input_pre_create(in, dir, prefix_of((enum mode)m));
		struct tw_snap *pre = tw_snapshot(dir);

		tw_settle();
		uint64_t t0 = now_ns();
		int st = tw_wait(start((enum mode)m, dir, log, !strcmp(fa->name, "xfs")));
		uint64_t t = now_ns() - t0;
		int present;

		if (m == M_WRITE)
			t_full = t;
		/* bfo write refuses the pre-existing files (exit 1); bfo cp
		 * replaces them, as they differ from the source (exit 0) */
		TW_CHECK(st == (m == M_CP ? 0 : 1), "[%s %s, uninterrupted] exit %d (expected %d)",
			 fa->name, mode_name[m], st, m == M_CP ? 0 : 1);
		tw_input_replaceable(in, m == M_CP);
		int bad = tw_input_check(in, dir, prefix_of((enum mode)m), pre, mode_name[m], &present);
		int expect = m == M_CP ? tw_input_count(in) : tw_input_expected(in);
		TW_CHECK(bad == 0 && present == expect, "[%s %s, uninterrupted] %d of %d files present",
			 fa->name, mode_name[m], present, expect);
		t_log("%s: %s uninterrupted: %d files in %.2f s", fa->name, mode_name[m], present, (double)t / 1e9);
		tw_snap_free(pre);
		t_sh("rm -rf '%s'", dir);
		free(dir);
	}
	unlink(log);
	for (int run = 0; run < NRUNS; run++) {
		enum mode m = (enum mode)(run % 3);
		char *dir = t_pathf("%s/run%02d", fa->mnt, run);
		uint64_t delay = t_rand(&seed) % (t_full + t_full / 10 + 1);
		bool at_manifest = run % 2 == 1;
		unsigned kth = 1 + (unsigned)(t_rand(&seed) % 5);
		uint64_t extra = t_rand(&seed) % 3000000;

		t_watchdog(120, tw_fmt("%s run %d", fa->name, run));
		tw_mkdirs(dir);
		if (m == M_CP)
			tw_mkdirs(tw_fmt("%s/c", dir));
		tw_input_pre_create(in, dir, prefix_of(m));
		struct tw_snap *pre = tw_snapshot(dir);

		tw_settle();
		pid_t pid = start(m, dir, log, !strcmp(fa->name, "xfs"));
		/* the writer's root: bfo cp into the existing DIR/c writes there */
		char *wroot = m == M_CP ? t_pathf("%s/c", dir) : strdup(dir);
		int st = 0;
		bool reaped = false;

		if (at_manifest) {
			reaped = !tw_wait_manifest(pid, wroot, kth);
			delay = extra;
		}
		tw_sleep_ns(delay);
		if (!reaped) {
			kill(pid, SIGKILL);
			st = tw_wait(pid);
		}
		int nm = tw_manifests(wroot, NULL, 0);

		killed_mid += st == 128 + SIGKILL;
		unfinished += nm > 0;
		bool by_writer = run % 4 == 3;

		if (by_writer) {
			/* a new writer on the same root recovers on open */
			char *argv[] = { BFO_CLI, "write", wroot, NULL };

			tw_run(&r, "", 0, (uid_t)-1, (gid_t)-1, argv);
			auto_rec++;
		} else {
			char *argv[] = { BFO_CLI, "recover", wroot, NULL };

			tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		}
		TW_CHECK(r.status == 0, "[%s run %d] %s exit %d: %s", fa->name, run,
			 by_writer ? "bfo write (recovery on open)" : "bfo recover", r.status, r.err);
		if (nm && !by_writer)
			TW_CHECK(strstr(r.out, "unfinished batch") && !strstr(r.out, " 0 unfinished"),
				 "[%s run %d] a manifest was left but bfo recover says: %s", fa->name, run, r.out);
		tw_run_free(&r);
		int present;
		char what[160];

		snprintf(what, sizeof(what), "%s run %d: %s killed %s%.3f s%s, %s", fa->name, run,
			 mode_name[m], at_manifest ? tw_fmt("when batch %u began + ", kth) : "after ",
			 (double)delay / 1e9, st == 128 + SIGKILL ? "" : " (had exited)",
			 by_writer ? "recovered by a new writer" : "bfo recover");
		tw_input_replaceable(in, m == M_CP);
		int bad = tw_input_check(in, dir, prefix_of(m), pre, what, &present);

		total_present += present;
		if (bad)
			t_log("%s: %d problems (%d manifests were left)", what, bad, nm);
		tw_snap_free(pre);
		t_sh("rm -rf '%s'", dir);
		free(dir);
		free(wroot);
	}
	unlink(log);
	t_log("%s: %d runs (%d killed mid-run, %d left an unfinished batch, %d recovered by a new writer), "
	      "%d complete files found in all%s", fa->name, NRUNS, killed_mid, unfinished, auto_rec,
	      total_present, T_ASAN ? " (fewer runs and files under ASan)" : "");
	TW_CHECK(unfinished > 0, "[%s] no run was killed inside a batch: the recovery path was not tested",
		 fa->name);
	free(log);
	tw_checks_end();
}

/* Killed while reading stdin between the two pieces of a big file. */
static void between_pieces(void *arg)
{
	const struct fsarg *fa = arg;
	char *dir = t_pathf("%s/pieces", fa->mnt);
	uint64_t size = (40u << 20) + 7;
	uint8_t *data = malloc(size);
	int p[2];
	struct tw_run r;
	char msg[2048];

	t_fill_random(data, size, 4);
	tw_mkdirs(dir);
	if (pipe(p) < 0)
		t_fail("pipe");
	fflush(stdout);
	pid_t pid = fork();

	if (pid == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		alarm(0);
		execl(BFO_CLI, BFO_CLI, "write", "--batch-bytes", "1M", dir, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	const char *hdr = tw_fmt("f 644 1000000000 %llu big\n", (unsigned long long)size);

	if (write(p[1], hdr, strlen(hdr)) < 0)
		t_fail("write");
	/* the first 16 MiB piece and a little more, then nothing */
	size_t sent = 0, want = (16u << 20) + 4096;

	while (sent < want) {
		ssize_t k = write(p[1], data + sent, want - sent);

		if (k <= 0)
			t_fail("write to bfo write: %s", strerror(errno));
		sent += (size_t)k;
	}
	/* wait until the first piece's batch is over: a temporary exists and
	 * no manifest is left (bfo write now waits for the next piece) */
	t_watchdog(300, tw_fmt("%s: the first piece's batch", fa->name));
	for (;;) {
		char l[512];

		if (tw_list_prefix(dir, ".bfo-tmp.", l, sizeof(l)) > 0 && tw_manifests(dir, NULL, 0) == 0)
			break;
		tw_sleep_ns(5 * 1000000);
	}
	tw_sleep_ns(50 * 1000000);
	T_ASSERT(tw_manifests(dir, NULL, 0) == 0, "[%s] a batch is still running", fa->name);
	kill(pid, SIGKILL);
	tw_wait(pid);
	close(p[1]);
	char *argv[] = { BFO_CLI, "recover", dir, NULL };

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	TW_CHECK(r.status == 0, "[%s] bfo recover: exit %d", fa->name, r.status);
	tw_run_free(&r);
	TW_CHECK(!tw_exists(tw_fmt("%s/big", dir)), "[%s] the unfinished big file exists", fa->name);
	int n = tw_leftovers(dir, true, msg, sizeof(msg));

	TW_CHECK(n == 0, "[%s] killed between two pieces of a file (no batch running), recovery left: %s "
		 "(the temporary of a file in pieces is in no manifest between batches)", fa->name, msg);
	char *argv2[] = { BFO_CLI, "write", dir, NULL };

	tw_run(&r, "", 0, (uid_t)-1, (gid_t)-1, argv2);
	n = tw_leftovers(dir, true, msg, sizeof(msg));
	TW_CHECK(n == 0, "[%s] ... and a new writer left it too: %s", fa->name, msg);
	tw_run_free(&r);
	t_log("%s: killed between the pieces of a big file: %s", fa->name, n ? "temporary left" : "clean");
	t_sh("rm -rf '%s'", dir);
	free(dir);
	free(data);
	tw_checks_end();
}

int main(void)
{
	t_init("t_crash", 1200);
	if (!t_is_root())
		t_skip("not root: the crash tests need loop devices");
	umask(022);

	const char *tmp = t_tmpdir();
	char why[2048];
	static struct fsarg fs[2];
	int nfs = 0;

	in = tw_input_make(tmp, NFILES, BIGSIZE, true, NPRE);
	t_log("input: %d entries (one file of %u bytes, written in pieces), %d runs per file system%s",
	      tw_input_count(in), BIGSIZE, NRUNS, T_ASAN ? " (scaled down under ASan)" : "");
	const char *ext4 = t_loop_fs("ext4", 256, NULL, NULL, why, sizeof(why));

	if (ext4)
		fs[nfs++] = (struct fsarg){ ext4, "ext4" };
	else
		t_log("SIGKILL on ext4 SKIPPED: %s", why);
	const char *xfs = t_loop_fs("xfs", 400, NULL, NULL, why, sizeof(why));

	if (xfs)
		fs[nfs++] = (struct fsarg){ xfs, "xfs" };
	else
		t_log("SIGKILL on XFS SKIPPED: %s", why);
	if (!nfs)
		t_skip("no loop file system could be made");
	for (int i = 0; i < nfs; i++) {
		t_subtest(tw_fmt("crash %s", fs[i].name), 1000, crash_runs, &fs[i]);
		t_subtest(tw_fmt("between pieces %s", fs[i].name), 120, between_pieces, &fs[i]);
	}
	tw_input_free(in);
	t_done();
	return 0;
}

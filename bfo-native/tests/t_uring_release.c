/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_uring_release: the uring engine leaves nothing open when it returns.
 *
 * On Linux 6.1 a file taken out of io_uring's registered table is put a
 * second later by a worker, so files read through direct descriptors kept
 * the file system busy after `bfo read --engine uring` exited ("umount:
 * target is busy").  The engine asks the kernel (dispatch_ring.c, removal_deferred)
 * and opens ordinary descriptors where removal is late.  Both sides are
 * run on every kernel: the engine's own choice, and the ordinary
 * descriptors forced (bfo_test_hooks.uring_plain_fds).
 *
 * On an ext4 loop file system: batches read by the uring engine in this
 * process (bytes and metadata against read() and stat()), then, with the
 * context freed, no descriptor of ours inside it and an unmount that must
 * succeed at once (no retry); then `bfo read --engine uring|raw|portable
 * --checksum` as a process of its own, its lines against xxh128sum's, and
 * the unmount right after it exited.  The real test is on 6.1
 * (scripts/vm-run, label vm); on newer kernels it checks the same contract.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"
#include "test_hooks.h"

#define NFILES 300

static char dev[PATH_MAX], fstype[32];
static const char *mnt;
static char *paths[NFILES];
static unsigned checks;

/* The device and type mounted at mnt (from /proc/self/mounts). */
static void find_dev(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char d[PATH_MAX], m[PATH_MAX], t[32];

	T_ASSERT(f, "/proc/self/mounts: %s", strerror(errno));
	while (fscanf(f, "%4095s %4095s %31s %*[^\n]", d, m, t) == 3)
		if (!strcmp(m, mnt)) {
			snprintf(dev, sizeof(dev), "%s", d);
			snprintf(fstype, sizeof(fstype), "%s", t);
		}
	fclose(f);
	T_ASSERT(dev[0], "%s is not in /proc/self/mounts", mnt);
	/* held open: the loop device (autoclear) stays between unmount and mount */
	T_ASSERT(open(dev, O_RDONLY | O_CLOEXEC) >= 0, "%s: %s", dev, strerror(errno));
}

/* Descriptors of this process that point inside mnt. */
static int fds_inside(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char p[300], target[PATH_MAX];
	size_t ml = strlen(mnt);
	int n = 0;

	T_ASSERT(d, "/proc/self/fd: %s", strerror(errno));
	while ((de = readdir(d))) {
		ssize_t k;

		snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
		k = readlink(p, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = 0;
		if (!strncmp(target, mnt, ml) && (target[ml] == '/' || !target[ml])) {
			t_log("still open: fd %s -> %s", de->d_name, target);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* Unmount at once (a failure is the defect this test is about), mount again. */
static void umount_now(const char *after)
{
	T_ASSERT(umount2(mnt, 0) == 0, "umount %s right after %s: %s", mnt, after, strerror(errno));
	T_ASSERT(mount(dev, mnt, fstype, 0, NULL) == 0, "mount %s again: %s", dev, strerror(errno));
	checks++;
}

static void read_in_process(bool plain)
{
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct t_result *r = t_results_new(NFILES);
	struct bfo_stats st;
	const char *msg = plain ? "uring, ordinary descriptors forced" : "uring, the engine's choice";

	bfo_test_hooks.uring_plain_fds = plain;
	t_drop_caches();
	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_URING;
	ctx = t_ctx(&o);
	for (int round = 0; round < 2; round++) {   /* two batches on one context */
		t_batch_ctx(ctx, paths, NFILES, r, &st, 0);
		T_ASSERT(st.files_by_engine[BFO_ENGINE_URING] == NFILES, "[%s] %llu of %d files by uring",
			 msg, (unsigned long long)st.files_by_engine[BFO_ENGINE_URING], NFILES);
		for (size_t i = 0; i < NFILES; i++) {
			t_expect_plain(r, paths, i, msg);
			checks++;
		}
		t_results_free(r, NFILES);
		r = t_results_new(NFILES);
	}
	bfo_ctx_destroy(ctx);
	T_ASSERT(fds_inside() == 0, "[%s] descriptors inside %s after bfo_ctx_destroy", msg, mnt);
	umount_now(tw_fmt("bfo_ctx_destroy (%s)", msg));
	t_results_free(r, NFILES);
	bfo_test_hooks.uring_plain_fds = false;
}

static void read_by_command(const char *engine, const char *plain_sums)
{
	struct tw_run r;
	char *dir = t_pathf("%s/d", mnt);

	t_drop_caches();
	tw_runl(&r, BFO_CLI, "read", "--engine", engine, "--checksum", dir, (char *)NULL);
	T_ASSERT(r.status == 0, "bfo read --engine %s: exit %d: %s", engine, r.status, r.err);
	umount_now(tw_fmt("bfo read --engine %s exited", engine));
	/* its lines, sorted, against xxh128sum's */
	char *sorted = t_pathf("%s/bfo-%s.txt", t_tmpdir(), engine);
	FILE *f = fopen(sorted, "w");

	T_ASSERT(f, "%s: %s", sorted, strerror(errno));
	fputs(r.out, f);
	fclose(f);
	T_ASSERT(t_sh("sort -k2 -o '%s' '%s' && cmp -s '%s' '%s'", sorted, sorted, sorted, plain_sums) == 0,
		 "bfo read --engine %s --checksum differs from xxh128sum (%s, %s)", engine, sorted, plain_sums);
	checks++;
	tw_run_free(&r);
	free(sorted);
	free(dir);
}

int main(void)
{
	struct utsname u;
	uint64_t seed = 53;

	t_init("t_uring_release", 600);
	if (!t_is_root())
		t_skip("not root: the test mounts and unmounts a loop file system");
	if (!t_have_prog("xxh128sum"))
		t_skip("xxh128sum is not installed (xxhash)");
	mnt = t_loop_fs_or_skip("ext4", 64, "", NULL);
	find_dev();
	uname(&u);
	t_log("kernel %s; %s at %s (%s)", u.release, fstype, mnt, dev);
	t_sh("mkdir '%s/d'", mnt);
	for (int i = 0; i < NFILES; i++) {
		paths[i] = t_pathf("%s/d/f%03d", mnt, i);
		t_write_random(paths[i], t_rand_range(&seed, 0, 40000), seed + (uint64_t)i);
	}
	char *plain_sums = t_pathf("%s/plain.txt", t_tmpdir());

	T_ASSERT(t_sh("cd / && find '%s/d' -type f -print0 | xargs -0 xxh128sum | sort -k2 > '%s'", mnt,
		      plain_sums) == 0, "xxh128sum of the plain files");
	sync();
	read_in_process(false);
	read_in_process(true);
	for (int k = 0; k < 3; k++)         /* the late close took about a second on 6.1 */
		read_by_command("uring", plain_sums);
	read_by_command("raw", plain_sums);
	read_by_command("portable", plain_sums);
	T_ASSERT(checks >= 2 * 2 * NFILES + 2 * 2 + 5, "only %u checks made", checks);
	t_log("%u checks: files read against read()/stat(), unmounts right after each read", checks);
	free(plain_sums);
	t_done();
	return 0;
}

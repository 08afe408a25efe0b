/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_powercut: a power cut in the middle of `bfo write`, with dm-flakey.
 *
 * A loop device carries a dm-flakey device (all writes pass) holding an
 * ext4, then an XFS.  Files of the destination's own are written and made
 * durable (syncfs).  `bfo write` (batch durability, several batches) writes
 * a stream of 800 files (one of 20 MiB, in pieces); after a random delay
 * (odd runs: when the k-th batch's manifest appeared, k random in 1..3,
 * plus 0-3 ms, so that the cut falls inside a batch) the table is switched
 * to drop_writes (from then on nothing reaches the
 * device: the moment of the cut), the writer is killed, the file system
 * unmounted (its last writes dropped too), the table switched back, the
 * block device's cache dropped, the file system mounted again (journal
 * replay) and `bfo recover` run.  The invariant is t_crash's: every input
 * file absent or complete with its metadata, no temporaries, no journal,
 * the durable files from before untouched, nothing else.
 *
 * T_POWERCUT_NO_DM=1 in the environment runs the same flow without
 * device-mapper (the file system directly on the loop device, the "cut"
 * being only the kill and the unmount): a check of this test's own logic
 * on machines without dm-flakey; it proves nothing about durability.
 *
 * Where device-mapper answers, a file system whose flakey device cannot be
 * set up (no dm-flakey, no /dev/mapper node: no udev, so `dmsetup
 * mknodes` is run) fails the test, and a run that made no cut never
 * passes.  Skipped (exit 77) with the reason when device-mapper
 * or dmsetup is not available (this kernel has no device-mapper:
 * /dev/mapper/control cannot be opened).  Everything it sets up (mount,
 * dm device, loop device, image) is undone on exit, failure and fatal
 * signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/dm-ioctl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t_wutil.h"

#if T_ASAN
#define NFILES 300
#define NRUNS 3
#else
#define NFILES 800
#define NRUNS 6
#endif
#define BIG ((20u << 20) + 99)
#define IMAGE_MB 512u

static char dm_name[64], dm_dev[128], loopdev[64], mnt[PATH_MAX];
static volatile sig_atomic_t dm_created, mounted;
static uint64_t sectors;
static bool no_dm;                  /* T_POWERCUT_NO_DM: self-check without dm */

/* ------------------------------------------------------------ cleanup */

static void spawn_wait(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* Unmount and remove the dm device (the loop device and the image are
 * t_helpers' cleanups, run after this one). */
static void pc_cleanup(void)
{
	if (mounted) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int k = 0;

		while (umount2(mnt, 0) < 0 && errno == EBUSY && k++ < 30)
			nanosleep(&ts, NULL);
		if (k > 30)
			umount2(mnt, MNT_DETACH);
		mounted = 0;
	}
	if (dm_created) {
		char *resume[] = { "dmsetup", "resume", dm_name, NULL };
		char *rm[] = { "dmsetup", "remove", "--retry", dm_name, NULL };

		spawn_wait(resume);    /* a suspended device cannot be removed */
		spawn_wait(rm);
		dm_created = 0;
	}
}

static struct sigaction old_sa[32];
static const int fatal_sigs[] = { SIGALRM, SIGINT, SIGTERM, SIGHUP, SIGABRT,
#if !T_ASAN
	SIGSEGV, SIGBUS, SIGFPE, SIGILL,
#endif
};

static void on_fatal(int sig)
{
	alarm(60);
	pc_cleanup();
	/* then t_helpers' handler: message, its cleanups, exit */
	sigaction(sig, &old_sa[sig], NULL);
	raise(sig);
}

static void install_cleanup(void)
{
	struct sigaction sa = { .sa_handler = on_fatal };

	sigemptyset(&sa.sa_mask);
	atexit(pc_cleanup);         /* before t_helpers' (atexit is LIFO) */
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		sigaction(fatal_sigs[i], &sa, &old_sa[fatal_sigs[i]]);
}

/* ------------------------------------------------------------ dm */

static int sh_quiet(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh_quiet(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	struct tw_run r;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	int st = r.status;

	if (st)
		t_log("`%s` exit %d: %s%s", cmd, st, r.err, r.out);
	tw_run_free(&r);
	return st;
}

static void why_not(void)
{
	int fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		t_skip("device-mapper is not available: /dev/mapper/control: %s (a kernel without "
		       "CONFIG_BLK_DEV_DM, or no access); the power-cut test needs dm-flakey", strerror(errno));
	struct dm_ioctl dmi = { .version = { DM_VERSION_MAJOR, 0, 0 }, .data_size = sizeof(dmi) };

	if (ioctl(fd, DM_VERSION, &dmi) < 0) {
		int e = errno;

		close(fd);
		t_skip("device-mapper does not answer (DM_VERSION: %s)", strerror(e));
	}
	close(fd);
	if (!t_have_prog("dmsetup"))
		t_skip("dmsetup is not installed");
	if (!t_have_prog("mkfs.ext4") && !t_have_prog("mkfs.xfs"))
		t_skip("neither mkfs.ext4 nor mkfs.xfs");
}

/* The table: writes pass (up) or are dropped (down, drop_writes). */
static int dm_table(bool drop)
{
	if (no_dm)
		return 0;
	if (sh_quiet("dmsetup suspend --nolockfs %s", dm_name))
		return -1;
	if (sh_quiet(drop ? "dmsetup load %s --table '0 %llu flakey %s 0 0 180 1 drop_writes'" :
			    "dmsetup load %s --table '0 %llu flakey %s 0 180 0'",
		     dm_name, (unsigned long long)sectors, loopdev)) {
		sh_quiet("dmsetup resume %s", dm_name);
		return -1;
	}
	return sh_quiet("dmsetup resume %s", dm_name);
}

static void set_autoclear(const char *dev)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC);
	struct loop_info64 li;

	if (fd < 0)
		return;
	if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
		li.lo_flags |= LO_FLAGS_AUTOCLEAR;
		ioctl(fd, LOOP_SET_STATUS64, &li);
	}
	close(fd);
}

/* A fresh image, loop device, flakey device and file system of type fs,
 * mounted at mnt.  Returns false with a logged reason when not possible. */
static bool setup(const char *fs)
{
	char img[PATH_MAX];
	struct tw_run r;
	int fd;

	snprintf(img, sizeof(img), "/var/tmp/bfo-t-pc-%s-XXXXXX.img", fs);
	fd = mkstemps(img, 4);
	if (fd < 0)
		t_fail("mkstemps: %s", strerror(errno));
	t_cleanup_unlink(img);
	if (ftruncate(fd, (off_t)IMAGE_MB << 20) < 0)
		t_fail("ftruncate: %s", strerror(errno));
	close(fd);
	char *la[] = { "losetup", "--find", "--show", img, NULL };

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, la);
	if (r.status || strncmp(r.out, "/dev/", 5)) {
		t_log("%s: losetup refused: %s", fs, r.err);
		tw_run_free(&r);
		return false;
	}
	snprintf(loopdev, sizeof(loopdev), "%.*s", (int)strcspn(r.out, "\n"), r.out);
	tw_run_free(&r);
	t_cleanup_loop(loopdev);
	sectors = ((uint64_t)IMAGE_MB << 20) / 512;
	if (no_dm) {
		snprintf(dm_dev, sizeof(dm_dev), "%s", loopdev);
		goto mkfs;
	}
	snprintf(dm_name, sizeof(dm_name), "bfo-t-flakey-%d", (int)getpid());
	snprintf(dm_dev, sizeof(dm_dev), "/dev/mapper/%s", dm_name);
	if (sh_quiet("dmsetup create %s --table '0 %llu flakey %s 0 180 0'", dm_name,
		     (unsigned long long)sectors, loopdev)) {
		t_log("%s: dmsetup create (flakey) refused: no dm-flakey target?", fs);
		return false;
	}
	dm_created = 1;
	set_autoclear(loopdev);     /* detached once the dm device lets go */
	/* no udev (a VM's bare kernel): the node is made here, or waited for */
	sh_quiet("dmsetup mknodes %s 2>/dev/null; udevadm settle 2>/dev/null; test -b %s", dm_name, dm_dev);
mkfs:
	if (sh_quiet("PATH=$PATH:/usr/sbin:/sbin mkfs.%s %s %s", fs,
		     !strcmp(fs, "xfs") ? "-f -q" : "-F -q -E nodiscard", dm_dev)) {
		t_log("%s: mkfs refused", fs);
		return false;
	}
	if (mount(dm_dev, mnt, fs, 0, NULL) < 0) {
		t_log("%s: mount %s: %s", fs, dm_dev, strerror(errno));
		return false;
	}
	mounted = 1;
	t_log("%s on %s (%s%s, %s) at %s", fs, dm_dev, no_dm ? "no dm: directly on " : "flakey over ", loopdev, img, mnt);
	return true;
}

static bool remount(const char *fs)
{
	/* the cache of the block device may hold blocks that never reached
	 * it: drop it (the unmount's last close does, this makes sure) */
	sh_quiet("blockdev --flushbufs %s", dm_dev);
	t_drop_caches();
	if (mount(dm_dev, mnt, fs, 0, NULL) < 0) {
		TW_CHECK(0, "%s: mount after the power cut: %s (the file system did not survive)", fs,
			 strerror(errno));
		return false;
	}
	mounted = 1;
	return true;
}

/* ------------------------------------------------------------ runs */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pid_t start_write(const struct tw_input *in, const char *dir)
{
	char *argv[] = { BFO_CLI, "write", "--batch-files", "200", "--batch-bytes", "4M", (char *)dir,
			 NULL };

	return tw_spawn(argv, tw_input_stream(in), NULL);
}

static void prepare(const struct tw_input *in, const char *dir, struct tw_snap **pre)
{
	int fd;

	tw_mkdirs(dir);
	tw_input_pre_create(in, dir, "");
	*pre = tw_snapshot(dir);
	/* what was there before must be durable before the cut */
	fd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || syncfs(fd) < 0)
		t_fail("syncfs %s: %s", mnt, strerror(errno));
	close(fd);
	tw_settle();
}

/* Returns the power cuts made and checked. */
static int powercut_fs(const char *fs, const struct tw_input *in)
{
	uint64_t seed = 99, t_full;
	struct tw_run r;
	int present, recovered = 0;

	int cuts = 0;

	if (!setup(fs)) {
		pc_cleanup();
		/* device-mapper answered and mkfs.<fs> is there: a setup that
		 * fails is this test's failure, never a pass that cut nothing */
		TW_CHECK(0, "power cut on %s: could not set up the flakey file system (see above)", fs);
		return 0;
	}
	/* an uninterrupted run: the duration, and the invariant when whole */
	char *dir = t_pathf("%s/full", mnt);
	struct tw_snap *pre;

	prepare(in, dir, &pre);
	uint64_t t0 = now_ns();
	int st = tw_wait(start_write(in, dir));

	t_full = now_ns() - t0;
	TW_CHECK(st == 1, "[%s] uninterrupted bfo write: exit %d (expected 1: the pre-existing files)", fs, st);
	tw_input_check(in, dir, "", pre, tw_fmt("%s uninterrupted", fs), &present);
	TW_CHECK(present == tw_input_expected(in), "[%s] uninterrupted: %d of %d entries", fs, present,
		 tw_input_expected(in));
	tw_snap_free(pre);
	t_sh("rm -rf '%s'", dir);
	free(dir);
	t_log("%s: uninterrupted run: %.2f s", fs, (double)t_full / 1e9);

	for (int run = 0; run < NRUNS; run++) {
		uint64_t delay = t_rand(&seed) % (t_full + 1);
		unsigned kth = 1 + (unsigned)(t_rand(&seed) % 3);
		uint64_t extra = t_rand(&seed) % 3000000;
		bool at_manifest = run % 2 == 1, reaped = false;
		char what[160];

		t_watchdog(300, tw_fmt("%s power cut %d", fs, run));
		dir = t_pathf("%s/run%d", mnt, run);
		prepare(in, dir, &pre);
		pid_t pid = start_write(in, dir);

		if (at_manifest) {
			reaped = !tw_wait_manifest(pid, dir, kth);
			delay = extra;
		}
		tw_sleep_ns(delay);
		/* the cut: from now on no write reaches the device */
		T_ASSERT(dm_table(true) == 0, "[%s] cannot switch the table to drop_writes", fs);
		if (!reaped) {
			kill(pid, SIGKILL);
			tw_wait(pid);
		}
		T_ASSERT(umount2(mnt, 0) == 0, "[%s] umount after the cut: %s", fs, strerror(errno));
		mounted = 0;
		T_ASSERT(dm_table(false) == 0, "[%s] cannot switch the table back", fs);
		if (!remount(fs)) {
			tw_snap_free(pre);
			free(dir);
			break;
		}
		char *argv[] = { BFO_CLI, "recover", dir, NULL };

		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		TW_CHECK(r.status == 0, "[%s run %d] bfo recover: exit %d: %s", fs, run, r.status, r.err);
		recovered += strstr(r.out, " 0 unfinished") == NULL;
		tw_run_free(&r);
		snprintf(what, sizeof(what), "%s power cut %d %s%.3f s", fs, run,
			 at_manifest ? tw_fmt("when batch %u began + ", kth) : "after ", (double)delay / 1e9);
		int bad = tw_input_check(in, dir, "", pre, what, &present);

		t_log("%s: %d entries survived complete%s", what, present, bad ? ", PROBLEMS (above)" : "");
		cuts++;
		tw_snap_free(pre);
		t_sh("rm -rf '%s'", dir);
		free(dir);
	}
	t_log("%s: %d power cuts, %d left unfinished batches for recovery%s", fs, cuts, recovered,
	      T_ASAN ? " (fewer under ASan)" : "");
	pc_cleanup();
	return cuts;
}

int main(void)
{
	t_init("t_powercut", 1500);
	if (!t_is_root())
		t_skip("not root: device-mapper and loop devices need root");
	no_dm = getenv("T_POWERCUT_NO_DM") && *getenv("T_POWERCUT_NO_DM") == '1';
	if (no_dm)
		t_log("T_POWERCUT_NO_DM=1: a self-check of the test without device-mapper (no power cut)");
	else
		why_not();
	install_cleanup();
	umask(022);

	const char *tmp = t_tmpdir();

	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	tw_mkdirs(mnt);
	struct tw_input *in = tw_input_make(tmp, NFILES, BIG, false, 4);

	t_log("input: %d entries, %d power cuts per file system%s", tw_input_count(in), NRUNS,
	      T_ASAN ? " (scaled down under ASan)" : "");
	int cuts = 0;

	if (t_have_prog("mkfs.ext4"))
		cuts += powercut_fs("ext4", in);
	if (t_have_prog("mkfs.xfs"))
		cuts += powercut_fs("xfs", in);
	tw_input_free(in);
	tw_checks_end();
	/* tw_checks_end failed a run with a failed setup; none may pass uncut */
	if (!no_dm && cuts == 0)
		t_fail("no power cut was made");
	t_done();
	return 0;
}

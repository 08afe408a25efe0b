/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_rawgate: what a context caches about the system it checks again, and
 * only real privilege takes files from ext4's inode tables (issue 33).  As
 * root, on loop-mounted ext4s; every file is compared with read()/stat()
 * (or, where the caller may not read it, with the error open() gives):
 *  - reuse: one context reads a tree, then a file is bind-mounted over
 *    another file (d1/f5 over d1/f7) and the same context reads d1 again:
 *    f7 gives f5's bytes and inode, as stat() and read() do (before: the
 *    covered file's, from a list of file mounts read once per context);
 *    then unmounted: its own again; a directory mounted over d2 between
 *    batches: the mounted directory's files;
 *  - during: a file mounted over a listed name after its window's
 *    directories were listed and before its inode was read (after_hint):
 *    the mounted file's bytes;
 *  - capabilities: the caller drops CAP_DAC_OVERRIDE and
 *    CAP_DAC_READ_SEARCH between batches of one context: 0600 files of
 *    another user then fail with -EACCES as open() does (before: served
 *    from the inode tables, and the context's threads kept the
 *    capabilities for the VFS path too);
 *  - user namespace: in a user namespace whose root is root (a readable
 *    device node), those files fail with -EACCES as open() does there, and
 *    no file comes from the inode tables; a member of the disk group
 *    likewise;
 *  - journal: an ext4 whose default mount options journal data (tune2fs -o
 *    journal_data, not shown in mountinfo) is not read raw; mounted with
 *    data=ordered it is; a file with the journal flag set by debugfs is
 *    read through the VFS, on the inode-table and the FIEMAP paths;
 *  - device: the device is opened once by name (/dev/block/M:m); libext2fs
 *    and the inode-table reads open it again through /proc/self/fd, never
 *    by a name (strace of bfo read).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_helpers.h"

#define NDIR 300        /* a window of 128 files or more lists its directories */

static void quiet(void)
{
	usleep(60 * 1000);   /* raw_dirhint.c lists no directory changed in the last 20 ms */
}

/* dir/f0 .. f(n-1), random sizes, owned by uid, mode; the paths. */
static char **make_dir(const char *parent, const char *name, int n, uid_t uid, mode_t mode,
		       uint64_t seed)
{
	char *dir = t_path(parent, name), **p = calloc((size_t)n, sizeof(*p));
	char f[32];

	T_ASSERT(p && mkdir(dir, 0755) == 0 && chown(dir, uid, uid) == 0, "mkdir %s", dir);
	for (int i = 0; i < n; i++) {
		snprintf(f, sizeof(f), "f%d", i);
		p[i] = t_path(dir, f);
		t_write_random(p[i], 100 + (seed * 7919 + (uint64_t)i * 131) % 9000, seed * 1000 + (uint64_t)i);
		T_ASSERT(chown(p[i], uid, uid) == 0 && chmod(p[i], mode) == 0, "chown %s", p[i]);
	}
	free(dir);
	return p;
}

static void free_dir(char **p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

static struct bfo_ctx *raw_ctx(void)
{
	struct bfo_opts o;

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	return t_ctx(&o);
}

/* One batch of ctx over paths[0..n): each file equal to read()/stat(), or
 * failing as open() fails for this thread. */
static struct bfo_stats batch(struct bfo_ctx *ctx, char **paths, size_t n, const char *msg)
{
	struct t_result *r = t_results_new(n);
	struct bfo_stats st;

	t_batch_ctx(ctx, paths, n, r, &st, 0);
	for (size_t i = 0; i < n; i++) {
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			t_expect_status(r, paths, i, -errno, msg);
		} else {
			close(fd);
			t_expect_plain(r, paths, i, msg);
		}
	}
	t_results_free(r, n);
	return st;
}

static void bind_mount(const char *src, const char *dst)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		t_fail("mount --bind %s %s: %s", src, dst, strerror(errno));
	t_cleanup_mount(dst);
}

/* ------------------------------------------------------------ reuse */

static void reuse(void *arg)
{
	const char *mnt = arg;
	char **d0 = make_dir(mnt, "d0", 800, 0, 0644, 1), **d1 = make_dir(mnt, "d1", NDIR, 0, 0644, 2);
	char **d2 = make_dir(mnt, "d2", NDIR, 0, 0644, 3), **other = make_dir(mnt, "other", NDIR, 0, 0644, 4);
	char *all[800 + NDIR];
	struct bfo_ctx *ctx = raw_ctx();
	struct bfo_stats st;

	memcpy(all, d0, 800 * sizeof(*all));
	memcpy(all + 800, d1, NDIR * sizeof(*all));
	sync();
	quiet();
	st = batch(ctx, all, 800 + NDIR, "first batch");
	T_ASSERT(st.files_rawmeta >= 800, "first batch: %llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);

	bind_mount(d1[5], d1[7]);
	st = batch(ctx, d1, NDIR, "f5 mounted over f7");
	T_ASSERT(st.files_rawmeta == 0, "d1 holds a file mount: %llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);
	st = batch(ctx, d0, 800, "d0 beside the mount");
	T_ASSERT(st.files_rawmeta >= 800, "d0: %llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);

	T_ASSERT(umount2(d1[7], 0) == 0, "umount %s: %s", d1[7], strerror(errno));
	st = batch(ctx, d1, NDIR, "f7 unmounted");
	T_ASSERT(st.files_rawmeta == NDIR, "d1 after the unmount: %llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);

	/* d2's names now name other's files (same names, other bytes). */
	char *d2dir = t_path(mnt, "d2"), *otherdir = t_path(mnt, "other");

	batch(ctx, d2, NDIR, "d2 before");
	bind_mount(otherdir, d2dir);
	batch(ctx, d2, NDIR, "directory mounted over d2");
	T_ASSERT(umount2(d2dir, 0) == 0, "umount d2");
	bfo_ctx_destroy(ctx);
	free(d2dir);
	free(otherdir);
	free_dir(d0, 800);
	free_dir(d1, NDIR);
	free_dir(d2, NDIR);
	free_dir(other, NDIR);
	t_log("reuse: file mount, unmount, directory mount between batches of one context");
}

/* ------------------------------------------------------------ during */

static struct {
	const char *src, *dst;
	atomic_bool done;
	int err;
} during_state;

static void mount_during(void *arg, uint32_t nfiles)
{
	if (atomic_exchange(&during_state.done, true))
		return;
	if (mount(during_state.src, during_state.dst, NULL, MS_BIND, NULL) < 0)
		during_state.err = errno;
}

static void during(void *arg)
{
	const char *mnt = arg;
	char **d = make_dir(mnt, "dd", NDIR, 0, 0644, 5);
	struct bfo_ctx *ctx = raw_ctx();
	struct bfo_stats st;

	sync();
	quiet();
	during_state.src = d[11];
	during_state.dst = d[13];
	bfo_test_hooks.after_hint = mount_during;
	st = batch(ctx, d, NDIR, "f11 mounted over f13 during the batch");
	bfo_test_hooks.after_hint = NULL;
	t_cleanup_mount(d[13]);
	T_ASSERT(atomic_load(&during_state.done) && !during_state.err, "mount in after_hint: %s",
		 strerror(during_state.err));
	T_ASSERT(st.files_rawmeta >= NDIR - 1, "%llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);
	bfo_ctx_destroy(ctx);
	free_dir(d, NDIR);
	t_log("during: a file mounted over a listed name before its inode was read");
}

/* ------------------------------------------------------------ capabilities */

static void set_dac_caps(bool on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	uint32_t bits = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH;

	T_ASSERT(syscall(SYS_capget, &h, d) == 0, "capget");
	d[0].effective = on ? d[0].effective | bits : d[0].effective & ~bits;
	T_ASSERT(syscall(SYS_capset, &h, d) == 0, "capset: %s", strerror(errno));
}

static void caps(void *arg)
{
	const char *mnt = arg;
	char **d = make_dir(mnt, "private", NDIR, 65534, 0600, 6);
	struct bfo_ctx *ctx = raw_ctx();
	struct bfo_stats st;

	char *dir = t_path(mnt, "private");

	T_ASSERT(chmod(dir, 0700) == 0, "chmod");
	free(dir);
	sync();
	quiet();
	st = batch(ctx, d, NDIR, "with the capabilities");
	T_ASSERT(st.files_rawmeta == NDIR, "%llu files from the inode tables",
		 (unsigned long long)st.files_rawmeta);
	set_dac_caps(false);     /* this thread only, as libcap's cap_set_proc does */
	T_ASSERT(open(d[0], O_RDONLY) < 0 && errno == EACCES, "open without the capabilities");
	st = batch(ctx, d, NDIR, "capabilities dropped");
	T_ASSERT(st.files_rawmeta == 0 && st.files_failed == NDIR,
		 "without the capabilities: %llu from the inode tables, %llu failed",
		 (unsigned long long)st.files_rawmeta, (unsigned long long)st.files_failed);
	set_dac_caps(true);
	st = batch(ctx, d, NDIR, "capabilities raised again");
	T_ASSERT(st.files_failed == 0, "%llu failed", (unsigned long long)st.files_failed);
	bfo_ctx_destroy(ctx);
	free_dir(d, NDIR);
	t_log("capabilities: dropped and raised between batches of one context");
}

/* ------------------------------------------------------------ namespaces, groups */

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	T_ASSERT(fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s), "%s: %s", path, strerror(errno));
	close(fd);
}

/* 0600 files of uid 65534 in a directory others may search. */
static char **theirs;

static void make_theirs(const char *mnt)
{
	char *dir = t_path(mnt, "theirs");

	theirs = make_dir(mnt, "theirs", NDIR, 65534, 0600, 7);
	T_ASSERT(chmod(dir, 0755) == 0, "chmod");
	free(dir);
	sync();
	quiet();
}

/* Every file refused as open() refuses it here, none from inode tables. */
static void expect_refused(char **d, const char *msg)
{
	struct bfo_ctx *ctx = raw_ctx();
	struct bfo_stats st;

	T_ASSERT(open(d[0], O_RDONLY) < 0 && errno == EACCES, "[%s] open() reads the file", msg);
	st = batch(ctx, d, NDIR, msg);
	T_ASSERT(st.files_rawmeta == 0 && st.files_failed == NDIR, "[%s] %llu from inode tables, %llu failed",
		 msg, (unsigned long long)st.files_rawmeta, (unsigned long long)st.files_failed);
	bfo_ctx_destroy(ctx);
}

static void userns(void *arg)
{
	char **d = theirs;

	/* Root of a new user namespace mapped to root: the device node
	 * (root's, 0660) stays readable, 65534's files are unmapped. */
	if (unshare(CLONE_NEWUSER) < 0)
		t_skip("unshare(CLONE_NEWUSER): %s", strerror(errno));
	write_file("/proc/self/setgroups", "deny");
	write_file("/proc/self/uid_map", "0 0 1");
	write_file("/proc/self/gid_map", "0 0 1");
	expect_refused(d, "user namespace");
	t_log("user namespace: every file refused as open() refuses it");
}

static char disk_dev[64];      /* the node of the test's file system */

/* /dev/NAME of the block device holding path (sysfs's DEVNAME). */
static void find_dev(const char *path)
{
	struct stat st;
	char buf[512] = "", *dn;
	int fd;

	T_ASSERT(stat(path, &st) == 0, "stat %s", path);
	char *uevent = t_pathf("/sys/dev/block/%u:%u/uevent", major(st.st_dev), minor(st.st_dev));

	fd = open(uevent, O_RDONLY);
	T_ASSERT(fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0, "%s", uevent);
	close(fd);
	free(uevent);
	dn = strstr(buf, "DEVNAME=");
	T_ASSERT(dn, "no DEVNAME");
	dn[8 + strcspn(dn + 8, "\n")] = '\0';
	snprintf(disk_dev, sizeof(disk_dev), "/dev/%s", dn + 8);
}

static void disk_group(void *arg)
{
	char **d = theirs;
	struct group *g = getgrnam("disk");
	gid_t gid = g ? g->gr_gid : 6;

	/* The device the mount point is on: group disk, readable by it (as
	 * udev makes it; main puts the node back as it was). */
	const char *dev = disk_dev;

	T_ASSERT(chown(dev, 0, gid) == 0 && chmod(dev, 0660) == 0, "chown %s", dev);
	T_ASSERT(setgroups(1, &gid) == 0 && setgid(65534) == 0 && setuid(1000) == 0, "drop to uid 1000");
	T_ASSERT(open(dev, O_RDONLY) >= 0, "the disk group reads %s", dev);
	expect_refused(d, "disk group");
	t_log("disk group: every file refused as open() refuses it");
}

/* ------------------------------------------------------------ journal */

static void journal_default(void *arg)
{
	char *img = t_pathf("/var/tmp/bfo-t-jdata-%d.img", getpid()), desc[1024];
	struct bfo_ctx *ctx;
	struct bfo_stats st;

	(void)arg;
	t_cleanup_unlink(img);
	T_ASSERT(t_sh("truncate -s 128M %s && mkfs.ext4 -q -F %s && tune2fs -o journal_data %s >/dev/null",
		      img, img, img) == 0, "mkfs + tune2fs -o journal_data");
	for (int ordered = 0; ordered < 2; ordered++) {
		char *m = t_mkdtemp_in("/tmp"), **d;

		t_cleanup_rmdir(m);     /* (after the unmount: cleanups run in reverse) */
		T_ASSERT(t_sh("mount -o loop%s %s %s", ordered ? ",data=ordered" : "", img, m) == 0, "mount");
		t_cleanup_mount(m);
		d = make_dir(m, ordered ? "o" : "j", NDIR, 0, 0644, 8 + ordered);
		sync();
		quiet();
		ctx = raw_ctx();
		st = batch(ctx, d, NDIR, ordered ? "journal_data default, data=ordered" : "journal_data default");
		bfo_ctx_describe(ctx, desc, sizeof(desc));
		if (!ordered)
			T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] == 0 && st.files_rawmeta == 0 &&
				 strstr(desc, "journals file data"), "journalled by default: %llu raw (%s)",
				 (unsigned long long)st.files_by_engine[BFO_ENGINE_RAW], desc);
		else
			T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] == NDIR, "data=ordered: %llu raw (%s)",
				 (unsigned long long)st.files_by_engine[BFO_ENGINE_RAW], desc);
		bfo_ctx_destroy(ctx);
		T_ASSERT(umount2(m, 0) == 0, "umount");
		free_dir(d, NDIR);
		free(m);
	}
	free(img);
	t_log("journal: journal_data by default refused, data=ordered read raw");
}

static void journal_flag(void *arg)
{
	char *img = t_pathf("/var/tmp/bfo-t-jflag-%d.img", getpid()), *m;
	char **d;
	struct bfo_ctx *ctx;
	struct t_result *r;
	struct bfo_stats st;

	(void)arg;
	t_cleanup_unlink(img);
	T_ASSERT(t_sh("truncate -s 128M %s && mkfs.ext4 -q -F %s", img, img) == 0, "mkfs");
	m = t_mkdtemp_in("/tmp");
	t_cleanup_rmdir(m);
	T_ASSERT(t_sh("mount -o loop %s %s", img, m) == 0, "mount");
	t_cleanup_mount(m);
	d = make_dir(m, "j", NDIR, 0, 0644, 10);
	T_ASSERT(umount2(m, 0) == 0, "umount");
	/* EXT4_EXTENTS_FL | EXT4_JOURNAL_DATA_FL on f3 and f4 */
	T_ASSERT(t_sh("debugfs -w -R 'set_inode_field /j/f3 flags 0x84000' %s >/dev/null 2>&1 && "
		      "debugfs -w -R 'set_inode_field /j/f4 flags 0x84000' %s >/dev/null 2>&1", img, img) == 0,
		 "debugfs set_inode_field");
	T_ASSERT(t_sh("mount -o loop %s %s", img, m) == 0, "mount again");
	T_ASSERT(t_sh("lsattr %s | grep -q '^[^ ]*j'", d[3]) == 0, "f3 has the journal flag");
	quiet();
	for (int small = 0; small < 2; small++) {
		/* A window of 300 files takes inode tables, one of 20 FIEMAP. */
		size_t n = small ? 20 : NDIR;

		r = t_results_new(n);
		ctx = raw_ctx();
		t_batch_ctx(ctx, d, n, r, &st, 0);
		for (size_t i = 0; i < n; i++) {
			t_expect_plain(r, d, i, small ? "FIEMAP path" : "inode tables");
			if (i == 3 || i == 4)
				T_ASSERT(r[i].engine != BFO_ENGINE_RAW, "%s: journalled, read raw", d[i]);
			else
				T_ASSERT(r[i].engine == BFO_ENGINE_RAW, "%s: engine %d", d[i], r[i].engine);
		}
		T_ASSERT(small ? st.files_rawmeta == 0 : st.files_rawmeta == n - 2,
			 "%llu files from the inode tables", (unsigned long long)st.files_rawmeta);
		bfo_ctx_destroy(ctx);
		t_results_free(r, n);
	}
	free_dir(d, NDIR);
	free(m);
	free(img);
	t_log("journal: files with the journal flag read through the VFS");
}

/* ------------------------------------------------------------ device */

static void device_by_fd(void *arg)
{
	const char *mnt = arg;
	char *log = t_pathf("%s/strace.log", t_tmpdir());

	if (!t_have_prog("strace"))
		t_skip("no strace");
	free_dir(make_dir(mnt, "s", NDIR, 0, 0644, 11), NDIR);
	sync();
	quiet();
	/* (LeakSanitizer cannot run under a tracer: off for that run.) */
	T_ASSERT(t_sh("ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=open,openat -o %s %s read "
		      "--engine raw %s/s >/dev/null", log, BFO_CLI, mnt) == 0, "strace bfo read");
	/* One successful open of a /dev name (the first that exists of
	 * /dev/block/M:m and sysfs's DEVNAME), two through /proc/self/fd. */
	T_ASSERT(t_sh("test \"$(grep '\"/dev/' %s | grep -vc '= -1')\" = 1 && "
		      "test \"$(grep '\"/proc/self/fd/' %s | grep -vc '= -1')\" = 2", log, log) == 0,
		 "device opened by name more than once (see %s)", log);
	free(log);
	t_log("device: opened once by name, again only through /proc/self/fd");
}

int main(void)
{
	char why[256];
	const char *mnt;

	t_init("t_rawgate", 1500);
	if (!t_is_root())
		t_skip("needs root (loop devices, mounts, capabilities)");
	mnt = t_loop_fs("ext4", 256, NULL, NULL, why, sizeof(why));
	if (!mnt)
		t_skip("%s", why);
	t_subtest("reuse", 300, reuse, (void *)mnt);
	t_subtest("during", 120, during, (void *)mnt);
	t_subtest("capabilities", 120, caps, (void *)mnt);
	make_theirs(mnt);
	t_subtest("user namespace", 120, userns, (void *)mnt);
	{
		struct stat dst;

		find_dev(mnt);
		T_ASSERT(stat(disk_dev, &dst) == 0, "stat %s", disk_dev);
		t_subtest("disk group", 120, disk_group, (void *)mnt);
		T_ASSERT(chown(disk_dev, dst.st_uid, dst.st_gid) == 0 && chmod(disk_dev, dst.st_mode & 07777) == 0,
			 "restore %s", disk_dev);
	}
	t_subtest("journal_data default", 300, journal_default, NULL);
	t_subtest("journal flag", 300, journal_flag, NULL);
	t_subtest("device by descriptor", 120, device_by_fd, (void *)mnt);
	t_done();
	return 0;
}

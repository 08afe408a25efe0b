/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_dirahead: bfo_dirahead reads directories ahead of the caller's own
 * listing.  Arguments: NULLs, an empty path or an unknown flag give
 * -EINVAL.  As root, on a fresh loop ext4 of 60 directories of 300 long
 * names each, caches dropped before each pass, the loop device's read
 * count says what came from the device:
 *  - plain opendir/readdir plus lstat of every entry reads (the control:
 *    the checks below can fail);
 *  - after a read-ahead of the directories, the listing reads nothing (at
 *    most 5% of the control: the kernel may read on its own meanwhile) and
 *    lists exactly the names a plain listing gave, but lstat still reads;
 *  - after a read-ahead with BFO_DIRAHEAD_STAT, listing and lstat of every
 *    entry read nothing (the same 5%), and lstat gives what it gave before.
 * A symlink to a directory, a regular file and a missing path count as
 * failed.  The queue bound holds (queued never above it, -EAGAIN beyond
 * it) and every added directory is accounted for; errno is never changed;
 * destroy with a full queue returns.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "t_helpers.h"

#define NDIRS  60
#define NNAMES 300

/* Reads completed by the block device holding mnt (first field of its stat). */
static unsigned long long device_reads(const char *mnt)
{
	struct stat sb;
	unsigned long long reads = 0;
	char p[128];
	FILE *f;

	T_ASSERT(stat(mnt, &sb) == 0, "stat %s", mnt);
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/stat", major(sb.st_dev), minor(sb.st_dev));
	f = fopen(p, "r");
	T_ASSERT(f && fscanf(f, "%llu", &reads) == 1, "read %s", p);
	fclose(f);
	return reads;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's names, sorted and joined by '\n' (plain opendir/readdir);
 * with_stat: each followed by its lstat (mode, size, inode, mtime). */
static char *listing(const char *dir, bool with_stat)
{
	char **names = calloc(NNAMES + 8, sizeof(*names));
	size_t n = 0, len = 1;
	struct dirent *de;
	DIR *d = opendir(dir);
	char *out;

	T_ASSERT(d && names, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct stat sb = { 0 };

		T_ASSERT(n < NNAMES + 8, "%s: more names than made", dir);
		if (with_stat)
			T_ASSERT(fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0, "lstat %s", de->d_name);
		names[n] = t_pathf("%s %o %lld %llu %lld.%09ld", de->d_name, (unsigned)sb.st_mode,
				   (long long)sb.st_size, (unsigned long long)sb.st_ino,
				   (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
		len += strlen(names[n]) + 1;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	out = calloc(1, len);
	for (size_t i = 0; i < n; i++) {
		strcat(out, names[i]);
		strcat(out, "\n");
		free(names[i]);
	}
	free(names);
	return out;
}

/* List every directory of dirs (with_stat: lstat each entry too); each
 * listing must equal want[i].  Returns the device reads it took. */
static unsigned long long list_all(const char *mnt, char **dirs, bool with_stat, char **want,
				   const char *what)
{
	unsigned long long r0 = device_reads(mnt);

	for (int i = 0; i < NDIRS; i++) {
		char *got = listing(dirs[i], with_stat);

		T_ASSERT(strcmp(got, want[i]) == 0, "%s: %s differs", dirs[i], what);
		free(got);
	}
	return device_reads(mnt) - r0;
}

static void wait_idle(struct bfo_dirahead *d, uint64_t want, struct bfo_dirahead_stats *s)
{
	t_watchdog(120, "waiting for the read-ahead to finish");
	for (;;) {
		T_OK(bfo_dirahead_stats(d, s));
		if (s->queued == 0 && s->read + s->failed == want)
			break;
		usleep(1000);
	}
}

static void check_args(void)
{
	struct bfo_dirahead *d;
	struct bfo_dirahead_stats s;

	T_EQ(bfo_dirahead_start(NULL, 0, 0, 0), -EINVAL);
	T_EQ(bfo_dirahead_start(&d, 0, 0, 2), -EINVAL);
	T_ASSERT(d == NULL, "a refused start stored a read-ahead");
	T_OK(bfo_dirahead_start(&d, 0, 0, BFO_DIRAHEAD_STAT));
	T_EQ(bfo_dirahead_add(NULL, "/"), -EINVAL);
	T_EQ(bfo_dirahead_add(d, NULL), -EINVAL);
	T_EQ(bfo_dirahead_add(d, ""), -EINVAL);
	T_EQ(bfo_dirahead_stats(d, NULL), -EINVAL);
	T_EQ(bfo_dirahead_stats(NULL, &s), -EINVAL);
	errno = 1234;
	T_EQ(bfo_dirahead_add(d, "/"), 0);
	T_EQ(bfo_dirahead_add(d, ""), -EINVAL);
	T_EQ(errno, 1234);
	wait_idle(d, 1, &s);
	T_EQ(s.read, 1);
	bfo_dirahead_destroy(d);
	bfo_dirahead_destroy(NULL);
}

int main(void)
{
	char *dirs[NDIRS], *want[NDIRS], *want_names[NDIRS];
	struct bfo_dirahead *d;
	struct bfo_dirahead_stats s;
	unsigned long long cold, reads;

	t_init("t_dirahead", 300);
	check_args();
	if (!t_is_root())
		t_skip("arguments checked; not root: loop devices and drop_caches need root");
	if (!t_drop_caches())
		t_skip("arguments checked; drop_caches refused");

	const char *mnt = t_loop_fs_or_skip("ext4", 128, NULL, NULL);

	/* noatime: listing dirties no inode whose writeback would read */
	T_ASSERT(t_sh("mount -o remount,noatime %s", mnt) == 0, "remount %s noatime", mnt);

	for (int i = 0; i < NDIRS; i++) {
		dirs[i] = t_pathf("%s/dir%02d", mnt, i);
		T_ASSERT(mkdir(dirs[i], 0755) == 0, "mkdir %s", dirs[i]);
		for (int k = 0; k < NNAMES; k++) {
			/* long names: each directory spans several blocks (an htree) */
			char *p = t_pathf("%s/entry-%04d-of-a-directory-listed-ahead-of-its-reader", dirs[i], k);

			t_write_bytes(p, "x", k % 3 ? 1 : 0);
			free(p);
		}
	}
	char *link = t_pathf("%s/link", mnt), *file = t_pathf("%s/dir00/entry-0001-of-a-directory-listed-ahead-of-its-reader", mnt),
	     *missing = t_pathf("%s/missing", mnt);

	T_ASSERT(symlink(dirs[1], link) == 0, "symlink %s", link);
	for (int i = 0; i < NDIRS; i++) {
		want_names[i] = listing(dirs[i], false);
		want[i] = listing(dirs[i], true);
	}

	/* Control: a cold listing and lstat read from the device. */
	T_ASSERT(t_drop_caches(), "drop_caches");
	cold = list_all(mnt, dirs, true, want, "a cold listing with lstat");
	t_log("cold listing and lstat, no read-ahead: %llu device reads", cold);
	T_ASSERT(cold >= NDIRS, "a cold listing of %d directories read only %llu times", NDIRS, cold);

	for (unsigned flags = 0; flags <= BFO_DIRAHEAD_STAT; flags += BFO_DIRAHEAD_STAT) {
		T_ASSERT(t_drop_caches(), "drop_caches");
		T_OK(bfo_dirahead_start(&d, 2, 0, flags));
		for (int i = 0; i < NDIRS; i++)
			T_OK(bfo_dirahead_add(d, dirs[i]));
		T_OK(bfo_dirahead_add(d, link));
		T_OK(bfo_dirahead_add(d, file));
		T_OK(bfo_dirahead_add(d, missing));
		wait_idle(d, NDIRS + 3, &s);
		T_EQ(s.read, NDIRS);
		T_EQ(s.failed, 3);
		T_EQ(s.dropped, 0);
		bfo_dirahead_destroy(d);
		/* the names only: nothing read */
		reads = list_all(mnt, dirs, false, want_names, "the names listed after read-ahead");
		t_log("flags %u: listing after read-ahead: %llu device reads", flags, reads);
		/* nothing, but for the odd read of the kernel's own now and then */
		T_ASSERT(reads * 20 <= cold, "%llu device reads, more than 5%% of a cold listing's %llu",
			 reads, cold);
		/* and each entry's lstat: read unless the read-ahead stat'ed them */
		reads = list_all(mnt, dirs, true, want, "lstat after read-ahead");
		t_log("flags %u: lstat of every entry after read-ahead: %llu device reads", flags, reads);
		if (flags & BFO_DIRAHEAD_STAT)
			T_ASSERT(reads * 20 <= cold, "%llu device reads, more than 5%% of a cold listing's %llu",
				 reads, cold);
		else
			T_ASSERT(reads > 0, "lstat after a read-ahead without BFO_DIRAHEAD_STAT read nothing");
	}

	/* The queue bound: one thread, room for 3. */
	uint64_t accepted = 0, refused = 0;

	T_OK(bfo_dirahead_start(&d, 1, 3, 0));
	for (int k = 0; k < 2000; k++) {
		int r;

		errno = 4321;
		r = bfo_dirahead_add(d, dirs[k % NDIRS]);
		T_EQ(errno, 4321);
		T_ASSERT(r == 0 || r == -EAGAIN, "add returned %d", r);
		r == 0 ? accepted++ : refused++;
		T_OK(bfo_dirahead_stats(d, &s));
		T_ASSERT(s.queued <= 3, "queued %llu above the bound 3", (unsigned long long)s.queued);
	}
	wait_idle(d, accepted, &s);
	t_log("queue of 3: %llu added, %llu refused", (unsigned long long)accepted, (unsigned long long)refused);
	T_EQ(s.read, accepted);
	T_ASSERT(refused > 0, "2000 adds to a queue of 3 were never refused");
	bfo_dirahead_destroy(d);

	/* Destroy with a full queue drops it and returns. */
	T_ASSERT(t_drop_caches(), "drop_caches");
	T_OK(bfo_dirahead_start(&d, 1, 0, BFO_DIRAHEAD_STAT));
	for (int i = 0; i < NDIRS; i++)
		T_OK(bfo_dirahead_add(d, dirs[i]));
	t_watchdog(60, "destroy with a full queue");
	bfo_dirahead_destroy(d);

	for (int i = 0; i < NDIRS; i++) {
		free(dirs[i]);
		free(want[i]);
		free(want_names[i]);
	}
	free(link);
	free(file);
	free(missing);
	t_done();
	return 0;
}

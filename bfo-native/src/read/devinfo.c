/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What each file system (by st_dev) allows: raw reads need ext2/3/4 or XFS,
 * a block device node the process can open with O_DIRECT, data that lives
 * where FIEMAP says (not ext4 journalling data, not an XFS realtime
 * device).  Looked up once per device and kept until a batch starts after
 * the mount table changed (sysstate.h): then every device is probed again.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "devinfo.h"
#include "raw_ext4ino.h"
#include "sysstate.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

/*
 * File systems whose st_size says nothing of a file's bytes: procfs and
 * kernfs-style attribute files report 0 or a page (4096) and make their
 * content when read.  Their regular files are read to EOF, as cat and cp
 * do (cp never trusts st_size either: it reads until read() returns 0).
 */
static bool fs_sizes_lie(unsigned long type)
{
	switch (type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case 0x62656570:                  /* configfs */
	case SECURITYFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case SELINUX_MAGIC:
	case SMACK_MAGIC:
	case BINFMTFS_MAGIC:
	case 0x65735543:                  /* fusectl */
		return true;
	}
	return false;
}

/* File systems where an empty regular file is empty.  Elsewhere (FUSE,
 * e.g. lxcfs's /proc files in containers, network and unknown ones) a
 * file of size 0 is read to EOF like a pseudo file: it costs one read. */
static bool fs_sizes_true(unsigned long type)
{
	return type == EXT4_SUPER_MAGIC || type == XFS_SUPER_MAGIC || type == BTRFS_SUPER_MAGIC ||
	       type == TMPFS_MAGIC;
}

void devcache_init(struct devcache *dc, bool want_raw, struct sysstate *sys)
{
	pthread_mutex_init(&dc->lock, NULL);
	dc->list = NULL;
	dc->want_raw = want_raw;
	dc->sys = sys;
}

void devcache_reset(struct devcache *dc)
{
	struct devinfo *d, *n;

	pthread_mutex_lock(&dc->lock);
	for (d = dc->list; d; d = n) {
		n = d->next;
		if (d->raw_fd >= 0)
			close(d->raw_fd);
		ext4ino_close(d->ext4);
		free(d);
	}
	dc->list = NULL;
	pthread_mutex_unlock(&dc->lock);
}

void devcache_fini(struct devcache *dc)
{
	devcache_reset(dc);
	pthread_mutex_destroy(&dc->lock);
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

static bool sysfs_rotational(unsigned maj, unsigned min)
{
	char path[128], buf[16];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/rotational", maj, min);
	if (read_small(path, buf, sizeof(buf))) {
		/* A partition: the queue belongs to its disk, one level up. */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/rotational", maj, min);
		if (read_small(path, buf, sizeof(buf)))
			return false;
	}
	return buf[0] == '1';
}

/*
 * Super-block options of the mount of maj:min from /proc/self/mountinfo
 * (the fields after " - ": fstype, source, super options).
 */
static bool mount_opts(unsigned maj, unsigned min, char *opts, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, want[32];
	size_t cap = 0;
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), " %u:%u ", maj, min);
	while (getline(&line, &cap, f) > 0) {
		char *p = strstr(line, want), *sep;

		if (!p || (sep = strstr(line, " - ")) == NULL || p > sep)
			continue;
		/* skip fstype and source */
		char *q = strchr(sep + 3, ' ');

		q = q ? strchr(q + 1, ' ') : NULL;
		if (!q)
			continue;
		snprintf(opts, len, "%s", q + 1);
		opts[strcspn(opts, "\n")] = '\0';
		found = true;
		break;
	}
	free(line);
	fclose(f);
	return found;
}

static bool has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = opts; (p = strstr(p, opt)); p += n)
		if ((p == opts || p[-1] == ',') && (p[n] == ',' || p[n] == '\0' || p[n] == '='))
			return true;
	return false;
}

/*
 * Does this ext4 journal file data?  data=journal in the mount's options,
 * or no data= option there and journal_data among the super-block's
 * default mount options (tune2fs -o journal_data), which mountinfo does
 * not show.  The newest data of a file may then be in the journal, not
 * where FIEMAP and the inode point.  Unknown (super-block unreadable):
 * true.
 */
static bool ext4_journals_data(int fd, const char *opts)
{
	void *buf;
	bool journal = true;

	if (has_opt(opts, "data=journal"))
		return true;
	if (has_opt(opts, "data=ordered") || has_opt(opts, "data=writeback"))
		return false;
	if (posix_memalign(&buf, 4096, 4096))
		return true;
	/* s_magic at 0x38, s_default_mount_opts at 0x100 of the super-block
	 * (1024 bytes in); EXT3_DEFM_JMODE 0x60, _DATA 0x20. */
	if (pread(fd, buf, 4096, 0) == 4096) {
		const uint8_t *sb = (const uint8_t *)buf + 1024;
		uint32_t magic = sb[0x38] | sb[0x39] << 8;
		uint32_t defm = sb[0x100] | sb[0x101] << 8 | (uint32_t)sb[0x102] << 16 |
				(uint32_t)sb[0x103] << 24;

		journal = magic != 0xEF53 || (defm & 0x60) == 0x20;
	}
	free(buf);
	return journal;
}

static int open_device(unsigned maj, unsigned min, char *name, size_t len)
{
	char path[128], buf[512];
	int fd;

	snprintf(path, sizeof(path), "/dev/block/%u:%u", maj, min);
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0 || errno != ENOENT) {
		int err = errno;

		snprintf(name, len, "%s", path);
		return fd >= 0 ? fd : -err;
	}
	/* No udev symlinks (containers): the kernel's name from sysfs. */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", maj, min);
	if (read_small(path, buf, sizeof(buf)))
		return -ENOENT;
	char *dn = strstr(buf, "DEVNAME=");

	if (!dn)
		return -ENOENT;
	dn += 8;
	dn[strcspn(dn, "\n")] = '\0';
	snprintf(name, len, "/dev/%s", dn);
	fd = open(name, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
	return fd >= 0 ? fd : -errno;
}

static void devinfo_probe(struct devinfo *d, const char *path, bool want_raw, struct sysstate *sys)
{
	unsigned maj = (unsigned)(d->dev >> 32), min = (unsigned)d->dev;
	char opts[1024] = "", name[300] = "";
	struct statfs sfs;
	struct stat st;
	int fd;

	d->raw_fd = -1;
	d->lbs = 512;
	d->devsize = UINT64_MAX;
	d->rotational = sysfs_rotational(maj, min);
	if (statfs(path, &sfs) == 0) {
		if (sfs.f_type == EXT4_SUPER_MAGIC)   /* also ext2 and ext3 */
			d->fs = FS_EXT4;
		else if (sfs.f_type == XFS_SUPER_MAGIC)
			d->fs = FS_XFS;
		d->sizes_lie = fs_sizes_lie((unsigned long)sfs.f_type);
		d->sizes_true = fs_sizes_true((unsigned long)sfs.f_type);
		if (sfs.f_bsize >= 512 && sfs.f_bsize <= 65536 && !(sfs.f_bsize & (sfs.f_bsize - 1)))
			d->fsbs = (uint32_t)sfs.f_bsize;
	}
	if (!want_raw) {
		snprintf(d->why, sizeof(d->why), "raw reads not requested");
		return;
	}
	if (d->fs == FS_OTHER) {
		snprintf(d->why, sizeof(d->why), "file system is not ext2/3/4 or XFS");
		return;
	}
	if (!mount_opts(maj, min, opts, sizeof(opts))) {
		snprintf(d->why, sizeof(d->why), "mount options unknown (/proc/self/mountinfo)");
		return;
	}
	/* rtdev: XFS realtime files live on another device than the one
	 * FIEMAP offsets refer to. */
	if (d->fs == FS_XFS && has_opt(opts, "rtdev")) {
		snprintf(d->why, sizeof(d->why), "XFS with a realtime device");
		return;
	}
	fd = open_device(maj, min, name, sizeof(name));
	if (fd < 0) {
		snprintf(d->why, sizeof(d->why), "block device %.100s not readable: %s",
			 name[0] ? name : "?", strerrordesc_np(-fd));
		return;
	}
	/* The node must be the very device the file system is on. */
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || major(st.st_rdev) != maj ||
	    minor(st.st_rdev) != min) {
		snprintf(d->why, sizeof(d->why), "%.100s is not block device %u:%u", name, maj, min);
		close(fd);
		return;
	}
	int lbs = 0;
	uint64_t size = 0;

	if (ioctl(fd, BLKSSZGET, &lbs) < 0 || lbs <= 0 || ioctl(fd, BLKGETSIZE64, &size) < 0) {
		snprintf(d->why, sizeof(d->why), "%.100s: cannot query block size", name);
		close(fd);
		return;
	}
	if (d->fs == FS_EXT4 && ext4_journals_data(fd, opts)) {
		snprintf(d->why, sizeof(d->why), "ext4 journals file data (data=journal)");
		close(fd);
		return;
	}
	d->lbs = (uint32_t)lbs;
	d->devsize = size;
	d->raw_fd = fd;
	snprintf(d->why, sizeof(d->why), "%.150s", name);
	if (d->fs == FS_EXT4)
		d->ext4 = ext4ino_open(fd, size, sysstate_mount_gen(sys), d->ext4_why,
				       sizeof(d->ext4_why));
}

struct devinfo *devcache_get(struct devcache *dc, uint64_t dev, const char *path)
{
	struct devinfo *d;

	pthread_mutex_lock(&dc->lock);
	for (d = dc->list; d; d = d->next)
		if (d->dev == dev)
			goto out;
	d = calloc(1, sizeof(*d));
	if (d) {
		d->dev = dev;
		devinfo_probe(d, path, dc->want_raw, dc->sys);
		d->next = dc->list;
		dc->list = d;
	}
out:
	pthread_mutex_unlock(&dc->lock);
	return d;
}

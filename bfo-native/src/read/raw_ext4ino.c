/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Raw ext4 inodes for the raw engine (raw_ext4ino.h says what and why).
 *
 * Why serving a file from its raw inode is safe on a mounted, changing file
 * system, and what is checked, by whom:
 *  - the inode is read through the device's page cache, where ext4 copies
 *    an inode as soon as it changes in memory (ext4_mark_inode_dirty), so a
 *    truncate, an unlink or a rewrite shows there before the blocks it
 *    frees can be reused (ext4 reuses freed blocks only after the
 *    transaction that freed them commits);
 *  - dirty data reaches the device first: raw_dirhint.c runs syncfs() on the
 *    file system before its inodes are read in a window (FIEMAP_FLAG_SYNC
 *    did that per file on the VFS path);
 *  - after the data is read, the inode is read again and must be
 *    byte-for-byte what it was (dispatch.c); otherwise the file is read
 *    again per file through the VFS, as a file that changed on the VFS path;
 *  - an inode number comes from the listing of the directory that names
 *    the file, and the inode must belong to that directory's owner: an
 *    inode freed and reused between the listing and the read by a file of
 *    someone else is refused (the VFS path then resolves the name);
 *  - a checksum (metadata_csum) that does not match, inline data,
 *    encryption, verity, an extent tree deeper than the inode: VFS path.
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* ext2fs.h's inline functions would need libext2fs at link time: only
 * their declarations, the calls go through the table below. */
#define NO_INLINE_FUNCS
#include <ext2fs/ext2fs.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "raw_ext4ino.h"
#include "plan.h"

#define ISZ_MAX   1024u          /* larger inodes: not used */
#define READ_MAX  (64u << 10)    /* inode-table bytes one phase-1 read takes */
#define SAME_READ 4096u          /* and one ext4ino_same read: in a shuffled
				    tree its files' inodes are far apart */
/* Bytes per fadvise(WILLNEED): the kernel reads at most max(read_ahead_kb,
 * max_sectors_kb) of one call (force_page_cache_ra), so a group's table in
 * one call (4.6 MiB on the 4k set) was read to 2.5 MiB, and phase 1 read
 * the rest in small synchronous reads queued behind the data of the window
 * being read (30-36 ms each, on all 16 threads at once). */
#define PREFETCH_CHUNK (128u << 10)
#define EXCL_MAX  256u           /* directories excluded by file mounts */

static struct {
	errcode_t (*open2)(const char *, const char *, int, int, unsigned int, io_manager, ext2_filsys *);
	errcode_t (*close_free)(ext2_filsys *);
	blk64_t (*itable_loc)(ext2_filsys, dgrp_t);
	int (*csum_verify)(ext2_filsys, ext2_ino_t, struct ext2_inode_large *);
	errcode_t (*ext_open2)(ext2_filsys, ext2_ino_t, struct ext2_inode *, ext2_extent_handle_t *);
	errcode_t (*ext_get)(ext2_extent_handle_t, int, struct ext2fs_extent *);
	void (*ext_free)(ext2_extent_handle_t);
	io_manager *unix_io;
	char why[128];
} e2;
static pthread_once_t e2_once = PTHREAD_ONCE_INIT;

static void e2_load(void)
{
	void *h = dlopen("libext2fs.so.2", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(e2.why, sizeof(e2.why), "libext2fs.so.2 not loadable (e2fsprogs' libext2fs2)");
		return;
	}
	*(void **)&e2.open2 = dlsym(h, "ext2fs_open2");
	*(void **)&e2.close_free = dlsym(h, "ext2fs_close_free");
	*(void **)&e2.itable_loc = dlsym(h, "ext2fs_inode_table_loc");
	*(void **)&e2.csum_verify = dlsym(h, "ext2fs_inode_csum_verify");
	*(void **)&e2.ext_open2 = dlsym(h, "ext2fs_extent_open2");
	*(void **)&e2.ext_get = dlsym(h, "ext2fs_extent_get");
	*(void **)&e2.ext_free = dlsym(h, "ext2fs_extent_free");
	e2.unix_io = dlsym(h, "unix_io_manager");
	if (!e2.open2 || !e2.close_free || !e2.itable_loc || !e2.csum_verify || !e2.ext_open2 ||
	    !e2.ext_get || !e2.ext_free || !e2.unix_io) {
		snprintf(e2.why, sizeof(e2.why), "libext2fs.so.2 lacks a function libbfo uses");
		e2.open2 = NULL;
		dlclose(h);
	}
	/* Kept loaded for the process's life, like any library. */
}

struct excl {
	uint64_t dev, ino;
};

struct ext4ino {
	ext2_filsys fs;
	int fd;                  /* the device, buffered: its page cache */
	uint32_t isz, ipg, bs;
	uint64_t ngroups, ninodes, devsize;
	bool csum;
	uint64_t *itable;        /* byte offset of each group's inode table, 0: unusable */
	pthread_mutex_t excl_lock;
	uint64_t excl_gen;       /* mount generation the list was read at */
	bool excl_ok;            /* false: unreadable or too many, every dir excluded */
	struct excl excl[EXCL_MAX];
	unsigned nexcl;
};

/* A mount point path from /proc/self/mountinfo, its \ooo escapes undone. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Parents of mount points that are not directories (a file mounted over a
 * file): their listings name the covered file.  Too many: false. */
static bool find_file_mounts(struct ext4ino *x)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool ok = true;

	x->nexcl = 0;
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *mp = NULL, *tok = strtok_r(line, " ", &save);
		struct stat st;

		for (int i = 0; tok && i < 4; i++)
			tok = mp = strtok_r(NULL, " ", &save);
		if (!mp)
			continue;
		unescape(mp);
		if (lstat(mp, &st) < 0 || S_ISDIR(st.st_mode))
			continue;
		char *slash = strrchr(mp, '/');

		if (!slash)
			continue;
		if (slash == mp)
			slash++;       /* a file mounted at /name: the parent is / */
		*slash = '\0';
		if (stat(mp[0] ? mp : "/", &st) < 0)
			continue;
		if (x->nexcl == EXCL_MAX) {
			ok = false;
			break;
		}
		x->excl[x->nexcl].dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
		x->excl[x->nexcl++].ino = st.st_ino;
	}
	free(line);
	fclose(f);
	return ok;
}

bool ext4ino_dir_excluded(struct ext4ino *x, uint64_t mount_gen, uint64_t dev, uint64_t ino)
{
	bool excluded = false;

	pthread_mutex_lock(&x->excl_lock);
	if (x->excl_gen != mount_gen) {
		/* Mounts changed since the list was read: a file may have
		 * been mounted over a file (or unmounted) since. */
		x->excl_ok = find_file_mounts(x);
		x->excl_gen = mount_gen;
	}
	if (!x->excl_ok)
		excluded = true;
	for (unsigned i = 0; i < x->nexcl && !excluded; i++)
		if (x->excl[i].dev == dev && x->excl[i].ino == ino)
			excluded = true;
	pthread_mutex_unlock(&x->excl_lock);
	return excluded;
}

static bool geometry(struct ext4ino *x, char *why, size_t why_len)
{
	struct ext2_super_block *sb = x->fs->super;

	if (!ext2fs_has_feature_extents(sb)) {
		snprintf(why, why_len, "ext4 without extents");
		return false;
	}
	x->isz = EXT2_INODE_SIZE(sb);
	x->ipg = sb->s_inodes_per_group;
	x->bs = x->fs->blocksize;
	x->ngroups = x->fs->group_desc_count;
	x->ninodes = sb->s_inodes_count;
	x->csum = ext2fs_has_feature_metadata_csum(sb);
	if (x->isz < EXT2_GOOD_OLD_INODE_SIZE || x->isz > ISZ_MAX || (x->isz & (x->isz - 1)) ||
	    x->bs < 1024 || x->bs > (64u << 10) || x->ipg == 0 || x->ngroups == 0 ||
	    x->ngroups > UINT32_MAX / 2 || x->ninodes > (uint64_t)x->ipg * x->ngroups) {
		snprintf(why, why_len, "ext4 geometry out of bounds (inode size %u, block %u)", x->isz, x->bs);
		return false;
	}
	x->itable = calloc(x->ngroups, sizeof(*x->itable));
	if (!x->itable) {
		snprintf(why, why_len, "out of memory");
		return false;
	}
	for (uint64_t g = 0; g < x->ngroups; g++) {
		uint64_t off = (uint64_t)e2.itable_loc(x->fs, (dgrp_t)g) * x->bs;

		if (off && off < x->devsize && (uint64_t)x->ipg * x->isz <= x->devsize - off)
			x->itable[g] = off;
	}
	return true;
}

/* Does the super-block libext2fs read belong to the device behind fd?
 * (libext2fs opened it by a name; the name was fd's own magic link, so
 * this only proves what that should have made certain.) */
static bool same_super(const struct ext4ino *x)
{
	struct ext2_super_block sb;
	const struct ext2_super_block *got = x->fs->super;

	return pread(x->fd, &sb, sizeof(sb), SUPERBLOCK_OFFSET) == (ssize_t)sizeof(sb) &&
	       sb.s_magic == got->s_magic && !memcmp(sb.s_uuid, got->s_uuid, sizeof(sb.s_uuid)) &&
	       sb.s_blocks_count == got->s_blocks_count && sb.s_inodes_count == got->s_inodes_count &&
	       sb.s_first_data_block == got->s_first_data_block;
}

struct ext4ino *ext4ino_open(int dev_fd, uint64_t devsize, uint64_t mount_gen, char *why,
			     size_t why_len)
{
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	snprintf(why, why_len, "raw inodes on a little-endian host only");
	return NULL;
#else
	struct ext4ino *x;
	struct stat want, st;
	char name[64];
	errcode_t rc;

	pthread_once(&e2_once, e2_load);
	if (!e2.open2) {
		snprintf(why, why_len, "%s", e2.why);
		return NULL;
	}
	if (fstat(dev_fd, &want) < 0 || !S_ISBLK(want.st_mode)) {
		snprintf(why, why_len, "the device descriptor is not a block device");
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&x->excl_lock, NULL);
	x->devsize = devsize;
	/* The device node whose st_rdev devinfo.c checked, opened again
	 * buffered through its descriptor's magic link, never by a name
	 * that could be looked up to something else since. */
	snprintf(name, sizeof(name), "/proc/self/fd/%d", dev_fd);
	x->fd = open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (x->fd < 0 || fstat(x->fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != want.st_rdev) {
		snprintf(why, why_len, "cannot open the device again through %s", name);
		if (x->fd >= 0)
			close(x->fd);
		pthread_mutex_destroy(&x->excl_lock);
		free(x);
		return NULL;
	}
	/* Read only; the group descriptors are read once (their inode-table
	 * locations never move on a mounted ext4; a group added by an online
	 * resize after this is beyond ngroups and takes the VFS path). */
	snprintf(name, sizeof(name), "/proc/self/fd/%d", x->fd);
	rc = e2.open2(name, NULL,
		      EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
		      *e2.unix_io, &x->fs);
	if (rc) {
		snprintf(why, why_len, "libext2fs cannot open the device (error %ld)", (long)rc);
		ext4ino_close(x);
		return NULL;
	}
	if (!same_super(x)) {
		snprintf(why, why_len, "libext2fs read another super-block than the device's");
		ext4ino_close(x);
		return NULL;
	}
	if (!geometry(x, why, why_len)) {
		ext4ino_close(x);
		return NULL;
	}
	x->excl_ok = find_file_mounts(x);
	x->excl_gen = mount_gen;
	return x;
#endif
}

void ext4ino_close(struct ext4ino *x)
{
	if (!x)
		return;
	if (x->fs)
		e2.close_free(&x->fs);
	close(x->fd);
	pthread_mutex_destroy(&x->excl_lock);
	free(x->itable);
	free(x);
}

/* Byte offset of inode ino on the device, or 0 when it has none we use. */
static uint64_t inode_off(const struct ext4ino *x, uint64_t ino)
{
	if (ino < EXT2_FIRST_INO(x->fs->super) || ino > x->ninodes)
		return 0;
	uint64_t g = (ino - 1) / x->ipg, base = x->itable[g];

	return base ? base + (ino - 1) % x->ipg * x->isz : 0;
}

void ext4ino_prefetch(struct ext4ino *x, uint64_t lo, uint64_t hi)
{
	while (lo <= hi && lo <= x->ninodes) {
		uint64_t g = (lo - 1) / x->ipg, last = MIN(hi, (g + 1) * x->ipg);

		if (x->itable[g]) {
			uint64_t off = x->itable[g] + (lo - 1) % x->ipg * x->isz;
			uint64_t end = off + (last - lo + 1) * x->isz;

			for (; off < end; off += PREFETCH_CHUNK)
				posix_fadvise(x->fd, (off_t)off, (off_t)MIN(PREFETCH_CHUNK, end - off),
					      POSIX_FADV_WILLNEED);
		}
		lo = last + 1;
	}
}

/* One READ_MAX buffer per thread that maps inodes (the pool's), freed
 * when the thread ends: per phase-1 task, fresh pages cost more than the
 * inodes (page faults and zeroing, measured). */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_key_make(void)
{
	pthread_key_create(&buf_key, free);
}

void ext4ino_buf_start(struct ext4ino_buf *b)
{
	pthread_once(&buf_once, buf_key_make);
	b->data = pthread_getspecific(buf_key);
	if (!b->data && (b->data = malloc(READ_MAX)) != NULL && pthread_setspecific(buf_key, b->data)) {
		free(b->data);
		b->data = NULL;
	}
	b->len = 0;
	b->upto = 0;
}

/* The raw inode at off into raw, through b (a read of up to max bytes of
 * the group's table from there, up to b->upto's inode when the reader
 * said which it wants last: the next inodes of a window sorted by number
 * are in it; copying a whole READ_MAX for the 8 KiB a phase-1 task of a
 * dense tree needs cost more than its inodes). */
static bool read_inode(const struct ext4ino *x, struct ext4ino_buf *b, uint64_t ino, uint64_t off,
		       uint8_t *raw, size_t max)
{
	if (!b->data || b->x != x || off < b->off || off + x->isz > b->off + b->len) {
		uint64_t g = (ino - 1) / x->ipg, end = x->itable[g] + (uint64_t)x->ipg * x->isz;
		uint64_t start = off & ~(uint64_t)4095;
		size_t len;
		ssize_t n;

		if (start < x->itable[g])
			start = off;
		if (b->upto >= ino && (b->upto - 1) / x->ipg == g)
			end = MIN(end, MAX(ALIGN_UP(inode_off(x, b->upto) + x->isz, 4096), off + x->isz));
		len = (size_t)MIN((uint64_t)max, end - start);
		if (!b->data)
			return false;
		b->len = 0;
		n = pread(x->fd, b->data, len, (off_t)start);
		if (n < (ssize_t)(off - start + x->isz))
			return false;
		b->x = x;
		b->off = start;
		b->len = (uint32_t)n;
	}
	memcpy(raw, b->data + (off - b->off), x->isz);
	return true;
}

#define FITS(in, field) \
	(offsetof(struct ext2_inode_large, field) + sizeof((in)->field) <= \
	 (size_t)(EXT2_GOOD_OLD_INODE_SIZE + (in)->i_extra_isize))

/* ext4_decode_extra_time: 34-bit seconds, nanoseconds in the extra word. */
static void decode_time(uint32_t base, uint32_t extra, bool has_extra, int64_t *sec, uint32_t *nsec)
{
	*sec = (int32_t)base;
	*nsec = 0;
	if (has_extra) {
		*sec += (int64_t)(extra & EXT4_EPOCH_MASK) << 32;
		*nsec = (extra & EXT4_NSEC_MASK) >> EXT4_EPOCH_BITS;
	}
}

/* Is the inode a regular file in use, of dir_uid, that we can map? */
static bool usable(const struct ext4ino *x, const struct ext2_inode_large *in, uint32_t dir_uid)
{
	/* Journalled data (chattr +j) may be newest in the journal, not at
	 * its home blocks, even after a sync: only a checkpoint writes it
	 * there. */
	const uint32_t refuse = EXT4_INLINE_DATA_FL | EXT4_ENCRYPT_FL | EXT4_VERITY_FL |
				EXT4_EA_INODE_FL | EXT2_COMPR_FL | EXT3_JOURNAL_DATA_FL;
	const struct ext3_extent_header *h = (const void *)in->i_block;
	uint32_t uid = in->i_uid | (uint32_t)in->osd2.linux2.l_i_uid_high << 16;

	if (x->isz > EXT2_GOOD_OLD_INODE_SIZE &&
	    in->i_extra_isize > x->isz - EXT2_GOOD_OLD_INODE_SIZE)
		return false;
	return LINUX_S_ISREG(in->i_mode) && in->i_links_count > 0 && in->i_dtime == 0 &&
	       uid == dir_uid && (in->i_flags & EXT4_EXTENTS_FL) && !(in->i_flags & refuse) &&
	       h->eh_magic == EXT3_EXT_MAGIC && h->eh_depth == 0;
}

static void decode_meta(const struct ext4ino *x, const struct ext2_inode_large *in, struct entry *e)
{
	bool big = x->isz > EXT2_GOOD_OLD_INODE_SIZE;

	e->mode = in->i_mode;
	e->uid = in->i_uid | (uint32_t)in->osd2.linux2.l_i_uid_high << 16;
	e->gid = in->i_gid | (uint32_t)in->osd2.linux2.l_i_gid_high << 16;
	e->nlink = in->i_links_count;
	e->size = in->i_size | (uint64_t)in->i_size_high << 32;
	decode_time(in->i_mtime, big ? in->i_mtime_extra : 0, big && FITS(in, i_mtime_extra),
		    &e->mtime_sec, &e->mtime_nsec);
	decode_time(in->i_ctime, big ? in->i_ctime_extra : 0, big && FITS(in, i_ctime_extra),
		    &e->ctime_sec, &e->ctime_nsec);
	decode_time(in->i_atime, big ? in->i_atime_extra : 0, big && FITS(in, i_atime_extra),
		    &e->atime_sec, &e->atime_nsec);
}

/* No extended attribute (ACLs and security labels included) in the inode's
 * own space or in a block of its own: a copier need not list them by path,
 * the one lookup of the source's name a raw copy would still make. */
static bool no_xattrs(const struct ext4ino *x, const struct ext2_inode_large *in)
{
	size_t at = EXT2_GOOD_OLD_INODE_SIZE + (x->isz > EXT2_GOOD_OLD_INODE_SIZE ? in->i_extra_isize : 0);
	uint32_t magic;

	if (in->i_file_acl || in->osd2.linux2.l_i_file_acl_high)
		return false;
	if (x->isz <= EXT2_GOOD_OLD_INODE_SIZE || at + sizeof(magic) > x->isz)
		return true;
	memcpy(&magic, (const uint8_t *)in + at, sizeof(magic));
	return magic != EXT2_EXT_ATTR_MAGIC;
}

/* The extents of a depth-0 tree, clipped to size; -1 when refused. */
static int map_extents(const struct ext4ino *x, struct ext2_inode_large *in, struct entry *e,
		       struct fext *ext, uint32_t max)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent ex;
	errcode_t rc;
	int n = 0;

	if (e2.ext_open2(x->fs, (ext2_ino_t)e->ino, (struct ext2_inode *)in, &h))
		return -1;
	for (rc = e2.ext_get(h, EXT2_EXTENT_ROOT, &ex); !rc;
	     rc = e2.ext_get(h, EXT2_EXTENT_NEXT_LEAF, &ex)) {
		uint64_t logical = ex.e_lblk * (uint64_t)x->bs, len = ex.e_len * (uint64_t)x->bs;
		uint64_t phys = ex.e_pblk * (uint64_t)x->bs;

		if (!(ex.e_flags & EXT2_EXTENT_FLAGS_LEAF) || !ex.e_len || logical >= e->size)
			continue;
		len = MIN(len, e->size - logical);
		if ((uint32_t)n == max || phys >= x->devsize || x->devsize - phys < ALIGN_UP(len, x->bs)) {
			n = -1;
			break;
		}
		ext[n].logical = logical;
		ext[n].phys = phys;
		ext[n].len = len;
		ext[n].zero = ex.e_flags & EXT2_EXTENT_FLAGS_UNINIT;
		n++;
	}
	if (n >= 0 && rc && rc != EXT2_ET_EXTENT_NO_NEXT)
		n = -1;
	e2.ext_free(h);
	return n;
}

int ext4ino_map(struct ext4ino *x, struct ext4ino_buf *b, struct entry *e, uint32_t dir_uid,
		struct fext *ext, uint32_t max, struct ext4ino_sum *sum)
{
	_Alignas(8) uint8_t raw[ISZ_MAX];
	struct ext2_inode_large *in = (void *)raw;
	uint64_t off = inode_off(x, e->ino);

	if (!off || !read_inode(x, b, e->ino, off, raw, READ_MAX))
		return -1;
	if (x->csum && !e2.csum_verify(x->fs, (ext2_ino_t)e->ino, in))
		return -1;
	if (!usable(x, in, dir_uid))
		return -1;
	decode_meta(x, in, e);
	e->noxattr = no_xattrs(x, in);
	XXH128_hash_t s = XXH3_128bits(raw, x->isz);

	sum->lo = s.low64;
	sum->hi = s.high64;
	return map_extents(x, in, e, ext, max);
}

bool ext4ino_same(struct ext4ino *x, struct ext4ino_buf *b, uint64_t ino, const struct ext4ino_sum *sum)
{
	_Alignas(8) uint8_t raw[ISZ_MAX];
	uint64_t off = inode_off(x, ino);

	if (!off)
		return false;
	if (b ? !read_inode(x, b, ino, off, raw, SAME_READ) : pread(x->fd, raw, x->isz, (off_t)off) != (ssize_t)x->isz)
		return false;
	XXH128_hash_t s = XXH3_128bits(raw, x->isz);

	return s.low64 == sum->lo && s.high64 == sum->hi;
}

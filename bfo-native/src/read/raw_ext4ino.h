/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The raw engine's metadata phase without the VFS on ext4: a file named by
 * its directory's listing (its inode number, raw_dirhint.c) has its inode read
 * from the inode table through the block device's page cache, the cache
 * ext4 itself keeps its inode tables in, so it sees every inode update the
 * file system has made, committed or not.  No path lookup, statx, open,
 * FIEMAP or close runs for such a file, and none when its bytes are
 * verified: the inode is read again after the data and must be unchanged.
 *
 * libext2fs (e2fsprogs) reads the super-block and group descriptors,
 * verifies inode checksums and parses extents.  It is loaded with dlopen
 * when a context first meets an ext4 it may read raw, so libbfo itself
 * needs nothing beyond libc where it is not installed (the feature is then
 * off, and bfo_ctx_describe says why).
 */
#ifndef BFO_RAW_EXT4INO_H
#define BFO_RAW_EXT4INO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ext4ino;
struct entry;
struct fext;

/* An inode's extent tree held in the inode itself has at most 4 extents:
 * deeper trees take the VFS path. */
#define EXT4INO_EXTENTS 4

/* The raw inode bytes a later ext4ino_same() compares with. */
struct ext4ino_sum {
	uint64_t lo, hi;
};

/*
 * Open the ext4 on the block device open on dev_fd (the descriptor whose
 * identity devinfo.c checked; mounted: read only, through its page cache,
 * opened again through dev_fd, never by name).  mount_gen: the mount
 * table's generation now (sysstate.h).  NULL when it cannot be used, with
 * the reason in why: libext2fs missing, not ext4 with extents, an inode
 * size or block size out of bounds.  Whether the caller may use it at all
 * is sysstate_may_bypass_open's question (sysstate.h), asked per batch.
 */
struct ext4ino *ext4ino_open(int dev_fd, uint64_t devsize, uint64_t mount_gen, char *why,
			     size_t why_len);
void ext4ino_close(struct ext4ino *x);
/* May this process read files' inodes without opening them: what the
 * kernel's permission checks would not stop (raw_ext4ino.c says why); false
 * with the reason in why otherwise. */

/* Is a directory (its st_dev, st_ino) the parent of a file that another
 * file is mounted over?  Its listing then names a file the path does not
 * reach: its files take the VFS path.  The list of such mounts is read
 * again when mount_gen (sysstate_mount_gen) moved since it was read; when
 * it cannot be read, every directory is. */
bool ext4ino_dir_excluded(struct ext4ino *x, uint64_t mount_gen, uint64_t dev, uint64_t ino);

/* Ask the kernel to read the inode-table blocks of inodes [lo, hi] ahead. */
void ext4ino_prefetch(struct ext4ino *x, uint64_t lo, uint64_t hi);

/* A thread's view of inode-table bytes it read (in the thread's buffer):
 * ext4ino_buf_start() when what was read before may be stale (a phase-1
 * task's start; a new set of completions for ext4ino_same). */
struct ext4ino_buf {
	const struct ext4ino *x;   /* of the bytes held */
	uint8_t *data;
	uint64_t off;
	uint32_t len;
	uint64_t upto;             /* 0, or the highest inode number the reader wants next */
};
void ext4ino_buf_start(struct ext4ino_buf *b);

/*
 * Fill e's metadata (everything statx gives) from inode e->ino and its
 * extents, clipped to the size, into ext[0..max): returns their number, or
 * -1 when the file must take the VFS path: not a regular file in use, not
 * owned by dir_uid (an inode number reused for another owner's file must
 * never be served under this name), inline data, encrypted, verity, an
 * extent tree deeper than the inode, a checksum mismatch, a read error.
 * *sum: what ext4ino_same() compares after the data is read.
 */
int ext4ino_map(struct ext4ino *x, struct ext4ino_buf *b, struct entry *e, uint32_t dir_uid,
		struct fext *ext, uint32_t max, struct ext4ino_sum *sum);

/*
 * Is inode ino still exactly as when it was mapped?  With b, read through
 * it (a block of the table at a time, for the next files' inodes): b must
 * have been started after the file's data was read.
 */
bool ext4ino_same(struct ext4ino *x, struct ext4ino_buf *b, uint64_t ino, const struct ext4ino_sum *sum);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One file of a read: what phase 1 learns of it (its metadata, its
 * route, its place in the plan) and the metadata helpers every engine
 * uses to tell whether a file is still the one it stat'ed.
 */
#ifndef BFO_ENTRY_H
#define BFO_ENTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "devinfo.h"
#include "raw_ext4ino.h"

enum route {
	R_NONE = 0,   /* delivered without data: failure, metadata-only, empty */
	R_RAW,        /* extents read from the device in merged regions */
	R_URING,      /* per-file read through io_uring */
	R_POOL,       /* per-file read on the pool (portable, or fallback) */
	R_PIECES,     /* large file: read and delivered in pieces on the pool */
};

struct entry {
	char *path;
	uint64_t ino, dev, size;
	int64_t mtime_sec, ctime_sec, atime_sec;
	uint32_t mtime_nsec, ctime_nsec, atime_nsec;
	uint32_t mode, uid, gid, nlink;
	int32_t status;
	uint8_t route;
	uint8_t engine;            /* enum bfo_engine that delivers it */
	uint8_t retries;
	bool holes;                /* extents do not cover the file: zero-fill */
	bool delivered;            /* its last entry was queued for the caller */
	bool in_group;             /* counted in a group's open files */
	bool raw_bad;              /* a region read failed: read it per file */
	bool pseudo;               /* read to EOF, whatever size says (see PSEUDO_FIRST) */
	bool want_key;             /* physical sort key not taken yet (plan.c, KEY_SAMPLE) */
	bool phys_key;             /* sort_key is first_phys, for a per-file engine */
	uint32_t ext_first, ext_count;
	uint32_t pending;          /* raw segments not yet copied */
	uint32_t group;
	uint64_t first_phys;       /* physical offset of the first extent */
	uint64_t sort_key;         /* first_phys in physical order, else ino */
	uint64_t buf_off;          /* offset of its buffer in the group chunk */
	uint64_t cap;              /* bytes of that buffer */
	uint64_t piece_off;        /* R_PIECES: next offset to read */
	uint64_t pcap;             /* pseudo: bytes the next read may fill */
	struct devinfo *di;
	bool hinted;               /* ino, dev, di from its directory's listing (raw_dirhint.c) */
	bool rawino;               /* metadata and extents from the raw inode (raw_ext4ino.c) */
	bool noxattr;              /* rawino: that inode holds no extended attributes */
	uint32_t dir_uid;          /* hinted: the owner of that directory */
	uint32_t hdir;             /* hinted: its directory, window->hdirs[hdir] */
	struct ext4ino_sum rawsum; /* rawino: the inode as it was mapped */
};

/* e's metadata from st (a file's stat: its identity, size, times, owner). */
void entry_meta_from_stat(struct entry *e, const struct stat *st);
/* e's metadata from a statx of path (not followed with nofollow): 0 or -errno. */
int stat_path(const char *path, bool nofollow, struct entry *e);
/* a and b are the same file, unchanged: identity, and everything a write,
 * truncate or replacement changes (size, mtime, ctime). */
bool meta_same(const struct entry *a, const struct entry *b);
/* The status a read gives a file of this mode: 0 for a regular file,
 * -EISDIR, -ELOOP (a symbolic link) or -EINVAL for the others. */
int entry_type_status(uint32_t mode);

#endif

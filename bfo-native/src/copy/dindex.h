/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the destination of a sync already has: its copies' entries,
 * scanned at batch speed (scan.h) and indexed by path below the root, so
 * that each entry of the file list is compared with one lookup, and what
 * no entry of the list named is known at the end (--delete).
 *
 * Memory: 64 bytes, the path and 8 bytes of key per entry, 8 to 16 bytes
 * of hash table, and 48 more per directory (struct ddir).  The index is only a
 * view of what was there: nothing is ever acted on through it (a deletion
 * resolves its path again, beneath the root, without following a link).
 */
#ifndef BFO_DINDEX_H
#define BFO_DINDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include "bfo.h"

struct filter;
struct stat;

struct dent {
	uint64_t path;          /* offset of the NUL-terminated path in the index's names */
	/* by type: a regular file's xxh3-64 of its bytes (DINDEX_HASH), a
	 * device's rdev, a symbolic link's target (its offset in the names,
	 * 0: none), a directory's struct ddir (its index + 1, 0: none) */
	uint64_t aux;
	int64_t mtime_sec;
	uint64_t size;
	uint64_t ino;
	uint32_t mode;          /* st_mode */
	uint32_t uid, gid;
	uint32_t mtime_nsec;
	uint32_t dev;           /* st_dev as the kernel keeps it (dindex_dev) */
	uint16_t src;           /* the copy (source) it belongs to */
	uint8_t type;           /* DT_* */
	uint8_t seen : 1;       /* named by the file list (not deleted) */
	uint8_t written : 1;    /* the list's entry at its place is written (wanted) */
	uint8_t tree : 1;       /* the list's entry at its place is of the other kind: it
				   replaces this entry, and what is below it (WANT_TREE) */
	uint8_t refused : 1;    /* ... but cannot (a directory with entries kept) */
};

/* What only a directory has: kept beside the entries, so that the many
 * files do not carry it. */
struct ddir {
	uint64_t xhash;         /* its xattrs (sync_xattrs_hash), 0: none */
	/* named by the list: the source's times, put back when entries
	 * written or deleted below it move them */
	int64_t want_atime, want_mtime;
	uint32_t want_atime_nsec, want_mtime_nsec;
	bool want_times, touched;
};

/* st_dev in the dent's 32 bits: the kernel's dev_t is 32 bits (12 of
 * major, 20 of minor), so two devices never share one. */
static inline uint32_t dindex_dev(uint64_t dev)
{
	return (uint32_t)((major(dev) & 0xfffu) << 20 | (minor(dev) & 0xfffffu));
}

/* One copy of the destination: where it is below the root ("" is the
 * root itself), and its source's name for the filter rules. */
struct dindex_copy {
	const char *prefix;
	const char *name;
};

#define DINDEX_HASH (1u << 0)   /* hash regular files' bytes (--checksum) */
#define DINDEX_XATTRS (1u << 1) /* digest directories' xattrs (sync_xattrs_hash) */

struct dindex;

/*
 * Scan the copies copies[0..n) below root (rootfd: the same directory,
 * open), leaving out what the filter excludes and the writer's own names
 * (.bfo-journal and .bfo-tmp.* anywhere).  ro: the read options.
 * Directories that cannot be read are passed to failed(arg, path, -errno)
 * (their entries are then unknown: compared as missing, never deleted).
 * cancel (may be NULL), once set, stops the scan between its batches.
 * Returns 0 and *ix, or -errno (-ECANCELED: stopped).
 */
int dindex_build(struct dindex **ix, int rootfd, const char *root, const struct dindex_copy *copies,
		 unsigned n, const struct filter *f, const struct bfo_opts *ro, unsigned flags,
		 void (*failed)(void *arg, const char *path, int status), void *arg,
		 const atomic_bool *cancel);

/* An entry found at path (below the root), with st, after the build (an
 * entry in the way of a type change that the rules kept from the scan):
 * 0 or -ENOMEM.  Entries met before may move: look them up again. */
int dindex_add_found(struct dindex *ix, const char *path, const struct stat *st);

/* The entry at path below the root, or NULL. */
struct dent *dindex_get(struct dindex *ix, const char *path);
/* The key dindex_get finds path by, for dindex_prefetch. */
uint64_t dindex_key(const char *path);
/*
 * Bring what lookups of the n keys will read into the CPU's cache, a stage
 * for all of them at a time.  A lookup is three dependent loads (its table
 * slot, its entry, its name) at random places of an index of many MB; made
 * one after another, each waits on memory in turn (the receiver's decisions
 * were most of their time in those loads).  Changes nothing.
 */
void dindex_prefetch(const struct dindex *ix, const uint64_t *keys, size_t n);
/* A directory entry's struct ddir (NULL: not a directory, or no memory
 * for it when it was indexed); it moves as entries do. */
struct ddir *dindex_dir(const struct dindex *ix, const struct dent *d);
/* An entry's path and link target. */
const char *dindex_path(const struct dindex *ix, const struct dent *d);
const char *dindex_target(const struct dindex *ix, const struct dent *d);

/* Entries, in no order: for (i = 0; (d = dindex_at(ix, i)); i++). */
struct dent *dindex_at(struct dindex *ix, size_t i);
size_t dindex_count(const struct dindex *ix);

/* What the scans' read engines did (files_rawmeta and engines). */
void dindex_stats(const struct dindex *ix, struct bfo_stats *st);

void dindex_free(struct dindex *ix);

#endif

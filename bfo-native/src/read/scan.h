/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tree's entries with their metadata, at batch speed: the walk lists the
 * directories on its threads (their entries' types come with the listing),
 * and the regular files' metadata comes from the read engine's metadata
 * phase (BFO_READ_METADATA_ONLY: the inode tables on the device where the
 * raw engine may read them, io_uring statx otherwise), a walk batch at a
 * time in inode order, never from an lstat per file.  The engine has the
 * next batch while the caller works through one.  Directories come
 * with the lstat the walk took before reading them, other entries (links,
 * special files: few) with an lstat of their own.
 *
 * Both ends of a sync scan this way: the sender its sources (the file
 * list), the receiver the destination (what it has).
 */
#ifndef BFO_SCAN_H
#define BFO_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bfo.h"

struct scan_ent {
	char *path;             /* the full path (the scan's until the next scan_next) */
	const char *rel;        /* within path: below the root */
	unsigned char type;     /* DT_REG, DT_DIR, DT_LNK, ... */
	int status;             /* 0, or -errno: no metadata (vanished, unreadable) */
	struct stat st;         /* as the engine or lstat saw it */
	char *target;           /* DT_LNK: the target, else NULL */
	uint64_t hash;          /* SCAN_HASH: xxh3-64 of a regular file's bytes */
};

#define SCAN_HASH (1u << 0)     /* read regular files whole and hash them */

struct scan;

/*
 * Start scanning the directory root (not itself: what is below it), with
 * the read options ro (NULL: defaults; the metadata-only and no-follow
 * flags are added) and SCAN_* flags.  skip(arg, rel, dir), when not NULL,
 * is asked on the walk's threads about each entry (rel below root): true
 * leaves it out, and a directory is not entered.  Returns 0 and *s, or
 * -errno.
 */
int scan_start(struct scan **s, const char *root, const struct bfo_opts *ro, unsigned flags,
	       bool (*skip)(void *arg, const char *rel, bool dir), void *arg);

/*
 * The next entries (a walk batch, in inode order) in *ents, valid until the
 * next call.  Returns their number, 0 when the scan is over, or -errno
 * (the read engine failed: the scan is over).
 */
long scan_next(struct scan *s, struct scan_ent **ents);

/* A directory the scan could not read (its path, malloc'd, and -errno):
 * true when one was taken. */
bool scan_failure(struct scan *s, char **path, int *status);

/* Stop and free the scan; its read engine's statistics into st (may be
 * NULL).  NULL s is ignored. */
void scan_end(struct scan *s, struct bfo_stats *st);

#endif

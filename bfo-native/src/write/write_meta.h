/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metadata of files the writer made, applied only through descriptors of
 * those very files, and the identities that prove which files they are.
 * Another user may rename, replace or symlink any name under the
 * destination at any moment; a descriptor cannot be redirected.
 */
#ifndef BFO_WRITE_META_H
#define BFO_WRITE_META_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfo.h"

/* Who a file is: what the writer saw on the descriptor it made the file
 * with.  An inode number alone may be reused as soon as a file is gone;
 * with the birth time (or, where the file system keeps none, the inode
 * generation) it names one file for the life of the file system. */
struct fid {
	uint64_t dev, ino;
	int64_t born_sec;           /* birth time, when FID_BORN */
	uint32_t born_nsec;
	uint32_t gen;               /* inode generation, when FID_GEN */
	uint32_t flags;
	uint32_t type;              /* S_IFMT bits */
	/* Not identity: the owner when it was taken (owner_known), which
	 * spares the writer a chown that would change nothing. */
	uint32_t uid, gid;
	bool owner_known;
};
#define FID_BORN 1u
#define FID_GEN  2u

/* Fill id from fd (any kind, O_PATH included).  0 or -errno. */
int fid_of_fd(int fd, struct fid *id);
/* Is what fd refers to now the file id names? */
bool fid_match(int fd, const struct fid *id);
/* Open name beneath dfd without following it (O_PATH): -errno if absent,
 * or -ESTALE when it is not the file id names. */
int fid_open(int dfd, const char *name, const struct fid *id);

/*
 * Apply e's xattrs, owner, mode and times to the file open on fd.  fd is a
 * read or write descriptor of a regular file or directory, or an O_PATH
 * descriptor (opath) of anything; a symbolic link gets no mode (Linux has
 * none for them).  mode_done: created with its exact mode already.  now:
 * what fid_of_fd saw on fd (or NULL): an owner that is already e's is not
 * set again, nor then the mode that chown would have cleared bits from.
 * Owner goes first: chown clears set-id bits and file capabilities, which
 * chmod and the xattrs then set.  A chown refused with EINVAL (an id the
 * user namespace does not map), with owner_err not NULL: -EINVAL goes
 * there and the rest is applied with the mode's owner bits only (what cp -a and rsync leave then: no set-id program that would run
 * as the caller, nothing readable by a group it was not meant for).
 * Returns 0 or -errno.
 */
/* The ids a user namespace maps (its /proc/self/uid_map or gid_map, at
 * most 340 ranges): a chown to any other fails with EINVAL. */
struct idmap {
	uint32_t n;                 /* ranges; UINT32_MAX: not known, all taken as mapped */
	struct { uint32_t first, count; } r[340];
};
void idmap_load(struct idmap *m, const char *path);
bool idmap_has(const struct idmap *m, uint32_t id);

int meta_apply(int fd, bool opath, const struct bfo_wentry *e, bool symlink, bool mode_done,
	       const struct fid *now, int *owner_err);

/* The process's umask (what the writer and the copier leave out of modes),
 * read without changing it: umask(2) reads it only by setting it, which
 * races with other threads creating files. */
mode_t process_umask(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sync: the file list of the sources, compared entry by entry with what
 * the destination has (dindex.h), so that only what differs is read,
 * sent and written; then --delete removes what the list did not name.
 *
 * The list is made in batches (struct lbatch) by the sending side; the
 * receiving side answers each entry with a want (WANT_*).  Locally both
 * happen in one process; between machines the list crosses the wire and
 * the wants come back (wire.h, version 2).
 */
#ifndef BFO_SYNC_H
#define BFO_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bfo.h"

struct dindex;
struct dent;
struct filter;
struct copy_who;

/* A want: what the receiver asks for an entry of the list. */
#define WANT_SKIP    0u   /* the copy has it already */
#define WANT_WRITE   1u   /* its bytes (a file) or itself (anything else) */
#define WANT_LINK    2u   /* a hard link to its group's first name, which the copy has */
#define WANT_ACTION  3u   /* the bits above */
#define WANT_REPLACE 4u   /* with WRITE or LINK: something has its name, to be replaced */
#define WANT_TREE    8u   /* with REPLACE: of the other kind (BFO_WENTRY_REPLACE_TREE);
			     the receiver's own, never on the wire */
#define WANT_NONE    16u  /* sync_decide only: not written, and not the copy's
			     either (refused and reported): a SKIP not counted */

/* The writer's flags for an entry of this want (dir: a directory). */
static inline uint32_t sync_wflags(uint8_t want, bool dir)
{
	if (want & WANT_TREE)
		return BFO_WENTRY_REPLACE | BFO_WENTRY_REPLACE_TREE;
	return (want & WANT_REPLACE) && !dir ? BFO_WENTRY_REPLACE : 0;
}

/* One entry of the file list. */
struct lent {
	char *path;             /* the sender's full path of it (NULL on a receiver) */
	const char *rel;        /* below its source ("" the source itself) */
	char *target;           /* a symbolic link's target */
	const char *link_rel;   /* a hard link group's later member: its first member's rel */
	uint16_t src;           /* its source */
	uint16_t link_src;      /* and the first member's source */
	uint8_t want;           /* WANT_* */
	struct stat st;         /* type and mode, owner, times, size, rdev; a
				   sender's also device, inode and link count */
	uint64_t hash;          /* BFO_COPY_CHECKSUM: xxh3-64 of a regular file's bytes */
	uint64_t xhash;         /* a directory's xattrs (sync_xattrs_hash), 0: none */
};

/* A batch of the list, with the strings its entries point to. */
struct lbatch {
	struct lent *e;
	size_t n, cap;
	char *strings;          /* rel and link_rel point here */
	size_t slen, scap;
	uint64_t seq;           /* the list's batches are numbered from 0 */
	struct lbatch *next;    /* in a queue */
};

struct lbatch *lbatch_new(void);
/* A new entry at the end, its rel (and link_rel, may be NULL) copied into
 * the batch's strings; NULL when out of memory.  path and target are
 * taken over (freed with the batch). */
struct lent *lbatch_add(struct lbatch *b, const char *rel, const char *link_rel, char *path,
			char *target);
/* The batch is complete: its entries' rel and link_rel become pointers
 * into its strings (until then they are offsets, the strings may move). */
void lbatch_strings(struct lbatch *b);
void lbatch_free(struct lbatch *b);

/* What a sync compares with, and how. */
struct sync {
	struct dindex *ix;          /* NULL: the destination had nothing (want all) */
	const struct copy_who *who;
	uint32_t flags;             /* BFO_COPY_* */
	unsigned nsrc;
	char **prefix;              /* each source's copy, below the root */
	char **fname;               /* each source's name for the filter rules */
	const struct filter *filter;
	int rootfd;                 /* the destination root (not owned) */
	const atomic_bool *cancel;  /* set: --delete stops between entries (may be NULL) */
	/* told, on the deciding thread: an entry that cannot be written, and
	 * what the index had below a tree replaced (deleted with it) */
	void (*report)(void *arg, const char *path, int status);
	void (*deleted)(void *arg, const char *path);
	void *arg;
	/* what the comparisons found */
	uint64_t skipped;           /* regular files the copy has */
	uint64_t wanted;            /* entries asked for */
	uint64_t tree_bytes;        /* bytes of the list's regular files */
	uint64_t tree_files;        /* and their number, hard links' later names left out */
	uint64_t deleted_early;     /* entries below one of another kind, removed with it */
	uint64_t delete_max;        /* deletions allowed (UINT64_MAX: no limit) */
	uint64_t delete_held;       /* deletions not made: past delete_max */
};

/* The destination path of e (prefix of its source / rel), in buf. */
const char *sync_dest(const struct sync *y, uint16_t src, const char *rel, char *buf, size_t len);

/*
 * The want for list entry e: compared with the destination's entry at its
 * place (rsync's quick check for files: size, mtime, and mode and owner as
 * the copy takes them; with BFO_COPY_CHECKSUM the bytes instead of the
 * mtime; a link's target, a device's number...).  Marks that entry as
 * named by the list.  Entries must be decided in list order (a hard link
 * group's first member before the others).  An entry of another kind
 * than the destination's takes its place (WANT_TREE), or is refused and
 * reported (WANT_NONE: a directory with entries kept in its way).
 */
uint8_t sync_decide(struct sync *y, const struct lent *e);

/*
 * --delete: what the destination has and no list entry named, deepest
 * first, each resolved again beneath the root without following a
 * symbolic link (one that is no longer what was indexed is left alone).
 * item(arg, path) is told each one (with dry_run instead of deleting it);
 * failures go to report.  Returns the number deleted (or that would be).
 */
uint64_t sync_delete(struct sync *y, bool dry_run, void (*item)(void *arg, const char *path),
		     void (*report)(void *arg, const char *path, int status), void *arg);

/*
 * The directories the list named and left alone get their times back
 * where entries written into them, or deleted from them, moved them: a
 * directory is put back only if it is still the one indexed.  Returns how
 * many were.
 */
uint64_t sync_dirs_fix(struct sync *y, void (*report)(void *arg, const char *path, int status),
		      void *arg);

/* A path below which something was written (or deleted): its parent's
 * times are looked at by sync_dirs_fix. */
void sync_touch(struct sync *y, const char *path);

/* A digest of the xattrs of path (not followed), 0 when it has none:
 * directories' are compared (an interrupted copy can leave a directory
 * with its times but without its xattrs, which come last); files' are not. */
uint64_t sync_xattrs_hash(const char *path);
/* The same of packed xattrs (bfo_wentry's packing, as a stream carries them). */
uint64_t sync_xattrs_hash_packed(const void *packed, size_t len);

#endif

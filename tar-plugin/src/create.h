/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Create (tar -c): reading the files tar archives ahead of it.
 *
 * GNU tar (1.34) archives a directory like this (strace):
 *
 *	openat(parent, "dir", O_RDONLY|O_NOFOLLOW|...)  = D
 *	fdopendir(D); readdir()... until NULL            the whole listing
 *	for each entry, in --sort order (none: readdir order):
 *	    fstatat(D, name, AT_SYMLINK_NOFOLLOW)
 *	    openat(D, name, O_RDONLY|O_NOFOLLOW|...)     = F
 *	    fstat(F); read(F, ...)...; fstat(F); close(F)
 *	    (a subdirectory is archived right there, recursively)
 *	closedir(D)
 *
 * So the listing tells us which regular files tar is about to open, and in
 * which order.  A finished listing becomes a "group" on a stack that
 * mirrors tar's recursion (create_groups.c).  From the groups (newest
 * first) the plugin cuts bounded lots (files, bytes) and hands them to one
 * libbfo batch that stays open (bfo_read_flush() after each lot), which
 * reads each lot with few large sorted I/Os on its own threads
 * (create_lots.c).  Three lots are in flight, so while two are read the
 * next one's metadata phase runs and the device does not wait between lots.
 * Delivered files wait in libbfo's arena.  When tar opens one of them, the
 * open still goes to libc (tar keeps a real fd for fstat, xattrs, errors),
 * then the fd's identity, size, mtime and ctime are compared with what the
 * batch read; if they match, tar's read()s on that fd are served from
 * memory, otherwise the fd is left alone and tar reads it through libc
 * (create_serve.c).  tar's own "file changed as we read it" check (fstat
 * before and after) is untouched, so it still fires.  Files the listing
 * did not announce, large or sparse files, files tar opens before their
 * batch or after a failure: all go to libc.
 */
#ifndef BFO_TAR_CREATE_H
#define BFO_TAR_CREATE_H

#include "bfo_tar.h"

#define SERVE_MAX     (1ull << 20)     /* larger files: libc (tar reads them well) */
#define BATCH_FILES   4096u            /* files of a lot, at most */
/* Lots of an eighth of the arena, three being read at once: smaller lots
 * and one more in flight keep the device busy while a retired lot's
 * successor is still in its metadata phase (README: How create works). */
#define LOT_SHARE     8u               /* a lot is at most arena / LOT_SHARE bytes */
#define MAX_LOTS      3u               /* lots being read at once */
#define MAX_LIVE      8u               /* lots whose data is not all given back */
#define WAIT_MAX      64u
#define WARM_DIRS     64u              /* subdirectories read ahead of the listing */
#define MAX_KIDS      1024u            /* directories listed ahead, at most */

enum ent_state {
	E_NEW,          /* announced by a listing, not submitted */
	E_INFLIGHT,     /* submitted to libbfo, not delivered */
	E_READY,        /* data in the arena, waiting for tar's open */
	E_DONE,         /* served, skipped or failed: tar's open goes to libc */
};

struct group;

struct ent {
	char *name;
	uint64_t ino;           /* d_ino, for --sort=inode */
	uint32_t state;
	uint32_t epoch;         /* the libbfo batch it was submitted to */
	uint64_t bindex;        /* index in that batch */
	struct group *g;
	struct bfo_file f;      /* valid in E_READY */
};

/*
 * One directory listing.  Either tar's own (made through its readdir
 * calls, on the stack while tar has the directory open: dir != NULL), or
 * made ahead by the plugin for a subdirectory tar will enter next (a "kid"
 * of a group on the stack), which tar adopts when it opens that directory:
 * the read-ahead then runs across directories instead of stopping at each.
 */
struct group {
	struct group *older;    /* next on the stack */
	DIR *dir;               /* tar's stream, NULL for a kid not yet entered */
	int dirfd;
	int gone;               /* tar is done with it: freed when nothing is in flight */
	char *path;             /* absolute, from /proc/self/fd */
	struct ent *e;          /* regular files (or unknown types), tar's order */
	size_t n, cap;
	struct ent *d;          /* subdirectories, tar's order */
	size_t nd, dcap;
	size_t next_sub;        /* subdirectories before it were listed ahead or entered */
	size_t next_warm;       /* subdirectories before it were given to the read-ahead */
	struct group **kids;    /* listed ahead, in order; NULL once adopted or dropped */
	size_t nkids, kcap;
	size_t next_submit;     /* entries before it were submitted or skipped */
	uint32_t *ht;           /* name hash -> index + 1 */
	size_t htmask;
	size_t cursor;          /* where tar's next open is expected */
	unsigned inflight;      /* entries in E_INFLIGHT */
	int listed;
	int broken;             /* out of memory while listing: nothing is read ahead */
};

struct served {                 /* an fd of tar's whose read()s we answer */
	struct bfo_file f;      /* data released once consumed (data == NULL) */
	uint64_t pos;
	uint32_t epoch;
};

/*
 * A lot lives until all its files were delivered and given back: libbfo
 * keeps a group's arena chunk until the last file in it is released, so
 * a lot tar has mostly read still holds all of its memory.  The budget
 * therefore counts the bytes of the live lots, not the bytes held.
 */
struct lot {
	uint64_t end;           /* batch index after its last file */
	unsigned left;          /* files not yet delivered */
	unsigned out;           /* files not yet given back to libbfo */
	uint64_t bytes;
};

/* Create's state (create.c), used on tar's thread only. */
struct create_state {
	enum sort_mode sort;            /* tar's --sort */
	struct group *top;              /* newest listing */
	unsigned kids_alive;            /* directories listed ahead */
	/* libbfo's directory read-ahead, started with the first listing. */
	struct bfo_dirahead *ahead;
	int ahead_failed;
	/*
	 * libbfo's batch stays open while tar runs; the plugin submits lots
	 * to it.  bent maps batch index bbase + i to its entry (NULL once
	 * delivered or gone) over the live lots, oldest first.  epoch counts
	 * libbfo batches (a new one after a cancel counts its indices from 0
	 * again): a file of an earlier batch given back late counts for no lot.
	 */
	struct bfo_ctx *ctx;
	uint64_t batch_bytes;           /* of a lot: arena / LOT_SHARE */
	uint64_t held_budget;           /* bytes of the live lots, at most this */
	uint64_t held_bytes;            /* ready data not yet consumed */
	struct ent **bent;
	uint64_t bbase;
	unsigned bn, bcap;
	struct lot lots[MAX_LIVE];
	unsigned nlots;                 /* live lots */
	uint32_t epoch;
	int batch_open;                 /* libbfo's batch was started and not ended */
	/*
	 * Reading ahead starts with tar's first open of a listed file: tar
	 * lists directories without reading them too (--listed-incremental
	 * scans the whole tree first), and nothing is read for those.
	 */
	int tar_reads;
	struct served *fdtab[FDTAB_MAX];
};

extern struct create_state cr;

/* create_groups.c */
void ent_landed(struct ent *e, uint32_t state);
struct group *group_by_fd(int fd);
struct ent *group_find(struct group *g, const char *name);
struct group *list_ahead(struct group *g);

/* create_lots.c */
struct ent **bent_at(uint64_t i);
void drop_held(struct bfo_file *f, uint32_t ep);
void take(struct bfo_file *f);
void batch_over(void);
void pump(struct ent *until, int to_idle);
void topup(void);

#endif

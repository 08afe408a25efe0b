/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Phase 1 of a read: a window of files, their metadata and extents, and
 * the plan built from them (routes, groups sharing an arena chunk, raw
 * regions) that the dispatcher carries out.
 */
#ifndef BFO_PLAN_H
#define BFO_PLAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "arena.h"
#include "devinfo.h"
#include "entry.h"
#include "raw_ext4ino.h"
#include "pool.h"

struct bfo_ctx;
struct bfo_opts;

/* Raw files of DIRECT_MIN bytes or more get buffers aligned to
 * DIRECT_ALIGN (arena.h), so a region of one of their extents is read
 * straight into the buffer (entry_offset, dispatch.c submit_region). */
#define DIRECT_MIN   (32u << 10)

/* Files whose FIEMAP has more extents than this are read per file: the
 * plan would grow without bound and such files gain little from merging. */
#define BFO_MAX_EXTENTS_PER_FILE 256

/*
 * Pseudo files (procfs, sysfs, ... or size 0 where sizes may lie: see
 * devinfo.c) are read per file to EOF into a buffer of PSEUDO_FIRST bytes
 * (or their st_size, up to PSEUDO_FIRST_MAX); a read that fills it is done
 * again into one PSEUDO_GROW times larger, up to large_file.  A pseudo file
 * of more than large_file bytes (/proc/kcore) fails with -EFBIG: memory
 * stays within the arena whatever the file's size.
 */
#define PSEUDO_FIRST     4096u
#define PSEUDO_FIRST_MAX (64u << 10)
#define PSEUDO_GROW      8u

struct fext {                      /* one FIEMAP extent, clipped to the file */
	uint64_t logical, phys, len;
	bool zero;                 /* unwritten: reads as zeros, no I/O */
};

struct seg {                       /* a piece of an extent, inside one region */
	uint64_t phys, logical;
	uint32_t len;
	uint32_t entry;
	struct devinfo *di;
};

struct region {                    /* one raw read */
	uint64_t phys;
	uint32_t len;
	uint32_t seg_first, seg_count;
	struct devinfo *di;
};

struct group {                     /* files dispatched with one arena chunk */
	uint32_t first, count;     /* range of window->order */
	uint64_t bytes;            /* arena bytes the group needs */
	struct chunk *chunk;
	uint32_t seg_first, nsegs; /* window->segs, sorted by phys */
	uint32_t reg_first, nregions, next_region;
	uint32_t next;             /* next order[] slot to dispatch (non-raw) */
	uint32_t open;             /* files not yet completed */
	bool reserved;
};

/* Files per phase-1 task: enough to amortise the pool hand-off, few enough
 * that all threads get work in a window. */
#define TASK_FILES 32u

/* A phase-1 task: TASK_FILES files of a window, the extents it mapped
 * (copied into the window's array by plan_build). */
struct ptask {
	struct pool_task task;
	struct bfo_ctx *ctx;
	struct window *w;
	uint32_t first, count;
	size_t path_off;           /* of its first file's path in w->paths */
	struct fext *ext;
	uint32_t next, cap;
	struct ext4ino_buf ibuf;   /* inode-table bytes (hinted files) */
};

/* File systems whose files one window takes from their inodes (more: the
 * VFS path for the rest). */
#define WINDOW_HINT_DEVS 8u
/* Windows of fewer files take the VFS path: their metadata costs little
 * (a 32-file batch: well under a millisecond), while each window with hints
 * costs a syncfs per file system, which waits for any dirty data on it. */
#define DIRHINT_MIN_FILES 128u

struct dirlist;

/* A directory listed for a window's files (raw_dirhint.c): as it was before
 * the listing; unchanged later, the names it gave still name the same
 * inodes. */
struct hdir {
	uint32_t entry, len;       /* its path: the first len bytes of entry's path */
	uint64_t dev, ino;
	int64_t ctime_sec, mtime_sec;
	uint32_t ctime_nsec, mtime_nsec;
	uint64_t checked;          /* epoch of the last check (dirhint_same) */
	bool ok;                   /* its result */
};

struct window {
	uint32_t serial;
	uint64_t base;             /* batch index of entry 0 */
	uint32_t n;
	struct entry *e;
	char *paths;
	size_t paths_len;
	/* phase 0 (raw_dirhint.c), then phase 1 */
	struct pool_task hint_task;
	struct bfo_ctx *ctx;
	struct hdir *hdirs;
	uint32_t nhdirs;
	struct {                   /* file systems of the hinted files, to sync */
		struct devinfo *di;
		uint32_t hdir;     /* a directory of it, to sync through */
	} hint_devs[WINDOW_HINT_DEVS];
	unsigned nhint_devs;
	bool unsynced;             /* a sync failed: no bytes read raw from an inode */
	uint64_t mount_gen;        /* mount table generation of its listings (sysstate.h) */
	struct ptask *tasks;
	uint32_t ntasks;
	atomic_uint tasks_left;
	bool key_sample;           /* auto order: FIEMAP a sample first (KEY_SAMPLE) */
	bool key_pass;             /* its second pass (the other files' keys) runs */
	uint64_t t_plan_start;
	/* the plan */
	struct fext *ext;
	uint32_t next_ext;
	uint32_t *order;
	uint32_t norder;
	struct group *groups;
	uint32_t ngroups, cur_group;
	struct seg *segs;
	uint32_t nsegs;
	struct region *regions;
	uint32_t nregions;
	uint32_t *early;           /* entries delivered without data */
	uint32_t nearly, next_early;
	uint32_t *large;           /* R_PIECES entries */
	uint32_t nlarge, next_large;
	/* dispatch */
	uint32_t undelivered;      /* entries whose last delivery is not queued yet */
	unsigned refs;             /* tickets out + 1 while the dispatcher holds it */
	struct window *next;
};

struct window *window_alloc(uint32_t n);
size_t window_take_paths(struct window *w, const char *paths);
void plan_start_window(struct bfo_ctx *ctx, struct window *w);
void plan_window(struct bfo_ctx *ctx, struct window *w);
void window_free(struct window *w);
/* raw_regions.c: the segments e's extents take (cut at max_io); the
 * ORDER_LIST of each of w's groups, merged into w->regions (w->segs and
 * w->regions sized for every segment); BFO_READ_PLAN_ONLY's count of the
 * regions w's files would take, added to the batch's statistics
 * (-ENOMEM, or 0). */
uint32_t entry_nsegs(const struct bfo_opts *o, const struct window *w, const struct entry *e);
void plan_regions(struct bfo_ctx *ctx, struct window *w);
int plan_only_stats(struct bfo_ctx *ctx, struct window *w);
void dirhint_window(struct bfo_ctx *ctx, struct window *w);
/* A number no earlier check used: checks of one epoch share a directory's
 * result, so take a new one for every set of files whose data is in. */
uint64_t dirhint_epoch(void);
/* Is the directory that named e (hinted) as it was before its listing? */
bool dirhint_same(struct window *w, const struct entry *e, uint64_t epoch);
/* Take listings made by the tree walk (a list through their next
 * pointers, owned from here on) into ctx's batch: those of directories
 * whose files may be hinted go to its cache.  Returns how many did. */
unsigned dirhint_adopt(struct bfo_ctx *ctx, struct dirlist *lists);
/* Sync the file systems of w's hinted files, after their inodes were read;
 * false if one could not be synced. */
bool dirhint_sync(struct window *w);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Internal structures of libbfo.  Not installed; tests may include it. */
#ifndef BFO_INTERNAL_H
#define BFO_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stdio.h>
#include <time.h>

#include "bfo.h"

#define BFO_API __attribute__((visibility("default")))
#define BFO_HIDDEN __attribute__((visibility("hidden")))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define ALIGN_DOWN(x, a) ((x) / (a) * (a))

/* Raw files of DIRECT_MIN bytes or more get page-aligned buffers, so a
 * region of one of their extents is read straight into the buffer (plan.c
 * entry_offset, dispatch.c submit_region).  A page is the O_DIRECT memory
 * alignment of every block device, and arena chunks start on one. */
#define DIRECT_ALIGN 4096u
#define DIRECT_MIN   (32u << 10)

/* Files whose FIEMAP has more extents than this are read per file: the
 * plan would grow without bound and such files gain little from merging. */
#define BFO_MAX_EXTENTS_PER_FILE 256
/* Windows planned ahead of the one being read.  Two keeps the metadata
 * phase of the next window running while the current one is read, without
 * holding many windows of paths and extents. */
#define BFO_LOOKAHEAD 2
/* A changed file is re-read at most this many times before -ESTALE. */
#define BFO_MAX_RETRIES 3

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

static inline uint64_t bfo_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ pool */

struct pool_task {
	void (*fn)(struct pool_task *task);
	struct pool_task *next;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pool_task *head, *tail;
	pthread_t *threads;
	unsigned nthreads;      /* started so far (threads grow on demand) */
	unsigned max;           /* at most this many */
	unsigned idle;          /* waiting for a task */
	unsigned queued;        /* tasks not yet taken */
	int nice;               /* the workers' nice value (pool_start's caller + POOL_NICE) */
	bool stop;
};

int pool_start(struct pool *p, unsigned nthreads);
void pool_stop(struct pool *p);
void pool_push(struct pool *p, struct pool_task *t);

/* ----------------------------------------------------------------- arena */

/*
 * The arena is one mapping used as a ring of chunks.  Chunks are freed in
 * any order but space is reclaimed in allocation order, so the ring never
 * fragments and its pages, once touched, are reused rather than faulted in
 * again for every batch.
 */
struct chunk {
	size_t off, len;
	unsigned refs;
	bool freed;
	struct chunk *next;
};

struct arena {
	uint8_t *base;
	size_t size;
	size_t head;            /* next free byte */
	struct chunk *first, *last;
	size_t in_use;          /* bytes held by live chunks */
	/* pages populated ahead of the head on the pool (arena_prefault_start) */
	struct pool *pool;
	struct pool_task fault_task;
	size_t fault_done;      /* [0, fault_done) populated: the running task's */
	size_t allocated;       /* bytes ever allocated: how far ahead to populate */
	atomic_size_t fault_want;
	atomic_bool fault_running, fault_stop;
};

int arena_init(struct arena *a, size_t size);
void arena_prefault_start(struct arena *a, struct pool *pool);
void arena_prefault_stop(struct arena *a);
void arena_fini(struct arena *a);
struct chunk *arena_alloc(struct arena *a, size_t len);
void arena_put(struct arena *a, struct chunk *c);

/* --------------------------------------------------------------- devices */

enum fs_kind { FS_OTHER = 0, FS_EXT4, FS_XFS };

struct devinfo {
	uint64_t dev;            /* major << 32 | minor */
	int raw_fd;              /* O_DIRECT descriptor of the block device, or -1 */
	uint32_t lbs;            /* logical block size of the device */
	uint64_t devsize;
	bool rotational;
	enum fs_kind fs;
	bool sizes_lie;          /* procfs, sysfs, ...: st_size is no size */
	bool sizes_true;         /* ext4, XFS, btrfs, tmpfs: size 0 is empty */
	char why[160];           /* why raw is not possible, or the device name */
	struct devinfo *next;
};

struct devcache {
	pthread_mutex_t lock;
	struct devinfo *list;
	bool want_raw;           /* the engine may use raw reads at all */
};

void devcache_init(struct devcache *dc, bool want_raw);
void devcache_fini(struct devcache *dc);
struct devinfo *devcache_get(struct devcache *dc, uint64_t dev, const char *path);

/* ---------------------------------------------------------------- a plan */

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
};

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

struct ptask;

struct window {
	uint32_t serial;
	uint64_t base;             /* batch index of entry 0 */
	uint32_t n;
	struct entry *e;
	char *paths;
	size_t paths_len;
	/* phase 1 */
	struct ptask *tasks;
	uint32_t ntasks;
	atomic_uint tasks_left;
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

/* ----------------------------------------------------------------- ctx */

enum batch_state { B_IDLE = 0, B_ACTIVE, B_FINISHED, B_STOPPING };

struct ticket {
	struct window *w;
	struct chunk *chunk;
	uint32_t gen;
	uint32_t next_free;
	bool used;
};

struct fjob;
struct uring_state;

struct bfo_ctx {
	struct bfo_opts o;
	pthread_mutex_t lock;
	pthread_cond_t cond;       /* the caller waits for results here */
	int evfd;                  /* wakes the dispatcher */
	pthread_t dispatcher;
	bool dispatcher_started;
	struct pool pool;
	struct arena arena;
	struct devcache devs;
	struct uring_state *u;     /* NULL: no io_uring (portable only) */
	char uring_why[160];

	/* batch state, under lock */
	enum batch_state bstate;
	bool stop_on_error_hit;
	bool shutdown;
	uint64_t next_index;
	uint32_t next_window_files;  /* slow start: size of the next window */
	char *in_buf;              /* pending paths, NUL-separated */
	size_t in_len, in_cap, in_pos;
	uint64_t in_count;         /* paths in in_buf not yet in a window */
	uint64_t cut_count;        /* of those, planned now even below a window (bfo_read_flush) */
	uint32_t serial;
	unsigned nplanning;
	struct window *planned_head, *planned_tail;  /* phase 1 done, plan not built */
	unsigned nplanned;
	struct window *active;     /* dispatcher-owned, in plan order */
	unsigned nactive;
	struct window *retired;    /* waiting for releases */
	struct bfo_file *res;      /* ring of entries ready for the caller */
	size_t res_cap, res_head, res_count;
	struct ticket *tickets;
	uint32_t nticket, ticket_free;
	uint32_t tickets_out;
	struct fjob *done_jobs;    /* pool reads finished, for the dispatcher */
	bool disp_blocked;         /* dispatcher waits for arena space */
	unsigned inflight;         /* data reads submitted, not completed */
	bool caller_waiting;
	bool wake_pending;

	/* statistics */
	struct bfo_stats st;
	uint64_t t_batch_start;
	uint64_t t_meta_since, t_data_since;
	uint64_t bytes_by_engine[5];
};

/* ctx.c: locking helpers and results */
void ctx_wake_dispatcher(struct bfo_ctx *ctx);
void ctx_feed_planner_locked(struct bfo_ctx *ctx);
void ctx_push_result_locked(struct bfo_ctx *ctx, struct window *w, uint32_t ei,
			    struct chunk *chunk, const void *data,
			    uint64_t offset, uint64_t length, bool last);
void ctx_window_put_locked(struct bfo_ctx *ctx, struct window *w);
void ctx_update_phase_times_locked(struct bfo_ctx *ctx);

/* plan.c: phase 1 */
struct window *window_alloc(uint32_t n, size_t paths_len);
void plan_start_window(struct bfo_ctx *ctx, struct window *w);
void plan_window(struct bfo_ctx *ctx, struct window *w);
void window_free(struct window *w);
int stat_path(const char *path, bool nofollow, struct entry *e);
bool meta_same(const struct entry *a, const struct entry *b);
void entry_meta_from_stat(struct entry *e, const struct stat *st);

/* fileio.c: per-file reads on the pool */
enum fjob_kind { FJ_WHOLE, FJ_PIECE };
/* Files per pool job: a job reads its files one after another, so a
 * batch saves the thread hand-offs (costly wake-ups, above all in VMs) that
 * one job per file would pay. */
#define FJOB_BATCH 16u

struct fitem {
	uint32_t ei;
	uint8_t *buf;
	uint64_t off, len;         /* FJ_PIECE: range; FJ_WHOLE: len = capacity */
	struct chunk *chunk;       /* own chunk (pieces, re-reads) or NULL */
	int32_t result;            /* 0, or -errno */
	bool changed;              /* metadata differed from the plan's: see fresh */
	bool fresh_ok;             /* fresh holds the file's current metadata */
	bool full;                 /* pseudo: the buffer filled before EOF */
	uint64_t got;              /* pseudo: bytes read, EOF seen */
	struct entry fresh;
};

struct fjob {
	struct pool_task task;
	struct bfo_ctx *ctx;
	struct window *w;
	enum fjob_kind kind;
	uint32_t n;
	struct fjob *next;
	struct fitem items[FJOB_BATCH];
};
void fjob_run(struct pool_task *t);

/* dispatch.c */
void *dispatcher_main(void *arg);
int uring_probe(char *why, size_t len);

/*
 * Fault injection for tests (hidden: not exported by libbfo.so; tests link
 * the static library).  after_plan runs in the pool thread that finished a
 * window's plan, before phase 2 can start on it; after_data runs after a
 * file's bytes were read and before they are verified (raw and uring: before
 * the re-stat; per-file reads: before the second fstat).  While
 * hold_retire returns true, the dispatcher keeps windows whose entries were
 * all queued active instead of retiring them (not when the batch stops): the
 * caller then sees what it sees when the dispatcher is slow to retire.
 */
struct bfo_test_hooks {
	void (*after_plan)(void *arg, uint32_t nfiles);
	void (*after_data)(void *arg, const char *path);
	bool (*hold_retire)(void *arg);
	void *arg;
};
extern struct bfo_test_hooks bfo_test_hooks;

/*
 * BFO_TRACE=1 in the environment (read when a context is created) prints
 * the life of each window on stderr: when its phase 1 ends, when it becomes
 * active, when its groups get memory, when it retires.  For diagnosing the
 * pipeline; one line per window or group, never per file.
 */
extern uint64_t bfo_trace_start;
#define TRACE(fmt, ...)                                                         \
	do {                                                                    \
		if (bfo_trace_start)                                            \
			fprintf(stderr, "bfo-trace %8.3f " fmt "\n",            \
				(double)(bfo_now_ns() - bfo_trace_start) / 1e9,   \
				##__VA_ARGS__);                                 \
	} while (0)

/* stats helpers */
static inline void stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

#endif

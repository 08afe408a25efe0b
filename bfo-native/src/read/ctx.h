/* SPDX-License-Identifier: Apache-2.0 */
/* A read context: its threads, arena, devices, io_uring, the batch's
 * windows on their way through the pipeline, and the results ring. */
#ifndef BFO_CTX_H
#define BFO_CTX_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bfo.h"
#include "arena.h"
#include "devinfo.h"
#include "dirlist.h"
#include "plan.h"
#include "pool.h"
#include "sysstate.h"

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
	struct sysstate sys;       /* what the system lets the batch do, per batch */
	bool sys_fresh;            /* taken for the batch in progress or the next one */
	struct devcache devs;
	struct dircache dirs;      /* the batch's directory listings (raw engine) */
	struct uring_state *u;     /* NULL: no io_uring (portable only) */
	char uring_why[160];

	/* batch state, under lock */
	enum batch_state bstate;
	/* bstate is B_STOPPING: read by pool tasks without the lock, so a
	 * window's metadata phase ends early when its batch stopped. */
	atomic_bool stopping;
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
	uint64_t files_ahead;      /* in windows formed and not yet retired */
	/* Windows listing their directories and reading their inodes from
	 * the device go one at a time, in order (plan.c): a later window's
	 * inode-table reads would otherwise delay the earlier one's. */
	bool hinting;
	struct window *hint_wait_head, *hint_wait_tail;
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
/* Before listings are handed to an idle context for its next batch: the
 * system state that batch will run with (sysstate.h). */
void ctx_prepare_next_batch(struct bfo_ctx *ctx);

/* ctx.c: a batch's state and times begin (its first path) and end (its
 * last entry delivered, or a cancel).  ctx_batch.c: a delivered entry's
 * memory given back by its ticket's cookie: 0, or -EINVAL for a cookie
 * this context did not hand out. */
void ctx_batch_begin_locked(struct bfo_ctx *ctx);
void ctx_batch_end_locked(struct bfo_ctx *ctx);
int ctx_ticket_put_locked(struct bfo_ctx *ctx, uint64_t cookie);

#endif

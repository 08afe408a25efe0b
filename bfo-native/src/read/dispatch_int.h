/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The dispatcher's insides (dispatch.c), shared by its engines' files:
 * dispatch_raw.c, dispatch_uring.c and dispatch_pool.c.
 */
#ifndef BFO_DISPATCH_INT_H
#define BFO_DISPATCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <liburing.h>

#include "ctx.h"
#include "dispatch_ring.h"
#include "plan.h"
#include "portable.h"

/* A changed file is re-read at most this many times before -ESTALE. */
#define BFO_MAX_RETRIES 3

struct slow_item {
	struct window *w;
	uint32_t ei;
};

/* A FIFO of files to read per file on the pool (a ring that grows). */
struct slowq {
	struct slow_item *q;
	size_t head, count, cap;
};

struct disp {
	struct bfo_ctx *ctx;
	struct uring_state *u;
	struct window *tail;     /* last window of ctx->active */
	unsigned pool_busy, pool_max;
	/* Per-file reads that need arena space of their own (large files'
	 * pieces, re-reads that outgrew their buffer), granted in order; and
	 * re-reads into the buffer their group already holds, which need
	 * none.  Two queues, because the second kind is what completes the
	 * groups holding the arena: queued behind a piece waiting for that
	 * space, it waited for ever (issue 33). */
	struct slowq memq, inplace;
	bool nofollow;
	uint64_t epoch;          /* of the completions being reaped (dirhint_same) */
	uint64_t mount_gen;      /* of the mount table after they completed */
	unsigned creds_seen;     /* sysstate_adopt_creds */
	struct ext4ino_buf ibuf; /* inode-table bytes read since they were reaped */
	/* Memory came back on this thread while it waited for space: go
	 * round again before sleeping (ticket_put wakes it for the caller's). */
	bool freed;
};

/* dispatch.c */
uint8_t *disp_chunk_ptr(struct bfo_ctx *ctx, struct chunk *c);
void disp_arena_put(struct disp *d, struct chunk *c);
void disp_deliver(struct disp *d, struct window *w, uint32_t ei, struct chunk *chunk,
		  const void *data, uint64_t off, uint64_t len, bool last);
void disp_finish_fail(struct disp *d, struct window *w, uint32_t ei, int status);
struct chunk *disp_group_chunk(struct window *w, const struct entry *e);
uint64_t disp_whole_len(const struct entry *e);
bool disp_reads_in_place(struct window *w, const struct entry *e);
void disp_requeue(struct disp *d, struct window *w, uint32_t ei);
void disp_pseudo_grow(struct disp *d, struct window *w, uint32_t ei);
void disp_take_meta(struct entry *e, const struct entry *now);
void disp_verify_and_deliver(struct disp *d, struct window *w, uint32_t ei, const void *data);

/* dispatch_pool.c */
void disp_slowq_push(struct disp *d, struct window *w, uint32_t ei);
struct fjob *disp_job_new(struct disp *d, struct window *w, enum fjob_kind kind);
void disp_job_add(struct fjob *j, uint32_t ei, uint8_t *buf, uint64_t off, uint64_t len,
		  struct chunk *chunk);
void disp_job_submit(struct disp *d, struct fjob *j);
void disp_job_done(struct disp *d, struct fjob *j);
struct chunk *disp_reserve(struct disp *d, uint64_t len);
bool disp_submit_slow(struct disp *d);

/* dispatch_raw.c */
void disp_raw_file_done(struct disp *d, struct window *w, uint32_t ei);
void disp_region_done(struct disp *d, struct window *w, uint32_t ri, const uint8_t *buf,
		      bool ok);
bool disp_submit_region(struct disp *d, struct window *w, uint32_t ri);

/* dispatch_uring.c */
bool disp_submit_uring_file(struct disp *d, struct window *w, uint32_t ei);
void disp_reap(struct disp *d);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read dispatcher's io_uring: the ring, its operations in flight (a
 * raw region read, or a file's open and then its read, found again by the
 * user_data of their completions), the direct-descriptor slots the opens
 * go to, and the region buffers.  Only the dispatcher thread touches it
 * (dispatch.c); it creates the ring, so the ring can be SINGLE_ISSUER.
 */
#ifndef BFO_DISPATCH_RING_H
#define BFO_DISPATCH_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <liburing.h>

struct window;

/* user_data: the eventfd's poll; an open (its op + 1 | UD_OPEN); anything
 * else is op + 1. */
#define UD_EVFD UINT64_MAX
#define UD_OPEN (1ull << 62)
/* ring_cancel_inflight's own request: its completion means nothing. */
#define UD_CANCEL (UINT64_MAX - 1)
/* op.res of a region read straight into its file's buffer: no region buffer. */
#define RBUF_NONE UINT32_MAX

enum op_kind { OP_FREE = 0, OP_REGION, OP_FILE };

struct op {
	uint8_t kind;
	struct window *w;
	uint32_t idx;           /* region index, or entry index */
	uint32_t res;           /* region buffer, or fixed-file slot */
	int32_t open_err;
	uint32_t next_free;
};

struct uring_state {
	struct io_uring ring;
	bool evfd_armed;
	struct op *ops;
	unsigned nops, ops_busy;
	uint32_t op_free;
	uint32_t *slot_free;
	unsigned nslots, nslot_free;
	/* plain_fds: the kernel puts a file taken out of the registered table
	 * later, in a worker (6.1; see removal_deferred in dispatch_ring.c), so files
	 * are opened as ordinary descriptors (slot_fd, one per slot) and
	 * closed by the dispatcher as each file is done: when a batch returns,
	 * and when the process exits, nothing of it is open. */
	bool plain_fds;
	int *slot_fd;
	uint32_t *opened;       /* ops whose open completed, read not yet queued (nops) */
	unsigned nopened;
	bool slots_dirty;
	uint8_t *rbuf;
	size_t rbuf_size;
	unsigned nrbuf, nrbuf_free;
	uint32_t *rbuf_free;
	bool rbuf_fixed, rbuf_tried;
	bool cancel_sent;       /* this stop's ring_cancel_inflight went */
};

/* NULL, with the reason in why, when io_uring cannot serve the readers
 * (refused, too old, no direct descriptors). */
struct uring_state *uring_create(unsigned qd, char *why, size_t len);
void uring_free(struct uring_state *u);
/*
 * A batch that stops (bfo_read_cancel) does not wait for the reads it
 * queued: once per stop, every request of the ring not yet running is
 * cancelled (IORING_ASYNC_CANCEL_ANY; each completes with -ECANCELED, the
 * eventfd's poll too, which the dispatcher arms again).  Reads already at
 * the device complete as usual.  Called by the dispatcher on each round
 * with whether the batch is stopping.
 */
void ring_cancel_inflight(struct uring_state *u, bool stopping);

/* An SQE, submitting what is queued first when the ring is full. */
struct io_uring_sqe *get_sqe(struct uring_state *u);
/* A free op for kind (the caller checked ops_busy < nops); its index. */
uint32_t op_get(struct uring_state *u, enum op_kind kind, struct window *w,
		uint32_t idx, uint32_t res);
void op_put(struct uring_state *u, uint32_t i);
/* Region buffers of max_io bytes (and two pages of alignment slack), at
 * most qd of them: false when there are none (and will be none). */
bool rbuf_ready(struct uring_state *u, uint64_t max_io, unsigned qd);
/* The ring completes a UD_EVFD entry whenever evfd is written. */
void arm_evfd(struct uring_state *u, int evfd);
void drain_evfd(int evfd);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The uring engine's reads on the dispatcher (dispatch_int.h): each file
 * opened into a direct descriptor and read by a linked io_uring chain, and
 * the reaping of every completion of the ring.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "common.h"
#include "fdlimit.h"
#include "ctx.h"
#include "dispatch.h"
#include "dispatch_int.h"
#include "raw_ext4ino.h"
#include "portable.h"
#include "plan.h"
#include "dispatch_ring.h"
#include "test_hooks.h"

bool disp_submit_uring_file(struct disp *d, struct window *w, uint32_t ei)
{
	struct uring_state *u = d->u;
	struct entry *e = &w->e[ei];
	struct io_uring_sqe *sqe;
	uint32_t slot, op;

	if (!u->nslot_free || u->ops_busy == u->nops)
		return false;
	slot = u->slot_free[--u->nslot_free];
	u->slots_dirty = true;
	op = op_get(u, OP_FILE, w, ei, slot);
	sqe = get_sqe(u);
	/* An occupied slot is replaced by the open (the previous file is
	 * closed then), which saves a close per file.  The read follows once
	 * the open completed (queue_opened_reads). */
	int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | (d->nofollow ? O_NOFOLLOW : 0);

	if (u->plain_fds)
		io_uring_prep_openat(sqe, AT_FDCWD, e->path, flags | O_CLOEXEC, 0);
	else
		io_uring_prep_openat_direct(sqe, AT_FDCWD, e->path, flags, 0, slot);
	sqe->user_data = (op + 1) | UD_OPEN;
	stat_add(&d->ctx->st.ios, 1);
	stat_add(&d->ctx->st.device_bytes, e->size);
	return true;
}

/*
 * The reads of the files whose opens completed in the last set of
 * completions, queued together: they reach the kernel in one submission,
 * whose block plug merges the reads of files adjacent on the device (in
 * physical order, most of a dense tree's).  Linked behind each open, as
 * they were, every read was issued on its own when its open completed:
 * 101,256 device reads for the 100,000 files of the 4k set.
 */
static void queue_opened_reads(struct disp *d)
{
	struct uring_state *u = d->u;

	for (unsigned k = 0; k < u->nopened; k++) {
		struct op *op = &u->ops[u->opened[k]];
		struct entry *e = &op->w->e[op->idx];
		struct io_uring_sqe *sqe = get_sqe(u);

		io_uring_prep_read(sqe, u->plain_fds ? u->slot_fd[op->res] : (int)op->res,
				   disp_chunk_ptr(d->ctx, disp_group_chunk(op->w, e)) + e->buf_off,
				   (unsigned)(e->size + 1), 0);
		if (!u->plain_fds)
			sqe->flags |= IOSQE_FIXED_FILE;
		sqe->user_data = u->opened[k] + 1;
	}
	u->nopened = 0;
}

static void uring_file_done(struct disp *d, struct op *op, int res)
{
	struct window *w = op->w;
	uint32_t ei = op->idx;
	struct entry *e = &w->e[ei];

	if (d->u->plain_fds && d->u->slot_fd[op->res] >= 0) {
		close(d->u->slot_fd[op->res]);
		d->u->slot_fd[op->res] = -1;
		fdl_release();
	}
	d->u->slot_free[d->u->nslot_free++] = op->res;
	if (op->open_err == -EMFILE || op->open_err == -ENFILE) {
		/* out of descriptors (ordinary ones on 6.1): the pool's read
		 * waits for one of libbfo's to be closed (fdlimit.h) */
		disp_requeue(d, w, ei);
	} else if (op->open_err) {
		disp_finish_fail(d, w, ei, op->open_err);
	} else if (res == -ECANCELED) {
		disp_requeue(d, w, ei);
	} else if (res < 0) {
		disp_finish_fail(d, w, ei, res);
	} else if ((uint64_t)res == e->size) {
		disp_verify_and_deliver(d, w, ei, disp_chunk_ptr(d->ctx, disp_group_chunk(w, e)) + e->buf_off);
	} else {
		/* Shorter or longer than planned: it changed. */
		struct entry now;
		int ret = stat_path(e->path, d->nofollow, &now);

		if (ret < 0) {
			disp_finish_fail(d, w, ei, ret);
			return;
		}
		disp_take_meta(e, &now);
		disp_requeue(d, w, ei);
	}
}

static void reap_one(struct disp *d, struct io_uring_cqe *cqe)
{
	struct uring_state *u = d->u;
	uint64_t ud = cqe->user_data;

	if (ud == UD_CANCEL)
		return;
	if (ud == UD_EVFD) {
		drain_evfd(d->ctx->evfd);
		if (!(cqe->flags & IORING_CQE_F_MORE))
			u->evfd_armed = false;
		return;
	}
	if (ud & UD_OPEN) {
		uint32_t i = (uint32_t)((ud & ~UD_OPEN) - 1);

		if (cqe->res < 0) {
			u->ops[i].open_err = cqe->res;
			uring_file_done(d, &u->ops[i], cqe->res);
			op_put(u, i);
		} else {
			if (u->plain_fds) {
				u->slot_fd[u->ops[i].res] = cqe->res;
				fdl_hold();
			}
			u->opened[u->nopened++] = i;
		}
		return;
	}
	uint32_t i = (uint32_t)(ud - 1);
	struct op *op = &u->ops[i];

	if (op->kind == OP_REGION) {
		uint32_t b = op->res;

		disp_region_done(d, op->w, op->idx, b == RBUF_NONE ? NULL : u->rbuf + (size_t)b * u->rbuf_size,
			    cqe->res == (int)op->w->regions[op->idx].len);
		if (b != RBUF_NONE)
			u->rbuf_free[u->nrbuf_free++] = b;
	} else if (op->kind == OP_FILE) {
		uring_file_done(d, op, cqe->res);
	}
	op_put(u, i);
}

/* Completions in sets taken at once (io_uring_for_each_cqe would also take
 * those posted while the loop runs): every completion of a set happened
 * before a directory check or inode read of its epoch. */
#define REAP_BATCH 256u

void disp_reap(struct disp *d)
{
	struct io_uring_cqe *cqes[REAP_BATCH];
	unsigned n;

	while ((n = io_uring_peek_batch_cqe(&d->u->ring, cqes, REAP_BATCH)) > 0) {
		d->epoch = dirhint_epoch();
		d->mount_gen = sysstate_mount_gen(&d->ctx->sys);
		ext4ino_buf_start(&d->ibuf);
		for (unsigned k = 0; k < n; k++)
			reap_one(d, cqes[k]);
		io_uring_cq_advance(&d->u->ring, n);
	}
	queue_opened_reads(d);
}

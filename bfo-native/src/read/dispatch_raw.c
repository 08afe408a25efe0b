/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The raw engine's reads on the dispatcher (dispatch_int.h): regions of the
 * block device read with O_DIRECT, in ascending physical order, and each
 * region's files copied out of it and verified.
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

void disp_raw_file_done(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];

	if (e->raw_bad) {
		disp_requeue(d, w, ei);
		return;
	}
	disp_verify_and_deliver(d, w, ei, disp_chunk_ptr(d->ctx, disp_group_chunk(w, e)) + e->buf_off);
}

/* buf: the region buffer the region was read into, or NULL when it was
 * read straight into its one file's buffer (direct_target). */
void disp_region_done(struct disp *d, struct window *w, uint32_t ri, const uint8_t *buf,
		      bool ok)
{
	const struct region *r = &w->regions[ri];

	for (uint32_t i = r->seg_first; i < r->seg_first + r->seg_count; i++) {
		const struct seg *s = &w->segs[i];
		struct entry *e = &w->e[s->entry];
		uint8_t *dst = disp_chunk_ptr(d->ctx, disp_group_chunk(w, e)) + e->buf_off + s->logical;

		/* Only the bytes of the file's own extents leave the region
		 * buffer; merged gaps stay inside it.  A direct read also
		 * brought the rest of the extent's last block, past the end
		 * of the file: zeroed, as no caller may see it. */
		if (ok && !e->raw_bad && buf)
			memcpy(dst, buf + (s->phys - r->phys), s->len);
		else if (ok && !e->raw_bad)
			memset(dst + s->len, 0, r->len - s->len);
		else
			e->raw_bad = true;
		if (--e->pending == 0)
			disp_raw_file_done(d, w, s->entry);
	}
}

/*
 * Where region r can be read straight to, or NULL: a region of a single
 * extent piece of one file, starting on it, whose whole length (the piece
 * rounded up to the device's block) lands page-aligned inside the file's
 * buffer.  Such a read skips the region buffer and the copy, and is
 * bounded by the queue depth only, not by the number of region buffers.
 */
static uint8_t *direct_target(struct disp *d, struct window *w, const struct region *r)
{
	const struct seg *s = &w->segs[r->seg_first];
	const struct entry *e = &w->e[s->entry];
	uint8_t *dst;

	if (r->seg_count != 1 || s->phys != r->phys || s->logical + r->len > e->cap)
		return NULL;
	dst = disp_chunk_ptr(d->ctx, disp_group_chunk(w, e)) + e->buf_off + s->logical;
	return (uintptr_t)dst % DIRECT_ALIGN || r->len % r->di->lbs ? NULL : dst;
}

bool disp_submit_region(struct disp *d, struct window *w, uint32_t ri)
{
	struct uring_state *u = d->u;
	const struct region *r = &w->regions[ri];
	struct io_uring_sqe *sqe;
	uint32_t b, op;
	uint8_t *buf = direct_target(d, w, r);

	if (buf) {
		if (u->ops_busy == u->nops)
			return false;
		op = op_get(u, OP_REGION, w, ri, RBUF_NONE);
		sqe = get_sqe(u);
		io_uring_prep_read(sqe, r->di->raw_fd, buf, r->len, r->phys);
		stat_add(&d->ctx->st.direct_regions, 1);
	} else {
		if (!rbuf_ready(u, d->ctx->o.max_io, d->ctx->o.queue_depth) || r->len > u->rbuf_size) {
			disp_region_done(d, w, ri, NULL, false);
			return true;
		}
		if (!u->nrbuf_free || u->ops_busy == u->nops)
			return false;
		b = u->rbuf_free[--u->nrbuf_free];
		buf = u->rbuf + (size_t)b * u->rbuf_size;
		op = op_get(u, OP_REGION, w, ri, b);
		sqe = get_sqe(u);
		if (u->rbuf_fixed)
			io_uring_prep_read_fixed(sqe, r->di->raw_fd, buf, r->len, r->phys, (int)b);
		else
			io_uring_prep_read(sqe, r->di->raw_fd, buf, r->len, r->phys);
	}
	sqe->user_data = op + 1;
	stat_add(&d->ctx->st.ios, 1);
	stat_add(&d->ctx->st.regions, 1);
	stat_add(&d->ctx->st.device_bytes, r->len);
	return true;
}

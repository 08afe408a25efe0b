/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-file reads handed to the pool by the dispatcher (dispatch_int.h): the
 * portable engine, the other engines' fallbacks, large files in pieces; the
 * queues of files waiting for arena space, and the jobs that carry them.
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

static bool slowq_add(struct slowq *sq, struct window *w, uint32_t ei)
{
	if (sq->count == sq->cap) {
		size_t n = sq->cap ? sq->cap * 2 : 256;
		struct slow_item *q = malloc(n * sizeof(*q));

		if (!q)
			return false;
		for (size_t i = 0; i < sq->count; i++)
			q[i] = sq->q[(sq->head + i) % sq->cap];
		free(sq->q);
		sq->q = q;
		sq->cap = n;
		sq->head = 0;
	}
	sq->q[(sq->head + sq->count) % sq->cap] = (struct slow_item){ w, ei };
	sq->count++;
	return true;
}

static struct slow_item slowq_take(struct slowq *sq)
{
	struct slow_item it = sq->q[sq->head];

	sq->head = (sq->head + 1) % sq->cap;
	sq->count--;
	return it;
}

void disp_slowq_push(struct disp *d, struct window *w, uint32_t ei)
{
	if (!slowq_add(disp_reads_in_place(w, &w->e[ei]) ? &d->inplace : &d->memq, w, ei))
		disp_finish_fail(d, w, ei, -ENOMEM);
}

struct fjob *disp_job_new(struct disp *d, struct window *w, enum fjob_kind kind)
{
	struct fjob *j = malloc(sizeof(*j));

	if (!j)
		return NULL;
	j->task.fn = fjob_run;
	j->ctx = d->ctx;
	j->w = w;
	j->kind = kind;
	j->n = 0;
	return j;
}

void disp_job_add(struct fjob *j, uint32_t ei, uint8_t *buf, uint64_t off, uint64_t len,
		  struct chunk *chunk)
{
	struct fitem *it = &j->items[j->n++];

	it->ei = ei;
	it->buf = buf;
	it->off = off;
	it->len = len;
	it->chunk = chunk;
	it->result = 0;
	it->changed = it->fresh_ok = it->full = false;
	it->got = 0;
}

void disp_job_submit(struct disp *d, struct fjob *j)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < j->n; i++)
		bytes += j->kind == FJ_WHOLE ? j->w->e[j->items[i].ei].size : j->items[i].len;
	d->pool_busy++;
	stat_add(&d->ctx->st.ios, j->n);
	stat_add(&d->ctx->st.device_bytes, bytes);
	pool_push(&d->ctx->pool, &j->task);
}

static void item_done(struct disp *d, struct window *w, enum fjob_kind kind, struct fitem *it)
{
	uint32_t ei = it->ei;
	struct entry *e = &w->e[ei];
	struct chunk *own = it->chunk;

	if (!it->result && it->full) {
		disp_pseudo_grow(d, w, ei);
	} else if (!it->result && !it->changed) {
		if (kind == FJ_WHOLE) {
			if (e->pseudo)
				e->size = it->got;
			disp_deliver(d, w, ei, own ? own : disp_group_chunk(w, e), it->buf, 0, e->size, true);
		} else {
			bool last = it->off + it->len >= e->size;

			disp_deliver(d, w, ei, own, it->buf, it->off, it->len, last);
			if (!last) {
				e->piece_off = it->off + it->len;
				disp_slowq_push(d, w, ei);
			}
		}
	} else if (it->changed) {
		if (kind == FJ_PIECE && it->off > 0) {
			/* Pieces were delivered already: this file ends here. */
			disp_finish_fail(d, w, ei, -ESTALE);
		} else {
			if (it->fresh_ok)
				disp_take_meta(e, &it->fresh);
			disp_requeue(d, w, ei);
		}
	} else {
		disp_finish_fail(d, w, ei, it->result);
	}
	if (own)
		disp_arena_put(d, own);
}

void disp_job_done(struct disp *d, struct fjob *j)
{
	d->pool_busy--;
	for (uint32_t i = 0; i < j->n; i++)
		item_done(d, j->w, j->kind, &j->items[i]);
	free(j);
}

/* Allocate from the arena or note that the dispatcher waits for space. */
struct chunk *disp_reserve(struct disp *d, uint64_t len)
{
	struct bfo_ctx *ctx = d->ctx;
	struct chunk *c;

	pthread_mutex_lock(&ctx->lock);
	c = arena_alloc(&ctx->arena, len);
	ctx->disp_blocked = !c;
	ctx->inflight = (d->u ? d->u->ops_busy : 0) + d->pool_busy;
	if (!c && ctx->caller_waiting)
		pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
	return c;
}

/* One per-file read on the pool, into c (its own chunk) or, when c is NULL,
 * into the buffer its group holds for it. */
static void submit_one(struct disp *d, struct slow_item it, struct chunk *c, uint64_t off,
		       uint64_t len)
{
	struct entry *e = &it.w->e[it.ei];
	bool piece = e->route == R_PIECES;
	struct fjob *j = disp_job_new(d, it.w, piece ? FJ_PIECE : FJ_WHOLE);

	if (!j) {
		if (c)
			disp_arena_put(d, c);
		disp_finish_fail(d, it.w, it.ei, -ENOMEM);
		return;
	}
	disp_job_add(j, it.ei, c ? disp_chunk_ptr(d->ctx, c) : disp_chunk_ptr(d->ctx, disp_group_chunk(it.w, e)) + e->buf_off,
		off, len, c);
	disp_job_submit(d, j);
}

/*
 * Re-reads and large-file pieces.  Re-reads into their group's buffer go
 * first and never wait for memory: they complete the groups that hold the
 * arena.  The rest get chunks of their own, in order.  Returns false when
 * that order waits for arena space.
 */
bool disp_submit_slow(struct disp *d)
{
	const struct bfo_opts *o = &d->ctx->o;

	while (d->inplace.count && d->pool_busy < d->pool_max) {
		struct slow_item it = slowq_take(&d->inplace);

		submit_one(d, it, NULL, 0, disp_whole_len(&it.w->e[it.ei]));
	}
	while (d->memq.count && d->pool_busy < d->pool_max) {
		struct slow_item it = d->memq.q[d->memq.head];
		struct entry *e = &it.w->e[it.ei];
		bool piece = e->route == R_PIECES;
		uint64_t off = piece ? e->piece_off : 0;
		uint64_t len = piece ? MIN(o->large_file, e->size - off) : disp_whole_len(e);
		struct chunk *c = disp_reserve(d, len);

		if (!c)
			return false;
		slowq_take(&d->memq);
		submit_one(d, it, c, off, len);
	}
	return true;
}

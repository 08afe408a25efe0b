/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Phase 2: the dispatcher thread.  It owns the io_uring instance (the only
 * submitter, so the ring can be SINGLE_ISSUER with deferred task work) and
 * every window from the moment its plan is published until its last entry
 * is queued for the caller.
 *
 * For each group of a window, in plan order, it reserves one arena chunk,
 * then keeps queue_depth reads in flight: raw regions (O_DIRECT reads of
 * the block device, ascending physical offset) and per-file io_uring chains
 * (open into a direct descriptor, linked read), and hands per-file reads to
 * the pool (portable engine, fallbacks, large files in pieces).  A raw or
 * uring file is re-stat'ed after its bytes arrive; if anything changed it is
 * read again per file rather than delivered.  The ring itself, its
 * operations, descriptor slots and region buffers are in dispatch_ring.c.
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
#include "raw_ext4ino.h"
#include "portable.h"
#include "plan.h"
#include "dispatch_ring.h"
#include "test_hooks.h"

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

/* ---------------------------------------------------------- delivery */

static uint8_t *chunk_ptr(struct bfo_ctx *ctx, struct chunk *c)
{
	return ctx->arena.base + c->off;
}

/* Memory given back by the dispatcher itself (ctx->lock held), as
 * ticket_put gives back the caller's: a wait for space goes round again. */
static void disp_arena_put_locked(struct disp *d, struct chunk *c)
{
	arena_put(&d->ctx->arena, c);
	if (d->ctx->disp_blocked) {
		d->ctx->disp_blocked = false;
		d->freed = true;
	}
}

static void disp_arena_put(struct disp *d, struct chunk *c)
{
	pthread_mutex_lock(&d->ctx->lock);
	disp_arena_put_locked(d, c);
	pthread_mutex_unlock(&d->ctx->lock);
}

static void group_file_done(struct disp *d, struct window *w, struct entry *e)
{
	struct group *g;

	if (!e->in_group)
		return;
	e->in_group = false;
	g = &w->groups[e->group];
	if (--g->open == 0 && g->chunk) {
		disp_arena_put(d, g->chunk);
		g->chunk = NULL;
	}
}

static void deliver(struct disp *d, struct window *w, uint32_t ei, struct chunk *chunk,
		    const void *data, uint64_t off, uint64_t len, bool last)
{
	pthread_mutex_lock(&d->ctx->lock);
	ctx_push_result_locked(d->ctx, w, ei, chunk, data, off, len, last);
	pthread_mutex_unlock(&d->ctx->lock);
	if (last)
		group_file_done(d, w, &w->e[ei]);
}

static void finish_fail(struct disp *d, struct window *w, uint32_t ei, int status)
{
	w->e[ei].status = status;
	deliver(d, w, ei, NULL, NULL, 0, 0, true);
}

static struct chunk *group_chunk(struct window *w, const struct entry *e)
{
	return e->in_group ? w->groups[e->group].chunk : NULL;
}

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

/* The buffer a whole-file read fills: one byte past the size, whose
 * arrival shows the file grew; a pseudo file's current capacity. */
static uint64_t whole_len(const struct entry *e)
{
	return e->pseudo ? e->pcap : e->size + 1;
}

/* Does a per-file read of e fit the buffer its group holds for it? */
static bool reads_in_place(struct window *w, const struct entry *e)
{
	return e->route != R_PIECES && group_chunk(w, e) && whole_len(e) <= e->cap;
}

static void slowq_push(struct disp *d, struct window *w, uint32_t ei)
{
	if (!slowq_add(reads_in_place(w, &w->e[ei]) ? &d->inplace : &d->memq, w, ei))
		finish_fail(d, w, ei, -ENOMEM);
}

/* Read e again per file, on the pool, with the metadata it has now. */
static void requeue(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];

	if (++e->retries > BFO_MAX_RETRIES) {
		finish_fail(d, w, ei, -ESTALE);
		return;
	}
	if (e->retries == 1)
		stat_add(&d->ctx->st.fallback_files, 1);
	e->rawino = false;       /* the per-file read verifies through the VFS */
	e->route = e->size > d->ctx->o.large_file && !e->pseudo ? R_PIECES : R_POOL;
	e->engine = BFO_ENGINE_PORTABLE;
	e->piece_off = 0;
	slowq_push(d, w, ei);
}

/* A pseudo file filled its buffer: read it again into a larger one (its
 * own chunk), up to large_file bytes; beyond, it fails (-EFBIG). */
static void pseudo_grow(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];
	uint64_t max = d->ctx->o.large_file;

	if (e->pcap - 1 >= max) {
		finish_fail(d, w, ei, -EFBIG);
		return;
	}
	e->pcap = MIN((e->pcap - 1) * PSEUDO_GROW, max) + 1;
	e->retries = 1;    /* off the group's path, like a re-read */
	slowq_push(d, w, ei);
}

static void take_meta(struct entry *e, const struct entry *now)
{
	e->ino = now->ino;
	e->dev = now->dev;
	e->size = now->size;
	e->mode = now->mode;
	e->mtime_sec = now->mtime_sec;
	e->mtime_nsec = now->mtime_nsec;
	e->ctime_sec = now->ctime_sec;
	e->ctime_nsec = now->ctime_nsec;
	e->atime_sec = now->atime_sec;
	e->atime_nsec = now->atime_nsec;
	e->uid = now->uid;
	e->gid = now->gid;
	e->nlink = now->nlink;
}

/* The bytes of a raw or uring file are in; deliver them only if the file
 * is still the one planned, unchanged. */
static void verify_and_deliver(struct disp *d, struct window *w, uint32_t ei, const void *data)
{
	struct entry *e = &w->e[ei], now;
	int ret;

	if (bfo_test_hooks.after_data)
		bfo_test_hooks.after_data(bfo_test_hooks.arg, e->path);
	if (e->rawino) {
		/* The inode is read again: unchanged, and its directory too
		 * (the name still names it), the bytes read are the file's
		 * (raw_ext4ino.c).  The inode unchanged in a changed directory,
		 * or after a change of the mount table since the listing (a
		 * file mounted over the name now): the name is checked as on
		 * the VFS path, below. */
		bool same = !w->unsynced && ext4ino_same(e->di->ext4, &d->ibuf, e->ino, &e->rawsum);

		if (same && d->mount_gen == w->mount_gen && dirhint_same(w, e, d->epoch)) {
			deliver(d, w, ei, group_chunk(w, e), data, 0, e->size, true);
			return;
		}
		e->rawino = false;
		if (!same) {
			ret = stat_path(e->path, d->nofollow, &now);
			if (ret < 0) {
				finish_fail(d, w, ei, ret);
				return;
			}
			take_meta(e, &now);
			requeue(d, w, ei);
			return;
		}
	}
	ret = stat_path(e->path, d->nofollow, &now);
	if (ret == 0 && meta_same(&now, e)) {
		deliver(d, w, ei, group_chunk(w, e), data, 0, e->size, true);
		return;
	}
	if (ret < 0) {
		finish_fail(d, w, ei, ret);
		return;
	}
	take_meta(e, &now);
	requeue(d, w, ei);
}

/* ---------------------------------------------------------- raw */

static void raw_file_done(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];

	if (e->raw_bad) {
		requeue(d, w, ei);
		return;
	}
	verify_and_deliver(d, w, ei, chunk_ptr(d->ctx, group_chunk(w, e)) + e->buf_off);
}

/* buf: the region buffer the region was read into, or NULL when it was
 * read straight into its one file's buffer (direct_target). */
static void region_done(struct disp *d, struct window *w, uint32_t ri, const uint8_t *buf,
			bool ok)
{
	const struct region *r = &w->regions[ri];

	for (uint32_t i = r->seg_first; i < r->seg_first + r->seg_count; i++) {
		const struct seg *s = &w->segs[i];
		struct entry *e = &w->e[s->entry];
		uint8_t *dst = chunk_ptr(d->ctx, group_chunk(w, e)) + e->buf_off + s->logical;

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
			raw_file_done(d, w, s->entry);
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
	dst = chunk_ptr(d->ctx, group_chunk(w, e)) + e->buf_off + s->logical;
	return (uintptr_t)dst % DIRECT_ALIGN || r->len % r->di->lbs ? NULL : dst;
}

static bool submit_region(struct disp *d, struct window *w, uint32_t ri)
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
			region_done(d, w, ri, NULL, false);
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

/* ---------------------------------------------------------- uring files */

static bool submit_uring_file(struct disp *d, struct window *w, uint32_t ei)
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
				   chunk_ptr(d->ctx, group_chunk(op->w, e)) + e->buf_off,
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
		requeue(d, w, ei);
	} else if (op->open_err) {
		finish_fail(d, w, ei, op->open_err);
	} else if (res == -ECANCELED) {
		requeue(d, w, ei);
	} else if (res < 0) {
		finish_fail(d, w, ei, res);
	} else if ((uint64_t)res == e->size) {
		verify_and_deliver(d, w, ei, chunk_ptr(d->ctx, group_chunk(w, e)) + e->buf_off);
	} else {
		/* Shorter or longer than planned: it changed. */
		struct entry now;
		int ret = stat_path(e->path, d->nofollow, &now);

		if (ret < 0) {
			finish_fail(d, w, ei, ret);
			return;
		}
		take_meta(e, &now);
		requeue(d, w, ei);
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

		region_done(d, op->w, op->idx, b == RBUF_NONE ? NULL : u->rbuf + (size_t)b * u->rbuf_size,
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

static void reap(struct disp *d)
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

/* ---------------------------------------------------------- pool reads */

static struct fjob *job_new(struct disp *d, struct window *w, enum fjob_kind kind)
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

static void job_add(struct fjob *j, uint32_t ei, uint8_t *buf, uint64_t off, uint64_t len,
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

static void job_submit(struct disp *d, struct fjob *j)
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
		pseudo_grow(d, w, ei);
	} else if (!it->result && !it->changed) {
		if (kind == FJ_WHOLE) {
			if (e->pseudo)
				e->size = it->got;
			deliver(d, w, ei, own ? own : group_chunk(w, e), it->buf, 0, e->size, true);
		} else {
			bool last = it->off + it->len >= e->size;

			deliver(d, w, ei, own, it->buf, it->off, it->len, last);
			if (!last) {
				e->piece_off = it->off + it->len;
				slowq_push(d, w, ei);
			}
		}
	} else if (it->changed) {
		if (kind == FJ_PIECE && it->off > 0) {
			/* Pieces were delivered already: this file ends here. */
			finish_fail(d, w, ei, -ESTALE);
		} else {
			if (it->fresh_ok)
				take_meta(e, &it->fresh);
			requeue(d, w, ei);
		}
	} else {
		finish_fail(d, w, ei, it->result);
	}
	if (own)
		disp_arena_put(d, own);
}

static void job_done(struct disp *d, struct fjob *j)
{
	d->pool_busy--;
	for (uint32_t i = 0; i < j->n; i++)
		item_done(d, j->w, j->kind, &j->items[i]);
	free(j);
}

/* Allocate from the arena or note that the dispatcher waits for space. */
static struct chunk *reserve(struct disp *d, uint64_t len)
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
	struct fjob *j = job_new(d, it.w, piece ? FJ_PIECE : FJ_WHOLE);

	if (!j) {
		if (c)
			disp_arena_put(d, c);
		finish_fail(d, it.w, it.ei, -ENOMEM);
		return;
	}
	job_add(j, it.ei, c ? chunk_ptr(d->ctx, c) : chunk_ptr(d->ctx, group_chunk(it.w, e)) + e->buf_off,
		off, len, c);
	job_submit(d, j);
}

/*
 * Re-reads and large-file pieces.  Re-reads into their group's buffer go
 * first and never wait for memory: they complete the groups that hold the
 * arena.  The rest get chunks of their own, in order.  Returns false when
 * that order waits for arena space.
 */
static bool submit_slow(struct disp *d)
{
	const struct bfo_opts *o = &d->ctx->o;

	while (d->inplace.count && d->pool_busy < d->pool_max) {
		struct slow_item it = slowq_take(&d->inplace);

		submit_one(d, it, NULL, 0, whole_len(&it.w->e[it.ei]));
	}
	while (d->memq.count && d->pool_busy < d->pool_max) {
		struct slow_item it = d->memq.q[d->memq.head];
		struct entry *e = &it.w->e[it.ei];
		bool piece = e->route == R_PIECES;
		uint64_t off = piece ? e->piece_off : 0;
		uint64_t len = piece ? MIN(o->large_file, e->size - off) : whole_len(e);
		struct chunk *c = reserve(d, len);

		if (!c)
			return false;
		slowq_take(&d->memq);
		submit_one(d, it, c, off, len);
	}
	return true;
}

/* Make a group's buffers ready: zero the ones with holes, finish raw files
 * that need no read at all (only unwritten extents). */
static void group_prepare(struct disp *d, struct window *w, struct group *g)
{
	TRACE("w%u group %u reserved", w->serial, (unsigned)(g - w->groups));
	uint8_t *base = chunk_ptr(d->ctx, g->chunk);

	/* Files with nothing to read: checked now, as a set of their own. */
	ext4ino_buf_start(&d->ibuf);
	d->epoch = dirhint_epoch();
	d->mount_gen = sysstate_mount_gen(&d->ctx->sys);
	for (uint32_t i = g->first; i < g->first + g->count; i++) {
		uint32_t ei = w->order[i];
		struct entry *e = &w->e[ei];

		if (e->route != R_RAW)
			continue;
		if (e->holes)
			memset(base + e->buf_off, 0, e->size);
		if (e->pending == 0)
			raw_file_done(d, w, ei);
	}
}

/* Returns false when it must wait: queue full, pool busy, or (when it had
 * to reserve and may not, or could not) arena space. */
static bool submit_group(struct disp *d, struct window *w, struct group *g, bool *may_alloc)
{
	if (!g->reserved) {
		if (!*may_alloc)
			return false;
		g->chunk = reserve(d, g->bytes);
		if (!g->chunk) {
			*may_alloc = false;
			return false;
		}
		g->reserved = true;
		group_prepare(d, w, g);
	}
	while (g->next_region < g->nregions) {
		if (!submit_region(d, w, g->reg_first + g->next_region))
			return false;
		g->next_region++;
	}
	while (g->next < g->first + g->count) {
		uint32_t ei = w->order[g->next];
		struct entry *e = &w->e[ei];

		if (e->route == R_URING && e->retries == 0) {
			if (!submit_uring_file(d, w, ei))
				return false;
		} else if (e->route == R_POOL && e->retries == 0) {
			/* Consecutive pool files go out together, one job. */
			struct fjob *j;

			if (d->pool_busy >= d->pool_max)
				return false;
			j = job_new(d, w, FJ_WHOLE);
			if (!j)
				return false;
			while (g->next < g->first + g->count && j->n < FJOB_BATCH) {
				struct entry *x = &w->e[w->order[g->next]];

				if (x->route != R_POOL || x->retries)
					break;
				job_add(j, w->order[g->next], chunk_ptr(d->ctx, g->chunk) + x->buf_off,
					0, whole_len(x), NULL);
				g->next++;
			}
			job_submit(d, j);
			continue;
		}
		g->next++;
	}
	return true;
}

static void submit_window_early(struct disp *d, struct window *w)
{
	if (w->next_early == w->nearly && w->next_large == w->nlarge)
		return;
	pthread_mutex_lock(&d->ctx->lock);
	while (w->next_early < w->nearly)
		ctx_push_result_locked(d->ctx, w, w->early[w->next_early++], NULL, NULL, 0, 0, true);
	pthread_mutex_unlock(&d->ctx->lock);
	while (w->next_large < w->nlarge)
		slowq_push(d, w, w->large[w->next_large++]);
}

/*
 * Memory is granted in plan order (queued re-reads and pieces first, then
 * groups), but work that needs none always goes on: a group that already
 * holds its chunk is submitted even while an allocation waits, since its
 * completions are what frees memory.
 */
static void submit_work(struct disp *d)
{
	bool may_alloc = submit_slow(d);

	for (struct window *w = d->ctx->active; w; w = w->next) {
		submit_window_early(d, w);
		while (w->cur_group < w->ngroups) {
			if (!submit_group(d, w, &w->groups[w->cur_group], &may_alloc))
				return;
			w->cur_group++;
		}
		if (may_alloc)
			may_alloc = submit_slow(d);
	}
}

/*
 * Last resort against a stall: the dispatcher waits for memory, nothing is
 * in flight, nothing can be read in place and the caller holds nothing,
 * so only the dispatcher's own groups hold the arena, each waiting for a
 * file queued for memory of its own.  Such a file changed size since it
 * was planned, or is a pseudo file that outgrew its buffer (the only ways
 * a group's file needs memory of its own): the first one fails, with
 * -ESTALE or -ENOBUFS, and its group can complete.  Files of no group
 * (large files' pieces) only wait: the groups' completion frees memory
 * for them (disp_arena_put: the dispatcher goes round again for them).
 */
static void break_stall(struct disp *d)
{
	struct bfo_ctx *ctx = d->ctx;
	struct slowq *q = &d->memq;
	bool stalled;

	pthread_mutex_lock(&ctx->lock);
	stalled = ctx->disp_blocked && ctx->tickets_out == 0 && ctx->res_count == 0;
	pthread_mutex_unlock(&ctx->lock);
	if (!stalled || d->inplace.count || d->pool_busy || (d->u && d->u->ops_busy))
		return;
	for (size_t k = 0; k < q->count; k++) {
		struct slow_item it = q->q[(q->head + k) % q->cap];

		if (!it.w->e[it.ei].in_group)
			continue;
		/* Out of the ring, the items before it keep their order. */
		for (size_t i = k; i > 0; i--)
			q->q[(q->head + i) % q->cap] = q->q[(q->head + i - 1) % q->cap];
		q->head = (q->head + 1) % q->cap;
		q->count--;
		/* A pseudo file never changed: it wanted a larger buffer
		 * than the arena could give now. */
		finish_fail(d, it.w, it.ei, it.w->e[it.ei].pseudo ? -ENOBUFS : -ESTALE);
		return;
	}
}

/* ---------------------------------------------------------- windows */

static void retire_locked(struct disp *d, struct window *w)
{
	struct bfo_ctx *ctx = d->ctx;
	struct window **pp = &ctx->active, *prev = NULL;

	for (; *pp && *pp != w; pp = &(*pp)->next)
		prev = *pp;
	*pp = w->next;
	if (d->tail == w)
		d->tail = prev;
	ctx->nactive--;
	ctx->files_ahead -= w->n;
	TRACE("w%u retired", w->serial);
	for (uint32_t gi = 0; gi < w->ngroups; gi++) {
		if (w->groups[gi].chunk) {
			disp_arena_put_locked(d, w->groups[gi].chunk);
			w->groups[gi].chunk = NULL;
		}
	}
	w->next = ctx->retired;
	ctx->retired = w;
	ctx_update_phase_times_locked(ctx);
	ctx_window_put_locked(ctx, w);
}

static void retire_finished(struct disp *d, bool stopping)
{
	struct bfo_ctx *ctx = d->ctx;
	bool idle = stopping && d->pool_busy == 0 && (!d->u || d->u->ops_busy == 0);
	bool hold = !stopping && bfo_test_hooks.hold_retire &&
		    bfo_test_hooks.hold_retire(bfo_test_hooks.arg);

	if (idle)
		d->memq.count = d->inplace.count = 0;
	pthread_mutex_lock(&ctx->lock);
	for (struct window *w = ctx->active, *n; w; w = n) {
		n = w->next;
		/* Stopped: once nothing is in flight, what was not delivered
		 * is dropped with its window. */
		if ((w->undelivered == 0 && !hold) || idle)
			retire_locked(d, w);
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* Close the files left in direct-descriptor slots once a batch is over, so
 * an idle context pins no file (and no deleted file's blocks). */
static void release_slots(struct disp *d)
{
	struct uring_state *u = d->u;

	if (!u || u->plain_fds || !u->slots_dirty || u->ops_busy || d->ctx->active)
		return;
	int *fds = malloc(u->nslots * sizeof(*fds));

	if (!fds)
		return;
	for (unsigned i = 0; i < u->nslots; i++)
		fds[i] = -1;
	if (io_uring_register_files_update(&u->ring, 0, fds, u->nslots) >= 0)
		u->slots_dirty = false;
	free(fds);
}

/* ---------------------------------------------------------- the loop */

static void take_jobs(struct disp *d, struct fjob *jobs)
{
	struct fjob *rev = NULL;

	while (jobs) {               /* LIFO -> FIFO */
		struct fjob *n = jobs->next;

		jobs->next = rev;
		rev = jobs;
		jobs = n;
	}
	while (rev) {
		struct fjob *n = rev->next;

		job_done(d, rev);
		rev = n;
	}
}

static void wait_events(struct disp *d)
{
	struct bfo_ctx *ctx = d->ctx;

	if (d->u) {
		if (!d->u->evfd_armed)
			arm_evfd(d->u, ctx->evfd);
		int ret = io_uring_submit_and_wait(&d->u->ring, 1);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			/* Should not happen; avoid spinning on a broken ring. */
			struct pollfd pfd = { .fd = ctx->evfd, .events = POLLIN };

			poll(&pfd, 1, 10);
		}
		reap(d);
	} else {
		struct pollfd pfd = { .fd = ctx->evfd, .events = POLLIN };

		poll(&pfd, 1, -1);
		drain_evfd(ctx->evfd);
	}
}

void *dispatcher_main(void *arg)
{
	struct bfo_ctx *ctx = arg;
	struct disp d = { .ctx = ctx };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	d.nofollow = ctx->o.flags & BFO_READ_NOFOLLOW;
	d.pool_max = ctx->o.threads;
	if (ctx->o.engine != BFO_ENGINE_PORTABLE)
		d.u = uring_create(ctx->o.queue_depth, ctx->uring_why, sizeof(ctx->uring_why));
	else
		snprintf(ctx->uring_why, sizeof(ctx->uring_why), "not requested");

	pthread_mutex_lock(&ctx->lock);
	ctx->u = d.u;
	ctx->dispatcher_started = true;
	pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);

	for (;;) {
		struct fjob *jobs;
		bool stopping, shutdown;

		struct window *planned;

		pthread_mutex_lock(&ctx->lock);
		ctx->wake_pending = false;
		planned = ctx->planned_head;
		ctx->planned_head = ctx->planned_tail = NULL;
		jobs = ctx->done_jobs;
		ctx->done_jobs = NULL;
		stopping = ctx->bstate == B_STOPPING;
		shutdown = ctx->shutdown;
		pthread_mutex_unlock(&ctx->lock);

		/* Plans are built here, outside the lock, then activated. */
		while (planned) {
			struct window *w = planned;

			planned = w->next;
			w->next = NULL;
			if (!stopping)
				plan_window(ctx, w);
			pthread_mutex_lock(&ctx->lock);
			ctx->nplanned--;
			if (d.tail)
				d.tail->next = w;
			else
				ctx->active = w;
			d.tail = w;
			ctx->nactive++;
			TRACE("w%u active", w->serial);
			ctx_update_phase_times_locked(ctx);
			pthread_mutex_unlock(&ctx->lock);
		}

		take_jobs(&d, jobs);
		/* Its io_uring opens run with its credentials. */
		sysstate_adopt_creds(&ctx->sys, &d.creds_seen);
		ring_cancel_inflight(d.u, stopping);
		/* What came back before submit_work is seen by it. */
		d.freed = false;
		if (!stopping) {
			submit_work(&d);
			break_stall(&d);
		}
		retire_finished(&d, stopping);
		release_slots(&d);

		pthread_mutex_lock(&ctx->lock);
		ctx->inflight = (d.u ? d.u->ops_busy : 0) + d.pool_busy;
		ctx_feed_planner_locked(ctx);
		if (ctx->caller_waiting)
			pthread_cond_broadcast(&ctx->cond);
		bool done = shutdown && !ctx->active && !ctx->nplanning && !ctx->planned_head &&
			    ctx->inflight == 0;
		bool again = ctx->planned_head || ctx->done_jobs || d.freed;
		pthread_mutex_unlock(&ctx->lock);
		if (done)
			break;
		if (!again) {
			wait_events(&d);
		} else if (d.u) {
			io_uring_submit(&d.u->ring);
			reap(&d);
		}
	}
	uring_free(d.u);
	free(d.memq.q);
	free(d.inplace.q);
	return NULL;
}

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
#include "dispatch_int.h"
#include "raw_ext4ino.h"
#include "portable.h"
#include "plan.h"
#include "dispatch_ring.h"
#include "test_hooks.h"

uint8_t *disp_chunk_ptr(struct bfo_ctx *ctx, struct chunk *c)
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

void disp_arena_put(struct disp *d, struct chunk *c)
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

void disp_deliver(struct disp *d, struct window *w, uint32_t ei, struct chunk *chunk,
		  const void *data, uint64_t off, uint64_t len, bool last)
{
	pthread_mutex_lock(&d->ctx->lock);
	ctx_push_result_locked(d->ctx, w, ei, chunk, data, off, len, last);
	pthread_mutex_unlock(&d->ctx->lock);
	if (last)
		group_file_done(d, w, &w->e[ei]);
}

void disp_finish_fail(struct disp *d, struct window *w, uint32_t ei, int status)
{
	w->e[ei].status = status;
	disp_deliver(d, w, ei, NULL, NULL, 0, 0, true);
}

struct chunk *disp_group_chunk(struct window *w, const struct entry *e)
{
	return e->in_group ? w->groups[e->group].chunk : NULL;
}

/* The buffer a whole-file read fills: one byte past the size, whose
 * arrival shows the file grew; a pseudo file's current capacity. */
uint64_t disp_whole_len(const struct entry *e)
{
	return e->pseudo ? e->pcap : e->size + 1;
}

/* Does a per-file read of e fit the buffer its group holds for it? */
bool disp_reads_in_place(struct window *w, const struct entry *e)
{
	return e->route != R_PIECES && disp_group_chunk(w, e) && disp_whole_len(e) <= e->cap;
}

/* Read e again per file, on the pool, with the metadata it has now. */
void disp_requeue(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];

	if (++e->retries > BFO_MAX_RETRIES) {
		disp_finish_fail(d, w, ei, -ESTALE);
		return;
	}
	if (e->retries == 1)
		stat_add(&d->ctx->st.fallback_files, 1);
	e->rawino = false;       /* the per-file read verifies through the VFS */
	e->route = e->size > d->ctx->o.large_file && !e->pseudo ? R_PIECES : R_POOL;
	e->engine = BFO_ENGINE_PORTABLE;
	e->piece_off = 0;
	disp_slowq_push(d, w, ei);
}

/* A pseudo file filled its buffer: read it again into a larger one (its
 * own chunk), up to large_file bytes; beyond, it fails (-EFBIG). */
void disp_pseudo_grow(struct disp *d, struct window *w, uint32_t ei)
{
	struct entry *e = &w->e[ei];
	uint64_t max = d->ctx->o.large_file;

	if (e->pcap - 1 >= max) {
		disp_finish_fail(d, w, ei, -EFBIG);
		return;
	}
	e->pcap = MIN((e->pcap - 1) * PSEUDO_GROW, max) + 1;
	e->retries = 1;    /* off the group's path, like a re-read */
	disp_slowq_push(d, w, ei);
}

void disp_take_meta(struct entry *e, const struct entry *now)
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

/* The bytes of a raw or uring file are in; disp_deliver them only if the file
 * is still the one planned, unchanged. */
void disp_verify_and_deliver(struct disp *d, struct window *w, uint32_t ei, const void *data)
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
			disp_deliver(d, w, ei, disp_group_chunk(w, e), data, 0, e->size, true);
			return;
		}
		e->rawino = false;
		if (!same) {
			ret = stat_path(e->path, d->nofollow, &now);
			if (ret < 0) {
				disp_finish_fail(d, w, ei, ret);
				return;
			}
			disp_take_meta(e, &now);
			disp_requeue(d, w, ei);
			return;
		}
	}
	ret = stat_path(e->path, d->nofollow, &now);
	if (ret == 0 && meta_same(&now, e)) {
		disp_deliver(d, w, ei, disp_group_chunk(w, e), data, 0, e->size, true);
		return;
	}
	if (ret < 0) {
		disp_finish_fail(d, w, ei, ret);
		return;
	}
	disp_take_meta(e, &now);
	disp_requeue(d, w, ei);
}

/* ---------------------------------------------------------- groups */

/* Make a group's buffers ready: zero the ones with holes, finish raw files
 * that need no read at all (only unwritten extents). */
static void group_prepare(struct disp *d, struct window *w, struct group *g)
{
	TRACE("w%u group %u reserved", w->serial, (unsigned)(g - w->groups));
	uint8_t *base = disp_chunk_ptr(d->ctx, g->chunk);

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
			disp_raw_file_done(d, w, ei);
	}
}

/* Returns false when it must wait: queue full, pool busy, or (when it had
 * to disp_reserve and may not, or could not) arena space. */
static bool submit_group(struct disp *d, struct window *w, struct group *g, bool *may_alloc)
{
	if (!g->reserved) {
		if (!*may_alloc)
			return false;
		g->chunk = disp_reserve(d, g->bytes);
		if (!g->chunk) {
			*may_alloc = false;
			return false;
		}
		g->reserved = true;
		group_prepare(d, w, g);
	}
	while (g->next_region < g->nregions) {
		if (!disp_submit_region(d, w, g->reg_first + g->next_region))
			return false;
		g->next_region++;
	}
	while (g->next < g->first + g->count) {
		uint32_t ei = w->order[g->next];
		struct entry *e = &w->e[ei];

		if (e->route == R_URING && e->retries == 0) {
			if (!disp_submit_uring_file(d, w, ei))
				return false;
		} else if (e->route == R_POOL && e->retries == 0) {
			/* Consecutive pool files go out together, one job. */
			struct fjob *j;

			if (d->pool_busy >= d->pool_max)
				return false;
			j = disp_job_new(d, w, FJ_WHOLE);
			if (!j)
				return false;
			while (g->next < g->first + g->count && j->n < FJOB_BATCH) {
				struct entry *x = &w->e[w->order[g->next]];

				if (x->route != R_POOL || x->retries)
					break;
				disp_job_add(j, w->order[g->next], disp_chunk_ptr(d->ctx, g->chunk) + x->buf_off,
					0, disp_whole_len(x), NULL);
				g->next++;
			}
			disp_job_submit(d, j);
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
		disp_slowq_push(d, w, w->large[w->next_large++]);
}

/*
 * Memory is granted in plan order (queued re-reads and pieces first, then
 * groups), but work that needs none always goes on: a group that already
 * holds its chunk is submitted even while an allocation waits, since its
 * completions are what frees memory.
 */
static void submit_work(struct disp *d)
{
	bool may_alloc = disp_submit_slow(d);

	for (struct window *w = d->ctx->active; w; w = w->next) {
		submit_window_early(d, w);
		while (w->cur_group < w->ngroups) {
			if (!submit_group(d, w, &w->groups[w->cur_group], &may_alloc))
				return;
			w->cur_group++;
		}
		if (may_alloc)
			may_alloc = disp_submit_slow(d);
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
		disp_finish_fail(d, it.w, it.ei, it.w->e[it.ei].pseudo ? -ENOBUFS : -ESTALE);
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

		disp_job_done(d, rev);
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
		disp_reap(d);
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
			disp_reap(&d);
		}
	}
	uring_free(d.u);
	free(d.memq.q);
	free(d.inplace.q);
	return NULL;
}

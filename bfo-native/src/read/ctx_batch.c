/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch as its caller sees it (ctx.h): the input queue its paths go
 * into (bfo_read_submit, finish, flush), the results handed out
 * (bfo_read_wait) and the tickets that tie a delivered entry to the arena
 * memory it uses until bfo_read_release gives it back.  All under
 * ctx->lock, as ctx.c says.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "ctx.h"
#include "fdlimit.h"
#include "dispatch.h"
#include "plan.h"

/* ------------------------------------------------------------ tickets */

static uint64_t ticket_get_locked(struct bfo_ctx *ctx, struct window *w,
				  struct chunk *chunk)
{
	uint32_t i;

	if (ctx->ticket_free == UINT32_MAX) {
		uint32_t n = ctx->nticket ? ctx->nticket * 2 : 1024;
		struct ticket *t = realloc(ctx->tickets, n * sizeof(*t));

		if (!t)
			return 0;
		for (i = ctx->nticket; i < n; i++) {
			t[i] = (struct ticket){ .next_free = i + 1 < n ? i + 1 : UINT32_MAX };
		}
		ctx->tickets = t;
		ctx->ticket_free = ctx->nticket;
		ctx->nticket = n;
	}
	i = ctx->ticket_free;
	struct ticket *t = &ctx->tickets[i];

	ctx->ticket_free = t->next_free;
	t->used = true;
	t->gen++;
	t->w = w;
	t->chunk = chunk;
	w->refs++;
	if (chunk)
		chunk->refs++;
	ctx->tickets_out++;
	return (uint64_t)t->gen << 32 | i;
}

int ctx_ticket_put_locked(struct bfo_ctx *ctx, uint64_t cookie)
{
	uint32_t i = (uint32_t)cookie, gen = (uint32_t)(cookie >> 32);
	struct ticket *t;

	if (i >= ctx->nticket)
		return -EINVAL;
	t = &ctx->tickets[i];
	if (!t->used || t->gen != gen)
		return -EINVAL;
	t->used = false;
	t->next_free = ctx->ticket_free;
	ctx->ticket_free = i;
	ctx->tickets_out--;
	if (t->chunk) {
		arena_put(&ctx->arena, t->chunk);
		/* The dispatcher retries its allocation and sets the flag
		 * again if the space is still short; until then the caller
		 * must not conclude -ENOBUFS. */
		if (ctx->disp_blocked) {
			ctx->disp_blocked = false;
			ctx_wake_dispatcher(ctx);
		}
	} else if (ctx->disp_blocked && ctx->tickets_out == 0 && ctx->res_count == 0) {
		/* The caller gave back the last it held (a file with no
		 * memory: one break_stall failed): the dispatcher, blocked
		 * on memory, may now break the stall with the next. */
		ctx_wake_dispatcher(ctx);
	}
	ctx_window_put_locked(ctx, t->w);
	return 0;
}

/* ------------------------------------------------------------ results */

void ctx_push_result_locked(struct bfo_ctx *ctx, struct window *w, uint32_t ei,
			    struct chunk *chunk, const void *data,
			    uint64_t offset, uint64_t length, bool last)
{
	struct entry *e = &w->e[ei];
	struct bfo_file *f;

	if (last) {
		e->delivered = true;
		w->undelivered--;
	}
	if (ctx->bstate == B_STOPPING)
		return;        /* cancelled or stopped: dropped, never shown */
	if (ctx->res_count == ctx->res_cap) {
		size_t n = ctx->res_cap ? ctx->res_cap * 2 : 1024;
		struct bfo_file *r = malloc(n * sizeof(*r));

		if (!r)
			abort();   /* bounded by design; see ctx_feed_planner_locked */
		for (size_t i = 0; i < ctx->res_count; i++)
			r[i] = ctx->res[(ctx->res_head + i) % ctx->res_cap];
		free(ctx->res);
		ctx->res = r;
		ctx->res_cap = n;
		ctx->res_head = 0;
	}
	f = &ctx->res[(ctx->res_head + ctx->res_count) % ctx->res_cap];
	memset(f, 0, sizeof(*f));
	f->index = w->base + ei;
	f->path = e->path;
	f->data = e->status < 0 ? NULL : (length ? data : NULL);
	f->offset = offset;
	f->length = e->status < 0 ? 0 : length;
	f->size = e->size;
	f->mtime_sec = e->mtime_sec;
	f->mtime_nsec = e->mtime_nsec;
	f->ctime_sec = e->ctime_sec;
	f->ctime_nsec = e->ctime_nsec;
	f->atime_sec = e->atime_sec;
	f->atime_nsec = e->atime_nsec;
	f->uid = e->uid;
	f->gid = e->gid;
	f->nlink = e->nlink;
	f->ino = e->ino;
	f->dev = e->dev;
	f->mode = e->mode;
	f->status = e->status;
	f->engine = e->engine;
	f->flags = last ? BFO_FILE_LAST : 0;
	if (e->rawino && e->noxattr)
		f->flags |= BFO_FILE_NO_XATTRS;
	f->cookie = ticket_get_locked(ctx, w, e->status < 0 ? NULL : chunk);
	if (!f->cookie)
		abort();
	ctx->res_count++;

	if (e->engine < 5)
		ctx->bytes_by_engine[e->engine] += f->length;
	ctx->st.bytes += f->length;
	if (last) {
		if (e->status < 0)
			ctx->st.files_failed++;
		else
			ctx->st.files_ok++;
		if (e->engine < 5)
			ctx->st.files_by_engine[e->engine]++;
		ctx->st.engines |= 1u << e->engine;
		if (e->engine == BFO_ENGINE_RAW && e->rawino)
			ctx->st.files_raw_itable++;
		if (e->route == R_PIECES)
			ctx->st.files_pieces++;
	}
	if (e->status < 0 && (ctx->o.flags & BFO_READ_STOP_ON_ERROR)) {
		ctx->stop_on_error_hit = true;
		ctx->bstate = B_STOPPING;
		atomic_store(&ctx->stopping, true);
		ctx->in_len = ctx->in_pos = 0;
		ctx->in_count = ctx->cut_count = 0;
		ctx_wake_dispatcher(ctx);
	}
	/* No wake-up per entry: the dispatcher wakes a waiting caller once
	 * per round of completions (one wake for hundreds of files). */
}

/* ------------------------------------------------------------ input */

/* Room for this many more paths: the input queue holds two windows, so
 * memory stays bounded however many paths a batch has. */
static uint64_t input_room_locked(struct bfo_ctx *ctx)
{
	uint64_t cap = 2ull * ctx->o.window_files;

	return ctx->in_count >= cap ? 0 : cap - ctx->in_count;
}

static int input_append_locked(struct bfo_ctx *ctx, const char *s, size_t len)
{
	if (ctx->in_len + len + 1 > ctx->in_cap) {
		if (ctx->in_pos) {   /* compact before growing */
			memmove(ctx->in_buf, ctx->in_buf + ctx->in_pos, ctx->in_len - ctx->in_pos);
			ctx->in_len -= ctx->in_pos;
			ctx->in_pos = 0;
		}
		if (ctx->in_len + len + 1 > ctx->in_cap) {
			size_t n = MAX(ctx->in_cap * 2, ctx->in_len + len + 1 + 65536);
			char *b = realloc(ctx->in_buf, n);

			if (!b)
				return -ENOMEM;
			ctx->in_buf = b;
			ctx->in_cap = n;
		}
	}
	memcpy(ctx->in_buf + ctx->in_len, s, len);
	ctx->in_buf[ctx->in_len + len] = '\0';
	ctx->in_len += len + 1;
	ctx->in_count++;
	ctx->st.files++;
	return 0;
}

static int submit_check_locked(struct bfo_ctx *ctx)
{
	switch (ctx->bstate) {
	case B_IDLE:
		ctx_batch_begin_locked(ctx);
		return 0;
	case B_ACTIVE:
		return 0;
	case B_FINISHED:
		return -EBUSY;
	case B_STOPPING:
		return -ECANCELED;
	}
	return -EINVAL;
}

/* ------------------------------------------------------------ the read API */

BFO_API int bfo_read_submit(struct bfo_ctx *ctx, const char *const *paths, unsigned n)
{
	unsigned i;
	int ret;

	if (!ctx || (n && !paths))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (!paths[i])
			return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit_check_locked(ctx);
	if (ret)
		goto out;
	uint64_t room = input_room_locked(ctx);

	for (i = 0; i < n && i < room; i++) {
		ret = input_append_locked(ctx, paths[i], strlen(paths[i]));
		if (ret)
			break;
	}
	if (i > 0 || !ret)
		ret = (int)i;
	ctx_feed_planner_locked(ctx);
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

BFO_API long bfo_read_submit_packed(struct bfo_ctx *ctx, const char *buf, size_t len)
{
	size_t pos = 0;
	long ret;

	if (!ctx || (len && !buf) || (len && buf[len - 1] != '\0'))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	ret = submit_check_locked(ctx);
	if (ret)
		goto out;
	uint64_t room = input_room_locked(ctx);

	while (pos < len && room > 0) {
		size_t l = strlen(buf + pos);

		ret = input_append_locked(ctx, buf + pos, l);
		if (ret)
			break;
		pos += l + 1;
		room--;
	}
	if (pos > 0 || !ret)
		ret = (long)pos;
	ctx_feed_planner_locked(ctx);
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

BFO_API int bfo_read_finish(struct bfo_ctx *ctx)
{
	int ret = 0;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate == B_ACTIVE) {
		ctx->bstate = B_FINISHED;
		ctx_feed_planner_locked(ctx);
	} else if (ctx->bstate == B_IDLE) {
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

BFO_API int bfo_read_flush(struct bfo_ctx *ctx)
{
	int ret = 0;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate == B_ACTIVE) {
		ctx->cut_count = ctx->in_count;
		ctx_feed_planner_locked(ctx);
	} else if (ctx->bstate == B_IDLE) {
		ret = -EINVAL;
	} else if (ctx->bstate == B_STOPPING) {
		ret = -ECANCELED;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/*
 * Whether the caller has entries to wait for.  A window whose every entry
 * is queued is done for the caller, yet stays active until the dispatcher
 * retires it after its round of completions: by then the caller may have
 * taken and released every entry, and counting the window would make a
 * poll say -ETIME where the batch waits for paths (-EAGAIN) or has ended.
 * Such a window has no read in flight (an entry is queued after its last
 * one), so a new batch may begin beside it.  A stopped batch ends only
 * when its windows are gone: their reads are waited for, not delivered.
 */
static bool entries_in_flight_locked(struct bfo_ctx *ctx)
{
	if (ctx->nplanning || ctx->nplanned)
		return true;
	for (const struct window *w = ctx->active; w; w = w->next)
		if (w->undelivered || ctx->bstate == B_STOPPING)
			return true;
	return false;
}

BFO_API int bfo_read_wait(struct bfo_ctx *ctx, struct bfo_file *files, unsigned max,
			  int timeout_ms)
{
	struct timespec deadline;
	int ret;

	if (!ctx || !files || !max)
		return -EINVAL;
	if (timeout_ms > 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		if (ctx->res_count) {
			unsigned k = 0;

			while (k < max && ctx->res_count) {
				files[k++] = ctx->res[ctx->res_head];
				ctx->res_head = (ctx->res_head + 1) % ctx->res_cap;
				ctx->res_count--;
			}
			/* Results drained below the planner's limit let it go on. */
			ctx_feed_planner_locked(ctx);
			ret = (int)k;
			break;
		}
		if (ctx->bstate == B_IDLE) {
			ret = -EINVAL;
			break;
		}
		if (!entries_in_flight_locked(ctx)) {
			if (ctx->bstate == B_STOPPING ||
			    (ctx->bstate == B_FINISHED && ctx->in_count == 0)) {
				ctx_batch_end_locked(ctx);
				ret = 0;
				break;
			}
			/* Flushed paths are planned once the dispatcher retires
			 * a window from the lookahead: they are waited for. */
			if (ctx->bstate == B_ACTIVE && ctx->in_count < ctx->next_window_files &&
			    ctx->cut_count == 0) {
				ret = -EAGAIN;
				break;
			}
		}
		/* The dispatcher waits for arena space the caller holds, and
		 * nothing else can complete: waiting would never end.  Not
		 * once the batch is stopping: the dispatcher then drops the
		 * blocked work and the wait ends with 0 (a caller that
		 * cancelled on -ENOBUFS would otherwise spin on it). */
		if (ctx->bstate != B_STOPPING && ctx->disp_blocked && ctx->inflight == 0 && ctx->nplanning == 0 &&
		    ctx->tickets_out > 0) {
			ret = -ENOBUFS;
			break;
		}
		if (timeout_ms == 0) {
			ret = -ETIME;
			break;
		}
		ctx->caller_waiting = true;
		if (timeout_ms < 0) {
			pthread_cond_wait(&ctx->cond, &ctx->lock);
		} else if (pthread_cond_timedwait(&ctx->cond, &ctx->lock, &deadline) == ETIMEDOUT) {
			ctx->caller_waiting = false;
			ret = -ETIME;
			break;
		}
		ctx->caller_waiting = false;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

BFO_API int bfo_read_release(struct bfo_ctx *ctx, const struct bfo_file *files, unsigned n)
{
	int ret = 0;

	if (!ctx || (n && !files))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	for (unsigned i = 0; i < n; i++)
		if (ctx_ticket_put_locked(ctx, files[i].cookie))
			ret = -EINVAL;
	if (ctx->caller_waiting)
		pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

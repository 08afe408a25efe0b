/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The context: options, its making and unmaking, the windows it plans
 * ahead, the batch state machine, cancel and statistics; what a batch's
 * caller calls (submit, wait, release) is in ctx_batch.c.
 *
 * Threads: the caller (submit, wait, release, cancel, stats), the pool
 * (phase 1 and per-file reads) and one dispatcher (phase 2).  All shared
 * state below is guarded by ctx->lock; entries of a window being planned
 * belong to the pool task planning them, entries of an active window to the
 * dispatcher, until they are queued for the caller.
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

/* Windows planned ahead of the one being read.  Two keeps the metadata
 * phase of the next window running while the current one is read, without
 * holding many windows of paths and extents.  The small windows of the
 * slow start count by their files: while all windows formed hold fewer
 * than window_files, another may form (a tree's 4th window waited for its
 * 1st and 2nd, 2,560 files, to be read). */
#define BFO_LOOKAHEAD 2

/*
 * Defaults (the measurements: benchmarks/sweep, benchmarks/README.md):
 *  - a small arena is faster than a large one: every page of the ring is
 *    zeroed on first touch, while 64 MiB already keeps the device busy;
 *  - 16 threads: cold metadata (statx, FIEMAP) blocks on inode-table and
 *    directory reads; fewer leave the device idle, more only add
 *    switching;
 *  - queue depth 128: per-file uring reads merge better in the block
 *    layer when more adjacent ones are submitted together.
 */
#define DEF_WINDOW_FILES   65536u
#define DEF_QUEUE_DEPTH    128u
#define DEF_THREADS        16u
#define DEF_WINDOW_BYTES   (16ull << 20)
#define DEF_ARENA_BYTES    (64ull << 20)
#define DEF_MERGE_GAP      (64ull << 10)
#define DEF_MAX_IO         (1ull << 20)
#define DEF_LARGE_EXTENT   (1ull << 20)
#define DEF_LARGE_FILE     (16ull << 20)

/* Slow start: the first window of a batch has this many files at most. */
#define FIRST_WINDOW_FILES 512u

#define MAX_THREADS        256u
#define MAX_QUEUE_DEPTH    4096u
#define MAX_WINDOW_FILES   (1u << 20)

_Static_assert(sizeof(struct bfo_file) == 160, "struct bfo_file is a fixed 160-byte layout");
_Static_assert(sizeof(struct bfo_wentry) == 128, "struct bfo_wentry is a fixed 128-byte layout");
_Static_assert(offsetof(struct bfo_wentry, owner_status) == 92, "bfo-java's NativeWriter reads it there");
_Static_assert(sizeof(struct bfo_stats) == 224, "struct bfo_stats is a fixed 224-byte layout");

BFO_API int bfo_version(void)
{
	return BFO_VERSION_NUMBER;
}

BFO_API void bfo_opts_init(struct bfo_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->engine = BFO_ENGINE_AUTO;
	o->order = BFO_ORDER_AUTO;
	o->window_files = DEF_WINDOW_FILES;
	o->queue_depth = DEF_QUEUE_DEPTH;
	o->threads = DEF_THREADS;
	o->window_bytes = DEF_WINDOW_BYTES;
	o->arena_bytes = DEF_ARENA_BYTES;
	o->merge_gap = DEF_MERGE_GAP;
	o->max_io = DEF_MAX_IO;
	o->large_extent = DEF_LARGE_EXTENT;
	o->large_file = DEF_LARGE_FILE;
}

BFO_API const char *bfo_engine_name(int engine)
{
	switch (engine) {
	case BFO_ENGINE_AUTO: return "auto";
	case BFO_ENGINE_RAW: return "raw";
	case BFO_ENGINE_URING: return "uring";
	case BFO_ENGINE_PORTABLE: return "portable";
	case BFO_ENGINE_NONE: return "none";
	}
	return "?";
}

BFO_API const char *bfo_strerror(int status)
{
	if (status > 0)
		status = -status;
	switch (status) {
	case 0: return "Success";
	case -ESTALE: return "file changed while it was being read";
	}
	/* strerrordesc_np: glibc's thread-safe table, no errno writes. */
	const char *s = strerrordesc_np(-status);
	return s ? s : "Unknown error";
}

/* ------------------------------------------------------------ options */

static int opts_resolve(struct bfo_opts *out, const struct bfo_opts *in)
{
	struct bfo_opts d;

	bfo_opts_init(&d);
	if (in) {
		size_t n = in->size;

		if (n < offsetof(struct bfo_opts, reserved))
			return -EINVAL;
		if (n > sizeof(d)) {
			const uint8_t *p = (const uint8_t *)in;

			for (size_t i = sizeof(d); i < n; i++)
				if (p[i])
					return -E2BIG;
			n = sizeof(d);
		}
		struct bfo_opts c;

		memset(&c, 0, sizeof(c));
		memcpy(&c, in, n);
		for (size_t i = 0; i < sizeof(c.reserved) / sizeof(c.reserved[0]); i++)
			if (c.reserved[i])
				return -EINVAL;
		if (c.reserved0)
			return -EINVAL;
		if (c.flags & ~(BFO_READ_NOFOLLOW | BFO_READ_STOP_ON_ERROR |
				BFO_READ_METADATA_ONLY | BFO_READ_PLAN_ONLY))
			return -EINVAL;
		if (c.engine > BFO_ENGINE_PORTABLE || c.order > BFO_ORDER_PHYSICAL)
			return -EINVAL;
		d.flags = c.flags;
		d.engine = c.engine;
		d.order = c.order;
#define TAKE(f) do { if (c.f) d.f = c.f; } while (0)
		TAKE(window_files);
		TAKE(queue_depth);
		TAKE(threads);
		TAKE(window_bytes);
		TAKE(arena_bytes);
		TAKE(merge_gap);
		TAKE(max_io);
		TAKE(large_extent);
		TAKE(large_file);
#undef TAKE
	}
	if (d.threads > MAX_THREADS || d.queue_depth > MAX_QUEUE_DEPTH ||
	    d.window_files > MAX_WINDOW_FILES)
		return -EINVAL;
	if (d.max_io < 4096 || d.max_io > (64ull << 20) || d.max_io % 4096)
		return -EINVAL;
	if (d.arena_bytes < (1ull << 20))
		return -EINVAL;
	/* Bounds that keep memory flowing: two groups the dispatcher holds
	 * (at most a quarter each) leave half the arena, in at most two
	 * stretches, so a piece (at most an eighth) always fits once the
	 * caller has released what it holds. */
	if (d.window_bytes > d.arena_bytes / 4)
		d.window_bytes = d.arena_bytes / 4;
	if (d.large_file > d.arena_bytes / 8)
		d.large_file = d.arena_bytes / 8;
	if (d.large_file < 4096)
		return -EINVAL;
	*out = d;
	return 0;
}

/* ------------------------------------------------------------ create */

/* A pool worker, before each task: the batch's caller's capabilities. */
static void adopt_creds(void *arg, unsigned *seen)
{
	sysstate_adopt_creds(arg, seen);
}

BFO_API int bfo_ctx_create(struct bfo_ctx **out, const struct bfo_opts *opts)
{
	struct bfo_ctx *ctx;
	int ret;

	if (!out)
		return -EINVAL;
	if (getenv("BFO_TRACE"))
		bfo_trace_start = bfo_now_ns();
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ret = opts_resolve(&ctx->o, opts);
	if (ret)
		goto fail_free;
	/* A pool thread holds one descriptor at a time (a file mapped or
	 * read, a directory listed): as many threads as the budget allows. */
	ctx->o.threads = fdl_share(ctx->o.threads, 1);
	pthread_mutex_init(&ctx->lock, NULL);
	{
		/* bfo_read_wait's deadline is on CLOCK_MONOTONIC (a clock step
		 * must not end or stretch a wait) */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ctx->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	ctx->ticket_free = UINT32_MAX;
	ctx->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->evfd < 0) {
		ret = -ENOMEM;
		goto fail_lock;
	}
	ret = arena_init(&ctx->arena, ctx->o.arena_bytes);
	if (ret)
		goto fail_evfd;
	sysstate_init(&ctx->sys);
	devcache_init(&ctx->devs, ctx->o.engine == BFO_ENGINE_AUTO ||
				   ctx->o.engine == BFO_ENGINE_RAW, &ctx->sys);
	dircache_init(&ctx->dirs);
	ctx->pool.before_task = adopt_creds;
	ctx->pool.before_arg = &ctx->sys;
	ret = pool_start(&ctx->pool, ctx->o.threads);
	if (ret)
		goto fail_arena;
	arena_prefault_start(&ctx->arena, &ctx->pool);

	/* The dispatcher creates the io_uring instance itself (it is the only
	 * submitter) and reports back whether the engine can run. */
	ret = -pthread_create(&ctx->dispatcher, NULL, dispatcher_main, ctx);
	if (ret)
		goto fail_pool;
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->dispatcher_started)
		pthread_cond_wait(&ctx->cond, &ctx->lock);
	pthread_mutex_unlock(&ctx->lock);
	if (!ctx->u && (ctx->o.engine == BFO_ENGINE_RAW ||
			ctx->o.engine == BFO_ENGINE_URING)) {
		bfo_ctx_destroy(ctx);
		return -EOPNOTSUPP;
	}
	*out = ctx;
	return 0;

fail_pool:
	arena_prefault_stop(&ctx->arena);
	pool_stop(&ctx->pool);
fail_arena:
	dircache_fini(&ctx->dirs);
	devcache_fini(&ctx->devs);
	sysstate_fini(&ctx->sys);
	arena_fini(&ctx->arena);
fail_evfd:
	close(ctx->evfd);
fail_lock:
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
fail_free:
	free(ctx);
	return ret;
}

BFO_API int bfo_ctx_describe(struct bfo_ctx *ctx, char *buf, size_t len)
{
	char devs[1024] = "";
	size_t used = 0;

	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->devs.lock);
	for (struct devinfo *d = ctx->devs.list; d && used < sizeof(devs); d = d->next) {
		int k = snprintf(devs + used, sizeof(devs) - used, "; %u:%u raw %s (%s)%s%s%s",
				 (unsigned)(d->dev >> 32), (unsigned)d->dev,
				 d->raw_fd >= 0 ? "yes" : "no", d->why,
				 d->ext4 ? ", inodes from the device" : "",
				 !d->ext4 && d->ext4_why[0] ? ", inodes through the VFS: " : "",
				 !d->ext4 ? d->ext4_why : "");
		if (k > 0)
			used += (size_t)k;
	}
	pthread_mutex_unlock(&ctx->devs.lock);
	pthread_mutex_lock(&ctx->lock);
	bool rawino_no = atomic_load(&ctx->sys.creds_gen) && !ctx->sys.rawino_ok;
	char why[sizeof(ctx->sys.rawino_why)];

	snprintf(why, sizeof(why), "%s", ctx->sys.rawino_why);
	pthread_mutex_unlock(&ctx->lock);
	return snprintf(buf, len, "engine %s; io_uring %s%s%s; threads %u; arena %llu MiB%s%s%s",
			bfo_engine_name((int)ctx->o.engine),
			ctx->u ? "available" : "unavailable",
			ctx->u ? "" : ": ", ctx->u ? "" : ctx->uring_why,
			ctx->o.threads,
			(unsigned long long)(ctx->o.arena_bytes >> 20), devs,
			rawino_no ? "; this batch takes no file from inode tables: " : "",
			rawino_no ? why : "");
}

/* ------------------------------------------------------------ windows */

void ctx_window_put_locked(struct bfo_ctx *ctx, struct window *w)
{
	if (--w->refs)
		return;
	for (struct window **pp = &ctx->retired; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	window_free(w);
}

void ctx_wake_dispatcher(struct bfo_ctx *ctx)
{
	uint64_t one = 1;

	if (ctx->wake_pending)
		return;
	ctx->wake_pending = true;
	/* An eventfd write cannot block (the counter never nears its limit
	 * because the dispatcher drains it) and is async-signal-safe. */
	if (write(ctx->evfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, so a wake is due. */
	}
}

void ctx_update_phase_times_locked(struct bfo_ctx *ctx)
{
	uint64_t now;
	bool meta = ctx->nplanning > 0;
	bool data = ctx->nactive > 0;

	if (ctx->bstate == B_IDLE)
		return;         /* the batch ended: its times are final */
	now = bfo_now_ns();
	if (ctx->t_meta_since && !meta) {
		ctx->st.ns_meta += now - ctx->t_meta_since;
		ctx->t_meta_since = 0;
	} else if (!ctx->t_meta_since && meta) {
		ctx->t_meta_since = now;
	}
	if (ctx->t_data_since && !data) {
		ctx->st.ns_data += now - ctx->t_data_since;
		ctx->t_data_since = 0;
	} else if (!ctx->t_data_since && data) {
		ctx->t_data_since = now;
	}
}

/*
 * Start planning windows while there is input, room in the lookahead and
 * the caller keeps up with results.
 *
 * Windows start small and grow four-fold up to window_files ("slow
 * start"): the data phase begins after the metadata of a few hundred files
 * instead of a whole window, and later windows are large enough that the
 * groups cut from them in physical order are dense on the device.
 */
void ctx_feed_planner_locked(struct bfo_ctx *ctx)
{
	while (ctx->bstate == B_ACTIVE || ctx->bstate == B_FINISHED) {
		uint64_t want = ctx->next_window_files;
		uint64_t n = MIN(want, ctx->in_count);

		/* slow end: with the input complete, what is left goes as
		 * windows of half of it each, down to FIRST_WINDOW_FILES, so
		 * that the last data phase, which nothing follows, is short
		 * and the ones before it overlap the next window's metadata */
		if (ctx->bstate == B_FINISHED && ctx->in_count > 2 * FIRST_WINDOW_FILES)
			n = MIN(n, (ctx->in_count + 1) / 2);

		if (n == 0)
			return;
		if (n < want && ctx->bstate != B_FINISHED && ctx->cut_count == 0)
			return;
		if (ctx->nplanning + ctx->nplanned + ctx->nactive > BFO_LOOKAHEAD &&
		    ctx->files_ahead >= ctx->o.window_files)
			return;
		if (ctx->res_count > 4 * (size_t)ctx->o.window_files)
			return;

		/* Everything the window needs up to its plan is allocated here,
		 * so a window once formed always delivers all its entries. */
		struct window *w = window_alloc((uint32_t)n);
		size_t len = w ? window_take_paths(w, ctx->in_buf + ctx->in_pos) : 0;

		if (!len) {
			window_free(w);
			return;  /* retried on the next submit, wait or dispatch */
		}
		ctx->in_pos += len;
		ctx->in_count -= n;
		ctx->cut_count = ctx->cut_count > n ? ctx->cut_count - n : 0;
		if (ctx->in_count == 0)
			ctx->in_pos = ctx->in_len = 0;
		w->undelivered = (uint32_t)n;
		w->base = ctx->next_index;
		ctx->next_index += n;
		w->serial = ++ctx->serial;
		w->refs = 1;
		ctx->next_window_files = MIN(ctx->next_window_files * 4, ctx->o.window_files);
		ctx->nplanning++;
		ctx->files_ahead += n;
		ctx->st.windows++;
		ctx_update_phase_times_locked(ctx);
		TRACE("w%u formed n=%u", w->serial, w->n);
		plan_start_window(ctx, w);
	}
}

/* ------------------------------------------------------------ batches */

/* The system state for a batch (sysstate.h), taken once before it
 * starts, in the caller's thread: when listings are handed over ahead of
 * it, or at its first submit.  The context is idle: no window is in
 * flight, so devices can be probed again from scratch. */
static void sys_refresh_locked(struct bfo_ctx *ctx)
{
	int saved = errno;       /* the caller's errno is left as it was */

	if (ctx->sys_fresh)
		return;
	ctx->sys_fresh = true;
	if (sysstate_batch(&ctx->sys))
		devcache_reset(&ctx->devs);
	errno = saved;
}

void ctx_prepare_next_batch(struct bfo_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate == B_IDLE)
		sys_refresh_locked(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

void ctx_batch_begin_locked(struct bfo_ctx *ctx)
{
	sys_refresh_locked(ctx);
	memset(&ctx->st, 0, sizeof(ctx->st));
	memset(ctx->bytes_by_engine, 0, sizeof(ctx->bytes_by_engine));
	ctx->next_index = 0;
	ctx->cut_count = 0;
	ctx->next_window_files = MIN(ctx->o.window_files, FIRST_WINDOW_FILES);
	ctx->stop_on_error_hit = false;
	ctx->bstate = B_ACTIVE;
	atomic_store(&ctx->stopping, false);
	ctx->t_batch_start = bfo_now_ns();
	ctx->t_meta_since = ctx->t_data_since = 0;
}

/* The batch's times end here, also when a window it delivered in full is
 * retired after this (see entries_in_flight_locked). */
void ctx_batch_end_locked(struct bfo_ctx *ctx)
{
	uint64_t now = bfo_now_ns();

	ctx->st.ns_total = now - ctx->t_batch_start;
	if (ctx->t_data_since)
		ctx->st.ns_data += now - ctx->t_data_since;
	ctx->t_meta_since = ctx->t_data_since = 0;
	ctx->bstate = B_IDLE;
	ctx->sys_fresh = false;
	/* Listings serve one batch (and those shared before it began): none
	 * of its windows is in planning now. */
	dircache_clear(&ctx->dirs);
}

/* Drop results not yet handed out; the dispatcher drops the rest. */
static void stop_locked(struct bfo_ctx *ctx)
{
	while (ctx->res_count) {
		ctx_ticket_put_locked(ctx, ctx->res[ctx->res_head].cookie);
		ctx->res_head = (ctx->res_head + 1) % ctx->res_cap;
		ctx->res_count--;
	}
	ctx->in_len = ctx->in_pos = 0;
	ctx->in_count = ctx->cut_count = 0;
	ctx->bstate = B_STOPPING;
	atomic_store(&ctx->stopping, true);
	ctx_wake_dispatcher(ctx);
	pthread_cond_broadcast(&ctx->cond);
}

/* ------------------------------------------------------------ the API */

BFO_API int bfo_read_cancel(struct bfo_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate != B_IDLE)
		stop_locked(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

BFO_API int bfo_read_stats(struct bfo_ctx *ctx, struct bfo_stats *st)
{
	uint64_t best = 0;

	if (!ctx || !st)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	*st = ctx->st;
	uint64_t now = bfo_now_ns();

	if (ctx->t_meta_since)
		st->ns_meta += now - ctx->t_meta_since;
	if (ctx->t_data_since)
		st->ns_data += now - ctx->t_data_since;
	if (ctx->bstate != B_IDLE && ctx->t_batch_start)
		st->ns_total = now - ctx->t_batch_start;
	st->engine = BFO_ENGINE_NONE;
	for (int i = 0; i < 5; i++) {
		if (ctx->bytes_by_engine[i] > best) {
			best = ctx->bytes_by_engine[i];
			st->engine = (uint32_t)i;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	/* Counters the dispatcher bumps without the lock. */
	st->device_bytes = __atomic_load_n(&ctx->st.device_bytes, __ATOMIC_RELAXED);
	st->ios = __atomic_load_n(&ctx->st.ios, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Back to the state of a new context, keeping what is costly to make: the
 * threads, the io_uring instance, the arena's mapped and populated pages,
 * the device cache and the buffers' capacity.  The batch in flight is
 * cancelled and drained here (its I/O waited for), entries the caller
 * still holds are released, and the stats and the stop-on-error state are
 * cleared, so the next batch sees nothing of this one.
 */
BFO_API int bfo_ctx_reset(struct bfo_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate != B_IDLE)
		stop_locked(ctx);
	/* Every window retired, not only delivered (entries_in_flight_locked):
	 * the next batch starts with none of this one's. */
	while (ctx->nplanning || ctx->nplanned || ctx->nactive) {
		/* The dispatcher broadcasts each round while a caller waits;
		 * the timeout only bounds a missed wake. */
		struct timespec dl;

		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += 10 * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		ctx->caller_waiting = true;
		pthread_cond_timedwait(&ctx->cond, &ctx->lock, &dl);
		ctx->caller_waiting = false;
	}
	for (uint32_t i = 0; i < ctx->nticket && ctx->tickets_out; i++)
		if (ctx->tickets[i].used)
			ctx_ticket_put_locked(ctx, (uint64_t)ctx->tickets[i].gen << 32 | i);
	ctx->res_head = ctx->res_count = 0;
	ctx->in_len = ctx->in_pos = 0;
	ctx->in_count = ctx->cut_count = 0;
	ctx->bstate = B_IDLE;
	memset(&ctx->st, 0, sizeof(ctx->st));
	memset(ctx->bytes_by_engine, 0, sizeof(ctx->bytes_by_engine));
	ctx->stop_on_error_hit = false;
	ctx->disp_blocked = false;
	ctx->t_batch_start = ctx->t_meta_since = ctx->t_data_since = 0;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

BFO_API void bfo_ctx_destroy(struct bfo_ctx *ctx)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->bstate != B_IDLE)
		stop_locked(ctx);
	ctx->shutdown = true;
	ctx_wake_dispatcher(ctx);
	pthread_mutex_unlock(&ctx->lock);
	pthread_join(ctx->dispatcher, NULL);
	/* The dispatcher returns only when no window is planning, planned or
	 * active, so the pool is idle but for populating the arena. */
	arena_prefault_stop(&ctx->arena);
	pool_stop(&ctx->pool);
	pthread_mutex_lock(&ctx->lock);
	while (ctx->retired) {
		struct window *w = ctx->retired;

		ctx->retired = w->next;
		window_free(w);
	}
	pthread_mutex_unlock(&ctx->lock);
	dircache_fini(&ctx->dirs);
	devcache_fini(&ctx->devs);
	sysstate_fini(&ctx->sys);
	arena_fini(&ctx->arena);
	close(ctx->evfd);
	free(ctx->in_buf);
	free(ctx->res);
	free(ctx->tickets);
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
	free(ctx);
}

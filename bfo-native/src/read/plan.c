/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Phase 1: metadata of a whole window, then its plan.
 *
 * Pool tasks stat every file of the window (and, where the engine reads by
 * physical address or orders by it, open it and map its extents with
 * FIEMAP).  The last task to finish queues the window as planned; the
 * dispatcher's thread then builds its plan (plan_build.c).  Also the
 * windows themselves: made, given their paths, freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bfo.h"
#include "fdlimit.h"
#include "common.h"
#include "ctx.h"
#include "devinfo.h"
#include "plan.h"
#include "pool.h"
#include "test_hooks.h"

/* Extents fetched per FIEMAP call; files with more loop. */
#define FIEMAP_BATCH 32u

/*
 * Auto order on a rotational device: the per-file engines read in physical
 * order, whose key costs an open, a FIEMAP and a close per file, a fifth of
 * the uring engine's CPU on the 3k5 set, where the pool's stats and the
 * dispatcher's reads share two cores.  Inode order is often physical order
 * already: of neighbours in inode order, 0.04% descend on the device in the
 * 3k5 set, 1.8% in the tree set, 41% in the aged one (every 8th file:
 * 0.2-0.4%, 1.7-3.2%, 37-44% per window).  So a window of KEY_SAMPLE_MIN
 * files or more maps every KEY_SAMPLE-th file first; when at most
 * KEY_DESC_PCT percent of the sample's neighbours descend it keeps inode
 * order, else a second pass maps the other files as before.
 */
#define KEY_SAMPLE     8u
#define KEY_SAMPLE_MIN 1024u
#define KEY_DESC_PCT   1u

static int task_ext_push(struct ptask *t, const struct fext *x)
{
	if (t->next == t->cap) {
		uint32_t n = t->cap ? t->cap * 2 : 128;
		struct fext *p = realloc(t->ext, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->ext = p;
		t->cap = n;
	}
	t->ext[t->next++] = *x;
	return 0;
}

enum map_result { MAP_OK, MAP_PER_FILE, MAP_FAILED };

/* Open e's path, bound to the file that was stat'ed: MAP_OK with *fd;
 * MAP_PER_FILE when the path now names another file (read per file, which
 * re-stats it); MAP_FAILED with e->status. */
static enum map_result open_planned(struct entry *e, bool nofollow, int *fd)
{
	struct stat st;
	struct entry now;

	*fd = fdl_open(e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
				(nofollow ? O_NOFOLLOW : 0), 0);
	if (*fd < 0) {
		e->status = -errno;
		return MAP_FAILED;
	}
	if (fstat(*fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		fdl_close(*fd);
		return MAP_PER_FILE;
	}
	entry_meta_from_stat(&now, &st);
	if (!meta_same(&now, e)) {
		fdl_close(*fd);
		return MAP_PER_FILE;
	}
	return MAP_OK;
}

/* The FIEMAP extents of e (open on fd) into the task's list, clipped to its
 * size; sync: FIEMAP_FLAG_SYNC first.  *covered: the bytes of written
 * extents.  true: per file (no FIEMAP, an extent refused, too many). */
static bool fiemap_extents(struct ptask *t, struct entry *e, int fd, bool sync, uint64_t *covered)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ex[FIEMAP_BATCH];
	} b;
	const uint32_t refuse = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC |
				FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_DATA_ENCRYPTED |
				FIEMAP_EXTENT_NOT_ALIGNED | FIEMAP_EXTENT_DATA_INLINE |
				FIEMAP_EXTENT_DATA_TAIL;
	uint32_t first = t->next;
	uint64_t start = 0;
	bool per_file = false;

	for (;;) {
		memset(&b.fm, 0, sizeof(b.fm));
		b.fm.fm_start = start;
		b.fm.fm_length = FIEMAP_MAX_OFFSET - start;
		b.fm.fm_flags = sync ? FIEMAP_FLAG_SYNC : 0;
		b.fm.fm_extent_count = FIEMAP_BATCH;
		sync = false;
		if (ioctl(fd, FS_IOC_FIEMAP, &b.fm) < 0)
			return true;         /* tmpfs, overlayfs, FUSE, ... */
		if (b.fm.fm_mapped_extents == 0)
			break;
		for (uint32_t i = 0; i < b.fm.fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &b.ex[i];
			struct fext f;

			if (x->fe_flags & refuse)
				per_file = true;
			if (x->fe_logical >= e->size)
				continue;    /* preallocated past EOF */
			f.logical = x->fe_logical;
			f.phys = x->fe_physical;
			f.len = MIN(x->fe_length, e->size - x->fe_logical);
			f.zero = x->fe_flags & FIEMAP_EXTENT_UNWRITTEN;
			if (!f.zero)
				*covered += f.len;
			if (t->next - first >= BFO_MAX_EXTENTS_PER_FILE) {
				per_file = true;
				break;
			}
			if (task_ext_push(t, &f)) {
				per_file = true;
				break;
			}
		}
		const struct fiemap_extent *last = &b.ex[b.fm.fm_mapped_extents - 1];

		if (per_file || (last->fe_flags & FIEMAP_EXTENT_LAST))
			break;
		start = last->fe_logical + last->fe_length;
		if (start >= e->size)
			break;
	}
	return per_file;
}

/* Does a written extent of e end (rounded up to a device block) beyond
 * the device?  Then the device cannot give its bytes. */
static bool past_device(const struct ptask *t, const struct entry *e, uint32_t first)
{
	for (uint32_t i = first; i < t->next; i++) {
		const struct fext *f = &t->ext[i];

		if (!f->zero && ALIGN_UP(f->phys + f->len, e->di->lbs) > e->di->devsize)
			return true;
	}
	return false;
}

/* Does ext4 journal this file's data (chattr +j)?  Its newest bytes may
 * then be in the journal, not at the blocks FIEMAP reports, even after a
 * sync: only a checkpoint writes them home.  Unknown: yes. */
static bool journalled_file(const struct entry *e, int fd)
{
	int flags = 0;

	if (!e->di || e->di->fs != FS_EXT4)
		return false;
	return ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0 || (flags & FS_JOURNAL_DATA_FL);
}

/*
 * Map the extents of e into the task's list.  for_raw: the bytes will be
 * read from the device, so flush dirty pages first (FIEMAP_FLAG_SYNC) and
 * refuse every extent whose device bytes are not the file's bytes.
 */
static enum map_result map_extents(struct ptask *t, struct entry *e, bool nofollow,
				   bool for_raw)
{
	uint32_t first = t->next;
	uint64_t covered = 0;
	enum map_result r;
	bool per_file;
	int fd;

	r = open_planned(e, nofollow, &fd);
	if (r != MAP_OK)
		return r;
	if (for_raw && journalled_file(e, fd)) {
		close(fd);
		return MAP_PER_FILE;
	}
	e->ext_first = first;
	e->ext_count = 0;
	per_file = fiemap_extents(t, e, fd, for_raw, &covered);
	fdl_close(fd);
	e->ext_count = t->next - first;
	if (e->ext_count)
		e->first_phys = t->ext[first].phys;
	if (per_file && for_raw) {
		t->next = first;     /* drop this file's extents */
		e->ext_count = 0;
		return MAP_PER_FILE;
	}
	e->holes = covered < e->size;
	if (for_raw && e->di && past_device(t, e, first)) {
		t->next = first;
		e->ext_count = 0;
		return MAP_PER_FILE;
	}
	return MAP_OK;
}

/* The per-file engine of this context, for files raw cannot take. */
static enum route per_file_route(struct bfo_ctx *ctx, uint8_t *engine)
{
	if (ctx->u && ctx->o.engine != BFO_ENGINE_PORTABLE) {
		*engine = BFO_ENGINE_URING;
		return R_URING;
	}
	*engine = BFO_ENGINE_PORTABLE;
	return R_POOL;
}

/* A file whose st_size is not its size: read it to EOF (plan.h, PSEUDO_FIRST). */
static bool is_pseudo(const struct entry *e)
{
	if (!e->di)
		return false;
	return e->di->sizes_lie || (e->size == 0 && !e->di->sizes_true);
}

/*
 * A hinted file from its raw inode (raw_ext4ino.c): true when planned so, for a
 * raw read or metadata only; false: the VFS path plans it (its stat
 * overwrites everything set here).  Files read per file (large ones) and
 * plan-only batches take the VFS path, which those reads and stats need.
 */
static bool phase1_rawino(struct ptask *t, struct entry *e)
{
	struct bfo_ctx *ctx = t->ctx;
	const struct bfo_opts *o = &ctx->o;
	struct fext ext[EXT4INO_EXTENTS];
	uint64_t covered = 0;
	int n;

	if ((o->flags & BFO_READ_PLAN_ONLY) || !ctx->u)
		return false;     /* (hinted: e->di reads raw, raw_dirhint.c made sure) */
	n = ext4ino_map(e->di->ext4, &t->ibuf, e, e->dir_uid, ext, EXT4INO_EXTENTS, &e->rawsum);
	if (n < 0 || e->size > o->large_file)
		return false;
	e->status = 0;
	e->rawino = true;
	stat_add(&ctx->st.files_rawmeta, 1);
	if (o->flags & BFO_READ_METADATA_ONLY)
		return true;
	e->pseudo = false;       /* ext4: st_size is the size */
	e->route = e->size ? R_RAW : R_NONE;
	e->engine = BFO_ENGINE_RAW;
	e->ext_first = t->next;
	e->ext_count = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		if (task_ext_push(t, &ext[i])) {
			t->next = e->ext_first;
			e->rawino = false;
			stat_add(&ctx->st.files_rawmeta, (uint64_t)-1);
			return false;
		}
		if (!ext[i].zero)
			covered += ext[i].len;
	}
	e->first_phys = n ? ext[0].phys : 0;
	e->holes = covered < e->size;
	e->sort_key = e->first_phys;
	return true;
}

/* The physical sort key of a file read per file; its extents are not kept. */
static void key_physical(struct ptask *t, struct entry *e, bool nofollow)
{
	uint32_t keep = t->next;

	if (map_extents(t, e, nofollow, false) == MAP_OK) {
		e->sort_key = e->first_phys;
		e->phys_key = true;
	}
	t->next = keep;
	e->ext_count = 0;
}

static void phase1_file(struct ptask *t, struct entry *e)
{
	struct bfo_ctx *ctx = t->ctx;
	const struct bfo_opts *o = &ctx->o;
	bool nofollow = o->flags & BFO_READ_NOFOLLOW;
	bool physical_order;

	e->engine = BFO_ENGINE_NONE;
	e->route = R_NONE;
	if (e->hinted && phase1_rawino(t, e))
		return;
	e->status = stat_path(e->path, nofollow, e);
	if (e->status)
		return;
	e->status = entry_type_status(e->mode);
	if (e->status || (o->flags & BFO_READ_METADATA_ONLY))
		return;
	e->di = devcache_get(&ctx->devs, e->dev, e->path);
	e->pseudo = is_pseudo(e);
	if (o->flags & BFO_READ_PLAN_ONLY) {
		if (e->size && !e->pseudo)
			map_extents(t, e, nofollow, false);
		return;
	}
	if (e->pseudo) {
		/* Never mapped nor read raw: FIEMAP and st_size mean nothing there. */
		e->route = R_POOL;
		e->engine = BFO_ENGINE_PORTABLE;
		e->sort_key = e->ino;
		e->pcap = MIN(MAX(e->size, PSEUDO_FIRST), PSEUDO_FIRST_MAX) + 1;
		return;
	}
	if (e->size > o->large_file) {
		e->route = R_PIECES;
		e->engine = BFO_ENGINE_PORTABLE;
		return;
	}
	if (e->di && e->di->raw_fd >= 0 && ctx->u) {
		e->route = R_RAW;
		e->engine = BFO_ENGINE_RAW;
	} else {
		e->route = per_file_route(ctx, &e->engine);
	}
	if (e->size == 0) {
		e->route = R_NONE;   /* nothing to read; delivered as is */
		return;
	}
	e->sort_key = e->ino;
	if (e->route == R_RAW) {
		if (map_extents(t, e, nofollow, true) == MAP_PER_FILE) {
			e->route = per_file_route(ctx, &e->engine);
			stat_add(&ctx->st.fallback_files, 1);
		} else {
			e->sort_key = e->first_phys;
		}
		return;
	}
	physical_order = o->order == BFO_ORDER_PHYSICAL ||
			 (o->order == BFO_ORDER_AUTO && e->di && e->di->rotational);
	if (physical_order && t->w->key_sample && (e - t->w->e) % KEY_SAMPLE)
		e->want_key = true;      /* the sample decides (keys_wanted) */
	else if (physical_order)
		key_physical(t, e, nofollow);
}

static void next_hinting_locked(struct bfo_ctx *ctx);

/* Phase 1 of w is done: hand it to the dispatcher (and the next window
 * waiting for its phase 0 to the pool). */
static void phase1_done(struct bfo_ctx *ctx, struct window *w)
{
	TRACE("w%u phase1 done n=%u", w->serial, w->n);
	pthread_mutex_lock(&ctx->lock);
	ctx->nplanning--;
	if (w->hint_task.fn)
		next_hinting_locked(ctx);
	if (ctx->bstate == B_STOPPING) {
		ctx->files_ahead -= w->n;
		ctx_window_put_locked(ctx, w);  /* never published: frees it */
	} else {
		if (ctx->planned_tail)
			ctx->planned_tail->next = w;
		else
			ctx->planned_head = w;
		ctx->planned_tail = w;
		ctx->nplanned++;
	}
	ctx_update_phase_times_locked(ctx);
	/* Also when the window is dropped: a stopping dispatcher waits for
	 * the last window in planning to go before it can finish. */
	ctx_wake_dispatcher(ctx);
	if (ctx->caller_waiting)
		pthread_cond_broadcast(&ctx->cond);
	pthread_mutex_unlock(&ctx->lock);
}

static void task_paths(struct window *w, const struct ptask *t);

struct key_sample {
	uint64_t dev, ino, phys;
};

static int key_sample_cmp(const void *pa, const void *pb)
{
	const struct key_sample *a = pa, *b = pb;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/*
 * Are the physical keys of w's other files wanted (KEY_SAMPLE)?  Yes when
 * more than KEY_DESC_PCT percent of the sample's neighbours in inode order
 * descend on the device, or the sample is too small to say.  No: every
 * file keeps its inode number as its key, the sample's too (one order).
 */
static bool keys_wanted(struct window *w)
{
	uint32_t n = 0, want = 0, desc = 0;
	struct key_sample *s;

	for (uint32_t i = 0; i < w->n; i++) {
		n += w->e[i].phys_key;
		want += w->e[i].want_key;
	}
	if (!want)
		return false;
	if (n < KEY_SAMPLE_MIN / KEY_SAMPLE / 2)
		return true;
	s = malloc(n * sizeof(*s));
	if (!s)
		return true;     /* as without a sample */
	n = 0;
	for (uint32_t i = 0; i < w->n; i++)
		if (w->e[i].phys_key)
			s[n++] = (struct key_sample){ w->e[i].dev, w->e[i].ino, w->e[i].sort_key };
	qsort(s, n, sizeof(*s), key_sample_cmp);
	for (uint32_t k = 1; k < n; k++)
		desc += s[k].dev == s[k - 1].dev && s[k].phys < s[k - 1].phys;
	free(s);
	TRACE("w%u keys sampled=%u descending=%u", w->serial, n, desc);
	want = (uint64_t)desc * 100 > (uint64_t)(n - 1) * KEY_DESC_PCT;
	if (bfo_test_hooks.after_keys)
		bfo_test_hooks.after_keys(bfo_test_hooks.arg, n, want);
	if (want)
		return true;
	for (uint32_t i = 0; i < w->n; i++) {
		struct entry *e = &w->e[i];

		if (e->phys_key)
			e->sort_key = e->ino;
		e->phys_key = e->want_key = false;
	}
	return false;
}

static void keys_task(struct pool_task *pt);

/* The last task of a pass over w: a second pass when the sample wants the
 * other files' keys, else w's phase 1 is done. */
static void phase1_last(struct bfo_ctx *ctx, struct window *w)
{
	if (w->key_sample && !w->key_pass && !atomic_load(&ctx->stopping) && keys_wanted(w)) {
		w->key_pass = true;
		atomic_store(&w->tasks_left, w->ntasks);
		/* the lock: as in phase0_task */
		pthread_mutex_lock(&ctx->lock);
		for (uint32_t i = 0; i < w->ntasks; i++) {
			w->tasks[i].task.fn = keys_task;
			pool_push(&ctx->pool, &w->tasks[i].task);
		}
		pthread_mutex_unlock(&ctx->lock);
		return;
	}
	if (w->nhint_devs && !atomic_load(&ctx->stopping) && !dirhint_sync(w))
		w->unsynced = true;
	phase1_done(ctx, w);
}

/* The second pass: the physical keys the sample did not take. */
static void keys_task(struct pool_task *pt)
{
	struct ptask *t = (struct ptask *)pt;
	struct window *w = t->w;
	bool nofollow = t->ctx->o.flags & BFO_READ_NOFOLLOW;

	for (uint32_t i = t->first; i < t->first + t->count && !atomic_load(&t->ctx->stopping); i++) {
		struct entry *e = &w->e[i];

		if (e->want_key) {
			e->want_key = false;
			key_physical(t, e, nofollow);
		}
	}
	if (atomic_fetch_sub(&w->tasks_left, 1) == 1)
		phase1_last(t->ctx, w);
}

static void phase1_task(struct pool_task *pt)
{
	struct ptask *t = (struct ptask *)pt;
	struct window *w = t->w;

	if (!w->hint_task.fn)
		task_paths(w, t);
	ext4ino_buf_start(&t->ibuf);
	for (uint32_t i = t->first; i < t->first + t->count; i++)
		if (w->e[i].hinted)
			t->ibuf.upto = MAX(t->ibuf.upto, w->e[i].ino);
	/* A stopped batch drops the window in phase1_done (the batch cannot
	 * end before): its files need no metadata, nor its devices a sync. */
	for (uint32_t i = t->first; i < t->first + t->count && !atomic_load(&t->ctx->stopping); i++)
		phase1_file(t, &w->e[i]);
	if (atomic_fetch_sub(&w->tasks_left, 1) == 1)
		phase1_last(t->ctx, w);
}

static void push_phase1(struct bfo_ctx *ctx, struct window *w)
{
	for (uint32_t i = 0; i < w->ntasks; i++) {
		struct ptask *t = &w->tasks[i];

		t->task.fn = phase1_task;
		t->ctx = ctx;
		t->w = w;
		pool_push(&ctx->pool, &t->task);
	}
}

static void phase0_task(struct pool_task *pt)
{
	struct window *w = (struct window *)((char *)pt - offsetof(struct window, hint_task));
	struct bfo_ctx *ctx = w->ctx;

	for (uint32_t k = 0; k < w->ntasks; k++)
		task_paths(w, &w->tasks[k]);
	if (!atomic_load(&ctx->stopping))   /* else phase 1 drops the window */
		dirhint_window(ctx, w);
	if (bfo_trace_start) {
		uint32_t hinted = 0;

		for (uint32_t i = 0; i < w->n; i++)
			hinted += w->e[i].hinted;
		TRACE("w%u phase0 done hinted=%u dirs=%u", w->serial, hinted, w->nhdirs);
	}
	if (bfo_test_hooks.after_hint)
		bfo_test_hooks.after_hint(bfo_test_hooks.arg, w->n);
	/* As in plan_start_window: the lock keeps phase1_done, and so the
	 * window's end, from running before the last task is pushed. */
	pthread_mutex_lock(&ctx->lock);
	push_phase1(ctx, w);
	pthread_mutex_unlock(&ctx->lock);
}

/* Called with ctx->lock held: phase 0 (directory listings, when raw reads
 * are wanted) runs on the pool and then starts phase 1.  Windows with a
 * phase 0 go one at a time (ctx->hinting). */
void plan_start_window(struct bfo_ctx *ctx, struct window *w)
{
	atomic_store(&w->tasks_left, w->ntasks);
	w->t_plan_start = bfo_now_ns();
	w->ctx = ctx;
	w->key_sample = ctx->o.order == BFO_ORDER_AUTO && w->n >= KEY_SAMPLE_MIN &&
			!(ctx->o.flags & BFO_READ_PLAN_ONLY);
	if (ctx->devs.want_raw && ctx->sys.rawino_ok && !(ctx->o.flags & BFO_READ_PLAN_ONLY) &&
	    w->n >= DIRHINT_MIN_FILES) {
		w->hint_task.fn = phase0_task;
		if (ctx->hinting) {
			w->next = NULL;
			if (ctx->hint_wait_tail)
				ctx->hint_wait_tail->next = w;
			else
				ctx->hint_wait_head = w;
			ctx->hint_wait_tail = w;
			return;
		}
		ctx->hinting = true;
		pool_push(&ctx->pool, &w->hint_task);
	} else {
		push_phase1(ctx, w);
	}
}

/* Called with ctx->lock held when a window with a phase 0 is planned. */
static void next_hinting_locked(struct bfo_ctx *ctx)
{
	struct window *w = ctx->hint_wait_head;

	ctx->hinting = w != NULL;
	if (!w)
		return;
	ctx->hint_wait_head = w->next;
	if (!ctx->hint_wait_head)
		ctx->hint_wait_tail = NULL;
	w->next = NULL;
	pool_push(&ctx->pool, &w->hint_task);
}

/*
 * The window's w->n paths, copied from the caller's buffer (NUL-terminated,
 * end to end): their bytes, or 0 when out of memory.  Called under the
 * context's lock: only the copy and each task's first path are done here;
 * the entries' path pointers are set by the pool (task_paths), whose
 * threads then take the page faults of a window's entries (11 MiB for
 * 56,000 files, 10 ms) instead of the lock holder, on whom the dispatcher
 * and the caller wait.
 */
size_t window_take_paths(struct window *w, const char *paths)
{
	size_t off = 0;

	for (uint32_t i = 0; i < w->n; i++) {
		if (i % TASK_FILES == 0) {
			struct ptask *t = &w->tasks[i / TASK_FILES];

			t->first = i;
			t->count = MIN(TASK_FILES, w->n - i);
			t->path_off = off;
		}
		off += strlen(paths + off) + 1;
	}
	w->paths = malloc(off);
	if (!w->paths)
		return 0;
	memcpy(w->paths, paths, off);
	w->paths_len = off;
	return off;
}

/* The path pointers of t's entries (window_take_paths). */
static void task_paths(struct window *w, const struct ptask *t)
{
	size_t off = t->path_off;

	for (uint32_t i = t->first; i < t->first + t->count; i++) {
		w->e[i].path = w->paths + off;
		off += strlen(w->paths + off) + 1;
	}
}

struct window *window_alloc(uint32_t n)
{
	struct window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->n = n;
	w->ntasks = (n + TASK_FILES - 1) / TASK_FILES;
	w->e = calloc(n ? n : 1, sizeof(*w->e));
	w->early = malloc((n ? n : 1) * sizeof(*w->early));
	w->tasks = calloc(w->ntasks ? w->ntasks : 1, sizeof(*w->tasks));
	if (!w->e || !w->early || !w->tasks) {
		window_free(w);
		return NULL;
	}
	return w;
}

void window_free(struct window *w)
{
	if (!w)
		return;
	if (w->tasks)
		for (uint32_t i = 0; i < w->ntasks; i++)
			free(w->tasks[i].ext);
	free(w->tasks);
	free(w->e);
	free(w->paths);
	free(w->ext);
	free(w->order);
	free(w->groups);
	free(w->segs);
	free(w->regions);
	free(w->early);
	free(w->large);
	free(w->hdirs);
	free(w);
}

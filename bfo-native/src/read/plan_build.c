/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A window's plan, built on the dispatcher's thread once phase 1 is done
 * (plan_window, from dispatch.c): its files sorted for the device
 * (physical or inode order), their buffers laid out, cut into groups that
 * each fit one arena chunk, and for the raw engine the ORDER_LIST of
 * merged regions (raw_regions.c).
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


static int order_cmp(const void *pa, const void *pb, void *arg)
{
	const struct window *w = arg;
	const struct entry *a = &w->e[*(const uint32_t *)pa];
	const struct entry *b = &w->e[*(const uint32_t *)pb];

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->route != b->route)
		return a->route < b->route ? -1 : 1;
	if (a->sort_key != b->sort_key)
		return a->sort_key < b->sort_key ? -1 : 1;
	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* A raw file large enough for its own regions to be read straight into
 * its buffer (see entry_offset). */
static bool entry_direct(const struct entry *e)
{
	return e->route == R_RAW && e->size >= DIRECT_MIN;
}

/* Per-file buffer size: one byte more than the file so a read that
 * returns more than the stat'ed size shows the file grew. */
static uint64_t entry_need(const struct entry *e)
{
	if (e->pseudo)
		return ALIGN_UP(e->pcap, 64);
	if (entry_direct(e))
		return ALIGN_UP(e->size + 1, DIRECT_ALIGN);
	return ALIGN_UP(e->size + 1, 64);
}

/*
 * Where e's buffer starts in a group whose buffers so far take `bytes`.
 * A raw file of DIRECT_MIN or more starts on a page, its buffer whole
 * pages: a region holding only one of its extents can then be read by
 * O_DIRECT straight into it (see submit_region) instead of through a
 * region buffer and a copy, and without a region buffer such reads are
 * bounded by the queue depth alone.  The padding costs at most a page per
 * file of 32 KiB or more (an eighth at worst, a few percent on the mixed
 * set); smaller files share regions with their neighbours anyway.
 */
static uint64_t entry_offset(const struct entry *e, uint64_t bytes)
{
	return entry_direct(e) ? ALIGN_UP(bytes, DIRECT_ALIGN) : bytes;
}

/* The tasks' extent lists become the window's one list, and each entry
 * goes where it is read from: early (no data), large (in pieces) or the
 * order.  *nsegs: the raw segments the ordered files need. */
static int plan_flatten(struct bfo_ctx *ctx, struct window *w, uint32_t *nsegs)
{
	uint32_t i, nraw_ext = 0;
	uint32_t *task_base;

	task_base = calloc(w->ntasks, sizeof(*task_base));
	if (!task_base)
		return -ENOMEM;
	for (i = 0; i < w->ntasks; i++) {
		task_base[i] = w->next_ext;
		w->next_ext += w->tasks[i].next;
	}
	w->ext = malloc((w->next_ext ? w->next_ext : 1) * sizeof(*w->ext));
	w->order = malloc(w->n * sizeof(*w->order));
	w->large = malloc(w->n * sizeof(*w->large));
	if (!w->ext || !w->order || !w->large) {
		free(task_base);
		return -ENOMEM;
	}
	for (i = 0; i < w->ntasks; i++) {
		struct ptask *t = &w->tasks[i];

		if (t->next)
			memcpy(w->ext + task_base[i], t->ext, t->next * sizeof(*t->ext));
		free(t->ext);
		t->ext = NULL;
	}
	for (i = 0; i < w->n; i++) {
		struct entry *e = &w->e[i];

		if (e->ext_count)
			e->ext_first += task_base[i / TASK_FILES];
		nraw_ext += e->ext_count;
		if (e->status < 0 || e->route == R_NONE) {
			w->early[w->nearly++] = i;
		} else if (e->route == R_PIECES) {
			w->large[w->nlarge++] = i;
		} else {
			w->order[w->norder++] = i;
			if (e->route == R_RAW)
				*nsegs += entry_nsegs(&ctx->o, w, e);
		}
	}
	free(task_base);
	stat_add(&ctx->st.extents, nraw_ext);
	return 0;
}

/* Groups: consecutive files of the order whose buffers fit in
 * window_bytes, each later reserved as one arena chunk. */
static void plan_groups(const struct bfo_opts *o, struct window *w)
{
	for (uint32_t i = 0; i < w->norder; i++) {
		struct entry *e = &w->e[w->order[i]];
		struct group *g = w->ngroups ? &w->groups[w->ngroups - 1] : NULL;

		if (!g || (g->count && entry_offset(e, g->bytes) + entry_need(e) > o->window_bytes)) {
			g = &w->groups[w->ngroups++];
			g->first = i;
			g->next = i;
		}
		e->group = (uint32_t)(g - w->groups);
		e->in_group = true;
		e->buf_off = entry_offset(e, g->bytes);
		e->cap = entry_need(e);
		g->bytes = e->buf_off + e->cap;
		g->count++;
	}
}

static int plan_build(struct bfo_ctx *ctx, struct window *w)
{
	uint32_t nsegs = 0;
	int ret = plan_flatten(ctx, w, &nsegs);

	if (ret)
		return ret;
	if (ctx->o.flags & BFO_READ_PLAN_ONLY)
		return plan_only_stats(ctx, w);
	qsort_r(w->order, w->norder, sizeof(*w->order), order_cmp, w);
	w->groups = calloc(w->norder ? w->norder : 1, sizeof(*w->groups));
	w->segs = malloc((nsegs ? nsegs : 1) * sizeof(*w->segs));
	w->regions = malloc((nsegs ? nsegs : 1) * sizeof(*w->regions));
	if (!w->groups || !w->segs || !w->regions)
		return -ENOMEM;
	plan_groups(&ctx->o, w);
	plan_regions(ctx, w);
	return 0;
}

struct bfo_test_hooks bfo_test_hooks;
uint64_t bfo_trace_start;

/*
 * Files planned from their raw inode that get no data read (empty, or a
 * metadata-only batch) have no check after a read: their inode and
 * directory are checked here, after every inode of the window was read and
 * its file systems synced (a file written but not yet on the device shows
 * its new size only then), and a file that changed takes the VFS path now.
 */
static void check_rawino_nodata(struct bfo_ctx *ctx, struct window *w)
{
	bool nofollow = ctx->o.flags & BFO_READ_NOFOLLOW;
	uint64_t epoch = dirhint_epoch();
	struct ext4ino_buf ib;

	/* read now, after the sync: a window's inodes, sorted by number, share
	 * the table's blocks (one pread per block, not one per inode: 200,000
	 * of them in a rerun of bfo cp over 100,000 files) */
	ext4ino_buf_start(&ib);
	for (uint32_t i = 0; i < w->n; i++) {
		struct entry *e = &w->e[i];

		if (!e->rawino || e->route != R_NONE ||
		    (!w->unsynced && ext4ino_same(e->di->ext4, &ib, e->ino, &e->rawsum) && dirhint_same(w, e, epoch)))
			continue;
		e->rawino = false;
		stat_add(&ctx->st.files_rawmeta, (uint64_t)-1);
		e->status = stat_path(e->path, nofollow, e);
		if (!e->status)
			e->status = entry_type_status(e->mode);
		if (!e->status && e->size && !(ctx->o.flags & BFO_READ_METADATA_ONLY)) {
			/* It has bytes now: read per file, which checks them. */
			e->route = e->size > ctx->o.large_file ? R_PIECES : R_POOL;
			e->engine = BFO_ENGINE_PORTABLE;
		}
	}
}

/*
 * Build the plan of a window whose phase 1 is done.  Runs on the dispatcher
 * thread, not on the pool: it is on the critical path of the data phase,
 * and pool threads (at lower priority) are meanwhile busy with the next
 * window's metadata.
 */
void plan_window(struct bfo_ctx *ctx, struct window *w)
{
	int ret;

	check_rawino_nodata(ctx, w);
	ret = plan_build(ctx, w);

	TRACE("w%u plan built groups=%u regions=%u", w->serial, w->ngroups, w->nregions);
	if (bfo_test_hooks.after_plan)
		bfo_test_hooks.after_plan(bfo_test_hooks.arg, w->n);
	if (ret) {
		/* Out of memory while planning: every file of the window fails
		 * with -ENOMEM rather than the batch (w->early was allocated
		 * with the window, so this path cannot fail). */
		w->norder = w->ngroups = w->nlarge = w->nearly = 0;
		for (uint32_t i = 0; i < w->n; i++) {
			w->e[i].status = -ENOMEM;
			w->e[i].route = R_NONE;
			w->e[i].engine = BFO_ENGINE_NONE;
			w->early[w->nearly++] = i;
		}
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The raw engine's reads of a window (plan.h): each group's ORDER_LIST,
 * its files' extents cut into segments of at most max_io, sorted by
 * physical offset and merged into regions across small gaps, and the same
 * count for BFO_READ_PLAN_ONLY.  Which gaps a region may read through is
 * decided here (GAP_SHARE); which files a window holds, in plan.c.
 */
#include <errno.h>
#include <stdlib.h>

#include "common.h"
#include "ctx.h"
#include "plan.h"

static int seg_cmp(const void *pa, const void *pb)
{
	const struct seg *a = pa, *b = pb;

	if (a->di != b->di)
		return a->di->dev < b->di->dev ? -1 : 1;
	if (a->phys != b->phys)
		return a->phys < b->phys ? -1 : 1;
	return a->len < b->len ? -1 : a->len > b->len;
}

/* A region reads through gaps of at most 1/GAP_SHARE of its data.  The
 * bytes of a gap are often files of another window (a window of a few
 * directories whose files lie between other directories' files): read
 * through, they are read twice.  On a tree written interleaved across 20
 * directories, inode order by directory, merge_gap alone read 145.5 MB for
 * 69.6 MB; this bound keeps device bytes within 1.25x of the data, and a
 * dense window (gaps of free or metadata blocks) still merges as before.
 * What follows a file's end in its last file system block is the file's
 * own, not a gap: counted as a gap, it split a tree of files of ~1.3 KB
 * lying end to end into one region per one or two files. */
#define GAP_SHARE 4u

/* Merge segments (sorted by seg_cmp) into regions the way the raw engine
 * reads them.  Writes the regions to out when it is not NULL; returns
 * their number and adds the bytes read and read-through to the counters.
 * A region's length (read) ends at a device block; its data, and so its
 * gaps, at the file system block (own). */
static uint32_t merge_regions(const struct bfo_opts *o, const struct seg *segs, uint32_t n,
			      uint32_t seg_base, struct region *out,
			      uint64_t *device_bytes, uint64_t *gap_bytes)
{
	struct region cur = { 0 };
	uint64_t cur_end = 0, cur_own = 0, cur_data = 0;
	bool have = false, cur_large = false;
	uint32_t nregions = 0;

	for (uint32_t i = 0; i <= n; i++) {
		const struct seg *s = i < n ? &segs[i] : NULL;
		uint64_t s_start = 0, s_end = 0, s_own = 0;
		bool large = false;

		if (s) {
			s_start = ALIGN_DOWN(s->phys, s->di->lbs);
			s_end = ALIGN_UP(s->phys + s->len, s->di->lbs);
			s_own = ALIGN_UP(s->phys + s->len, MAX(s->di->lbs, s->di->fsbs));
			large = s->len > o->large_extent;
			uint64_t add = s_own > cur_own ? s_own - MAX(s_start, cur_own) : 0;
			uint64_t len = MAX(cur_end, s_end) - cur.phys;
			uint64_t span = MAX(cur_own, s_own) - cur.phys;

			if (have && cur.di == s->di && !cur_large && !large &&
			    s_start <= cur_own + o->merge_gap && len <= o->max_io &&
			    (span - cur_data - add) * GAP_SHARE <= cur_data + add) {
				cur_data += add;
				cur_end = MAX(cur_end, s_end);
				cur_own = MAX(cur_own, s_own);
				cur.len = (uint32_t)(cur_end - cur.phys);
				cur.seg_count++;
				continue;
			}
		}
		if (have) {
			if (out)
				out[nregions] = cur;
			nregions++;
			*device_bytes += cur.len;
			*gap_bytes += cur_own - cur.phys - cur_data;
		}
		if (!s)
			break;
		cur = (struct region){ .phys = s_start, .len = (uint32_t)(s_end - s_start),
				       .seg_first = seg_base + i, .seg_count = 1, .di = s->di };
		cur_end = s_end;
		cur_own = s_own;
		cur_data = s_own - s_start;
		cur_large = large;
		have = true;
	}
	return nregions;
}

/* Append the segments of e's extents (split at max_io) to segs[*n]. */
static void entry_segments(const struct bfo_opts *o, const struct window *w, uint32_t ei,
			   struct seg *segs, uint32_t *n)
{
	const struct entry *e = &w->e[ei];

	for (uint32_t k = 0; k < e->ext_count; k++) {
		const struct fext *f = &w->ext[e->ext_first + k];

		for (uint64_t off = 0; !f->zero && off < f->len; off += o->max_io) {
			struct seg *s = &segs[(*n)++];

			s->phys = f->phys + off;
			s->logical = f->logical + off;
			s->len = (uint32_t)MIN(o->max_io, f->len - off);
			s->entry = ei;
			s->di = e->di;
		}
	}
}

uint32_t entry_nsegs(const struct bfo_opts *o, const struct window *w, const struct entry *e)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < e->ext_count; k++) {
		const struct fext *f = &w->ext[e->ext_first + k];

		if (!f->zero)
			n += (uint32_t)((f->len + o->max_io - 1) / o->max_io);
	}
	return n;
}

/* The ORDER_LIST the raw engine would read, counted. */
int plan_only_stats(struct bfo_ctx *ctx, struct window *w)
{
	const struct bfo_opts *o = &ctx->o;
	uint32_t n = 0, total = 0;
	uint64_t dev_bytes = 0, gap = 0;
	struct seg *segs;

	for (uint32_t i = 0; i < w->n; i++)
		if (w->e[i].di)
			total += entry_nsegs(o, w, &w->e[i]);
	segs = malloc((total ? total : 1) * sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (uint32_t i = 0; i < w->n; i++)
		if (w->e[i].di)
			entry_segments(o, w, i, segs, &n);
	qsort(segs, n, sizeof(*segs), seg_cmp);
	stat_add(&ctx->st.regions, merge_regions(o, segs, n, 0, NULL, &dev_bytes, &gap));
	stat_add(&ctx->st.device_bytes, dev_bytes);
	stat_add(&ctx->st.gap_bytes, gap);
	free(segs);
	return 0;
}

/* Extents longer than large_extent are read on their own (already
 * efficient): nothing merges into them (merge_regions). */
void plan_regions(struct bfo_ctx *ctx, struct window *w)
{
	const struct bfo_opts *o = &ctx->o;

	for (uint32_t gi = 0; gi < w->ngroups; gi++) {
		struct group *g = &w->groups[gi];
		uint64_t dev_bytes = 0, gap = 0;

		g->seg_first = w->nsegs;
		for (uint32_t i = g->first; i < g->first + g->count; i++) {
			struct entry *e = &w->e[w->order[i]];
			uint32_t before = w->nsegs;

			if (e->route != R_RAW)
				continue;
			entry_segments(o, w, w->order[i], w->segs, &w->nsegs);
			e->pending = w->nsegs - before;
		}
		g->nsegs = w->nsegs - g->seg_first;
		qsort(w->segs + g->seg_first, g->nsegs, sizeof(struct seg), seg_cmp);
		g->reg_first = w->nregions;
		g->nregions = merge_regions(o, w->segs + g->seg_first, g->nsegs, g->seg_first,
					    w->regions + w->nregions, &dev_bytes, &gap);
		w->nregions += g->nregions;
		stat_add(&ctx->st.gap_bytes, gap);
		g->open = g->count;
	}
}

/* SPDX-License-Identifier: Apache-2.0 */
/* bfo_walk_*: the library's tree walk (walk.c) for callers of the public API. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfo.h"
#include "common.h"
#include "plan.h"
#include "sysstate.h"
#include "walk.h"

#define WALK_THREADS 8
#define DEFAULT_SORT_FILES 262144

struct bfo_walk {
	struct walk *walk;
	struct walk_file *batch;
	size_t nbatch, pos;
	bool over;
	char *held;             /* a failure taken from the walk that did not fit */
	int held_status;
	uint64_t files, failures;   /* failures: taken from the walk */
};

BFO_API int bfo_walk_start(struct bfo_walk **w, const char *root, size_t sort_files, unsigned flags)
{
	struct bfo_walk *b;
	char why[128];

	if (!w || !root || (flags & ~(BFO_WALK_NOFOLLOW | BFO_WALK_UNSORTED | BFO_WALK_LISTINGS)))
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	/* listings serve only a process that may read inodes from the device */
	if ((flags & BFO_WALK_LISTINGS) && !sysstate_may_bypass_open(why, sizeof(why)))
		flags &= ~BFO_WALK_LISTINGS;
	b->walk = walk_start(root, WALK_THREADS, sort_files ? sort_files : DEFAULT_SORT_FILES,
			     ((flags & BFO_WALK_UNSORTED) ? 0 : WALK_SORT) |
			     ((flags & BFO_WALK_NOFOLLOW) ? WALK_NOFOLLOW : 0) |
			     ((flags & BFO_WALK_LISTINGS) ? WALK_LISTS : 0));
	if (!b->walk) {
		free(b);
		return -ENOMEM;
	}
	*w = b;
	return 0;
}

BFO_API long bfo_walk_next(struct bfo_walk *w, char *buf, size_t len)
{
	size_t used = 0;

	if (!w || (!buf && len))
		return -EINVAL;
	for (;;) {
		while (w->pos < w->nbatch) {
			const char *p = w->batch[w->pos].path;
			size_t n = strlen(p) + 1;

			if (n > len - used)
				return used ? (long)used : -ENOBUFS;
			memcpy(buf + used, p, n);
			used += n;
			w->pos++;
			w->files++;
		}
		/* Hand out what is stored before blocking for the next batch. */
		if (used || w->over)
			return (long)used;
		w->nbatch = walk_next(w->walk, &w->batch);
		w->pos = 0;
		if (!w->nbatch)
			w->over = true;
	}
}

BFO_API int bfo_walk_failure(struct bfo_walk *w, char *buf, size_t len, int *status)
{
	size_t n;

	if (!w || !status || (!buf && len))
		return -EINVAL;
	if (!w->held) {
		if (!walk_failure(w->walk, &w->held, &w->held_status))
			return 0;
		w->failures++;
	}
	n = strlen(w->held) + 1;
	if (n > len)
		return -ENOBUFS;
	memcpy(buf, w->held, n);
	*status = w->held_status;
	free(w->held);
	w->held = NULL;
	return 1;
}

BFO_API int bfo_walk_stats(struct bfo_walk *w, struct bfo_walk_stats *stats)
{
	if (!w || !stats)
		return -EINVAL;
	uint64_t untaken;

	memset(stats, 0, sizeof(*stats));
	stats->files = w->files;
	walk_counts(w->walk, &stats->skipped, &untaken);
	stats->failures = w->failures + untaken;
	return 0;
}

BFO_API void bfo_walk_destroy(struct bfo_walk *w)
{
	if (!w)
		return;
	walk_end(w->walk, NULL, NULL);
	free(w->held);
	free(w);
}

BFO_API int bfo_walk_share(struct bfo_walk *w, struct bfo_ctx *ctx)
{
	if (!w || !ctx)
		return -EINVAL;
	return (int)dirhint_adopt(ctx, walk_take_lists(w->walk));
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_read_tree: files and directories read as one batch in one call.  It
 * is the loop every caller of bfo_walk_* wrote around bfo_read_submit_packed
 * (walk, share the listings, submit until the queue is full, consume,
 * submit the rest), so it stands on the public API only: the batch, its
 * statuses, order and bounds are exactly those of bfo_read_wait.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfo.h"
#include "common.h"

#define TREE_WAIT_MAX 64
#define TREE_BUF_START (64u << 10)
#define TREE_BUF_MAX (16u << 20)
#define TREE_FLAGS (BFO_WALK_NOFOLLOW | BFO_WALK_UNSORTED)

struct tree {
	struct bfo_ctx *ctx;
	unsigned flags;
	bfo_read_tree_fn *fn;
	void *arg;
	long failed;            /* entries handed to fn with status < 0 */
	int stop;               /* fn's value that stopped the batch, or -ECANCELED */
	bool ended;             /* the batch ended: all delivered, or stopped */
	char *buf;              /* the walk's paths, laid end to end */
	size_t cap;
	struct bfo_file files[TREE_WAIT_MAX];
};

/* One entry to fn; a nonzero return stops the batch (tree_end cancels it). */
static void tree_deliver(struct tree *t, const struct bfo_file *f)
{
	int r;

	if (f->status < 0 && (f->flags & BFO_FILE_LAST))
		t->failed++;
	if (t->stop)
		return;
	r = t->fn(t->arg, f);
	if (r)
		t->stop = r < 0 ? r : -ECANCELED;
}

/* Results of one wait, each to fn and then released.  Returns 0, or the
 * wait's error (0 from the wait before the batch was finished means it
 * was stopped: ended is set). */
static int tree_pump(struct tree *t, int timeout_ms)
{
	int k = bfo_read_wait(t->ctx, t->files, TREE_WAIT_MAX, timeout_ms);

	if (k == 0) {
		t->ended = true;
		return 0;
	}
	if (k == -EAGAIN || k == -ETIME)
		return 0;
	if (k < 0)
		return k;
	for (int i = 0; i < k; i++)
		tree_deliver(t, &t->files[i]);
	bfo_read_release(t->ctx, t->files, (unsigned)k);
	return 0;
}

/* Packed paths into the batch, consuming results while the queue is full
 * (its two windows are what bounds memory, whatever the tree's size). */
static int tree_submit(struct tree *t, const char *buf, size_t len)
{
	while (len && !t->stop && !t->ended) {
		long r = bfo_read_submit_packed(t->ctx, buf, len);

		if (r == -ECANCELED) {   /* stopped on an error: drained, then over */
			while (!t->ended) {
				int e = tree_pump(t, -1);

				if (e)
					return e;
			}
			return 0;
		}
		if (r < 0)
			return (int)r;
		buf += r;
		len -= (size_t)r;
		if (len) {
			int e = tree_pump(t, -1);

			if (e)
				return e;
		}
	}
	return 0;
}

/* The directories the walk could not read, as entries of their own:
 * index UINT64_MAX (not a path of the batch), mode S_IFDIR, no data. */
static void tree_walk_failures(struct tree *t, struct bfo_walk *w)
{
	int status;

	while (bfo_walk_failure(w, t->buf, t->cap, &status) == 1) {
		struct bfo_file f = { .index = UINT64_MAX, .path = t->buf, .status = status,
				      .mode = S_IFDIR, .engine = BFO_ENGINE_NONE,
				      .flags = BFO_FILE_LAST };

		tree_deliver(t, &f);
	}
}

static int tree_walk(struct tree *t, const char *root)
{
	struct bfo_walk *w;
	struct bfo_walk_stats st;
	int e = bfo_walk_start(&w, root, 0, (t->flags & TREE_FLAGS) | BFO_WALK_LISTINGS);

	if (e)
		return e;
	while (!e && !t->stop && !t->ended) {
		long n = bfo_walk_next(w, t->buf, t->cap);

		if (n == -ENOBUFS && t->cap < TREE_BUF_MAX) {
			char *b = realloc(t->buf, t->cap * 2);

			if (!b) {
				e = -ENOMEM;
				break;
			}
			t->buf = b;
			t->cap *= 2;
			continue;
		}
		if (n <= 0) {
			e = (int)n;
			break;
		}
		bfo_walk_share(w, t->ctx);
		e = tree_submit(t, t->buf, (size_t)n);
		tree_walk_failures(t, w);
	}
	tree_walk_failures(t, w);
	/* Past the 1,024 kept, failures are only counted: they still count. */
	if (bfo_walk_stats(w, &st) == 0 && st.failures > 1024)
		t->failed += (long)(st.failures - 1024);
	bfo_walk_destroy(w);
	return e;
}

/* One root: a directory (its symbolic link followed, as find -H does) is
 * walked; anything else goes in as a path, for the batch's own status. */
static int tree_root(struct tree *t, const char *p)
{
	struct stat st;
	size_t len = strlen(p);

	if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
		return tree_walk(t, p);
	if (len + 1 > t->cap)
		return -ENAMETOOLONG;
	memcpy(t->buf, p, len + 1);
	return tree_submit(t, t->buf, len + 1);
}

/* The batch after an error or a stop: cancelled, its entries dropped. */
static void tree_cancel(struct tree *t)
{
	bfo_read_cancel(t->ctx);
	int k;

	while ((k = bfo_read_wait(t->ctx, t->files, TREE_WAIT_MAX, -1)) > 0)
		bfo_read_release(t->ctx, t->files, (unsigned)k);
}

BFO_API long bfo_read_tree(struct bfo_ctx *ctx, const char *const *paths, unsigned n,
			   unsigned flags, bfo_read_tree_fn *fn, void *arg)
{
	struct tree *t;
	struct bfo_stats st;
	int e = 0;
	long ret;

	if (!ctx || (n && !paths) || !fn || (flags & ~TREE_FLAGS))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (!paths[i])
			return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->buf = malloc(TREE_BUF_START))) {
		free(t);
		return -ENOMEM;
	}
	*t = (struct tree){ .ctx = ctx, .flags = flags, .fn = fn, .arg = arg, .buf = t->buf,
			    .cap = TREE_BUF_START };
	e = bfo_read_submit(ctx, NULL, 0);   /* the batch begins, even with no path */
	for (unsigned i = 0; !e && i < n && !t->stop && !t->ended; i++)
		e = tree_root(t, paths[i]);
	if (!e && !t->stop && !t->ended)
		e = bfo_read_finish(ctx);
	while (!e && !t->stop && !t->ended)
		e = tree_pump(t, -1);
	if (e || t->stop)
		tree_cancel(t);
	ret = e ? e : t->stop ? t->stop : t->failed;
	/* Ended with paths undelivered and no failure to show for it: a
	 * bfo_read_cancel() from another thread. */
	if (ret == 0 && bfo_read_stats(ctx, &st) == 0 && st.files_ok + st.files_failed < st.files)
		ret = -ECANCELED;
	free(t->buf);
	free(t);
	return ret;
}

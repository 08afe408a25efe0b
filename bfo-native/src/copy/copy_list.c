/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A copier's file list (sync.h): its sources scanned at batch speed
 * (scan.h) into batches of entries with their metadata, hard links
 * grouped; and a batch whose wants are known, applied: the files wanted
 * go to the read engine, the rest straight into the copier's batch.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "copy.h"
#include "filter.h"
#include "scan.h"
#include "sync.h"

#define LIST_BATCH 4096u            /* entries from which a scan batch goes as a list batch */

/* ------------------------------------------------------------ list batches */

struct lbatch *lbatch_new(void)
{
	return calloc(1, sizeof(struct lbatch));
}

/* s copied into the batch's strings: its offset, or SIZE_MAX. */
static size_t str_put(struct lbatch *b, const char *s)
{
	size_t len = strlen(s) + 1, at;

	if (b->slen + len > b->scap) {
		size_t c = MAX(b->scap * 2, b->slen + len + 65536);
		char *p = realloc(b->strings, c);

		if (!p)
			return SIZE_MAX;
		b->strings = p;
		b->scap = c;
	}
	at = b->slen;
	memcpy(b->strings + at, s, len);
	b->slen += len;
	return at;
}

struct lent *lbatch_add(struct lbatch *b, const char *rel, const char *link_rel, char *path,
			char *target)
{
	size_t r, l = SIZE_MAX;
	struct lent *e;

	if (b->n == b->cap) {
		size_t c = b->cap ? b->cap * 2 : 1024;
		struct lent *n = realloc(b->e, c * sizeof(*n));

		if (!n)
			goto fail;
		b->e = n;
		b->cap = c;
	}
	r = str_put(b, rel);
	if (r == SIZE_MAX || (link_rel && (l = str_put(b, link_rel)) == SIZE_MAX))
		goto fail;
	e = &b->e[b->n++];
	/* rel and link_rel are offsets until the batch is complete (its
	 * strings may move): lbatch_strings makes them pointers */
	*e = (struct lent){ .path = path, .target = target, .rel = (const char *)(uintptr_t)r,
			    .link_rel = link_rel ? (const char *)(uintptr_t)(l + 1) : NULL };
	return e;
fail:
	free(path);
	free(target);
	return NULL;
}

void lbatch_strings(struct lbatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct lent *e = &b->e[i];

		e->rel = b->strings + (uintptr_t)e->rel;
		if (e->link_rel)
			e->link_rel = b->strings + ((uintptr_t)e->link_rel - 1);
	}
}

void lbatch_free(struct lbatch *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		free(b->e[i].path);
		free(b->e[i].target);
	}
	free(b->e);
	free(b->strings);
	free(b);
}

/* ------------------------------------------------------------ hard links */

/* The first member of a hard link group the list met: later members are
 * listed as links to it. */
struct group {
	uint64_t dev, ino;
	uint16_t src;
	char *rel;                  /* NULL: a free slot */
};

struct groups {
	struct group *t;
	size_t size, n;             /* size a power of two, at least 2n */
};

static size_t group_slot(const struct groups *g, uint64_t dev, uint64_t ino)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ull) ^ dev;

	return (size_t)(h ^ (h >> 29)) & (g->size - 1);
}

static int groups_grow(struct groups *g)
{
	struct groups n = { .size = g->size ? g->size * 2 : 1024 };

	n.t = calloc(n.size, sizeof(*n.t));
	if (!n.t)
		return -ENOMEM;
	for (size_t i = 0; i < g->size; i++) {
		size_t h;

		if (!g->t[i].rel)
			continue;
		for (h = group_slot(&n, g->t[i].dev, g->t[i].ino); n.t[h].rel; h = (h + 1) & (n.size - 1))
			;
		n.t[h] = g->t[i];
	}
	n.n = g->n;
	free(g->t);
	*g = n;
	return 0;
}

/* The group of (dev, ino): its first member, or NULL after making e (of
 * source src, at rel) the first. */
static const struct group *group_of(struct groups *g, uint64_t dev, uint64_t ino, uint16_t src,
				    const char *rel)
{
	size_t h;

	if (2 * (g->n + 1) > g->size && groups_grow(g))
		return NULL;
	for (h = group_slot(g, dev, ino); g->t[h].rel; h = (h + 1) & (g->size - 1))
		if (g->t[h].dev == dev && g->t[h].ino == ino)
			return &g->t[h];
	if ((g->t[h].rel = strdup(rel))) {
		g->t[h].dev = dev;
		g->t[h].ino = ino;
		g->t[h].src = src;
		g->n++;
	}
	return NULL;
}

void copy_list_free(struct bfo_copier *c)
{
	struct groups *g = c->groups;

	for (size_t i = 0; g && i < g->size; i++)
		free(g->t[i].rel);
	if (g)
		free(g->t);
	free(g);
	c->groups = NULL;
}

/* ------------------------------------------------------------ listing */

/* What the scan of a source leaves out: a journal (filter_journal), and
 * what the filter excludes. */
struct skipper {
	const struct filter *f;
	const char *name;           /* the source's name: filter names are name/rel */
};

static bool skip(void *arg, const char *rel, bool dir)
{
	const struct skipper *k = arg;
	return filter_source_skips(k->f, k->name, rel, dir);
}

/* One entry into b: e's path and target are taken over.  One another
 * source gives instead (copy_loses) is left out. */
static int list_add(struct bfo_copier *c, struct lbatch *b, uint16_t srcno, const char *rel,
		    char *path, const struct stat *st, char *target, uint64_t hash)
{
	struct lent *e;

	if (copy_loses(c, srcno, rel, S_ISDIR(st->st_mode))) {
		free(path);
		free(target);
		return 0;
	}
	if (!(e = lbatch_add(b, rel, NULL, path, target)))
		return -ENOMEM;
	e->src = srcno;
	e->st = *st;
	e->hash = hash;
	if (c->archive && S_ISDIR(st->st_mode))
		e->xhash = sync_xattrs_hash(path);
	return 0;
}

static int by_rel(const void *a, const void *b)
{
	return strcmp(((const struct lent *)a)->rel, ((const struct lent *)b)->rel);
}

/* b, complete, to emit; a new batch in its place.  Its entries go in the
 * order of their names (a directory's together: on the wire each name
 * shares most of the one before it), and hard link groups are made in that
 * order, so that a group's first member comes before its others. */
static struct lbatch *pass(struct bfo_copier *c, struct lbatch *b,
			   void (*emit)(struct bfo_copier *c, struct lbatch *b))
{
	lbatch_strings(b);
	qsort(b->e, b->n, sizeof(*b->e), by_rel);
	for (size_t i = 0; i < b->n; i++) {
		struct lent *e = &b->e[i];
		const struct group *g = NULL;

		if (c->archive && S_ISREG(e->st.st_mode) && e->st.st_nlink > 1) {
			if (!c->groups && !(c->groups = calloc(1, sizeof(*c->groups)))) {
				c->oom = true;
				break;
			}
			g = group_of(c->groups, e->st.st_dev, e->st.st_ino, e->src, e->rel);
		}
		/* (the group's first name stays in the group table for the run) */
		if (g) {
			e->link_rel = g->rel;
			e->link_src = g->src;
		} else if (S_ISREG(e->st.st_mode)) {
			c->list_tree_bytes += (uint64_t)e->st.st_size;
		}
	}
	b->seq = c->list_seq++;
	emit(c, b);
	return lbatch_new();
}

int copy_list_source(struct bfo_copier *c, uint16_t srcno, const char *src, const struct stat *st,
		     void (*emit)(struct bfo_copier *c, struct lbatch *b))
{
	struct skipper k = { c->filter, NULL };
	struct lbatch *b = lbatch_new();
	struct scan *s = NULL;
	struct scan_ent *e;
	long n = 0;
	int ret = b ? 0 : -ENOMEM, status;
	char *p = strdup(src), *name = copy_src_name(src), *fp;
	unsigned flags = c->flags & BFO_COPY_CHECKSUM ? SCAN_HASH : 0;

	if (!p || !name) {
		free(p);
		lbatch_free(b);
		free(name);
		return -ENOMEM;
	}
	/* the source itself (a file source: all of it) */
	if (S_ISLNK(st->st_mode)) {
		char t[PATH_MAX];
		ssize_t tl = readlink(src, t, sizeof(t) - 1);

		if (tl >= 0)
			t[tl] = '\0';
		ret = tl < 0 ? -errno : list_add(c, b, srcno, "", p, st, strdup(t), 0);
	} else if (!ret) {
		ret = list_add(c, b, srcno, "", p, st, NULL, 0);
	}
	if (!ret && S_ISDIR(st->st_mode)) {
		k.name = name;
		ret = scan_start(&s, c->srcs[srcno].root, &c->ro, flags, skip, &k);
	}
	while (s && !ret && !atomic_load(&c->cancel) && (n = scan_next(s, &e)) > 0) {
		for (long i = 0; i < n && !ret; i++) {
			if (e[i].status) {
				/* vanished since listed: not in the list (not deleted either:
				 * the run has errors then) */
				copy_report(c, e[i].path, e[i].status);
				c->list_errors = true;
				continue;
			}
			ret = list_add(c, b, srcno, e[i].rel, e[i].path, &e[i].st, e[i].target, e[i].hash);
			e[i].path = e[i].target = NULL;         /* taken over */
		}
		/* a scan batch (a walk batch: up to 16,384 entries) is a list batch */
		if (!ret && b->n >= LIST_BATCH && !(b = pass(c, b, emit)))
			ret = -ENOMEM;
		while (scan_failure(s, &fp, &status)) {
			copy_report(c, fp, status);
			c->list_errors = true;
			free(fp);
		}
	}
	if (s) {
		struct bfo_stats rst;

		scan_end(s, &rst);
		c->list_rawmeta += rst.files_rawmeta;
	}
	if (!ret && n < 0)
		ret = (int)n;
	if (!ret && b && b->n)
		b = pass(c, b, emit);
	lbatch_free(b);
	free(name);
	if (ret) {
		copy_report(c, src, ret);
		c->list_errors = true;
	}
	return ret;
}

/* ------------------------------------------------------------ applying */

void copy_list_apply(struct bfo_copier *c, const struct lbatch *b)
{
	for (size_t i = 0; i < b->n && !atomic_load(&c->cancel); i++) {
		const struct lent *e = &b->e[i];
		uint8_t action = e->want & WANT_ACTION;
		char *dest;

		if (action == WANT_SKIP)
			continue;
		dest = copy_join(c->srcs[e->src].prefix, e->rel);
		if (!dest) {
			c->oom = true;
			return;
		}
		if (!*dest) {
			free(dest);              /* the root: its metadata comes at the end */
			continue;
		}
		if (S_ISREG(e->st.st_mode) && action == WANT_LINK) {
			struct bfo_wentry *w = copy_add(c);

			if (w && (w->path = copy_own(c, dest)) &&
			    (w->data = copy_own(c, copy_join(c->srcs[e->link_src].prefix, e->link_rel)))) {
				w->type = BFO_WTYPE_HARDLINK;
				w->flags = sync_wflags(e->want, false);
			} else if (w) {
				c->n--;
			}
			copy_maybe_flush(c);
			continue;
		}
		if (S_ISREG(e->st.st_mode))
			copy_submit_file(c, e->path, e->src, e->want);
		else
			copy_add_other(c, e->path, dest, &e->st, e->target, e->src, e->want);
		free(dest);
	}
}

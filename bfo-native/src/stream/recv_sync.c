/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receiver's part of a sync (recv.h): an index of what the
 * destination has (copy_sync.c builds it while the stream comes); with a
 * list (version 2, a back channel), each LIST frame's records decided and
 * answered with a WANT frame; without one, each BATCH record decided as
 * it comes; at the end --delete, and to a waiting sender ITEMS and RESULT.
 * The list is as hostile as the stream: its records are bounded by the
 * decoder (wire_list.c), and are only compared, never acted on: what is
 * deleted comes from the receiver's own index.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common.h"
#include "copy.h"
#include "dindex.h"
#include "recv.h"
#include "sync.h"

#define ITEMS_FLUSH (64u << 10)

static mode_t type_of(uint32_t wtype)
{
	static const mode_t t[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFREG, S_IFIFO, S_IFCHR, S_IFBLK,
				    S_IFSOCK };

	return wtype < sizeof(t) / sizeof(t[0]) ? t[wtype] : 0;
}

/* ITEMS: what was deleted, for a sender that prints it. */
static void items_flush(struct rx *x)
{
	if (x->nitems && x->back_on)
		wire_out_frame(&x->back, WIRE_ITEMS, (uint32_t)x->nitems, x->items, x->litems);
	x->nitems = x->litems = 0;
}

static void item(void *arg, int what, const char *path)
{
	struct rx *x = arg;
	size_t len = strlen(path);

	if (what != '-' || len > UINT16_MAX)
		return;                 /* (the sender names what it sends itself) */
	if (x->litems + 3 + len > x->capitems) {
		size_t cap = MAX(x->capitems * 2, x->litems + 3 + len + 4096);
		uint8_t *p = realloc(x->items, cap);

		if (!p)
			return;
		x->items = p;
		x->capitems = cap;
	}
	x->items[x->litems] = '-';
	x->items[x->litems + 1] = (uint8_t)len;
	x->items[x->litems + 2] = (uint8_t)(len >> 8);
	memcpy(x->items + x->litems + 3, path, len);
	x->litems += 3 + len;
	if (++x->nitems == WIRE_ENTRIES_MAX || x->litems >= ITEMS_FLUSH)
		items_flush(x);
}

int rx_sync_start(struct rx *x, bool root_existed)
{
	struct bfo_copier *c = x->c;
	uint8_t hello[WIRE_HELLO_LEN] = { 0 };
	int ret = 0;

	(void)root_existed;
	if ((x->flags & WIRE_F_LIST) && x->reply_fd < 0) {
		rx_stream_error(x, "the sender waits for this side's answers: run bfo recv --server with "
			     "its standard output back to the sender (bfo cp does)", -EBADMSG);
		return -EBADMSG;
	}
	if (c->listing && c->nsrcs && (ret = copy_sync_start(c))) {
		copy_report(c, "the destination's index", ret);
		return ret;
	}
	if (!(x->flags & WIRE_F_LIST)) {
		x->compare = c->listing && c->nsrcs;
		return 0;
	}
	x->lists = c->listing && c->nsrcs;
	/* what the receiver deletes goes back to the sender, who names it */
	if ((x->flags & WIRE_F_ITEMS) && !c->item) {
		c->item = item;
		c->item_arg = x;
	}
	hello[0] = x->lists ? WIRE_H_LIST : 0;
	x->back.cancel = &c->cancel;    /* a cancel cuts an answer short */
	x->back.cancelfd = c->wakefd;
	if ((ret = wire_out_start(&x->back, x->reply_fd, 0, 0, NULL, 0)) ||
	    (ret = wire_out_frame(&x->back, WIRE_HELLO, 0, hello, sizeof(hello)))) {
		if (ret != -ECANCELED)
			rx_stream_error(x, "answering the sender failed", ret);
		return ret;
	}
	x->back_on = true;
	return 0;
}

/* A record's entry for sync_decide; its strings NUL-terminated in buf. */
static void lent_of(struct lent *e, uint16_t src, uint32_t type, const char *path, uint32_t mode,
		    uint32_t uid, uint32_t gid)
{
	*e = (struct lent){ .rel = path, .src = src };
	e->st.st_mode = type_of(type) | mode;
	e->st.st_uid = uid;
	e->st.st_gid = gid;
}

/* The index's memory for a frame's records brought in before they are
 * decided one by one (a first pass of the decoder; what it finds wrong the
 * second pass reports). */
static void prefetch_list(struct rx *x, struct slot *s)
{
	struct sync *y = &x->c->sync;
	struct wire_lent w;
	const char *why;
	char buf[BFO_WPATH_MAX];
	uint32_t n = 0;

	if (!y->ix)
		return;
	if (s->f.count > x->capkeys) {
		uint64_t *k = realloc(x->keys, s->f.count * sizeof(*k));

		if (!k)
			return;
		x->keys = k;
		x->capkeys = s->f.count;
	}
	if (wire_list_begin(x->ldec, s->buf + WIRE_HEAD_LEN, &s->f, x->nsources,
			    x->flags & WIRE_F_CHECKSUM, &why))
		return;
	while (n < s->f.count && !wire_list_next(x->ldec, &w, &why))
		x->keys[n++] = dindex_key(sync_dest(y, x->ldec->src, w.path, buf, sizeof(buf)));
	dindex_prefetch(y->ix, x->keys, n);
}

int rx_on_list(struct rx *x, struct slot *s)
{
	struct bfo_copier *c = x->c;
	struct wire_lent w;
	const char *why;
	char target[WIRE_PATH_MAX + 1];
	int ret;

	if (!x->ldec && !(x->ldec = malloc(sizeof(*x->ldec))))
		return -ENOMEM;
	if (12 * (size_t)s->f.count > x->capwants) {
		uint8_t *p = realloc(x->wants, 12 * (size_t)s->f.count);

		if (!p)
			return -ENOMEM;
		x->wants = p;
		x->capwants = 12 * (size_t)s->f.count;
	}
	copy_sync_index(c);
	prefetch_list(x, s);
	ret = wire_list_begin(x->ldec, s->buf + WIRE_HEAD_LEN, &s->f, x->nsources,
			      x->flags & WIRE_F_CHECKSUM, &why);
	for (uint32_t i = 0; !ret && i < s->f.count; i++) {
		struct lent e;

		if ((ret = wire_list_next(x->ldec, &w, &why)))
			break;
		if (w.path_len && !x->src[x->ldec->src].dir) {
			why = "a list record puts a path below a source that is not a directory";
			ret = -EBADMSG;
			break;
		}
		lent_of(&e, x->ldec->src, w.type, w.path, w.mode, w.uid, w.gid);
		e.st.st_mtim = (struct timespec){ w.mtime_sec, w.mtime_nsec };
		e.st.st_atim = (struct timespec){ w.atime_sec, w.atime_nsec };
		e.st.st_size = (off_t)w.size;
		e.st.st_rdev = makedev((unsigned)(w.rdev >> 32), (unsigned)w.rdev);
		e.hash = w.hash;
		e.xhash = w.xhash;
		if (w.target) {
			memcpy(target, w.target, w.target_len);
			target[w.target_len] = '\0';
			if (w.type == BFO_WTYPE_HARDLINK) {
				e.link_rel = target;
				e.link_src = w.link_src;
			} else {
				e.target = target;
			}
		}
		/* (what the writer replaces is the index's to say: rx_replace_want) */
		x->wants[i] = sync_decide(&c->sync, &e) & (uint8_t)~WANT_TREE;
		if (x->wants[i] == WANT_NONE)
			x->wants[i] = WANT_SKIP;
		else if (x->wants[i] == WANT_SKIP && w.type == BFO_WTYPE_FILE) {
			pthread_mutex_lock(&c->lock);
			c->st.skipped++;
			pthread_mutex_unlock(&c->lock);
		}
		if (x->wants[i] != WANT_SKIP && (c->flags & BFO_COPY_DRY_RUN) && c->item != item &&
		    c->item) {
			char buf[BFO_WPATH_MAX];
			const char *dest = sync_dest(&c->sync, e.src, e.rel, buf, sizeof(buf));

			if (*dest)
				c->item(c->item_arg, '>', dest);
		}
	}
	if (ret) {
		rx_stream_error(x, why, ret);
		return ret;
	}
	pthread_mutex_lock(&c->lock);
	c->st.tree_bytes = c->sync.tree_bytes;
	c->st.listed_files = c->sync.tree_files;
	pthread_mutex_unlock(&c->lock);
	/* (the runs go right after the wants, in the same buffer) */
	size_t len = wire_wants_put(x->wants + s->f.count, x->wants, s->f.count);

	ret = wire_out_frame(&x->back, WIRE_WANT, s->f.count, x->wants + s->f.count, len);
	if (ret && ret != -ECANCELED)
		rx_stream_error(x, "answering the sender failed", ret);
	return ret;
}

uint8_t rx_decide(struct rx *x, const struct wire_entry *w, const char *dest)
{
	struct bfo_copier *c = x->c;
	char target[WIRE_PATH_MAX + 1];
	struct lent e;
	uint8_t want;

	(void)dest;
	if (!x->compare)
		return WANT_WRITE;
	copy_sync_index(c);
	lent_of(&e, w->src, w->type, "", w->mode, w->uid, w->gid);
	/* (the record's path is not NUL-terminated: copied) */
	char *rel = strndup(w->path, w->path_len);

	if (!rel)
		return WANT_WRITE;
	e.rel = rel;
	e.st.st_mtim = (struct timespec){ w->mtime_sec, w->mtime_nsec };
	e.st.st_atim = (struct timespec){ w->atime_sec, w->atime_nsec };
	e.st.st_size = (off_t)w->size;
	e.st.st_rdev = makedev((unsigned)(w->rdev >> 32), (unsigned)w->rdev);
	if (w->type == BFO_WTYPE_DIR && w->xattrs_len)
		e.xhash = sync_xattrs_hash_packed(w->xattrs, w->xattrs_len);
	/* a whole file's hash is its content's; one in pieces is copied again */
	e.hash = w->type == BFO_WTYPE_FILE && w->length == w->size ? w->hash : 0;
	if (w->target_len) {
		memcpy(target, w->target, w->target_len);
		target[w->target_len] = '\0';
		if (w->type == BFO_WTYPE_HARDLINK) {
			e.link_rel = target;
			e.link_src = w->target_src;
		} else {
			e.target = target;
		}
	}
	want = sync_decide(&c->sync, &e);
	free(rel);
	if (want == WANT_NONE)
		return WANT_SKIP;
	if (want == WANT_SKIP && w->type == BFO_WTYPE_FILE) {
		pthread_mutex_lock(&c->lock);
		c->st.skipped++;
		pthread_mutex_unlock(&c->lock);
	}
	/* (a later member of a group comes as a link: written as one) */
	if ((want & WANT_ACTION) == WANT_LINK)
		want = WANT_WRITE | (want & (WANT_REPLACE | WANT_TREE));
	return want;
}

uint8_t rx_replace_want(struct rx *x, const char *dest)
{
	struct dindex *ix = x->lists || x->compare ? copy_sync_index(x->c) : NULL;
	struct dent *d = ix ? dindex_get(ix, dest) : NULL;

	if (d && d->tree)
		return WANT_REPLACE | WANT_TREE;
	return d && d->type != DT_DIR ? WANT_REPLACE : 0;
}

void rx_sync_end(struct rx *x)
{
	copy_sync_end(x->c);
}

void rx_sync_result(struct rx *x)
{
	struct bfo_copier *c = x->c;
	uint8_t r[WIRE_RESULT_LEN];
	struct bfo_copy_stats st;

	if (!x->back_on)
		return;
	items_flush(x);
	bfo_copier_stats(c, &st);
	wire_put64(r, st.files);
	wire_put64(r + 8, st.skipped);
	wire_put64(r + 16, st.deleted);
	wire_put64(r + 24, st.errors);
	wire_out_frame(&x->back, WIRE_RESULT, 0, r, sizeof(r));
}

void rx_sync_free(struct rx *x)
{
	if (x->c->item == item)
		x->c->item = NULL;
	wire_out_free(&x->back);
	free(x->items);
	free(x->wants);
	free(x->keys);
	free(x->ldec);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receiving end of the stream (bfo_copier_recv): a reader thread takes
 * frames off the descriptor and parses them (wire.c: every field bounded,
 * every file's hash checked) into one of two buffers, while this thread
 * writes the previous frame as one batch of the copier's writer.  The
 * stream is hostile: its paths are mapped below the destination by cp's
 * rules and handed to the writer, which resolves them without following
 * symbolic links; a frame that fails to parse ends the stream and writes
 * nothing of itself; files whose pieces stop coming are dropped by the
 * writer at close.  Memory: two frames, each at most the wire's limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "copy.h"
#include "write_meta.h"
#include "recv.h"
#include "wire.h"
#include "writer.h"

/* ------------------------------------------------------------ writing */

/* The sources: the writer's root and each source's place under it. */
static int on_sources(struct rx *x, struct slot *s, const char *dst)
{
	struct bfo_copier *c = x->c;
	uint8_t *meta = s->buf + WIRE_HEAD_LEN;
	char *single = NULL;
	bool dst_is_dir, root_existed;
	int ret, first;

	x->src = calloc(s->f.count ? s->f.count : 1, sizeof(*x->src));
	x->prefix = calloc(s->f.count ? s->f.count : 1, sizeof(*x->prefix));
	if (!x->src || !x->prefix)
		return -ENOMEM;
	if ((ret = wire_sources_parse(meta, &s->f, x->src, &s->why))) {
		rx_stream_error(x, s->why, ret);
		return ret;
	}
	if (!s->f.count)
		return rx_sync_start(x, false); /* nothing to copy: no destination to open */
	first = !x->src[0].dir ? COPY_SRC_OTHER : x->src[0].name_len ? COPY_SRC_DIR : COPY_SRC_CONTENTS;
	ret = copy_dest(dst, s->f.count, first, c->flags & BFO_COPY_INTO, &dst_is_dir, &root_existed,
			&c->root, &single);
	if (!ret && !(c->srcs = calloc(s->f.count, sizeof(*c->srcs))))
		ret = -ENOMEM;
	for (uint32_t i = 0; !ret && i < s->f.count; i++) {
		const struct wire_source *w = &x->src[i];

		x->prefix[i] = dst_is_dir ? strndup(w->name, w->name_len) :
			       strdup(single ? single : "");
		if (!x->prefix[i])
			ret = -ENOMEM;
	}
	free(single);
	for (uint32_t i = 0; !ret && i < s->f.count; i++) {
		/* each copy's place and name (filter names are name/rel), for
		 * the comparisons; the frame's buffer is reused */
		c->srcs[i].prefix = x->prefix[i];
		c->srcs[i].file = !x->src[i].dir;
		if (!(c->srcs[i].name = strndup(x->src[i].name, x->src[i].name_len)))
			ret = -ENOMEM;
		c->nsrcs = i + 1;
	}
	for (uint32_t i = 0; i < s->f.count; i++)
		x->src[i].name = NULL;
	c->listing = ((c->flags & (BFO_COPY_UPDATE | BFO_COPY_DELETE)) && root_existed) ||
		     (c->flags & BFO_COPY_DRY_RUN);
	if (!ret)
		ret = copy_dest_open(c, root_existed);
	if (!ret)
		ret = rx_sync_start(x, root_existed);
	return ret;
}

/* Room for the batch's strings: every path and target with its prefix. */
static int names_reserve(struct rx *x, const struct slot *s)
{
	size_t longest = 0, need;

	for (uint32_t i = 0; i < x->nsources; i++)
		longest = MAX(longest, strlen(x->prefix[i]));
	need = s->f.meta_len + 2 * (size_t)s->f.count * (longest + 2);
	if (need > x->capnames) {
		char *p = realloc(x->names, need);

		if (!p)
			return -ENOMEM;
		x->names = p;
		x->capnames = need;
	}
	return 0;
}

/* PREFIX/REL of source src at *at in the names buffer; NULL when a
 * source that is not a directory is given a path below it. */
static const char *dest(struct rx *x, size_t *at, uint16_t src, const char *rel, uint32_t len)
{
	const char *pre = x->prefix[src];
	size_t pl = strlen(pre);
	char *d = x->names + *at;

	if (len && !x->src[src].dir)
		return NULL;
	memcpy(d, pre, pl);
	if (pl && len)
		d[pl++] = '/';
	memcpy(d + pl, rel, len);
	d[pl + len] = '\0';
	*at += pl + len + 1;
	return d;
}

static struct pieced *pieced_find(struct rx *x, const char *path)
{
	for (size_t i = 0; i < x->npieced; i++)
		if (!strcmp(x->pieced[i].path, path))
			return &x->pieced[i];
	return NULL;
}

/* A first piece: false when there are too many (the stream then ends). */
static bool pieced_add(struct rx *x, const char *path, bool dropped)
{
	char *d;

	if (x->npieced == WIRE_PIECED_MAX || !(d = strdup(path))) {
		x->too_many = true;
		return false;
	}
	x->pieced[x->npieced++] = (struct pieced){ d, dropped };
	return true;
}

static void pieced_end(struct rx *x, struct pieced *p)
{
	free(p->path);
	*p = x->pieced[--x->npieced];
}

/* A later piece (offset > 0) of a file: false when it is dropped. */
static bool later_piece(struct rx *x, const struct wire_entry *w, const char *path)
{
	struct pieced *p = pieced_find(x, path);
	bool dropped = p && p->dropped;

	if (p && !(w->flags & WIRE_E_MORE))
		pieced_end(x, p);          /* its last piece, or an abort */
	return !dropped;
}

/* A file record: false when it is not to be written (skipped, dropped,
 * or failed its hash). */
static bool file_entry(struct rx *x, const struct wire_entry *w, struct bfo_wentry *e)
{
	bool more = w->flags & WIRE_E_MORE, keep = true;
	uint32_t replace = 0;

	if (w->offset && !later_piece(x, w, e->path))
		return false;
	if (!w->hash_ok) {
		copy_report(x->c, e->path, -EBADMSG);
		keep = false;
	} else if (!(w->flags & WIRE_E_ABORT) && (!w->offset || !more)) {
		/* The first piece decides (without a list); the last one, which
		 * takes the name, replaces what is there. */
		uint8_t want = !x->lists && !w->offset ? rx_decide(x, w, e->path) :
			       WANT_WRITE | rx_replace_want(x, e->path);

		keep = want != WANT_SKIP;
		replace = sync_wflags(want, false);
	}
	if (!w->offset && more && !pieced_add(x, e->path, !keep))
		return false;
	if (!keep && w->offset) {
		/* A bad piece of a file whose earlier pieces were written:
		 * the file is dropped; its later pieces go nowhere. */
		struct pieced *p = more ? pieced_find(x, e->path) : NULL;

		if (p)
			p->dropped = true;
		e->flags = BFO_WENTRY_ABORT;
		return true;
	}
	if (!keep)
		return false;
	e->data = w->data;
	e->length = w->length;
	e->offset = w->offset;
	e->flags |= (more ? BFO_WENTRY_MORE : 0) | (w->flags & WIRE_E_ABORT ? BFO_WENTRY_ABORT : 0) |
		    replace;
	return true;
}

/* The destination root stands for a source directory: its metadata is
 * applied at the end, to the directory the writer opened. */
static void keep_root_meta(struct rx *x, const struct wire_entry *w, const struct bfo_wentry *e)
{
	free(x->root_xattrs);
	x->root_xattrs = NULL;
	x->root_meta = *e;
	x->root_meta.path = NULL;
	x->root_meta.xattrs = NULL;
	x->root_meta.xattrs_len = 0;
	if (e->xattrs_len && (x->root_xattrs = malloc(e->xattrs_len))) {
		memcpy(x->root_xattrs, e->xattrs, e->xattrs_len);
		x->root_meta.xattrs = x->root_xattrs;
		x->root_meta.xattrs_len = e->xattrs_len;
	}
	x->have_root_meta = w->type == BFO_WTYPE_DIR;
}

/* Record w as writer entry e; false when it is not to be written. */
static bool map_entry(struct rx *x, const struct wire_entry *w, struct bfo_wentry *e, size_t *at)
{
	struct bfo_copier *c = x->c;

	*e = (struct bfo_wentry){ .type = w->type, .rdev = w->rdev };
	e->path = dest(x, at, w->src, w->path, w->path_len);
	if (!e->path) {
		rx_stream_error(x, "a record puts a path below a source that is not a directory", -EINVAL);
		return false;
	}
	copy_meta(&c->who, e, w->mode, w->uid, w->gid, w->atime_sec, w->atime_nsec, w->mtime_sec,
		  w->mtime_nsec);
	if (c->archive && w->xattrs_len) {
		e->xattrs = w->xattrs;
		e->xattrs_len = w->xattrs_len;
	}
	if (!*e->path) {
		if (w->type == BFO_WTYPE_DIR)
			keep_root_meta(x, w, e);
		else
			rx_stream_error(x, "a record that is not a directory names the destination", -EINVAL);
		return false;
	}
	if (w->type == BFO_WTYPE_FILE)
		return file_entry(x, w, e);
	if (w->type == BFO_WTYPE_HARDLINK) {
		e->data = dest(x, at, w->target_src, w->target, w->target_len);
		if (!e->data || !*(const char *)e->data) {
			rx_stream_error(x, "a hard link to a path outside the copy", -EINVAL);
			return false;
		}
	} else if (w->type == BFO_WTYPE_SYMLINK) {
		char *t = x->names + *at;

		memcpy(t, w->target, w->target_len);
		t[w->target_len] = '\0';
		*at += w->target_len + 1;
		e->data = t;
	}
	/* with a list, what came was asked for; else it is compared here */
	uint8_t want = x->lists ? WANT_WRITE | rx_replace_want(x, e->path) : rx_decide(x, w, e->path);

	if (want == WANT_SKIP)
		return false;
	e->flags |= sync_wflags(want, w->type == BFO_WTYPE_DIR);
	return true;
}

/* One BATCH frame as one batch of the writer. */
static int on_batch(struct rx *x, struct slot *s)
{
	struct bfo_copier *c = x->c;
	size_t at = 0;

	x->records += s->f.count;
	if (s->f.count > c->cap) {
		struct bfo_wentry *e = realloc(c->e, s->f.count * sizeof(*e));

		if (!e)
			return -ENOMEM;
		c->e = e;
		c->cap = s->f.count;
	}
	if (names_reserve(x, s))
		return -ENOMEM;
	if (!x->pieced && !(x->pieced = calloc(WIRE_PIECED_MAX, sizeof(*x->pieced))))
		return -ENOMEM;
	c->n = 0;
	for (uint32_t i = 0; i < s->f.count && !x->too_many; i++)
		if (map_entry(x, &s->ents[i], &c->e[c->n], &at))
			c->n++;
	if (!c->n)
		return 0;
	if (c->flags & BFO_COPY_DRY_RUN) {
		/* told, not written */
		for (size_t i = 0; c->item && i < c->n; i++)
			if (!(c->e[i].flags & (BFO_WENTRY_MORE | BFO_WENTRY_ABORT)))
				c->item(c->item_arg, '>', c->e[i].path);
		c->n = 0;
		return 0;
	}
	int ret = copy_writer_open(c);

	if (ret) {
		c->n = 0;
		return ret == -ENOMEM ? -EIO : ret;   /* not "no memory for a batch" */
	}
	bfo_writer_write(c->w, c->e, (unsigned)c->n);   /* failures: in the statuses */
	copy_batch_done(c);
	c->n = 0;
	copy_progress(c, false);
	return 0;
}

/* The frames, in order, until the end frame, a broken stream or a cancel.
 * Returns 0 or the -errno that stops the run before anything was written. */
static int receive(struct rx *x, const char *dst)
{
	bool sources = false;

	while (!atomic_load(&x->c->cancel)) {
		struct slot *s = rx_next_frame(x);
		int ret;

		if (!s)
			break;
		ret = s->status;

		if (!ret && s->eof) {
			rx_stream_error(x, "the stream ends before its end frame (the sender or its connection died)",
				     -EPIPE);
		} else if (ret == -ECANCELED) {
			ret = 0;        /* the reader saw the cancel first: not the stream's fault */
		} else if (ret) {
			rx_stream_error(x, s->why, ret);
		} else if (s->f.kind == WIRE_SOURCES) {
			ret = on_sources(x, s, dst);
			sources = !ret;
		} else if ((s->f.kind == WIRE_LIST || s->f.kind == WIRE_BATCH) &&
			   atomic_load(&x->broken)) {
			ret = 0;        /* the stream broke after it: dropped (see rx.broken) */
		} else if (s->f.kind == WIRE_LIST) {
			ret = x->lists ? rx_on_list(x, s) : -EBADMSG;
			if (ret == -EBADMSG && !x->lists)
				rx_stream_error(x, "a list frame the receiver did not ask for", ret);
		} else if (s->f.kind == WIRE_BATCH) {
			ret = on_batch(x, s);
			if (!ret && x->too_many)
				ret = -EMFILE;
			if (ret == -EMFILE || ret == -ENOMEM) {
				rx_stream_error(x, ret == -EMFILE ? "the stream has too many files in pieces at once" :
					   "no memory for a batch", ret);
			} else if (ret) {
				/* the writer could not open the destination:
				 * nothing was written, the caller names why */
				rx_done_frame(x);
				return ret;
			}
		} else {
			wire_end_parse(s->buf + WIRE_HEAD_LEN, &s->f, &x->end, &s->why);
			x->ended = true;
		}
		rx_done_frame(x);
		if (ret || s->eof || x->ended)
			return sources || !ret ? 0 : ret;
	}
	return 0;
}

/* ------------------------------------------------------------ the API */

static void rx_free(struct rx *x)
{
	for (int i = 0; i < NSLOTS; i++) {
		free(x->slot[i].buf);
		free(x->slot[i].ents);
	}
	for (uint32_t i = 0; x->prefix && i < x->nsources && x->nsources != UINT32_MAX; i++)
		free(x->prefix[i]);
	for (size_t i = 0; i < x->npieced; i++)
		free(x->pieced[i].path);
	free(x->prefix);
	free(x->src);
	free(x->pieced);
	free(x->names);
	free(x->root_xattrs);
	pthread_mutex_destroy(&x->m);
	pthread_cond_destroy(&x->cv);
}

/* The end: the sender's totals against what came (a sender that could
 * not read everything keeps --delete from deleting). */
static void finish(struct rx *x)
{
	if (x->ended && x->end.entries != x->records)
		rx_stream_error(x, "the stream lost records (its end frame counts others)", -EBADMSG);
	if (x->ended && x->end.errors) {
		char why[96];

		snprintf(why, sizeof(why), "the sender could not read %llu entries (named by the sender)",
			 (unsigned long long)x->end.errors);
		rx_stream_error(x, why, -EIO);
	}
	if (!x->ended || x->end.errors || x->end.entries != x->records)
		x->c->list_errors = true;
}

/* The root's metadata, when it stands for a source directory: last. */
static void root_meta(struct rx *x)
{
	struct bfo_copier *c = x->c;

	if (x->have_root_meta && c->archive && !atomic_load(&c->cancel) &&
	    !(c->flags & BFO_COPY_DRY_RUN))
		copy_root_meta(c, &x->root_meta);
}

static int recv_run(struct bfo_copier *c, struct rx *x, const char *dst)
{
	int ret = rx_read_start(x);

	if (ret)
		return ret;
	for (int i = 0; i < NSLOTS; i++) {
		x->slot[i].cap = WIRE_HEAD_LEN;
		if (!(x->slot[i].buf = malloc(WIRE_HEAD_LEN)))
			return -ENOMEM;
	}
	if ((ret = rx_reader_start(x)))
		return ret;
	ret = receive(x, dst);
	if (!ret && c->root) {
		int r = 0;

		if (c->w) {
			bfo_writer_stats(c->w, &x->wst);
			r = bfo_writer_close(c->w);       /* drops files whose pieces stopped */
		}
		c->w = NULL;
		if (r)
			copy_report(c, c->root, r);
		finish(x);
		rx_sync_end(x);
		root_meta(x);
		copy_tail_durable(c);
		rx_sync_result(x);
	}
	return ret;
}

BFO_API int bfo_copier_recv_duplex(struct bfo_copier *c, int fd, int reply_fd, const char *dst)
{
	struct rx x = { .c = c, .fd = fd, .nsources = UINT32_MAX,
			.stopfd = { -1, -1 }, .reply_fd = reply_fd };
	int ret;

	if (!c || fd < 0 || !dst || !*dst)
		return -EINVAL;
	copy_run_reset(c);
	c->broken = &x.broken;          /* its writer stops when the stream breaks */
	pthread_mutex_init(&x.m, NULL);
	pthread_cond_init(&x.cv, NULL);
	ret = recv_run(c, &x, dst);
	rx_reader_stop(&x);
	for (int i = 0; i < 2; i++)
		if (x.stopfd[i] >= 0)
			close(x.stopfd[i]);
	if (c->w)
		bfo_writer_stats(c->w, &x.wst);
	/* After a failure (the index freed here): entries the sender's list
	 * did not reach were never marked seen, and deleting them would
	 * empty DST (a killed sender's receiver did). */
	if (ret || !x.ended)
		c->cut = true;
	copy_sync_end(c);
	copy_dest_close(c);
	pthread_mutex_lock(&c->lock);
	c->st.wire_received = x.in.bytes;
	c->st.wire_sent = x.back.io.bytes;
	pthread_mutex_unlock(&c->lock);
	rx_sync_free(&x);
	wio_free(&x.in);
	rx_free(&x);
	for (size_t i = 0; i < c->nsrcs; i++)
		free(c->srcs[i].name);  /* (their prefixes were x's) */
	free(c->root);
	free(c->e);
	free(c->srcs);
	c->root = NULL;
	c->e = NULL;
	c->srcs = NULL;
	c->nsrcs = 0;
	c->cap = 0;
	c->broken = NULL;
	pthread_mutex_lock(&c->lock);
	c->st.write_engine = x.wst.engine;
	c->st.ns_total = bfo_now_ns() - c->t0;
	if (!ret)
		ret = c->nospace ? c->nospace : atomic_load(&c->cancel) ? -ECANCELED :
		      (int)MIN(c->st.errors, (uint64_t)INT32_MAX);
	pthread_mutex_unlock(&c->lock);
	copy_progress(c, true);
	copy_run_end(c);
	return ret;
}

BFO_API int bfo_copier_recv(struct bfo_copier *c, int fd, const char *dst)
{
	return bfo_copier_recv_duplex(c, fd, -1, dst);
}

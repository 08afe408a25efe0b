/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_copier_send: a copier's sources, read as bfo_copier_run reads them,
 * as a stream (send.c frames it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "copy.h"
#include "write_meta.h"
#include "back.h"
#include "send.h"
#include "sync.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

/* The sources that exist, as the stream's SOURCES frame names them
 * (missing ones are reported and left out); their lstat in st. */
static uint32_t send_sources(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
			     struct wire_source *tab, char **names, struct stat *st, const char **kept)
{
	uint32_t k = 0;

	for (unsigned i = 0; i < nsrc; i++) {
		if (lstat(srcs[i], &st[k]) < 0) {
			copy_report(c, srcs[i], -errno);
			continue;
		}
		names[k] = copy_src_name(srcs[i]);
		if (!names[k]) {
			c->oom = true;
			break;
		}
		tab[k] = (struct wire_source){ S_ISDIR(st[k].st_mode), names[k],
					       (uint32_t)strlen(names[k]) };
		kept[k++] = srcs[i];
	}
	return k;
}

/* ------------------------------------------------------------ the list */

/* A list batch sent, waiting for its wants. */
struct pend {
	struct lbatch *b;
	uint32_t frames;            /* LIST frames it went as */
	size_t got;                 /* wants taken so far */
	struct pend *next;
};

/* The duplex sender's state: the back channel and the batches in flight. */
struct duplex {
	struct back back;
	struct pend *head, *tail;
	unsigned npend;
	bool checksum;
	int err;                    /* the receiver's answers broke */
	struct bfo_copier *c;
};

#define PEND_MAX 16u                /* list batches sent and not answered */

static uint32_t wtype_of(const struct lent *e)
{
	mode_t m = e->st.st_mode;

	return S_ISREG(m) ? (e->link_rel ? BFO_WTYPE_HARDLINK : BFO_WTYPE_FILE) :
	       S_ISDIR(m) ? BFO_WTYPE_DIR : S_ISLNK(m) ? BFO_WTYPE_SYMLINK :
	       S_ISFIFO(m) ? BFO_WTYPE_FIFO : S_ISSOCK(m) ? BFO_WTYPE_SOCK :
	       S_ISCHR(m) ? BFO_WTYPE_CHR : BFO_WTYPE_BLK;
}

/* b's entries as LIST records on the stream. */
static int list_send(struct bfo_copier *c, struct duplex *d, struct lbatch *b, uint32_t *frames)
{
	struct wire_lent *w = calloc(b->n ? b->n : 1, sizeof(*w));
	int ret;

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		const struct lent *e = &b->e[i];
		struct wire_lent *x = &w[i];
		size_t pl = strlen(e->rel);

		x->type = wtype_of(e);
		x->mode = e->st.st_mode & 07777;
		x->uid = e->st.st_uid;
		x->gid = e->st.st_gid;
		x->mtime_sec = e->st.st_mtim.tv_sec;
		x->mtime_nsec = (uint32_t)e->st.st_mtim.tv_nsec;
		x->atime_sec = e->st.st_atim.tv_sec;
		x->atime_nsec = (uint32_t)e->st.st_atim.tv_nsec;
		x->size = S_ISREG(e->st.st_mode) ? (uint64_t)e->st.st_size : 0;
		x->rdev = S_ISCHR(e->st.st_mode) || S_ISBLK(e->st.st_mode) ?
			  (uint64_t)major(e->st.st_rdev) << 32 | minor(e->st.st_rdev) : 0;
		x->hash = e->hash;
		x->xhash = e->xhash;
		x->path_len = (uint32_t)pl;
		x->path = e->rel;
		x->target = e->link_rel ? e->link_rel : e->target;
		x->target_len = x->target ? (uint32_t)strlen(x->target) : 0;
		x->link_src = e->link_src;
	}
	ret = wire_out_list(c->out, b->e[0].src, w, b->n, d->checksum, frames);
	free(w);
	return ret;
}

/* The wants of the oldest batch in flight, from a WANT frame. */
static int wants_take(struct bfo_copier *c, struct duplex *d, const struct bframe *f)
{
	struct pend *p = d->head;
	uint8_t *wants = malloc(f->count ? f->count : 1);
	const char *why;

	if (!wants || !p || p->got + f->count > p->b->n ||
	    wire_wants_parse(f->meta, f->len, wants, f->count, &why)) {
		free(wants);
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < f->count; i++) {
		struct lent *e = &p->b->e[p->got + i];
		uint8_t want = wants[i];

		if ((want & ~(WANT_ACTION | WANT_REPLACE)) || (want & WANT_ACTION) == WANT_ACTION ||
		    ((want & WANT_ACTION) == WANT_LINK && !e->link_rel)) {
			free(wants);
			return -EBADMSG;
		}
		e->want = want;
	}
	free(wants);
	p->got += f->count;
	if (!--p->frames) {
		if (p->got != p->b->n)
			return -EBADMSG;
		/* the batch is answered: what it wants goes */
		d->head = p->next;
		if (!d->head)
			d->tail = NULL;
		d->npend--;
		for (size_t i = 0; i < p->b->n; i++) {
			const struct lent *e = &p->b->e[i];

			if (e->want == WANT_SKIP && S_ISREG(e->st.st_mode) && !e->link_rel) {
				pthread_mutex_lock(&c->lock);
				c->st.skipped++;
				pthread_mutex_unlock(&c->lock);
			}
			if (e->want != WANT_SKIP && (c->flags & BFO_COPY_DRY_RUN)) {
				/* what would be sent, counted as if */
				pthread_mutex_lock(&c->lock);
				if (S_ISREG(e->st.st_mode) && (e->want & WANT_ACTION) == WANT_WRITE) {
					c->st.files++;
					c->st.bytes += (uint64_t)e->st.st_size;
				} else {
					c->st.others++;
				}
				pthread_mutex_unlock(&c->lock);
			}
			if (e->want != WANT_SKIP && (c->flags & BFO_COPY_DRY_RUN) && c->item && *e->rel) {
				char *name;

				if (asprintf(&name, "%s%s%s", c->srcs[e->src].name, *c->srcs[e->src].name ?
					     "/" : "", e->rel) >= 0) {
					c->item(c->item_arg, '>', name);
					free(name);
				}
			}
		}
		if (!(c->flags & BFO_COPY_DRY_RUN))
			copy_list_apply(c, p->b);
		lbatch_free(p->b);
		free(p);
	}
	return 0;
}

/* An ITEMS frame: what the receiver deleted, to the item callback. */
static void items_take(struct bfo_copier *c, const struct bframe *f)
{
	const uint8_t *p = f->meta, *end = f->meta + f->len;

	/* records: u8 what, u16 length, the path (no NUL) */
	for (uint32_t i = 0; i < f->count && end - p >= 3; i++) {
		uint16_t len = (uint16_t)(p[1] | p[2] << 8);
		char *path;

		if ((size_t)(end - p - 3) < len || p[0] != '-')
			return;
		if (c->item && (path = strndup((const char *)p + 3, len))) {
			c->item(c->item_arg, '-', path);
			free(path);
		}
		p += 3 + (size_t)len;
	}
}

static void result_take(struct bfo_copier *c, const struct bframe *f)
{
	uint64_t v[4];

	for (int i = 0; i < 4; i++) {
		v[i] = 0;
		for (int k = 7; k >= 0; k--)
			v[i] = v[i] << 8 | f->meta[8 * i + k];
	}
	pthread_mutex_lock(&c->lock);
	c->st.deleted = v[2];
	pthread_mutex_unlock(&c->lock);
}

/* Answers as they come; with wait, until fewer than max batches are in
 * flight (the read engine drained meanwhile).  0 or -errno. */
static int answers(struct bfo_copier *c, struct duplex *d, unsigned max)
{
	while (!d->err) {
		bool wait = d->npend > max;
		struct bframe *f = back_next(&d->back, wait && !c->reading ? 50 : 0);

		if (!f) {
			if (!wait)
				return 0;
			if (d->back.done) {
				d->err = d->back.err ? d->back.err : -EPIPE;
				break;
			}
			if (atomic_load(&c->cancel))
				return -ECANCELED;
			copy_drain(c, 20, false);
			continue;
		}
		if (f->kind == WIRE_WANT)
			d->err = wants_take(c, d, f);
		else if (f->kind == WIRE_ITEMS)
			items_take(c, f);
		else
			d->err = -EBADMSG;      /* HELLO again, or RESULT before the end */
		bframe_free(f);
	}
	return d->err;
}

static void remote_emit(struct bfo_copier *c, struct lbatch *b)
{
	struct duplex *d = c->duplex;
	struct pend *p;
	uint32_t frames = 0;
	int ret;

	if (d->err || !b->n || !(p = calloc(1, sizeof(*p)))) {
		lbatch_free(b);
		if (!d->err && b->n)
			d->err = -ENOMEM;
		return;
	}
	ret = list_send(c, d, b, &frames);
	if (ret || !frames) {
		free(p);
		lbatch_free(b);
		/* (a cancel cut the frame short: the run ends as cancelled) */
		if (ret != -ECANCELED)
			d->err = ret ? ret : -EIO;
		return;
	}
	*p = (struct pend){ b, frames, 0, NULL };
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	d->npend++;
	answers(c, d, PEND_MAX);
}

/* ------------------------------------------------------------ the sink */

/* A batch of bfo_copier_send goes on the stream; when the stream cannot
 * be written (the receiver went away), it and the rest of the run fail. */
static int stream_put(struct bfo_copier *c)
{
	int ret = wire_out_batch(c->out, c->e, c->sizes, c->n);

	if (ret && ret != -ECANCELED)       /* a cancel cut the frame short: ours */
		copy_report(c, ret == -EPIPE ? "the receiver went away" : "writing the stream", ret);
	return ret;
}

static const struct copy_sink stream_sink = { .put = stream_put, .stream = true };

/* ------------------------------------------------------------ the run */

/* The sources, as the walk (the receiver wants everything) or the list. */
static void send_sources_go(struct bfo_copier *c, struct run *r, struct duplex *d)
{
	if (c->listing) {
		/* the list the scan begun before the answer made, and the rest */
		copy_prescan_take(c, remote_emit);
		answers(c, d, 0);           /* every batch answered */
		return;
	}
	copy_prescan_drop(c);               /* (a first copy: the walk does it all) */
	for (size_t i = 0; i < c->nsrcs && !atomic_load(&c->cancel) && !(d && d->err); i++)
		copy_source_go(c, r, (uint16_t)i);
}

/* After END: the receiver's deletions (ITEMS) and its RESULT. */
static int send_result(struct bfo_copier *c, struct duplex *d)
{
	for (;;) {
		struct bframe *f = back_next(&d->back, -1);

		if (!f && atomic_load(&c->cancel))
			return -ECANCELED;
		if (!f)
			return d->back.err ? d->back.err : -EPIPE;
		if (f->kind == WIRE_ITEMS)
			items_take(c, f);
		else if (f->kind == WIRE_RESULT)
			result_take(c, f);
		bool last = f->kind == WIRE_RESULT;

		bframe_free(f);
		if (last)
			return 0;
	}
}

/* Sources, batches and the end, on the stream; with a back channel, the
 * list first and the receiver's answers. */
static int send_run(struct bfo_copier *c, const char *const *srcs, unsigned nsrc, int fd,
		    int reply_fd)
{
	struct wire_source *tab = calloc(nsrc, sizeof(*tab));
	struct stat *st = calloc(nsrc, sizeof(*st));
	const char **kept = calloc(nsrc, sizeof(*kept));
	char **names = calloc(nsrc, sizeof(*names));
	struct run r = { .send = true };
	struct wire_out out = { .cancel = &c->cancel, .cancelfd = c->wakefd };
	struct wire_end end = { 0 };
	struct duplex dx = { .c = c, .checksum = c->flags & BFO_COPY_CHECKSUM }, *d = NULL;
	uint32_t k = 0, flags = c->archive ? WIRE_F_ARCHIVE : 0;
	int ret = -ENOMEM;

	if (reply_fd >= 0)
		flags |= WIRE_F_LIST | (dx.checksum ? WIRE_F_CHECKSUM : 0) | (c->item ? WIRE_F_ITEMS : 0);
	if (c->compress)
		flags |= WIRE_F_ZSTD;
	c->srcs = calloc(nsrc, sizeof(*c->srcs));
	if (tab && st && kept && names && c->srcs) {
		k = send_sources(c, srcs, nsrc, tab, names, st, kept);
		ret = wire_out_start(&out, fd, flags, c->compress, tab, k);
	}
	for (uint32_t i = 0; !ret && i < k; i++)
		if (copy_source_prep(c, &r, kept[i], &st[i]) < 0)
			ret = -ENOMEM;
	if (!ret && reply_fd >= 0) {
		d = &dx;
		c->duplex = d;
		ret = back_start(&d->back, reply_fd, &c->cancel);
		/* while the receiver starts and answers, the list begins */
		if (!ret && copy_prescan_start(c))
			ret = -ENOMEM;
	}
	c->out = &out;
	c->sink = &stream_sink;
	if (!ret && d) {
		/* the receiver says whether it has anything to compare with */
		struct bframe *f = back_next(&d->back, -1);
		uint32_t hello = 0;
		const char *why;
		struct wire_frame fr = { f ? f->kind : 0, f ? f->count : 0, f ? f->len : 0, 0 };

		if (!f || f->kind != WIRE_HELLO || wire_hello_parse(f->meta, &fr, &hello, &why))
			ret = f ? -EBADMSG : atomic_load(&c->cancel) ? -ECANCELED :
			      d->back.err ? d->back.err : -EPIPE;
		c->listing = hello & WIRE_H_LIST;
		bframe_free(f);
		if (ret && ret != -ECANCELED)
			copy_report(c, d->back.why ? d->back.why : "the receiver's answer", ret);
	}
	if (ret)
		copy_prescan_drop(c);
	if (!ret) {
		send_sources_go(c, &r, d);
		copy_run_drain(c);
		pthread_mutex_lock(&c->lock);
		end = (struct wire_end){ c->st.files, c->st.bytes, c->st.others,
					 c->st.errors + c->oom + c->list_errors, 0 };
		pthread_mutex_unlock(&c->lock);
		if (d && d->err)
			ret = d->err;
		else if (!atomic_load(&c->cancel))
			ret = wire_out_end(&out, &end);
		if (!ret && d && !atomic_load(&c->cancel))
			ret = send_result(c, d);
		if (ret && ret != -EPIPE && ret != -ECANCELED && d && d->err)
			copy_report(c, d->back.why ? d->back.why : "the receiver's answers", ret);
	}
	c->out = NULL;
	c->sink = &copy_writer_sink;
	pthread_mutex_lock(&c->lock);
	c->st.wire_sent = out.io.bytes;
	c->st.wire_received = d ? d->back.io.bytes : 0;
	c->st.tree_bytes = c->list_tree_bytes;
	pthread_mutex_unlock(&c->lock);
	if (d) {
		back_end(&d->back);
		while (d->head) {
			struct pend *p = d->head;

			d->head = p->next;
			lbatch_free(p->b);
			free(p);
		}
		c->duplex = NULL;
	}
	wire_out_free(&out);
	for (uint32_t i = 0; names && i < nsrc; i++)
		free(names[i]);
	free(names);
	free(tab);
	free(st);
	free(kept);
	return ret;
}

BFO_API int bfo_copier_send_duplex(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
				   int fd, int reply_fd)
{
	struct bfo_opts d;
	struct bfo_stats rst;
	int ret;

	if (!c || !srcs || !nsrc || fd < 0 || nsrc > WIRE_SOURCES_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < nsrc; i++)
		if (!srcs[i] || !*srcs[i])
			return -EINVAL;
	copy_run_reset(c);
	ret = bfo_ctx_create(&c->rctx, &c->ro);
	if (ret) {
		copy_run_end(c);
		return ret;
	}
	bfo_opts_init(&d);
	/* As a local copy's: a quarter of the read arena a batch (a frame
	 * holds at most WIRE_DATA_MAX; larger batches go as several). */
	c->batch_bytes_max = (c->ro.arena_bytes ? c->ro.arena_bytes : d.arena_bytes) / 4;
	ret = send_run(c, srcs, nsrc, fd, reply_fd);
	bfo_read_stats(c->rctx, &rst);
	bfo_ctx_destroy(c->rctx);
	c->rctx = NULL;
	pthread_mutex_lock(&c->lock);
	c->st.read_engine = rst.engine;
	c->rst = rst;
	c->st.ns_total = bfo_now_ns() - c->t0;
	if (c->oom)
		c->st.errors++;
	if (!ret)
		ret = c->send_err ? c->send_err : atomic_load(&c->cancel) ? -ECANCELED :
		      c->oom ? -ENOMEM : (int)MIN(c->st.errors, (uint64_t)INT32_MAX);
	pthread_mutex_unlock(&c->lock);
	copy_progress(c, true);
	copy_run_cleanup(c);
	copy_run_end(c);
	return ret;
}

BFO_API int bfo_copier_send(struct bfo_copier *c, const char *const *srcs, unsigned nsrc, int fd)
{
	return bfo_copier_send_duplex(c, srcs, nsrc, fd, -1);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A copier's batches: read results become writer entries (hard links
 * folded onto the first copy of their inode), and a batch goes to the
 * writer or the stream once it holds a quarter of the read arena.
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
#include "sync.h"
#include "write_meta.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

/* ---------------------------------------------------------- batches */

void copy_item(struct bfo_copier *c, const char *path)
{
	char *rel, *name;
	unsigned long k;

	if (!c->sink->stream) {
		c->item(c->item_arg, '>', path);
		return;
	}
	/* a sender's path: "K/REL", K the source: named by its source's name */
	k = strtoul(path, &rel, 10);
	rel += *rel == '/';
	if (k < c->nsrcs && asprintf(&name, "%s%s%s", c->srcs[k].name, *c->srcs[k].name && *rel ? "/" : "",
				     rel) >= 0) {
		if (*name)
			c->item(c->item_arg, '>', name);
		free(name);
	}
}

void copy_batch_done(struct bfo_copier *c)
{
	uint64_t files = 0, others = 0, bytes = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct bfo_wentry *e = &c->e[i];

		/* Not begun: the batch was stopped (a cancel, a broken stream,
		 * or STOP_ON_ERROR after a failure that is reported). */
		if (e->status == -ECANCELED)
			continue;
		if (e->status == -ENOSPC || e->status == -EDQUOT) {
			pthread_mutex_lock(&c->lock);
			c->st.space_needed += e->type == BFO_WTYPE_FILE ? e->length : 0;
			pthread_mutex_unlock(&c->lock);
		}
		if (e->status || e->owner_status) {
			char *full = c->root ? copy_join(c->root, e->path) : NULL;

			if (e->status)
				copy_report(c, full ? full : e->path, e->status);
			else
				copy_owner_lost(c, full ? full : e->path, e->owner_status);
			free(full);
		}
		if (e->status)
			continue;
		if (e->type == BFO_WTYPE_FILE) {
			bytes += e->length;
			files += !(e->flags & (BFO_WENTRY_MORE | BFO_WENTRY_ABORT));
		} else {
			others++;
		}
		if (c->item && !(e->flags & (BFO_WENTRY_MORE | BFO_WENTRY_ABORT)))
			copy_item(c, e->path);
	}
	pthread_mutex_lock(&c->lock);
	c->st.files += files;
	c->st.others += others;
	c->st.bytes += bytes;
	c->st.batches++;
	pthread_mutex_unlock(&c->lock);
}


/* Write the batch, report its failures, give the read entries back;
 * cancelled, the batch is dropped unwritten. */
void copy_flush(struct bfo_copier *c)
{
	int ret;

	if (atomic_load(&c->cancel))
		c->n = 0;
	if (c->n && (ret = c->sink->put(c))) {
		/* The run cannot go on (the destination cannot be written, the
		 * stream broke): it ends with that error, its batch unwritten. */
		c->send_err = ret;
		atomic_store(&c->cancel, true);
		pthread_mutex_lock(&c->lock);
		for (size_t i = 0; (ret == -ENOSPC || ret == -EDQUOT) && i < c->n; i++)
			c->st.space_needed += c->e[i].type == BFO_WTYPE_FILE ? c->e[i].length : 0;
		pthread_mutex_unlock(&c->lock);
		c->n = 0;
	}
	if (c->n)
		copy_batch_done(c);
	if (c->nheld)
		bfo_read_release(c->rctx, c->held, (unsigned)c->nheld);
	c->nheld = 0;
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	c->nowned = 0;
	c->n = 0;
	c->batch_bytes = 0;
	copy_progress(c, false);
}

void copy_maybe_flush(struct bfo_copier *c)
{
	if (c->batch_bytes >= c->batch_bytes_max || c->n >= BATCH_MAX_ENTRIES)
		copy_flush(c);
}

static struct hl *hl_get(struct bfo_copier *c, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < c->nhls; i++)
		if (c->hls[i].dev == dev && c->hls[i].ino == ino)
			return &c->hls[i];
	return NULL;
}

static bool skipped(struct bfo_copier *c, uint64_t index)
{
	for (size_t i = 0; i < c->nskip; i++)
		if (c->skip[i] == index)
			return true;
	return false;
}

/* The destination of a read result, owned by the batch. */
static char *dest_of(struct bfo_copier *c, const struct bfo_file *f)
{
	const struct src *s = &c->srcs[c->src_of[f->index]];
	const char *rel = f->path + s->len + (f->path[s->len] == '/');

	return copy_own(c, s->file ? strdup(s->prefix) : copy_join(s->prefix, rel));
}

/* A delivered file (or piece) becomes a FILE or HARDLINK entry. */
/* f failed: reported; names waiting to link to its copy cannot, they fail
 * too; a copy some of whose pieces were written is aborted. */
static void read_failed(struct bfo_copier *c, const struct bfo_file *f, char *dest)
{
	struct bfo_wentry *e;
	struct hl *h;

	copy_report(c, f->path, f->status);
	h = c->archive && f->nlink > 1 ? hl_get(c, f->dev, f->ino) : NULL;
	if (h && h->pending && !strcmp(h->dest, dest)) {
		for (size_t k = 0; k < h->nwaiting; k++) {
			copy_report(c, h->waiting[k], f->status);
			free(h->waiting[k]);
		}
		h->nwaiting = 0;
		h->pending = false;
	}
	if (f->offset > 0 && (e = copy_add(c))) {    /* earlier pieces were written */
		e->path = dest;
		e->type = BFO_WTYPE_FILE;
		e->flags = BFO_WENTRY_ABORT;
	}
}

/*
 * Hard links: the first path of an inode is copied, the others link to
 * that copy (written by an earlier batch, or by this one first; a copy
 * still arriving in pieces gets its links after its last).  true: f is
 * such another path, handled here; false: f is the first, to be copied.
 */
static bool link_to_copy(struct bfo_copier *c, const struct bfo_file *f, char *dest, bool last)
{
	struct hl *h = hl_get(c, f->dev, f->ino);
	struct bfo_wentry *e;

	if (!h) {
		char *d = strdup(dest);

		if (d && copy_grow((void **)&c->hls, &c->caphls, c->nhls + 1, sizeof(*c->hls)))
			c->hls[c->nhls++] = (struct hl){ f->dev, f->ino, d, !last, NULL, 0 };
		else
			free(d);
		return false;
	}
	if (!last && copy_grow((void **)&c->skip, &c->capskip, c->nskip + 1, sizeof(*c->skip)))
		c->skip[c->nskip++] = f->index;
	if (h->pending) {
		char **t = realloc(h->waiting, (h->nwaiting + 1) * sizeof(*t));
		char *d = strdup(dest);

		if (t && d) {
			h->waiting = t;
			h->waiting[h->nwaiting++] = d;
		} else {
			free(d);
			c->oom = true;
		}
		return true;
	}
	if ((e = copy_add(c))) {
		e->path = dest;
		e->type = BFO_WTYPE_HARDLINK;
		e->data = h->dest;
		if (c->listing)
			e->flags |= BFO_WENTRY_REPLACE;   /* (the list asked for it) */
	}
	return true;
}

/* The last piece of a copy in pieces is in this batch: the other names
 * waiting for it follow it (the writer links after it renames). */
static void links_follow(struct bfo_copier *c, const struct bfo_file *f, const char *dest)
{
	struct hl *h = hl_get(c, f->dev, f->ino);

	if (!h || !h->pending || strcmp(h->dest, dest))
		return;
	h->pending = false;
	for (size_t k = 0; k < h->nwaiting; k++) {
		struct bfo_wentry *l = copy_add(c);

		if (!l)
			break;
		l->path = copy_own(c, h->waiting[k]);
		l->type = BFO_WTYPE_HARDLINK;
		l->data = h->dest;
		if (c->listing)
			l->flags |= BFO_WENTRY_REPLACE;
	}
	free(h->waiting);
	h->waiting = NULL;
	h->nwaiting = 0;
}

static void on_read(struct bfo_copier *c, struct bfo_file *f)
{
	bool last = f->flags & BFO_FILE_LAST;
	struct bfo_wentry *e;
	char *dest;

	if (!copy_grow((void **)&c->held, &c->capheld, c->nheld + 1, sizeof(*c->held))) {
		bfo_read_release(c->rctx, f, 1);
		c->oom = true;
		return;
	}
	c->held[c->nheld++] = *f;
	if (f->offset > 0 && skipped(c, f->index))
		goto done;                      /* a hard link's later pieces */
	dest = dest_of(c, f);
	if (!dest)
		goto done;
	if (f->status < 0) {
		read_failed(c, f, dest);
		goto done;
	}
	if (c->archive && f->nlink > 1 && f->offset == 0 && link_to_copy(c, f, dest, last))
		goto done;
	if (!(e = copy_add(c)))
		goto done;
	e->path = dest;
	e->type = BFO_WTYPE_FILE;
	e->data = f->data;
	e->length = f->length;
	e->offset = f->offset;
	if (c->sink->stream)
		c->sizes[c->n - 1] = f->size;
	if (!last)
		e->flags |= BFO_WENTRY_MORE;
	copy_meta_from(c, e, f->mode, f->uid, f->gid, f->atime_sec, f->atime_nsec, f->mtime_sec,
		  f->mtime_nsec);
	/* The list knew what has its name (the last piece takes the name) */
	if (c->want_of && f->index < c->nsub)
		e->flags |= sync_wflags(c->want_of[f->index], false);
	/* A file in pieces takes its metadata, xattrs included, with its
	 * last piece (when it gets its name).  Where the inode said it has
	 * none, the source's name is not looked up for them: on a raw copy
	 * that lookup was a tenth of the machine's time (100,000 files). */
	if (c->archive && last && !(f->flags & BFO_FILE_NO_XATTRS))
		copy_take_xattrs(c, f->path, e);
	if (last && f->offset > 0 && c->archive && f->nlink > 1)
		links_follow(c, f, dest);
	c->batch_bytes += f->length;
done:
	copy_maybe_flush(c);
}

/* Take what the read engine has ready; with final, everything until the
 * read batch has ended. */
void copy_drain(struct bfo_copier *c, int timeout_ms, bool final)
{
	struct bfo_file files[256];
	int k;

	if (!c->reading)
		return;                  /* nothing submitted: no batch to wait on */
	for (;;) {
		/* Cancelled: the reads in flight end, no more start, and what
		 * still comes is dropped (copy_flush writes nothing). */
		if (atomic_load(&c->cancel))
			bfo_read_cancel(c->rctx);
		k = bfo_read_wait(c->rctx, files, 256, final ? -1 : timeout_ms);
		if (k > 0) {
			for (int i = 0; i < k; i++)
				on_read(c, &files[i]);
			timeout_ms = 0;
			continue;
		}
		if (k == -ENOBUFS) {     /* our batch holds the arena: write it */
			copy_flush(c);
			continue;
		}
		if (k < 0 && k != -ETIME && k != -EAGAIN)
			copy_report(c, "(read engine)", k);
		return;
	}
}

/* Queue a source regular file; its bytes arrive through on_read. */
void copy_submit_file(struct bfo_copier *c, const char *src, uint16_t srcno, uint8_t want)
{
	int ret;

	while ((ret = bfo_read_submit(c->rctx, &src, 1)) == 0)
		copy_drain(c, 50, false);
	if (ret < 0) {
		copy_report(c, src, ret);
		return;
	}
	c->reading = true;
	if (!c->listing) {              /* (a sync's list counts its own: sync_decide) */
		pthread_mutex_lock(&c->lock);
		c->st.listed_files++;
		pthread_mutex_unlock(&c->lock);
	}
	if (!copy_grow((void **)&c->src_of, &c->capsub, c->nsub + 1, sizeof(*c->src_of))) {
		c->oom = true;
		return;
	}
	if (c->listing) {
		if (!copy_grow((void **)&c->want_of, &c->capwant, c->nsub + 1, sizeof(*c->want_of))) {
			c->oom = true;
			return;
		}
		c->want_of[c->nsub] = want;
	}
	c->src_of[c->nsub++] = srcno;
}

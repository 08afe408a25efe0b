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
#include "meta.h"
#include "wire.h"
#include "writer.h"

#define NSLOTS 2

/* A file whose first piece came and whose last has not: the writer holds
 * descriptors for it, so a stream may not have more than WIRE_PIECED_MAX
 * of them at once (a sender's read engine has a handful). */
struct pieced {
	char *path;
	bool dropped;               /* its pieces go nowhere (skipped, or a bad hash) */
};

struct slot {
	uint8_t *buf;               /* head, records, hash, data */
	size_t cap;
	struct wire_frame f;
	struct wire_entry *ents;    /* BATCH: the parsed records */
	size_t capents;
	int status;                 /* 0, or the stream's error (why says it) */
	const char *why;
	bool eof;                   /* the stream ended cleanly before this frame */
};

struct rx {
	struct bfo_copier *c;
	int fd;
	uint32_t flags;             /* the stream's START flags */
	uint32_t nsources;
	pthread_t thread;
	bool started;
	bool stop;                  /* the writing side is done: the reader ends */
	/* The stream broke (ended before its end frame, or bad): the batch
	 * being written stops and the frames still buffered are dropped, so
	 * a receiver whose sender died (or was interrupted) ends at once. */
	atomic_bool broken;
	int stopfd[2];              /* its wakeup while it waits for the stream */
	pthread_mutex_t m;
	pthread_cond_t cv;
	uint64_t produced, consumed;
	struct slot slot[NSLOTS];

	/* the writing side */
	struct wire_source *src;    /* copies: the reader's frame is reused */
	char **prefix;              /* each source's destination below root */
	int root_fd;
	bool have_root_meta;
	struct bfo_wentry root_meta;
	void *root_xattrs;
	struct pieced *pieced;      /* files in pieces begun and not ended */
	size_t npieced;
	bool too_many;              /* more than WIRE_PIECED_MAX of them */
	char *names;                /* the batch's destination strings */
	size_t capnames;
	uint64_t records;
	struct wire_end end;
	bool ended;
	struct bfo_write_stats wst;
};

/* ------------------------------------------------------------ reading */

/* len bytes, or fewer only at the end of the stream.  Returns the count
 * read, or -errno (-ECANCELED: stopfd became readable first, when >= 0,
 * or a signal came with the copier cancelled). */
static ssize_t read_full(int fd, void *p, size_t len, int stopfd, const atomic_bool *cancel)
{
	size_t got = 0;

	while (got < len) {
		struct pollfd pf[2] = { { fd, POLLIN, 0 }, { stopfd, POLLIN, 0 } };

		if (stopfd >= 0 && poll(pf, 2, -1) < 0) {
			if (errno == EINTR && !atomic_load(cancel))
				continue;
			return errno == EINTR ? -ECANCELED : -errno;
		}
		if (stopfd >= 0 && (pf[1].revents & POLLIN))
			return -ECANCELED;
		ssize_t k = read(fd, (char *)p + got, len - got);

		if (k == 0)
			break;
		if (k < 0) {
			if (errno == EINTR && !atomic_load(cancel))
				continue;
			return errno == EINTR ? -ECANCELED : -errno;
		}
		got += (size_t)k;
	}
	return (ssize_t)got;
}

/* Read exactly len bytes: 0, or -errno with why. */
static int take(struct rx *x, void *p, size_t len, const char **why)
{
	ssize_t k = read_full(x->fd, p, len, x->stopfd[0], &x->c->cancel);

	if (k == (ssize_t)len)
		return 0;
	*why = k < 0 ? "reading the stream failed" :
	       "the stream ends inside a frame (the sender or its connection died)";
	return k < 0 ? (int)k : -EPIPE;
}

/* The next frame into s, checked and parsed. */
static int read_frame(struct rx *x, struct slot *s)
{
	struct wire_frame *f = &s->f;
	ssize_t k;
	size_t len;
	int ret;

	k = read_full(x->fd, s->buf, WIRE_HEAD_LEN, x->stopfd[0], &x->c->cancel);
	if (k == 0) {
		s->eof = true;
		return 0;
	}
	if (k != WIRE_HEAD_LEN) {
		s->why = k < 0 ? "reading the stream failed" :
			 "the stream ends inside a frame (the sender or its connection died)";
		return k < 0 ? (int)k : -EPIPE;
	}
	if ((ret = wire_head_parse(s->buf, f, &s->why)))
		return ret;
	len = WIRE_HEAD_LEN + f->meta_len + WIRE_HASH_LEN + f->data_len;
	if (len > s->cap) {
		uint8_t *b = realloc(s->buf, len);

		if (!b) {
			s->why = "no memory for a frame";
			return -ENOMEM;
		}
		s->buf = b;
		s->cap = len;
	}
	if ((ret = take(x, s->buf + WIRE_HEAD_LEN, f->meta_len + WIRE_HASH_LEN, &s->why)))
		return ret;
	uint8_t *meta = s->buf + WIRE_HEAD_LEN, *data = meta + f->meta_len + WIRE_HASH_LEN;
	uint8_t want[WIRE_HASH_LEN];

	wire_put64(want, wire_meta_hash(s->buf, meta, f->meta_len));
	if (memcmp(want, meta + f->meta_len, WIRE_HASH_LEN)) {
		s->why = "frame records do not match their hash (corrupted stream)";
		return -EBADMSG;
	}
	if ((ret = take(x, data, f->data_len, &s->why)))
		return ret;
	if (f->kind == WIRE_SOURCES) {
		if (x->nsources != UINT32_MAX) {
			s->why = "a second sources frame";
			return -EBADMSG;
		}
		x->nsources = f->count;
	} else if (x->nsources == UINT32_MAX) {
		s->why = "the stream does not start with its sources";
		return -EBADMSG;
	}
	if (f->kind != WIRE_BATCH)
		return 0;
	if (f->count > s->capents) {
		struct wire_entry *e = realloc(s->ents, f->count * sizeof(*e));

		if (!e) {
			s->why = "no memory for a frame";
			return -ENOMEM;
		}
		s->ents = e;
		s->capents = f->count;
	}
	return wire_entries_parse(meta, data, f, x->nsources, s->ents, &s->why);
}

static void *reader(void *arg)
{
	struct rx *x = arg;

	for (;;) {
		struct slot *s;
		bool last, stop;

		pthread_mutex_lock(&x->m);
		while (x->produced - x->consumed == NSLOTS && !x->stop)
			pthread_cond_wait(&x->cv, &x->m);
		stop = x->stop;
		pthread_mutex_unlock(&x->m);
		if (stop)
			return NULL;
		s = &x->slot[x->produced % NSLOTS];
		s->eof = false;
		s->why = NULL;
		s->status = read_frame(x, s);
		last = s->eof || s->status || s->f.kind == WIRE_END;
		if (s->eof || s->status)
			atomic_store(&x->broken, true);
		pthread_mutex_lock(&x->m);
		x->produced++;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->m);
		if (last)
			return NULL;
	}
}

/* The next frame the reader has ready; NULL when the copier was cancelled
 * (a signal does not end a wait: it is looked at every 100 ms). */
static struct slot *next_frame(struct rx *x)
{
	struct slot *s = NULL;

	pthread_mutex_lock(&x->m);
	while (x->produced == x->consumed && !atomic_load(&x->c->cancel)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&x->cv, &x->m, &ts);
	}
	if (x->produced != x->consumed)
		s = &x->slot[x->consumed % NSLOTS];
	pthread_mutex_unlock(&x->m);
	return s;
}

static void done_frame(struct rx *x)
{
	pthread_mutex_lock(&x->m);
	x->consumed++;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
}

/* ------------------------------------------------------------ writing */

/* The stream broke: counted as one failure, its reason as the path. */
static void stream_error(struct rx *x, const char *why, int status)
{
	copy_report(x->c, why ? why : "the stream", status);
}

/* The sources: the writer's root and each source's place under it. */
static int on_sources(struct rx *x, struct slot *s, const char *dst)
{
	struct bfo_copier *c = x->c;
	uint8_t *meta = s->buf + WIRE_HEAD_LEN;
	char *single = NULL;
	bool dst_is_dir;
	int ret;

	x->src = calloc(s->f.count ? s->f.count : 1, sizeof(*x->src));
	x->prefix = calloc(s->f.count ? s->f.count : 1, sizeof(*x->prefix));
	if (!x->src || !x->prefix)
		return -ENOMEM;
	if ((ret = wire_sources_parse(meta, &s->f, x->src, &s->why))) {
		stream_error(x, s->why, ret);
		return ret;
	}
	if (!s->f.count)
		return 0;                   /* nothing to copy: no destination to open */
	ret = copy_dest(dst, s->f.count, x->src[0].dir, &dst_is_dir, &c->root, &single);
	for (uint32_t i = 0; !ret && i < s->f.count; i++) {
		const struct wire_source *w = &x->src[i];

		x->prefix[i] = dst_is_dir ? strndup(w->name, w->name_len) :
			       strdup(single ? single : "");
		if (!x->prefix[i])
			ret = -ENOMEM;
	}
	free(single);
	for (uint32_t i = 0; i < s->f.count; i++)
		x->src[i].name = NULL;      /* the frame's buffer is reused */
	if (!ret)
		ret = bfo_writer_open(&c->w, c->root, &c->wo);
	if (!ret) {
		/* a cancel or a broken stream stops its batch too */
		writer_cancel_with(c->w, &c->cancel, &x->broken);
		x->root_fd = writer_root_fd(c->w);
	}
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

	if (w->offset && !later_piece(x, w, e->path))
		return false;
	if (!w->hash_ok) {
		copy_report(x->c, e->path, -EBADMSG);
		keep = false;
	} else if (!w->offset && (x->c->flags & BFO_COPY_UPDATE) && !(w->flags & WIRE_E_ABORT) &&
		   copy_unchanged(x->c, x->root_fd, e->path, w->size, w->mtime_sec, w->mtime_nsec,
				  more ? NULL : w->data)) {
		keep = false;
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
	e->flags |= (more ? BFO_WENTRY_MORE : 0) | (w->flags & WIRE_E_ABORT ? BFO_WENTRY_ABORT : 0);
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
		stream_error(x, "a record puts a path below a source that is not a directory", -EINVAL);
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
			stream_error(x, "a record that is not a directory names the destination", -EINVAL);
		return false;
	}
	if (w->type == BFO_WTYPE_FILE)
		return file_entry(x, w, e);
	if (w->type == BFO_WTYPE_HARDLINK) {
		e->data = dest(x, at, w->target_src, w->target, w->target_len);
		if (!e->data || !*(const char *)e->data) {
			stream_error(x, "a hard link to a path outside the copy", -EINVAL);
			return false;
		}
	} else if (w->type == BFO_WTYPE_SYMLINK) {
		char *t = x->names + *at;

		memcpy(t, w->target, w->target_len);
		t[w->target_len] = '\0';
		*at += w->target_len + 1;
		e->data = t;
	}
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
		struct slot *s = next_frame(x);
		int ret;

		if (!s)
			break;
		ret = s->status;

		if (!ret && s->eof) {
			stream_error(x, "the stream ends before its end frame (the sender or its connection died)",
				     -EPIPE);
		} else if (ret) {
			stream_error(x, s->why, ret);
		} else if (s->f.kind == WIRE_SOURCES) {
			ret = on_sources(x, s, dst);
			sources = !ret;
		} else if (s->f.kind == WIRE_BATCH && atomic_load(&x->broken)) {
			ret = 0;        /* the stream broke after it: dropped (see rx.broken) */
		} else if (s->f.kind == WIRE_BATCH) {
			ret = on_batch(x, s);
			if (!ret && x->too_many)
				ret = -EMFILE;
			if (ret)
				stream_error(x, ret == -EMFILE ? "the stream has too many files in pieces at once" :
					   "no memory for a batch", ret);
		} else {
			wire_end_parse(s->buf + WIRE_HEAD_LEN, &s->f, &x->end, &s->why);
			x->ended = true;
		}
		done_frame(x);
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

/* The stream's START: 0, or -errno with the reason reported. */
static int read_start(struct rx *x)
{
	uint8_t b[WIRE_START_LEN];
	const char *why = NULL;
	ssize_t k = read_full(x->fd, b, sizeof(b), -1, &x->c->cancel);
	int ret;

	if (k == -ECANCELED)
		return (int)k;
	if (k < 0) {
		stream_error(x, "reading the stream failed", (int)k);
		return (int)k;
	}
	if (k == 0) {
		why = "the stream is empty (the sender failed before it began?)";
		ret = -ENODATA;
	} else if (k < (ssize_t)sizeof(b)) {
		why = "not a bfo stream (too short)";
		ret = -EBADMSG;
	} else {
		ret = wire_start_parse(b, &x->flags, &why);
	}
	if (ret)
		stream_error(x, why, ret);
	return ret;
}

/* The end: the sender's totals against what came, the root's metadata. */
static void finish(struct rx *x)
{
	struct bfo_copier *c = x->c;

	if (x->ended && x->end.entries != x->records)
		stream_error(x, "the stream lost records (its end frame counts others)", -EBADMSG);
	if (x->ended && x->end.errors) {
		char why[96];

		snprintf(why, sizeof(why), "the sender could not read %llu entries (named by the sender)",
			 (unsigned long long)x->end.errors);
		stream_error(x, why, -EIO);
	}
	if (x->have_root_meta && c->archive && !atomic_load(&c->cancel) && x->root_fd >= 0) {
		int ret = meta_apply(x->root_fd, false, &x->root_meta, false, false);

		if (ret)
			copy_report(c, c->root, ret);
	}
}

static int recv_run(struct bfo_copier *c, struct rx *x, const char *dst)
{
	int ret = read_start(x);

	if (ret)
		return ret;
	for (int i = 0; i < NSLOTS; i++) {
		x->slot[i].cap = WIRE_HEAD_LEN;
		if (!(x->slot[i].buf = malloc(WIRE_HEAD_LEN)))
			return -ENOMEM;
	}
	if (pipe2(x->stopfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	if (pthread_create(&x->thread, NULL, reader, x))
		return -EAGAIN;
	x->started = true;
	ret = receive(x, dst);
	if (!ret && c->w) {
		int r;

		bfo_writer_stats(c->w, &x->wst);
		r = bfo_writer_close(c->w);       /* drops files whose pieces stopped */

		c->w = NULL;
		if (r)
			copy_report(c, c->root, r);
		finish(x);
	}
	return ret;
}

BFO_API int bfo_copier_recv(struct bfo_copier *c, int fd, const char *dst)
{
	struct rx x = { .c = c, .fd = fd, .nsources = UINT32_MAX, .root_fd = -1,
			.stopfd = { -1, -1 } };
	int ret;

	if (!c || fd < 0 || !dst || !*dst)
		return -EINVAL;
	copy_run_reset(c);
	pthread_mutex_init(&x.m, NULL);
	pthread_cond_init(&x.cv, NULL);
	ret = recv_run(c, &x, dst);
	if (x.started) {
		/* The reader may wait for a slot or for the stream (when this
		 * side stopped early): both wake it. */
		pthread_mutex_lock(&x.m);
		x.stop = true;
		pthread_cond_broadcast(&x.cv);
		pthread_mutex_unlock(&x.m);
		if (write(x.stopfd[1], "", 1) < 0) {
			/* a full pipe already wakes it */
		}
		pthread_join(x.thread, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (x.stopfd[i] >= 0)
			close(x.stopfd[i]);
	if (c->w) {
		bfo_writer_stats(c->w, &x.wst);
		bfo_writer_close(c->w);
		c->w = NULL;
	}
	if (x.root_fd >= 0)
		close(x.root_fd);
	rx_free(&x);
	free(c->root);
	free(c->e);
	c->root = NULL;
	c->e = NULL;
	c->cap = 0;
	pthread_mutex_lock(&c->lock);
	c->st.write_engine = x.wst.engine;
	c->st.ns_total = bfo_now_ns() - c->t0;
	if (!ret)
		ret = atomic_load(&c->cancel) ? -ECANCELED : (int)MIN(c->st.errors, (uint64_t)INT32_MAX);
	pthread_mutex_unlock(&c->lock);
	copy_progress(c, true);
	return ret;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BFO_m: copy trees with the read engine on the sources and a writer on the
 * destination, at once.  Regular files stream out of the read engine in
 * disk order; directories, symbolic links and special files come from the
 * walk.  Entries collect into a batch until it holds a quarter of the read
 * arena (or BATCH_MAX_ENTRIES), then go to the writer as one batch while
 * the read engine keeps reading into the rest of its arena: reading and
 * writing overlap, memory stays bounded.
 *
 * Where a read result goes: each submitted file has a two-byte source
 * number (by read index); the destination is that source's prefix plus the
 * path below the source's root.
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
#include "meta.h"
#include "send.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

/* ---------------------------------------------------------- bookkeeping */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = MAX(*cap * 2, MAX(need, 64));
	void *q = realloc(*p, c * elem);

	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

void copy_report(struct bfo_copier *c, const char *path, int status)
{
	pthread_mutex_lock(&c->lock);
	c->st.errors++;
	pthread_mutex_unlock(&c->lock);
	if (c->cb.error)
		c->cb.error(c->cb.arg, path, status);
}

void copy_progress(struct bfo_copier *c, bool force)
{
	uint64_t now = bfo_now_ns();
	struct bfo_copy_stats st;

	if (!c->cb.progress || (!force && now - c->last_progress < PROGRESS_NS))
		return;
	c->last_progress = now;
	bfo_copier_stats(c, &st);
	c->cb.progress(c->cb.arg, &st);
}

static char *own(struct bfo_copier *c, char *s)
{
	if (!s || !grow((void **)&c->owned, &c->capowned, c->nowned + 1, sizeof(*c->owned))) {
		free(s);
		c->oom = true;
		return NULL;
	}
	c->owned[c->nowned++] = s;
	return s;
}

static struct bfo_wentry *add(struct bfo_copier *c)
{
	if (!grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)) ||
	    (c->out && !grow((void **)&c->sizes, &c->capsizes, c->n + 1, sizeof(*c->sizes)))) {
		c->oom = true;
		return NULL;
	}
	memset(&c->e[c->n], 0, sizeof(c->e[0]));
	return &c->e[c->n++];
}

static char *join(const char *a, const char *b)
{
	char *p = malloc(strlen(a) + strlen(b) + 2);

	if (p)
		sprintf(p, "%s%s%s", a, *a && *b ? "/" : "", b);
	return p;
}

/* Packed xattrs of src (name, NUL, uint32 length, value), owned by the batch. */
static void take_xattrs(struct bfo_copier *c, const char *src, struct bfo_wentry *e)
{
	ssize_t n = llistxattr(src, NULL, 0);
	char *names, *buf;
	size_t cap = 256, len = 0;

	if (n <= 0)
		return;
	names = malloc((size_t)n);
	buf = malloc(cap);
	if (!names || !buf || (n = llistxattr(src, names, (size_t)n)) <= 0) {
		free(names);
		free(buf);
		return;
	}
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t vl = lgetxattr(src, k, NULL, 0);
		size_t kl = strlen(k) + 1;

		if (vl < 0)
			continue;
		while (len + kl + sizeof(uint32_t) + (size_t)vl > cap)
			cap *= 2;
		char *nb = realloc(buf, cap);

		if (!nb)
			break;
		buf = nb;
		vl = lgetxattr(src, k, buf + len + kl + sizeof(uint32_t), (size_t)vl);
		if (vl < 0)
			continue;
		uint32_t v32 = (uint32_t)vl;

		memcpy(buf + len, k, kl);
		memcpy(buf + len + kl, &v32, sizeof(v32));
		len += kl + sizeof(v32) + (size_t)vl;
	}
	free(names);
	if (!len || !own(c, buf)) {
		if (!len)
			free(buf);
		return;
	}
	e->xattrs = buf;
	e->xattrs_len = len;
}

void copy_meta(const struct copy_who *who, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
	       uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn)
{
	e->mode = mode & 07777;
	if (!who->archive) {
		/* cp -r: the source's permission bits (sticky included) less
		 * the umask, no set-id bits, the current time, owned by whoever
		 * copies. */
		e->mode &= 01777 & ~who->umask;
		return;
	}
	/* Set-id bits only go with the owner they belong to: when the copy
	 * cannot be given the source's owner or group, cp -a drops them, and
	 * so does this. */
	if (!who->is_root) {
		if (uid != who->euid)
			e->mode &= ~(uint32_t)S_ISUID;
		if (gid != who->egid)
			e->mode &= ~(uint32_t)S_ISGID;
	}
	e->flags |= BFO_WENTRY_TIMES;
	e->atime_sec = as;
	e->atime_nsec = an;
	e->mtime_sec = ms;
	e->mtime_nsec = mn;
	if (who->is_root) {
		e->flags |= BFO_WENTRY_OWNER;
		e->uid = uid;
		e->gid = gid;
	}
}

void copy_who_init(struct copy_who *who, bool archive)
{
	who->archive = archive;
	who->is_root = geteuid() == 0;
	who->euid = geteuid();
	who->egid = getegid();
	who->umask = process_umask();
}

bool copy_unchanged(struct bfo_copier *c, int rootfd, const char *path, uint64_t size,
		    int64_t msec, uint32_t mnsec, const void *data)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(path, dir, sizeof(dir));
	/* resolved as the writer resolves it: no symbolic link followed */
	int dfd = rootfd < 0 ? -1 : wpath_open_dir(rootfd, dir, false);
	struct stat st;
	bool same;

	if (dfd < 0 || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
		if (dfd >= 0)
			close(dfd);
		return false;
	}
	if (!(c->flags & BFO_COPY_CHECKSUM)) {
		same = st.st_mtim.tv_sec == msec && (uint64_t)st.st_mtim.tv_nsec == mnsec;
	} else {
		/* The content, whatever the times; a file in pieces (no data
		 * whole here) is copied again. */
		int fd = data ? openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
		char buf[65536];
		uint64_t at = 0;
		ssize_t k = 0;

		while (fd >= 0 && at < size && (k = read(fd, buf, MIN(sizeof(buf), size - at))) > 0 &&
		       !memcmp(buf, (const char *)data + at, (size_t)k))
			at += (uint64_t)k;
		same = fd >= 0 && at == size;
		if (fd >= 0)
			close(fd);
	}
	close(dfd);
	if (same) {
		pthread_mutex_lock(&c->lock);
		c->st.skipped++;
		pthread_mutex_unlock(&c->lock);
	}
	return same;
}

/* A sender passes the source's metadata on whole: the receiver decides
 * what its copy may take. */
static void meta_from(struct bfo_copier *c, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
		      uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn)
{
	if (c->out) {
		e->mode = mode & 07777;
		e->uid = uid;
		e->gid = gid;
		e->atime_sec = as;
		e->atime_nsec = an;
		e->mtime_sec = ms;
		e->mtime_nsec = mn;
		return;
	}
	copy_meta(&c->who, e, mode, uid, gid, as, an, ms, mn);
}

/* ---------------------------------------------------------- batches */

void copy_batch_done(struct bfo_copier *c)
{
	uint64_t files = 0, others = 0, bytes = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct bfo_wentry *e = &c->e[i];

		/* Not begun: the batch was stopped (a cancel, a broken stream,
		 * or STOP_ON_ERROR after a failure that is reported). */
		if (e->status == -ECANCELED)
			continue;
		if (e->status) {
			char *full = c->root ? join(c->root, e->path) : NULL;

			copy_report(c, full ? full : e->path, e->status);
			free(full);
		} else if (e->type == BFO_WTYPE_FILE) {
			bytes += e->length;
			files += !(e->flags & (BFO_WENTRY_MORE | BFO_WENTRY_ABORT));
		} else {
			others++;
		}
	}
	pthread_mutex_lock(&c->lock);
	c->st.files += files;
	c->st.others += others;
	c->st.bytes += bytes;
	c->st.batches++;
	pthread_mutex_unlock(&c->lock);
}

/* A batch of bfo_copier_send goes on the stream; when the stream cannot
 * be written (the receiver went away), it and the rest of the run fail. */
static void send_batch(struct bfo_copier *c)
{
	int ret = atomic_load(&c->cancel) ? 0 : wire_out_batch(c->out, c->e, c->sizes, c->n);

	if (atomic_load(&c->cancel) || ret) {
		if (ret && ret != -ECANCELED) {     /* a cancel cut the frame short: ours */
			copy_report(c, ret == -EPIPE ? "the receiver went away" : "writing the stream", ret);
			c->send_err = ret;
			atomic_store(&c->cancel, true);
		}
		c->n = 0;
	}
}

/* Write the batch, report its failures, give the read entries back;
 * cancelled, the batch is dropped unwritten. */
static void flush(struct bfo_copier *c)
{
	if (atomic_load(&c->cancel))
		c->n = 0;
	if (c->n && c->out)
		send_batch(c);
	if (c->n) {
		if (!c->out)
			bfo_writer_write(c->w, c->e, (unsigned)c->n);   /* failures: in the statuses */
		copy_batch_done(c);
	}
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

static void maybe_flush(struct bfo_copier *c)
{
	if (c->batch_bytes >= c->batch_bytes_max || c->n >= BATCH_MAX_ENTRIES)
		flush(c);
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

	return own(c, s->file ? strdup(s->prefix) : join(s->prefix, rel));
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
	if (f->offset > 0 && (e = add(c))) {    /* earlier pieces were written */
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

		if (d && grow((void **)&c->hls, &c->caphls, c->nhls + 1, sizeof(*c->hls)))
			c->hls[c->nhls++] = (struct hl){ f->dev, f->ino, d, !last, NULL, 0 };
		else
			free(d);
		return false;
	}
	if (!last && grow((void **)&c->skip, &c->capskip, c->nskip + 1, sizeof(*c->skip)))
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
	if ((e = add(c))) {
		e->path = dest;
		e->type = BFO_WTYPE_HARDLINK;
		e->data = h->dest;
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
		struct bfo_wentry *l = add(c);

		if (!l)
			break;
		l->path = own(c, h->waiting[k]);
		l->type = BFO_WTYPE_HARDLINK;
		l->data = h->dest;
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

	if (!grow((void **)&c->held, &c->capheld, c->nheld + 1, sizeof(*c->held))) {
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
	if ((c->flags & BFO_COPY_UPDATE) && f->offset == 0 &&
	    copy_unchanged(c, c->dst_fd, dest, f->size, f->mtime_sec, f->mtime_nsec,
			   last ? f->data : NULL)) {
		if (!last && grow((void **)&c->skip, &c->capskip, c->nskip + 1, sizeof(*c->skip)))
			c->skip[c->nskip++] = f->index;   /* its later pieces too */
		goto done;
	}
	if (!(e = add(c)))
		goto done;
	e->path = dest;
	e->type = BFO_WTYPE_FILE;
	e->data = f->data;
	e->length = f->length;
	e->offset = f->offset;
	if (c->out)
		c->sizes[c->n - 1] = f->size;
	if (!last)
		e->flags |= BFO_WENTRY_MORE;
	meta_from(c, e, f->mode, f->uid, f->gid, f->atime_sec, f->atime_nsec, f->mtime_sec,
		  f->mtime_nsec);
	/* A file in pieces takes its metadata, xattrs included, with its
	 * last piece (when it gets its name). */
	if (c->archive && last)
		take_xattrs(c, f->path, e);
	if (last && f->offset > 0 && c->archive && f->nlink > 1)
		links_follow(c, f, dest);
	c->batch_bytes += f->length;
done:
	maybe_flush(c);
}

/* Take what the read engine has ready; with final, everything until the
 * read batch has ended. */
static void drain(struct bfo_copier *c, int timeout_ms, bool final)
{
	struct bfo_file files[256];
	int k;

	if (!c->reading)
		return;                  /* nothing submitted: no batch to wait on */
	for (;;) {
		/* Cancelled: the reads in flight end, no more start, and what
		 * still comes is dropped (flush writes nothing). */
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
			flush(c);
			continue;
		}
		if (k < 0 && k != -ETIME && k != -EAGAIN)
			copy_report(c, "(read engine)", k);
		return;
	}
}

/* Queue a source regular file; its bytes arrive through on_read. */
static void submit_file(struct bfo_copier *c, const char *src, uint16_t srcno)
{
	int ret;

	while ((ret = bfo_read_submit(c->rctx, &src, 1)) == 0)
		drain(c, 50, false);
	if (ret < 0) {
		copy_report(c, src, ret);
		return;
	}
	c->reading = true;
	if (!grow((void **)&c->src_of, &c->capsub, c->nsub + 1, sizeof(*c->src_of))) {
		c->oom = true;
		return;
	}
	c->src_of[c->nsub++] = srcno;
}

/* Directories, symbolic links and special files go straight into the batch. */
static void add_other(struct bfo_copier *c, const char *src, const char *dest, const struct stat *st)
{
	struct bfo_wentry *e;

	if (!(e = add(c)) || !(e->path = own(c, strdup(dest)))) {
		if (e)
			c->n--;
		return;
	}
	meta_from(c, e, st->st_mode, st->st_uid, st->st_gid, st->st_atim.tv_sec,
		  (uint32_t)st->st_atim.tv_nsec, st->st_mtim.tv_sec, (uint32_t)st->st_mtim.tv_nsec);
	if (S_ISDIR(st->st_mode)) {
		e->type = BFO_WTYPE_DIR;
	} else if (S_ISLNK(st->st_mode)) {
		size_t cap = (size_t)st->st_size + 2 > 4096 ? (size_t)st->st_size + 2 : 4096;
		char *t = malloc(cap);
		ssize_t k = t ? readlink(src, t, cap - 1) : -1;

		if (k < 0) {
			copy_report(c, src, t ? -errno : -ENOMEM);
			free(t);
			c->n--;
			return;
		}
		t[k] = '\0';
		e->type = BFO_WTYPE_SYMLINK;
		e->data = own(c, t);
	} else if (S_ISFIFO(st->st_mode)) {
		e->type = BFO_WTYPE_FIFO;
	} else if (S_ISSOCK(st->st_mode)) {
		e->type = BFO_WTYPE_SOCK;      /* a node, as cp makes: nothing listens */
	} else {
		e->type = S_ISCHR(st->st_mode) ? BFO_WTYPE_CHR : BFO_WTYPE_BLK;
		e->rdev = (uint64_t)major(st->st_rdev) << 32 | minor(st->st_rdev);
	}
	if (c->archive)
		take_xattrs(c, src, e);
	maybe_flush(c);
}

/* Directories the walk could not read, named through the error callback. */
static void report_walk_failures(struct bfo_copier *c, struct walk *wk)
{
	char *path;
	int status;

	while (walk_failure(wk, &path, &status)) {
		copy_report(c, path, status);
		free(path);
	}
}

/* Copy the tree at src (root of source srcno) to prefix. */
static void copy_tree(struct bfo_copier *c, const char *src, const char *prefix, uint16_t srcno)
{
	struct walk *wk = walk_start(src, WALK_THREADS, WALK_BATCH, WALK_SORT | WALK_NOFOLLOW | WALK_ALL);
	struct walk_file *batch;
	size_t n, slen = strlen(src);
	uint64_t skipped_n = 0, errors = 0;

	if (!wk) {
		copy_report(c, src, -ENOMEM);
		return;
	}
	while (!atomic_load(&c->cancel) && (n = walk_next(wk, &batch)) > 0) {
		for (size_t i = 0; i < n && !atomic_load(&c->cancel); i++) {
			const char *p = batch[i].path;
			char *dest;
			struct stat st;

			if (batch[i].type == DT_REG) {
				submit_file(c, p, srcno);
				continue;
			}
			if (batch[i].st)
				st = *batch[i].st;   /* taken before the walk read it */
			else if (lstat(p, &st) < 0) {
				copy_report(c, p, -errno);
				continue;
			}
			if (S_ISREG(st.st_mode)) {
				submit_file(c, p, srcno);
				continue;
			}
			dest = join(prefix, p + slen + (p[slen] == '/'));
			if (dest)
				add_other(c, p, dest, &st);
			free(dest);
		}
		report_walk_failures(c, wk);
		drain(c, 0, false);
	}
	report_walk_failures(c, wk);
	walk_end(wk, &skipped_n, &errors);
	/* Failures beyond the walk's bound were only counted: count them too. */
	if (errors) {
		pthread_mutex_lock(&c->lock);
		c->st.errors += errors;
		pthread_mutex_unlock(&c->lock);
	}
}

/* The destination root stands for a source directory: its xattrs too. */
static void copy_root_xattrs(const char *src, int dst)
{
	ssize_t n = llistxattr(src, NULL, 0);
	char *names = n > 0 ? malloc((size_t)n) : NULL;

	if (!names || (n = llistxattr(src, names, (size_t)n)) <= 0) {
		free(names);
		return;
	}
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t vl = lgetxattr(src, k, NULL, 0);
		char *v = vl >= 0 ? malloc((size_t)vl + 1) : NULL;

		if (v && (vl = lgetxattr(src, k, v, (size_t)vl)) >= 0)
			fsetxattr(dst, k, v, (size_t)vl, 0);
		free(v);
	}
	free(names);
}

/* ---------------------------------------------------------- the API */

/*
 * The name a source takes inside an existing destination directory.  cp
 * copies SRC/., SRC/.. (and SRC/./, SRC/../) into the directory itself,
 * not to DST/. or DST/..: their contents go into DST, whose own metadata
 * becomes the source's.  "" says so; "/" (the source "/") likewise.
 */
const char *into_name(const char *base)
{
	if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(base, "/"))
		return "";
	return base;
}

BFO_API int bfo_copier_create(struct bfo_copier **out, const struct bfo_opts *ropts,
			      const struct bfo_write_opts *wopts, uint32_t flags,
			      const struct bfo_copy_callbacks *cb)
{
	struct bfo_copier *c;

	if (!out || (flags & ~(BFO_COPY_ARCHIVE | BFO_COPY_REPLACE | BFO_COPY_UPDATE |
			       BFO_COPY_CHECKSUM)) ||
	    ((flags & BFO_COPY_CHECKSUM) && !(flags & BFO_COPY_UPDATE)))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	bfo_opts_init(&c->ro);
	if (ropts)
		c->ro = *ropts;
	c->wo.size = sizeof(c->wo);
	if (wopts)
		c->wo = *wopts;
	c->wo.size = sizeof(c->wo);
	/* A copy promises durability when it returns, not per batch: its
	 * batches share syncfs calls (each still journaled first). */
	if (c->wo.durability == BFO_DURABILITY_BATCH)
		c->wo.durability = BFO_DURABILITY_CLOSE;
	if (flags & (BFO_COPY_REPLACE | BFO_COPY_UPDATE))
		c->wo.flags |= BFO_WRITE_REPLACE;
	c->flags = flags;
	if (cb)
		c->cb = *cb;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static void run_cleanup(struct bfo_copier *c)
{
	for (size_t i = 0; i < c->nsrcs; i++) {
		free(c->srcs[i].root);
		free(c->srcs[i].prefix);
	}
	for (size_t i = 0; i < c->nhls; i++) {
		free(c->hls[i].dest);
		for (size_t k = 0; k < c->hls[i].nwaiting; k++)
			free(c->hls[i].waiting[k]);
		free(c->hls[i].waiting);
	}
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	free(c->srcs);
	free(c->sizes);
	c->sizes = NULL;
	c->capsizes = 0;
	free(c->src_of);
	free(c->skip);
	free(c->hls);
	free(c->e);
	free(c->owned);
	free(c->held);
	free(c->root);
	c->srcs = NULL;
	c->src_of = NULL;
	c->skip = NULL;
	c->hls = NULL;
	c->e = NULL;
	c->owned = NULL;
	c->held = NULL;
	c->root = NULL;
	c->nsrcs = c->nsub = c->capsub = c->nskip = c->capskip = c->nhls = c->caphls = 0;
	c->n = c->cap = c->nowned = c->capowned = c->nheld = c->capheld = 0;
}

/* One bfo_copier_run: what its steps share. */
struct run {
	bool send;                  /* bfo_copier_send: to a stream */
	bool dst_is_dir;
	char *single;               /* DST is the copy of one non-directory: its name */
	int root_fd;
	const char *root_meta_src;  /* the source directory the root itself stands for */
	struct stat root_meta_st;   /* its lstat, taken before the walk read it */
};

void copy_run_reset(struct bfo_copier *c)
{
	atomic_store(&c->cancel, false);
	pthread_mutex_lock(&c->lock);
	memset(&c->st, 0, sizeof(c->st));
	memset(&c->rst, 0, sizeof(c->rst));
	pthread_mutex_unlock(&c->lock);
	c->t0 = bfo_now_ns();
	c->archive = c->flags & BFO_COPY_ARCHIVE;
	copy_who_init(&c->who, c->archive);
	c->oom = false;
	c->send_err = 0;
	c->dst_fd = -1;
	c->reading = false;
}

int copy_dest(const char *dst, unsigned nsrc, bool first_is_dir, bool *dst_is_dir,
	      char **root, char **single)
{
	struct stat st;

	*root = *single = NULL;
	*dst_is_dir = stat(dst, &st) == 0 && S_ISDIR(st.st_mode);
	if (nsrc > 1 && !*dst_is_dir)
		return -ENOTDIR;
	if (*dst_is_dir || first_is_dir) {
		*root = strdup(dst);
	} else {
		char *d1 = strdup(dst), *d2 = strdup(dst);

		if (d1 && d2) {
			*root = strdup(dirname(d1));
			*single = strdup(basename(d2));
		}
		free(d1);
		free(d2);
		if (!*single) {
			free(*root);
			*root = NULL;
		}
	}
	return *root ? 0 : -ENOMEM;
}

/* The writer's root (c->root) by cp's rules; 1 when the one source is
 * missing (reported: DST is not the problem). */
static int run_dest(struct bfo_copier *c, struct run *r, const char *const *srcs, unsigned nsrc,
		    const char *dst)
{
	struct stat dst_st, src_st = { 0 };
	bool dir = stat(dst, &dst_st) == 0 && S_ISDIR(dst_st.st_mode);

	if (!dir && nsrc == 1 && lstat(srcs[0], &src_st) < 0) {
		copy_report(c, srcs[0], -errno);
		return 1;
	}
	return copy_dest(dst, nsrc, !dir && nsrc == 1 && S_ISDIR(src_st.st_mode), &r->dst_is_dir,
			 &c->root, &r->single);
}

/* The writer on the root, then the read engine. */
static int run_open(struct bfo_copier *c, struct run *r)
{
	struct bfo_opts d;
	int ret = bfo_writer_open(&c->w, c->root, &c->wo);

	if (ret)
		return ret;
	writer_cancel_with(c->w, &c->cancel, NULL);   /* a cancel stops its batch too */
	/* The root's own metadata (when it stands for a source directory)
	 * goes to the directory the writer opened, not to whatever has its
	 * name by the end. */
	r->root_fd = writer_root_fd(c->w);
	c->dst_fd = r->root_fd;
	ret = bfo_ctx_create(&c->rctx, &c->ro);
	if (ret) {
		bfo_writer_close(c->w);
		c->w = NULL;
		if (r->root_fd >= 0)
			close(r->root_fd);
		r->root_fd = -1;
		return ret;
	}
	/* A batch takes at most a quarter of the read arena: the engine reads
	 * ahead into the rest while the batch is written. */
	bfo_opts_init(&d);
	c->batch_bytes_max = (c->ro.arena_bytes ? c->ro.arena_bytes : d.arena_bytes) / 4;
	return 0;
}

/* Source src gets the next slot of c->srcs and goes to the read engine
 * (a file), the walk (a directory) or the batch (anything else).  false:
 * out of memory, the run stops taking sources. */
static bool copy_source(struct bfo_copier *c, struct run *r, const char *src,
			const struct stat *st)
{
	uint16_t srcno = (uint16_t)c->nsrcs;   /* sources that failed have no slot */
	struct src *s = &c->srcs[srcno];
	struct stat src_st;
	char *sc, *b;

	if (st) {
		src_st = *st;
	} else if (lstat(src, &src_st) < 0) {
		copy_report(c, src, -errno);
		return true;
	}
	sc = strdup(src);
	if (!sc) {
		c->oom = true;
		return false;
	}
	for (size_t l = strlen(sc); l > 1 && sc[l - 1] == '/'; l--)
		sc[l - 1] = '\0';
	b = strdup(sc);
	if (r->send) {
		/* The stream names the source by number; the receiver maps it. */
		if (b && asprintf(&s->prefix, "%u", srcno) < 0)
			s->prefix = NULL;
	} else {
		s->prefix = b ? strdup(r->dst_is_dir ? into_name(basename(b)) :
				       (r->single ? r->single : "")) : NULL;
	}
	free(b);
	if (!s->prefix) {
		free(sc);
		c->oom = true;
		return false;
	}
	s->root = sc;
	s->len = strlen(sc);
	s->file = !S_ISDIR(src_st.st_mode);
	c->nsrcs++;
	if (S_ISDIR(src_st.st_mode)) {
		if (*s->prefix) {
			add_other(c, src, s->prefix, &src_st);
		} else {
			r->root_meta_src = src;   /* the root itself is the copy */
			r->root_meta_st = src_st; /* as it was before the walk read it */
		}
		copy_tree(c, sc, s->prefix, srcno);
	} else if (S_ISREG(src_st.st_mode)) {
		submit_file(c, sc, srcno);
	} else {
		add_other(c, src, s->prefix, &src_st);
	}
	drain(c, 0, false);
	return true;
}

/* The reads still coming are written (or, cancelled, dropped). */
static void run_drain(struct bfo_copier *c)
{
	if (atomic_load(&c->cancel)) {
		if (c->reading) {
			bfo_read_cancel(c->rctx);
			drain(c, -1, true);
		}
		c->n = 0;                    /* the unwritten batch is dropped */
	} else if (c->reading) {
		bfo_read_finish(c->rctx);
		drain(c, -1, true);
	}
	flush(c);
}

/* The root standing for a source directory gets its metadata too, once
 * everything inside it is written. */
static void root_meta(struct bfo_copier *c, struct run *r)
{
	const struct stat *st = &r->root_meta_st;
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	if (r->root_fd < 0)
		copy_report(c, c->root, -EBADF);
	else if (c->who.is_root && fchown(r->root_fd, st->st_uid, st->st_gid) < 0)
		copy_report(c, c->root, -errno);
	if (r->root_fd >= 0)
		copy_root_xattrs(r->root_meta_src, r->root_fd);
	if (r->root_fd >= 0 && (fchmod(r->root_fd, st->st_mode & 07777) < 0 ||
				futimens(r->root_fd, ts) < 0))
		copy_report(c, c->root, -errno);
}

/* Writer and reader end; the run's statistics and result. */
static int run_close(struct bfo_copier *c, struct run *r)
{
	struct bfo_stats rst;
	struct bfo_write_stats wst;
	int ret;

	bfo_read_stats(c->rctx, &rst);
	bfo_writer_stats(c->w, &wst);
	ret = bfo_writer_close(c->w);
	if (ret)
		copy_report(c, c->root, ret);
	if (r->root_meta_src && c->archive && !atomic_load(&c->cancel))
		root_meta(c, r);
	if (r->root_fd >= 0)
		close(r->root_fd);
	bfo_ctx_destroy(c->rctx);
	c->rctx = NULL;
	c->w = NULL;
	pthread_mutex_lock(&c->lock);
	c->st.read_engine = rst.engine;
	c->rst = rst;
	c->st.write_engine = wst.engine;
	c->st.ns_total = bfo_now_ns() - c->t0;
	if (c->oom)
		c->st.errors++;
	ret = atomic_load(&c->cancel) ? -ECANCELED : c->oom ? -ENOMEM :
	      (int)MIN(c->st.errors, (uint64_t)INT32_MAX);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

BFO_API int bfo_copier_run(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
			   const char *dst)
{
	struct run r = { .root_fd = -1 };
	int ret;

	if (!c || !srcs || !nsrc || !dst || nsrc > UINT16_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < nsrc; i++)
		if (!srcs[i] || !*srcs[i])
			return -EINVAL;
	copy_run_reset(c);
	ret = run_dest(c, &r, srcs, nsrc, dst);
	if (ret) {
		free(r.single);
		return ret;
	}
	ret = run_open(c, &r);
	if (ret) {
		free(c->root);
		c->root = NULL;
		free(r.single);
		return ret;
	}
	c->srcs = calloc(nsrc, sizeof(*c->srcs));
	if (!c->srcs)
		c->oom = true;
	for (unsigned i = 0; c->srcs && i < nsrc && !atomic_load(&c->cancel); i++)
		if (!copy_source(c, &r, srcs[i], NULL))
			break;
	run_drain(c);
	ret = run_close(c, &r);
	copy_progress(c, true);
	run_cleanup(c);
	free(r.single);
	return ret;
}

/* The sources that exist, as the stream's SOURCES frame names them
 * (missing ones are reported and left out); their lstat in st. */
static uint32_t send_sources(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
			     struct wire_source *tab, char **names, struct stat *st, const char **kept)
{
	uint32_t k = 0;

	for (unsigned i = 0; i < nsrc; i++) {
		char *b;

		if (lstat(srcs[i], &st[k]) < 0) {
			copy_report(c, srcs[i], -errno);
			continue;
		}
		b = strdup(srcs[i]);
		for (size_t l = b ? strlen(b) : 0; l > 1 && b[l - 1] == '/'; l--)
			b[l - 1] = '\0';
		names[k] = b ? strdup(into_name(basename(b))) : NULL;
		free(b);
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

/* Sources, batches and the end, on the stream. */
static int send_run(struct bfo_copier *c, const char *const *srcs, unsigned nsrc, int fd)
{
	struct wire_source *tab = calloc(nsrc, sizeof(*tab));
	struct stat *st = calloc(nsrc, sizeof(*st));
	const char **kept = calloc(nsrc, sizeof(*kept));
	char **names = calloc(nsrc, sizeof(*names));
	struct run r = { .send = true, .root_fd = -1 };
	struct wire_out out = { .fd = -1, .cancel = &c->cancel };
	struct wire_end end = { 0 };
	uint32_t k = 0;
	int ret = -ENOMEM;

	c->srcs = calloc(nsrc, sizeof(*c->srcs));
	if (tab && st && kept && names && c->srcs) {
		k = send_sources(c, srcs, nsrc, tab, names, st, kept);
		ret = wire_out_start(&out, fd, c->archive ? WIRE_F_ARCHIVE : 0, tab, k);
	}
	if (!ret) {
		c->out = &out;
		for (uint32_t i = 0; i < k && !atomic_load(&c->cancel); i++)
			if (!copy_source(c, &r, kept[i], &st[i]))
				break;
		run_drain(c);
		c->out = NULL;
		pthread_mutex_lock(&c->lock);
		end = (struct wire_end){ c->st.files, c->st.bytes, c->st.others,
					 c->st.errors + c->oom, 0 };
		pthread_mutex_unlock(&c->lock);
		if (!atomic_load(&c->cancel))
			ret = wire_out_end(&out, &end);
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

BFO_API int bfo_copier_send(struct bfo_copier *c, const char *const *srcs, unsigned nsrc, int fd)
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
	if (ret)
		return ret;
	bfo_opts_init(&d);
	/* As a local copy's: a quarter of the read arena a batch (a frame
	 * holds at most WIRE_DATA_MAX; larger batches go as several). */
	c->batch_bytes_max = (c->ro.arena_bytes ? c->ro.arena_bytes : d.arena_bytes) / 4;
	ret = send_run(c, srcs, nsrc, fd);
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
	run_cleanup(c);
	return ret;
}

BFO_API int bfo_copier_stats(struct bfo_copier *c, struct bfo_copy_stats *st)
{
	if (!c || !st)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	if (!st->ns_total && c->t0)
		st->ns_total = bfo_now_ns() - c->t0;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

BFO_API int bfo_copier_read_stats(struct bfo_copier *c, struct bfo_stats *st)
{
	if (!c || !st)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	*st = c->rst;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

BFO_API int bfo_copier_cancel(struct bfo_copier *c)
{
	if (!c)
		return -EINVAL;
	atomic_store(&c->cancel, true);
	return 0;
}

BFO_API void bfo_copier_destroy(struct bfo_copier *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c);
}

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
#include <stddef.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "copy.h"
#include "filter.h"
#include "write_meta.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

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
			       BFO_COPY_CHECKSUM | BFO_COPY_INTO | BFO_COPY_DELETE |
			       BFO_COPY_DRY_RUN)) ||
	    ((flags & BFO_COPY_CHECKSUM) && !(flags & BFO_COPY_UPDATE)))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->delete_max = UINT64_MAX;
	c->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wakefd < 0) {
		int e = errno;

		free(c);
		return -e;
	}
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
	/* UPDATE replaces only what it finds (BFO_WENTRY_REPLACE), so the
	 * new files of a copy are made without a temporary name. */
	if (flags & BFO_COPY_REPLACE)
		c->wo.flags |= BFO_WRITE_REPLACE;
	c->flags = flags;
	if (cb)
		c->cb = *cb;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

void copy_run_cleanup(struct bfo_copier *c)
{
	for (size_t i = 0; i < c->nsrcs; i++) {
		free(c->srcs[i].root);
		free(c->srcs[i].prefix);
		free(c->srcs[i].name);
	}
	copy_list_free(c);
	free(c->want_of);
	c->want_of = NULL;
	c->capwant = 0;
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
	c->overlap = false;
	c->n = c->cap = c->nowned = c->capowned = c->nheld = c->capheld = 0;
}

void copy_run_reset(struct bfo_copier *c)
{
	pthread_mutex_lock(&c->lock);
	memset(&c->st, 0, sizeof(c->st));
	memset(&c->rst, 0, sizeof(c->rst));
	pthread_mutex_unlock(&c->lock);
	c->t0 = bfo_now_ns();
	c->archive = c->flags & BFO_COPY_ARCHIVE;
	copy_who_init(&c->who, c->archive);
	c->oom = false;
	c->sink = &copy_writer_sink;      /* (a sender's run sets the stream's) */
	c->listing = false;
	c->list_errors = false;
	c->cut = false;
	c->list_seq = 0;
	c->list_rawmeta = 0;
	c->list_tree_bytes = 0;
	c->send_err = 0;
	c->nospace = 0;
	c->dst_fd = -1;
	c->reading = false;
	c->broken = NULL;
}

int copy_dest(const char *dst, unsigned nsrc, int first, bool into, bool *dst_is_dir,
	      bool *root_existed, char **root, char **single)
{
	struct stat st;
	size_t dl = strlen(dst);
	bool there = stat(dst, &st) == 0;

	*root = *single = NULL;
	*dst_is_dir = there && S_ISDIR(st.st_mode);
	*root_existed = *dst_is_dir;
	/* rsync's rule: DST is the directory the sources go into, made when
	 * missing, unless one file is copied onto a name (or one directory's
	 * contents, which then become DST: the same either way). */
	if (into && !there && (nsrc > 1 || first == COPY_SRC_DIR || (dl && dst[dl - 1] == '/')))
		*dst_is_dir = true;
	if (nsrc > 1 && !*dst_is_dir)
		return -ENOTDIR;
	if (*dst_is_dir || first != COPY_SRC_OTHER) {
		*root = strdup(dst);
		*root_existed = there;
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
		*root_existed = *root && stat(*root, &st) == 0;
	}
	return *root ? 0 : -ENOMEM;
}

char *copy_src_name(const char *src)
{
	char *b = strdup(src), *name;

	if (!b)
		return NULL;
	for (size_t l = strlen(b); l > 1 && b[l - 1] == '/'; l--)
		b[l - 1] = '\0';
	name = strdup(into_name(basename(b)));
	free(b);
	return name;
}

/* The writer's root (c->root) by cp's (or rsync's) rules; 1 when the one
 * source is missing (reported: DST is not the problem). */
static int run_dest(struct bfo_copier *c, struct run *r, const char *const *srcs, unsigned nsrc,
		    const char *dst)
{
	struct stat src_st;
	char *name;
	int first;

	if (lstat(srcs[0], &src_st) < 0) {
		if (nsrc == 1) {
			copy_report(c, srcs[0], -errno);
			return 1;
		}
		src_st.st_mode = 0;   /* reported with the sources */
	}
	if (!(name = copy_src_name(srcs[0])))
		return -ENOMEM;
	first = !S_ISDIR(src_st.st_mode) ? COPY_SRC_OTHER : *name ? COPY_SRC_DIR : COPY_SRC_CONTENTS;
	free(name);
	return copy_dest(dst, nsrc, first, c->flags & BFO_COPY_INTO, &r->dst_is_dir,
			 &r->root_existed, &c->root, &r->single);
}

int copy_writer_open(struct bfo_copier *c)
{
	struct stat a, b;
	int fd, ret;

	if (c->w)
		return 0;
	ret = bfo_writer_open(&c->w, c->root, &c->wo);
	if (ret)
		return ret;
	/* a cancel (or a receiver's broken stream) stops its batch too */
	writer_cancel_with(c->w, &c->cancel, c->broken);
	fd = writer_root_fd(c->w);
	if (fd < 0)
		return fd;
	if (c->dst_fd < 0) {
		c->dst_fd = fd;
		return 0;
	}
	/* What was compared is what is written: the same directory, or
	 * another user swapped the destination in between. */
	ret = fstat(fd, &a) < 0 || fstat(c->dst_fd, &b) < 0 ? -errno :
	      a.st_dev != b.st_dev || a.st_ino != b.st_ino ? -ESTALE : 0;
	close(fd);
	return ret;
}

/* The writer sink: the batch to the writer, opened on its first batch. */
static int writer_put(struct bfo_copier *c)
{
	int ret = copy_writer_open(c);

	if (!ret)
		bfo_writer_write(c->w, c->e, (unsigned)c->n);   /* failures: in the statuses */
	return ret;
}

const struct copy_sink copy_writer_sink = { .put = writer_put };

int copy_dest_open(struct bfo_copier *c, bool existed)
{
	int ret;

	/* A destination that was there is compared before anything is
	 * written, and the writer (its journal directory, a probe of the
	 * file system) opened only once something is to be written: a run
	 * that finds everything as it should be changes nothing.  Batches
	 * a crash left unfinished are recovered first, as the writer would. */
	if (c->flags & BFO_COPY_DRY_RUN) {
		/* nothing recovered, made or written: only looked at */
		c->dst_fd = existed ? open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
		return existed && c->dst_fd < 0 ? -errno : 0;
	}
	if (existed && (c->flags & BFO_COPY_UPDATE)) {
		ret = bfo_journal_recover(c->root, NULL);
		if (ret < 0)
			return ret;
		c->dst_fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c->dst_fd >= 0)
			return 0;
	}
	return copy_writer_open(c);
}

void copy_dest_close(struct bfo_copier *c)
{
	if (c->w)
		bfo_writer_close(c->w);
	c->w = NULL;
	if (c->dst_fd >= 0)
		close(c->dst_fd);
	c->dst_fd = -1;
}

/* The destination, then the read engine. */
static int run_open(struct bfo_copier *c, struct run *r)
{
	struct bfo_opts d;
	int ret = copy_dest_open(c, r->root_existed);

	if (ret)
		return ret;
	ret = bfo_ctx_create(&c->rctx, &c->ro);
	if (ret)
		return ret;
	/* A batch takes at most a quarter of the read arena: the engine reads
	 * ahead into the rest while the batch is written. */
	bfo_opts_init(&d);
	c->batch_bytes_max = (c->ro.arena_bytes ? c->ro.arena_bytes : d.arena_bytes) / 4;
	return 0;
}

/* The reads still coming are written (or, cancelled, dropped). */
void copy_run_drain(struct bfo_copier *c)
{
	if (atomic_load(&c->cancel)) {
		if (c->reading) {
			bfo_read_cancel(c->rctx);
			copy_drain(c, -1, true);
		}
		c->n = 0;                    /* the unwritten batch is dropped */
	} else if (c->reading) {
		bfo_read_finish(c->rctx);
		copy_drain(c, -1, true);
	}
	copy_flush(c);
}

/* The root standing for a source directory gets its metadata too, once
 * everything inside it is written: the source's, as it was before the
 * walk read it. */
static void root_meta(struct bfo_copier *c, struct run *r)
{
	const struct stat *st = &r->root_meta_st;
	struct bfo_wentry e = { 0 };

	copy_meta(&c->who, &e, st->st_mode, st->st_uid, st->st_gid, st->st_atim.tv_sec,
		  (uint32_t)st->st_atim.tv_nsec, st->st_mtim.tv_sec, (uint32_t)st->st_mtim.tv_nsec);
	copy_take_xattrs(c, r->root_meta_src, &e);
	copy_root_meta(c, &e);
}

/* Writer and reader end; the run's statistics and result. */
static int run_close(struct bfo_copier *c, struct run *r)
{
	struct bfo_stats rst = { 0 };
	struct bfo_write_stats wst = { 0 };
	int ret;

	if (c->rctx)
		bfo_read_stats(c->rctx, &rst);
	if (c->w) {
		bfo_writer_stats(c->w, &wst);
		ret = bfo_writer_close(c->w);
		if (ret)
			copy_report(c, c->root, ret);
	}
	copy_sync_end(c);
	if (r->root_meta_src && c->archive && !atomic_load(&c->cancel) && !(c->flags & BFO_COPY_DRY_RUN))
		root_meta(c, r);
	copy_tail_durable(c);
	if (c->dst_fd >= 0)
		close(c->dst_fd);
	c->dst_fd = -1;
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
	ret = c->send_err ? c->send_err : c->nospace ? c->nospace :
	      atomic_load(&c->cancel) ? -ECANCELED : c->oom ? -ENOMEM :
	      (int)MIN(c->st.errors, (uint64_t)INT32_MAX);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int copier_run(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
		      const char *dst)
{
	struct run r = { 0 };
	int ret;

	copy_run_reset(c);
	ret = run_dest(c, &r, srcs, nsrc, dst);
	/* A destination that was there is compared through its index. */
	c->listing = ((c->flags & (BFO_COPY_UPDATE | BFO_COPY_DELETE)) && r.root_existed) ||
		     (c->flags & BFO_COPY_DRY_RUN);
	if (ret) {
		free(r.single);
		return ret;
	}
	ret = run_open(c, &r);
	if (ret) {
		bfo_ctx_destroy(c->rctx);
		c->rctx = NULL;
		copy_dest_close(c);
		free(c->root);
		c->root = NULL;
		free(r.single);
		return ret;
	}
	c->srcs = calloc(nsrc, sizeof(*c->srcs));
	if (!c->srcs)
		c->oom = true;
	/* Every source first (their copies' places), so that the index of
	 * what the destination has is built while they are listed. */
	for (unsigned i = 0; c->srcs && i < nsrc; i++)
		if (copy_source_prep(c, &r, srcs[i], NULL) < 0)
			break;
	if (c->listing && (ret = copy_sync_start(c)))
		copy_report(c, "the destination's index", ret);
	for (size_t i = 0; i < c->nsrcs && !atomic_load(&c->cancel); i++)
		copy_source_go(c, &r, (uint16_t)i);
	if (c->listing)
		copy_sync_flush(c);
	/* every source walked (or listed and decided): what is left to copy
	 * is known, so a progress display can say how long it will take */
	pthread_mutex_lock(&c->lock);
	c->st.listed_whole = !atomic_load(&c->cancel);
	pthread_mutex_unlock(&c->lock);
	copy_progress(c, true);
	copy_run_drain(c);
	ret = run_close(c, &r);
	copy_progress(c, true);
	copy_run_cleanup(c);
	free(r.single);
	return ret;
}

BFO_API int bfo_copier_run(struct bfo_copier *c, const char *const *srcs, unsigned nsrc,
			   const char *dst)
{
	int ret;

	if (!c || !srcs || !nsrc || !dst || nsrc > UINT16_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < nsrc; i++)
		if (!srcs[i] || !*srcs[i])
			return -EINVAL;
	ret = bfo_copier_check(c, srcs, nsrc, dst, NULL);
	if (!ret)
		ret = copier_run(c, srcs, nsrc, dst);
	copy_run_end(c);
	return ret;
}

BFO_API int bfo_copier_set_opts(struct bfo_copier *c, const struct bfo_copy_opts *opts)
{
	struct bfo_copy_opts o = { 0 };
	struct filter *f = NULL;
	int ret = 0;

	if (!c || !opts || opts->size < offsetof(struct bfo_copy_opts, owner_lost))
		return -EINVAL;
	if (opts->size > sizeof(o)) {
		for (size_t i = sizeof(o); i < opts->size; i++)
			if (((const char *)opts)[i])
				return -E2BIG;
	}
	memcpy(&o, opts, MIN(opts->size, sizeof(o)));
	for (size_t i = 0; i < sizeof(o.reserved) / sizeof(o.reserved[0]); i++)
		if (o.reserved[i])
			return -EINVAL;
	if (o.compress > 19 || o.compress < -7)
		return -EINVAL;
	for (size_t i = 0; o.filters && o.filters[i] && !ret; i++)
		ret = filter_add(&f, o.filters[i]);
	if (ret) {
		filter_free(f);
		return ret;
	}
	filter_free(c->filter);
	c->filter = f;
	c->compress = o.compress;
	c->item = o.item;
	c->item_arg = o.item_arg;
	c->owner_lost = o.owner_lost;
	c->owner_lost_arg = o.owner_lost_arg;
	c->delete_max = o.delete_limit ? o.delete_limit - 1 : UINT64_MAX;
	return 0;
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

void copy_run_end(struct bfo_copier *c)
{
	uint64_t n;

	atomic_store(&c->cancel, false);
	if (read(c->wakefd, &n, sizeof(n)) < 0) {
		/* EAGAIN: no cancel came */
	}
}

BFO_API int bfo_copier_cancel(struct bfo_copier *c)
{
	uint64_t one = 1;
	int saved = errno;      /* (a signal handler's caller keeps its errno) */

	if (!c)
		return -EINVAL;
	atomic_store(&c->cancel, true);
	/* after the flag: a wait woken by this sees it set */
	if (write(c->wakefd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so it is readable already */
	}
	errno = saved;
	return 0;
}

BFO_API void bfo_copier_destroy(struct bfo_copier *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	filter_free(c->filter);
	close(c->wakefd);
	free(c);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BFO_w: write a batch of files with one durability point.
 *
 * Per batch: validate and group the entries by directory; write the
 * manifest and make it durable (journal.c); write the data (stem engine:
 * one sequential stem file, then each file gets its blocks with
 * FICLONERANGE; batched engine: worker threads each take whole directories,
 * or io_uring open/write/close chains); set metadata; one syncfs() for the
 * batch; remove the manifest.  A file that fails is removed, never left
 * torn.  Files larger than the caller's memory arrive as pieces over
 * several calls: they are written to a temporary name in their directory
 * and renamed into place with their last piece.
 *
 * This file is the writer itself (open, stats, close, recovery); writer.h
 * lists the files that hold the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "write_meta.h"
#include "pool.h"
#include "write.h"
#include "writer.h"
#include "fdlimit.h"

#define DEF_WTHREADS 16u

BFO_API const char *bfo_wengine_name(int engine)
{
	switch (engine) {
	case BFO_WENGINE_AUTO: return "auto";
	case BFO_WENGINE_STEM: return "stem";
	case BFO_WENGINE_BATCHED: return "batched";
	case BFO_WENGINE_URING: return "uring";
	}
	return "?";
}

/* ------------------------------------------------------------ open/close */

/* mkdir -p of the root itself (the caller chose it; symlinks in it are
 * the caller's business). */
static int mkdir_p(const char *path)
{
	char *p = strdup(path);
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST) {
				ret = -errno;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return ret;
}

static int opts_take(struct bfo_write_opts *out, const struct bfo_write_opts *in)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	if (in) {
		size_t n = in->size;

		if (n < offsetof(struct bfo_write_opts, reserved))
			return -EINVAL;
		if (n > sizeof(*out)) {
			for (size_t i = sizeof(*out); i < n; i++)
				if (((const uint8_t *)in)[i])
					return -E2BIG;
			n = sizeof(*out);
		}
		memcpy(out, in, n);
		out->size = sizeof(*out);
	}
	for (size_t i = 0; i < sizeof(out->reserved) / sizeof(out->reserved[0]); i++)
		if (out->reserved[i])
			return -EINVAL;
	if (out->flags & ~(BFO_WRITE_REPLACE | BFO_WRITE_STOP_ON_ERROR | BFO_WRITE_NO_MKROOT))
		return -EINVAL;
	if (out->engine > BFO_WENGINE_URING || out->durability > BFO_DURABILITY_CLOSE ||
	    out->threads > 256 || out->queue_depth > 4096)
		return -EINVAL;
	if (!out->threads)
		out->threads = DEF_WTHREADS;
	return 0;
}

/*
 * The journal directory, checked (journal_dir_open), and this writer's
 * lock file in it.  Another writer closing or a recovery may remove the
 * directory while it is empty, between our open and our lock file: then
 * it is made again.
 */
static int journal_take(struct bfo_writer *w)
{
	int ret = -ENOENT;

	for (int tries = 0; tries < 100 && ret == -ENOENT; tries++) {
		w->jfd = journal_dir_open(w->rootfd, true);
		if (w->jfd < 0) {
			ret = w->jfd;
			w->jfd = -1;
			continue;
		}
		w->lockfd = journal_lock(w->jfd, w->id, w->lockname, sizeof(w->lockname));
		ret = w->lockfd < 0 ? w->lockfd : 0;
		if (ret) {
			close(w->jfd);
			w->jfd = -1;
		}
	}
	return ret;
}

/* This writer's lock goes; the directory too when no one else is in it
 * (then true). */
static bool journal_leave(struct bfo_writer *w)
{
	bool gone = false;

	if (w->lockfd >= 0) {
		unlinkat(w->jfd, w->lockname, 0);
		close(w->lockfd);
	}
	if (w->jfd >= 0) {
		close(w->jfd);
		gone = unlinkat(w->rootfd, BFO_JOURNAL_DIR, AT_REMOVEDIR) == 0;
	}
	w->jfd = w->lockfd = -1;
	return gone;
}

/*
 * What the writer holds at once, within its share of the descriptor limit
 * (fdlimit.h): each worker a directory, a file and a moment's O_PATH of
 * one; the io_uring path as many directories as URING_DIRS_AT_ONCE and a
 * file per chain.  Scaled down together when the share is smaller.
 */
static void fit_fds(struct bfo_writer *w)
{
	unsigned dirs = w->uring ? URING_DIRS_AT_ONCE : 0;
	unsigned qd = w->uring ? (w->o.queue_depth ? w->o.queue_depth : URING_DEF_QD) : 0;
	unsigned want = 3 * w->o.threads + dirs + qd;
	unsigned got = fdl_share(want, 5);      /* a worker; a directory and a chain */

	if (got < want) {
		w->o.threads = MAX(1u, (unsigned)((uint64_t)w->o.threads * got / want));
		dirs = MAX(1u, (unsigned)((uint64_t)dirs * got / want));
		qd = MAX(1u, (unsigned)((uint64_t)qd * got / want));
	}
	w->uring_dirs = dirs;
	w->uring_qd = qd;
}

BFO_API int bfo_writer_open(struct bfo_writer **out, const char *root, const struct bfo_write_opts *opts)
{
	struct bfo_writer *w;
	struct statvfs sv;
	struct bfo_recover_stats rs = { 0 };
	int ret;

	if (!out || !root || !*root)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rootfd = w->jfd = w->lockfd = -1;
	ret = opts_take(&w->o, opts);
	if (ret)
		goto fail;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_mutex_init(&w->fl.lock, NULL);
	pthread_cond_init(&w->fl.cond, NULL);
	w->id = (uint32_t)(bfo_now_ns() ^ ((uint64_t)getpid() << 16) ^ (uintptr_t)w);
	w->is_root = geteuid() == 0;
	w->umask = process_umask();
	idmap_load(&w->uids, "/proc/self/uid_map");
	idmap_load(&w->gids, "/proc/self/gid_map");
	ret = w->o.flags & BFO_WRITE_NO_MKROOT ? 0 : mkdir_p(root);
	if (ret)
		goto fail;
	w->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->rootfd < 0) {
		ret = -errno;
		goto fail;
	}
	struct stat rst;

	if (fstat(w->rootfd, &rst) == 0) {
		w->root_mtime = rst.st_mtim;
		w->root_mtime_ok = true;
	}
	/* A read-only file system says so here, even where an old journal
	 * directory makes mkdir answer EEXIST first. */
	if (fstatvfs(w->rootfd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		ret = -EROFS;
		goto fail;
	}
	ret = journal_take(w);
	if (ret)
		goto fail;
	/* Unfinished batches of earlier writers come first. */
	journal_recover(w->rootfd, w->jfd, &rs);
	if (rs.removed || rs.finished)
		atomic_store(&w->root_touched, true);
	w->blksz = fstatvfs(w->rootfd, &sv) == 0 && sv.f_bsize >= 512 && sv.f_bsize <= (1u << 20) ?
		   (uint32_t)sv.f_bsize : 4096;
	/* AUTO is batched everywhere: with the writeback behind the tasks,
	 * it beat stem on XFS at every file size (benchmarks/README.md, W1) */
	if (w->o.engine == BFO_WENGINE_STEM) {
		if (!probe_clone(w)) {
			ret = -EOPNOTSUPP;
			goto fail;
		}
		w->engine = BFO_WENGINE_STEM;
	} else {
		w->engine = BFO_WENGINE_BATCHED;
		w->uring = w->o.engine == BFO_WENGINE_URING;
		if (w->uring && !uring_usable()) {
			ret = -EOPNOTSUPP;
			goto fail;
		}
	}
	/* The manifest records STEM or BATCHED (what recovery needs); the
	 * stats name the engine that ran. */
	w->st.engine = w->uring ? BFO_WENGINE_URING : w->engine;
	fit_fds(w);
	ret = pool_start(&w->pool, w->o.threads);
	if (ret)
		goto fail;
	*out = w;
	return 0;
fail:
	/* Leave no trace of an open that did not happen. */
	journal_leave(w);
	if (w->rootfd >= 0)
		close(w->rootfd);
	free(w);
	return ret;
}

int writer_root_fd(struct bfo_writer *w)
{
	int fd = fcntl(w->rootfd, F_DUPFD_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

BFO_API int bfo_writer_stats(struct bfo_writer *w, struct bfo_write_stats *st)
{
	if (!w || !st)
		return -EINVAL;
	*st = w->st;
	st->clones = __atomic_load_n(&w->st.clones, __ATOMIC_RELAXED);
	st->syncs = __atomic_load_n(&w->st.syncs, __ATOMIC_RELAXED);
	st->writebacks = __atomic_load_n(&w->st.writebacks, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&w->st.bytes, __ATOMIC_RELAXED);
	return 0;
}

void release_deferred(struct bfo_writer *w)
{
	for (unsigned i = 0; i < w->ndeferred; i++) {
		journal_batch_remove(w->jfd, w->deferred[i].mname);
		close(w->deferred[i].mfd);
	}
	w->ndeferred = 0;
}

/* DURABILITY_CLOSE: one syncfs for the batches written since the last. */
static int sync_deferred(struct bfo_writer *w)
{
	int ret = 0;

	if (!w->ndeferred)
		return 0;
	if (syncfs(w->rootfd) < 0)
		ret = -errno;
	stat_add(&w->st.syncs, 1);
	if (!ret)
		release_deferred(w);
	return ret;
}

static int depth_cmp(const void *a, const void *b)
{
	const struct wdir *x = a, *y = b;
	size_t dx = 0, dy = 0;

	for (const char *p = x->path; *p; p++)
		dx += *p == '/';
	for (const char *p = y->path; *p; p++)
		dy += *p == '/';
	return dx < dy ? 1 : dx > dy ? -1 : 0;
}

BFO_API int bfo_writer_cancel(struct bfo_writer *w)
{
	if (!w)
		return -EINVAL;
	atomic_store(&w->cancel, true);
	return 0;
}

void writer_cancel_with(struct bfo_writer *w, const atomic_bool *flag, const atomic_bool *flag2)
{
	w->cancel_also[0] = flag;
	w->cancel_also[1] = flag2;
}

BFO_API int bfo_writer_close(struct bfo_writer *w)
{
	char dir[BFO_WPATH_MAX];
	bool cancelled;
	int ret;

	if (!w)
		return 0;
	ret = w->first_err;
	/* A failed syncfs leaves the manifests: recovery decides.  So does
	 * bfo_writer_cancel(), which skips the syncfs (that may wait for
	 * every dirty byte of the file system) and leaves the deferred
	 * batches' manifests for recovery to check.  A copier's cancel
	 * (cancel_also) only stops the batches: a copy ends durable and
	 * without a journal, as bfo_copier_cancel() promises. */
	cancelled = atomic_load(&w->cancel);
	flusher_stop(w);
	int sr = cancelled ? 0 : sync_deferred(w);

	if (sr < 0 && !ret)
		ret = sr;
	for (unsigned i = 0; i < w->ndeferred; i++)
		close(w->deferred[i].mfd);
	w->ndeferred = 0;
	/* Files whose last piece never came are dropped. */
	while (w->nstreams)
		stream_drop(w, &w->streams[0], true);
	/* Directories: deepest first, times last (writing inside a directory
	 * changes its mtime). */
	if (w->ndirs > 1)
		qsort(w->dirs, w->ndirs, sizeof(*w->dirs), depth_cmp);
	for (size_t i = 0; i < w->ndirs; i++) {
		struct wdir *d = &w->dirs[i];
		const char *base = wpath_split(d->path, dir, sizeof(dir));
		int dfd = wpath_open_dir(w->rootfd, dir, false);
		struct bfo_wentry e = { .mode = d->mode, .uid = d->uid, .gid = d->gid, .flags = d->flags,
					.atime_sec = d->atime_sec, .mtime_sec = d->mtime_sec,
					.atime_nsec = d->atime_nsec, .mtime_nsec = d->mtime_nsec,
					.xattrs = d->xattrs, .xattrs_len = d->xattrs_len };
		int fd = dfd < 0 ? -1 : fid_open(dfd, base, &d->id);
		int lost = 0;
		int r = dfd < 0 ? 0 : fd < 0 ? fd : meta_apply(fd, true, &e, false, false, NULL, &lost);

		if ((r || lost) && !ret)
			ret = r ? r : lost;
		if (fd >= 0)
			close(fd);
		if (dfd >= 0)
			close(dfd);
		free(d->path);
		free(d->xattrs);
	}
	free(w->dirs);
	if (w->o.durability != BFO_DURABILITY_NONE && w->ndirs && !cancelled && syncfs(w->rootfd) < 0 &&
	    !ret)
		ret = -errno;
	pool_stop(&w->pool);
	if (journal_leave(w) && w->root_mtime_ok && !atomic_load(&w->root_touched)) {
		/* only the journal came and went in the root: its mtime as it
		 * was (rsync -a leaves DST's own mtime when nothing in it is new) */
		struct timespec t[2] = { { .tv_nsec = UTIME_OMIT }, w->root_mtime };

		futimens(w->rootfd, t);
	}
	close(w->rootfd);
	free(w->streams);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->fl.lock);
	pthread_cond_destroy(&w->fl.cond);
	free(w);
	return ret;
}

BFO_API int bfo_journal_recover(const char *root, struct bfo_recover_stats *stats)
{
	struct bfo_recover_stats local = { 0 };
	int rootfd, jfd, ret;

	if (!root)
		return -EINVAL;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	jfd = journal_dir_open(rootfd, false);
	if (jfd < 0) {
		close(rootfd);
		return jfd == -ENOENT ? 0 : jfd;
	}
	ret = journal_recover(rootfd, jfd, stats);
	if (ret >= 0 && (stats->removed || stats->finished))
		syncfs(rootfd);
	close(jfd);
	unlinkat(rootfd, BFO_JOURNAL_DIR, AT_REMOVEDIR);
	close(rootfd);
	return ret;
}

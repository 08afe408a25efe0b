/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_dirahead: directories read ahead of a caller that lists them itself,
 * one at a time, in an order of its own (the tar plugin, ahead of GNU tar).
 * A directory listed cold costs a synchronous read or two (its inode, its
 * blocks), and while a batch keeps the device busy each such read waits
 * behind the batch's data, and the caller with it.  Read here, on
 * the pool's threads, those reads overlap the caller's work and each
 * other; the caller's own listing then finds the page cache warm.
 * Nothing read is handed out: only the cache changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfo.h"
#include "fdlimit.h"
#include "common.h"
#include "pool.h"

#define DIRAHEAD_THREADS 2u     /* directories read at once */
#define DIRAHEAD_QUEUE   256u   /* directories queued, at most */
#define STAT_CHUNK       4096u  /* entries stat'ed per sort: bounds a thread's memory */

struct bfo_dirahead {
	struct pool pool;
	unsigned queue;
	unsigned flags;
	atomic_uint queued;     /* added, not yet taken by a thread */
	atomic_bool stopping;   /* destroy: what is queued is dropped */
	atomic_uint_fast64_t read, failed, dropped;
};

struct dirtask {
	struct pool_task task;
	struct bfo_dirahead *d;
	char path[];
};

struct dentry_at {
	ino_t ino;
	char *name;
};

static int cmp_ino(const void *a, const void *b)
{
	const struct dentry_at *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The entries' inodes, in inode order: ext4 and XFS keep inodes in tables
 * in that order, so each read of a table (ext4 reads 32 blocks ahead)
 * serves the next entries, where the directory's own order (hash order on
 * ext4) would jump around the tables. */
static void stat_chunk(struct bfo_dirahead *d, int dfd, struct dentry_at *e, size_t n)
{
	struct stat sb;
	bool stop = false;

	qsort(e, n, sizeof(*e), cmp_ino);
	for (size_t i = 0; i < n; i++) {
		/* destroy waits for this thread, and a cold chunk takes long */
		if (!stop && i % 64 == 0)
			stop = atomic_load(&d->stopping);
		if (!stop)
			fstatat(dfd, e[i].name, &sb, AT_SYMLINK_NOFOLLOW);
		free(e[i].name);
	}
}

/* Every entry of dir, each one lstat'ed when stat_entries; errno as readdir left it. */
static int read_entries(struct bfo_dirahead *d, DIR *dir, bool stat_entries)
{
	struct dentry_at *chunk = stat_entries ? malloc(STAT_CHUNK * sizeof(*chunk)) : NULL;
	struct dirent *de;
	size_t n = 0;
	int err;

	errno = 0;
	while ((de = readdir(dir))) {
		if (!chunk || (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2]))))
			continue;
		chunk[n].ino = de->d_ino;
		chunk[n].name = strdup(de->d_name);
		if (chunk[n].name && ++n == STAT_CHUNK) {
			stat_chunk(d, dirfd(dir), chunk, n);
			n = 0;
			if (atomic_load(&d->stopping)) {
				errno = 0;
				break;
			}
		}
		errno = 0;
	}
	err = errno;
	if (chunk)
		stat_chunk(d, dirfd(dir), chunk, n);
	free(chunk);
	return err;
}

static void dirahead_read(struct pool_task *t)
{
	struct dirtask *x = (struct dirtask *)t;
	struct bfo_dirahead *d = x->d;

	atomic_fetch_sub(&d->queued, 1);
	if (atomic_load(&d->stopping)) {
		atomic_fetch_add(&d->dropped, 1);
	} else {
		/* O_NOFOLLOW as the caller's own listing: a symlink swapped in
		 * for the directory is not followed here either. */
		int fd = fdl_open(x->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
		DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

		if (!dir) {
			if (fd >= 0)
				fdl_close(fd);
			atomic_fetch_add(&d->failed, 1);
		} else {
			int err = read_entries(d, dir, d->flags & BFO_DIRAHEAD_STAT);

			atomic_fetch_add(err ? &d->failed : &d->read, 1);
			fdl_closedir(dir);
		}
	}
	free(x);
}

BFO_API int bfo_dirahead_start(struct bfo_dirahead **dp, unsigned threads, unsigned queue,
				unsigned flags)
{
	struct bfo_dirahead *d;
	int ret, saved = errno;

	if (!dp)
		return -EINVAL;
	*dp = NULL;
	if (flags & ~BFO_DIRAHEAD_STAT)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = saved;
		return -ENOMEM;
	}
	d->queue = queue ? queue : DIRAHEAD_QUEUE;
	d->flags = flags;
	ret = pool_start(&d->pool, threads ? MIN(threads, 64u) : DIRAHEAD_THREADS);
	errno = saved;
	if (ret < 0) {
		free(d);
		return ret;
	}
	*dp = d;
	return 0;
}

BFO_API int bfo_dirahead_add(struct bfo_dirahead *d, const char *path)
{
	struct dirtask *x;
	size_t len;
	unsigned q;
	int saved = errno;

	if (!d || !path || !*path)
		return -EINVAL;
	if (atomic_load(&d->queued) >= d->queue)
		return -EAGAIN;
	len = strlen(path);
	x = malloc(sizeof(*x) + len + 1);
	if (!x) {
		errno = saved;
		return -ENOMEM;
	}
	q = atomic_load(&d->queued);
	do {
		if (q >= d->queue) {    /* filled by another thread meanwhile */
			free(x);
			return -EAGAIN;
		}
	} while (!atomic_compare_exchange_weak(&d->queued, &q, q + 1));
	x->task.fn = dirahead_read;
	x->d = d;
	memcpy(x->path, path, len + 1);
	pool_push(&d->pool, &x->task);
	return 0;
}

BFO_API int bfo_dirahead_stats(struct bfo_dirahead *d, struct bfo_dirahead_stats *stats)
{
	if (!d || !stats)
		return -EINVAL;
	memset(stats, 0, sizeof(*stats));
	stats->read = atomic_load(&d->read);
	stats->failed = atomic_load(&d->failed);
	stats->dropped = atomic_load(&d->dropped);
	stats->queued = atomic_load(&d->queued);
	return 0;
}

BFO_API void bfo_dirahead_destroy(struct bfo_dirahead *d)
{
	if (!d)
		return;
	atomic_store(&d->stopping, true);
	pool_stop(&d->pool);    /* drains the queue: each task left is dropped */
	free(d);
}

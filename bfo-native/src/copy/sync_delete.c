/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The --delete pass (sync.h): what the destination's index has and no
 * list entry named, deepest first, each resolved again beneath the root
 * without following a link and removed only while it is what was
 * indexed; --max-delete's limit; and the directories around what changed
 * getting their times back.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "dindex.h"
#include "sync.h"
#include "test_hooks.h"
#include "write.h"


static int path_desc(const void *a, const void *b, void *arg)
{
	struct dindex *ix = arg;

	return -strcmp(dindex_path(ix, *(struct dent *const *)a), dindex_path(ix, *(struct dent *const *)b));
}

/* The entry d, not named by the list, goes: resolved again beneath the
 * root, no symbolic link followed, and only while it is what was indexed
 * (the same inode, of the same kind). */
static int delete_one(struct sync *y, const struct dent *d)
{
	const char *path = dindex_path(y->ix, d);
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(path, dir, sizeof(dir));
	int dfd = wpath_open_dir(y->rootfd, dir, false), ret = 0;
	struct stat st;

	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		ret = errno == ENOENT ? 0 : -errno;
	else if (st.st_ino != d->ino || dindex_dev(st.st_dev) != d->dev || S_ISDIR(st.st_mode) != (d->type == DT_DIR))
		ret = -ESTALE;
	else if (unlinkat(dfd, base, d->type == DT_DIR ? AT_REMOVEDIR : 0) < 0)
		ret = -errno;
	close(dfd);
	return ret;
}

uint64_t sync_delete(struct sync *y, bool dry_run, void (*item)(void *arg, const char *path),
		     void (*report)(void *arg, const char *path, int status), void *arg)
{
	size_t n = dindex_count(y->ix), k = 0;
	struct dent **v = n ? malloc(n * sizeof(*v)) : NULL;
	uint64_t done = 0;

	if (n && !v) {
		report(arg, "--delete", -ENOMEM);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct dent *d = dindex_at(y->ix, i);

		if (!d->seen)
			v[k++] = d;
	}
	/* a directory's entries (longer paths, sorting after it) first */
	qsort_r(v, k, sizeof(*v), path_desc, y->ix);
	for (size_t i = 0; i < k && !(y->cancel && atomic_load(y->cancel)); i++) {
		const char *path = dindex_path(y->ix, v[i]);
		int ret;

		if (done + y->deleted_early >= y->delete_max) {
			y->delete_held += k - i;     /* (--max-delete: the rest stay) */
			break;
		}

		if (bfo_test_hooks.before_delete && !dry_run)
			bfo_test_hooks.before_delete(bfo_test_hooks.arg, path);
		ret = dry_run ? 0 : delete_one(y, v[i]);

		/* A directory that is not empty (something appeared in it, or
		 * an excluded entry protects it) stays, as with rsync; one
		 * that is no longer what was indexed too. */
		if (ret == -ENOTEMPTY || ret == -ESTALE || ret == -EEXIST)
			continue;
		if (ret) {
			report(arg, path, ret);
			continue;
		}
		if (item)
			item(arg, path);
		sync_touch(y, path);
		done++;
	}
	free(v);
	return done;
}

uint64_t sync_dirs_fix(struct sync *y, void (*report)(void *arg, const char *path, int status),
		      void *arg)
{
	uint64_t fixed = 0;

	for (size_t i = 0; i < dindex_count(y->ix); i++) {
		struct dent *d = dindex_at(y->ix, i);
		const struct ddir *dd = dindex_dir(y->ix, d);
		const char *path = dindex_path(y->ix, d);
		struct stat st;
		int fd;

		if (!dd || !dd->want_times || !dd->touched || !(y->flags & BFO_COPY_ARCHIVE))
			continue;
		struct timespec ts[2] = { { dd->want_atime, dd->want_atime_nsec },
					  { dd->want_mtime, dd->want_mtime_nsec } };

		fd = wpath_open_dir(y->rootfd, path, false);
		/* the directory that was indexed, and no other (another user may
		 * have put another one in its place): its times only */
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == d->ino && dindex_dev(st.st_dev) == d->dev &&
		    (st.st_mtim.tv_sec != dd->want_mtime || st.st_mtim.tv_nsec != (long)dd->want_mtime_nsec)) {
			if (utimensat(fd, "", ts, AT_EMPTY_PATH) < 0)
				report(arg, path, -errno);
			else
				fixed++;
		}
		if (fd >= 0)
			close(fd);
	}
	return fixed;
}

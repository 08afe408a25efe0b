/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: a directory's metadata that tar sets while names in it are
 * still pending (extract_name.c): tar's times kept and given again once
 * the names are given, so no flush (and no syncfs) per directory.
 */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * tar sets a directory's times, owner and mode (its delayed set_stat)
 * as soon as it leaves the directory, while the names of the files it
 * made there may still be pending.  A link would change the directory's
 * times afterwards, so that used to flush the queue, and with a syncfs
 * before every batch's names that was a syncfs per directory on tar's
 * thread.  Instead tar's call runs now and the times it gave are kept:
 * when names are given in that directory later, its times are given
 * again (dir_times_restore), under a lock the flusher takes too, so that
 * the directory ends with tar's times whichever comes first.  Owner and
 * mode go ahead where the links stay allowed (root; a user's mode that
 * leaves the user, its owner, write and search); otherwise flushed.
 * tar making another entry there drops what was kept (plain tar's later
 * create moves the times too).
 */
#define KEPT_MAX 64

static struct {
	pthread_mutex_t lock;
	unsigned n;             /* atomic reads outside the lock */
	struct kept {
		dev_t dev;
		ino_t ino;
		struct timespec ts[2];
	} k[KEPT_MAX];
} kt = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct kept *kept_find(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < kt.n; i++)
		if (kt.k[i].dev == dev && kt.k[i].ino == ino)
			return &kt.k[i];
	return NULL;
}

static int dir_times_keep(dev_t dev, ino_t ino, const struct timespec ts[2])
{
	struct kept *k;

	pthread_mutex_lock(&kt.lock);
	if (!(k = kept_find(dev, ino)) && kt.n < KEPT_MAX) {
		k = &kt.k[kt.n];
		k->dev = dev;
		k->ino = ino;
		__atomic_store_n(&kt.n, kt.n + 1, __ATOMIC_RELEASE);
	}
	if (k) {
		k->ts[0] = ts ? ts[0] : (struct timespec){ .tv_nsec = UTIME_NOW };
		k->ts[1] = ts ? ts[1] : (struct timespec){ .tv_nsec = UTIME_NOW };
	}
	pthread_mutex_unlock(&kt.lock);
	return k != NULL;
}

/*
 * tar's utimensat (DM_TIMES, ts), fchownat (DM_OWNER) or fchmodat
 * (DM_MODE, mode) by name of dirfd/path: 1 when it is a directory holding
 * pending names and may go ahead without a flush (nothing else pending is
 * reached, and the links stay allowed: root, or a mode that leaves its
 * owner, the user, write and search), 0 when the usual rule holds.
 */
int dir_meta_unflushed(int dirfd, const char *path, int flags, const struct timespec ts[2], int what,
		       mode_t mode)
{
	uid_t me = geteuid();
	struct stat sb;

	if (!path || (what == DM_OWNER && me != 0) || names_reach(dirfd, path) ||
	    real_fstatat(dirfd, path, &sb, flags & AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode) ||
	    !names_dir_holds(sb.st_dev, sb.st_ino))
		return 0;
	if (what == DM_MODE && me != 0 && (sb.st_uid != me || (mode & (S_IWUSR | S_IXUSR)) != (S_IWUSR | S_IXUSR)))
		return 0;
	return what != DM_TIMES || dir_times_keep(sb.st_dev, sb.st_ino, ts);
}

/* q[0..n) took their names: the directories among theirs whose times tar
 * set get them again.  Where write_out runs. */
void dir_times_restore(struct wfile **q, unsigned n)
{
	char p[48];

	if (!__atomic_load_n(&kt.n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&kt.lock);
	for (unsigned j = 0; j < kt.n; j++) {
		for (unsigned i = 0; i < n; i++) {
			const struct xdir *d = q[i]->dir;

			if (d && d->dev == kt.k[j].dev && d->ino == kt.k[j].ino) {
				snprintf(p, sizeof(p), "/proc/self/fd/%d", d->fd);
				if (real_utimensat(AT_FDCWD, p, kt.k[j].ts, 0) < 0)
					say(q[i]->name, "Cannot utime its directory", errno);
				break;
			}
		}
	}
	pthread_mutex_unlock(&kt.lock);
}

static void kept_remove(unsigned i)
{
	kt.k[i] = kt.k[kt.n - 1];
	__atomic_store_n(&kt.n, kt.n - 1, __ATOMIC_RELEASE);
}

/* tar makes a file in dev/ino: its times move, as in plain tar. */
void dir_times_drop(dev_t dev, ino_t ino)
{
	if (!__atomic_load_n(&kt.n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&kt.lock);
	for (unsigned i = 0; i < kt.n; i++)
		if (kt.k[i].dev == dev && kt.k[i].ino == ino)
			kept_remove(i--);
	pthread_mutex_unlock(&kt.lock);
}

/* tar makes an entry by name (a directory, a symlink, a node) at
 * dirfd/path: the times of its directory move, as in plain tar. */
void dir_times_entry_made(int dirfd, const char *path)
{
	const char *base;
	struct stat sb;
	char *part;

	if (!__atomic_load_n(&kt.n, __ATOMIC_ACQUIRE) || !path || !path_split(path, &part, &base))
		return;
	if (real_fstatat(dirfd, part, &sb, 0) == 0)
		dir_times_drop(sb.st_dev, sb.st_ino);
	free(part);
}

/* Directories without pending names any more (tar's thread, the names
 * rebuilt) need nothing kept. */
void dir_times_prune(void)
{
	if (!__atomic_load_n(&kt.n, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&kt.lock);
	for (unsigned i = 0; i < kt.n; i++)
		if (!names_dir_holds(kt.k[i].dev, kt.k[i].ino))
			kept_remove(i--);
	pthread_mutex_unlock(&kt.lock);
}

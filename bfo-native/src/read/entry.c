/* SPDX-License-Identifier: Apache-2.0 */
/* A file's metadata for the read engines (entry.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "entry.h"

void entry_meta_from_stat(struct entry *e, const struct stat *st)
{
	e->ino = st->st_ino;
	e->dev = (uint64_t)major(st->st_dev) << 32 | minor(st->st_dev);
	e->size = (uint64_t)st->st_size;
	e->mode = st->st_mode;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	e->ctime_sec = st->st_ctim.tv_sec;
	e->ctime_nsec = (uint32_t)st->st_ctim.tv_nsec;
	e->atime_sec = st->st_atim.tv_sec;
	e->atime_nsec = (uint32_t)st->st_atim.tv_nsec;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->nlink = (uint32_t)st->st_nlink;
}

int stat_path(const char *path, bool nofollow, struct entry *e)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_STATX_SYNC_AS_STAT | (nofollow ? AT_SYMLINK_NOFOLLOW : 0),
		  STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_CTIME |
		  STATX_ATIME | STATX_UID | STATX_GID | STATX_NLINK, &sx) < 0)
		return -errno;
	e->ino = sx.stx_ino;
	e->dev = (uint64_t)sx.stx_dev_major << 32 | sx.stx_dev_minor;
	e->size = sx.stx_size;
	e->mode = sx.stx_mode;
	e->mtime_sec = sx.stx_mtime.tv_sec;
	e->mtime_nsec = sx.stx_mtime.tv_nsec;
	e->ctime_sec = sx.stx_ctime.tv_sec;
	e->ctime_nsec = sx.stx_ctime.tv_nsec;
	e->atime_sec = sx.stx_atime.tv_sec;
	e->atime_nsec = sx.stx_atime.tv_nsec;
	e->uid = sx.stx_uid;
	e->gid = sx.stx_gid;
	e->nlink = sx.stx_nlink;
	return 0;
}

/* Identity plus everything a write, truncate or replacement changes. */
bool meta_same(const struct entry *a, const struct entry *b)
{
	return a->ino == b->ino && a->dev == b->dev && a->size == b->size &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec &&
	       a->ctime_sec == b->ctime_sec && a->ctime_nsec == b->ctime_nsec;
}

int entry_type_status(uint32_t mode)
{
	if (S_ISREG(mode))
		return 0;
	if (S_ISDIR(mode))
		return -EISDIR;
	if (S_ISLNK(mode))
		return -ELOOP;
	return -EINVAL;
}

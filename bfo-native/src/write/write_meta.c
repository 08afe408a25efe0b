/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metadata through descriptors (see write_meta.h).  Nothing here takes a path
 * but a base name looked up once with O_NOFOLLOW beneath a directory
 * descriptor; every change after that goes to the descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "write_meta.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

int fid_of_fd(int fd, struct fid *id)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_TYPE | STATX_INO | STATX_BTIME | STATX_UID | STATX_GID, &sx) < 0)
		return -errno;
	*id = (struct fid){ .dev = makedev(sx.stx_dev_major, sx.stx_dev_minor), .ino = sx.stx_ino,
			    .type = sx.stx_mode & S_IFMT, .uid = sx.stx_uid, .gid = sx.stx_gid,
			    .owner_known = (sx.stx_mask & (STATX_UID | STATX_GID)) ==
					   (STATX_UID | STATX_GID) };
	if (sx.stx_mask & STATX_BTIME) {
		id->born_sec = sx.stx_btime.tv_sec;
		id->born_nsec = sx.stx_btime.tv_nsec;
		id->flags |= FID_BORN;
	} else {
		/* The generation needs an open descriptor (not O_PATH). */
		unsigned int gen;

		if (ioctl(fd, FS_IOC_GETVERSION, &gen) == 0) {
			id->gen = gen;
			id->flags |= FID_GEN;
		}
	}
	return 0;
}

bool fid_match(int fd, const struct fid *id)
{
	struct fid now = { 0 };   /* (gcc -O3 cannot see fid_of_fd fill it) */

	if (fid_of_fd(fd, &now))
		return false;
	if (now.dev != id->dev || now.ino != id->ino || now.type != id->type)
		return false;
	if (id->flags & FID_BORN)
		return (now.flags & FID_BORN) && now.born_sec == id->born_sec &&
		       now.born_nsec == id->born_nsec;
	if (id->flags & FID_GEN) {
		unsigned int gen;

		/* An O_PATH descriptor cannot answer: reopen it for reading. */
		char p[32];
		int rfd;

		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		rfd = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		bool same = rfd >= 0 && ioctl(rfd, FS_IOC_GETVERSION, &gen) == 0 && gen == id->gen;

		if (rfd >= 0)
			close(rfd);
		return same;
	}
	return true;
}

int fid_open(int dfd, const char *name, const struct fid *id)
{
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (!fid_match(fd, id)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Walk the packed xattr records of e and set each on fd.  A malformed
 * buffer is -EINVAL; an attribute the file system refuses is skipped when
 * it is not supported there (cp -a keeps xattrs where both sides can). */
static int set_xattrs(int fd, bool opath, const struct bfo_wentry *e)
{
	const uint8_t *p = e->xattrs, *end = p + e->xattrs_len;
	char path[32];

	/* An O_PATH descriptor takes xattrs through its /proc link, which
	 * leads to that inode itself (a symbolic link included), never on. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	while (p && p < end) {
		const char *key = (const char *)p;
		size_t kl = strnlen(key, (size_t)(end - p));
		uint32_t vl;

		if (kl == (size_t)(end - p) || end - (p + kl + 1) < (ptrdiff_t)sizeof(vl))
			return -EINVAL;
		memcpy(&vl, p + kl + 1, sizeof(vl));
		const uint8_t *val = p + kl + 1 + sizeof(vl);

		if (vl > (size_t)(end - val))
			return -EINVAL;
		int r = opath ? setxattr(path, key, val, vl, 0) : fsetxattr(fd, key, val, vl, 0);

		if (r < 0 && errno != EOPNOTSUPP && errno != ENOTSUP && errno != EPERM)
			return -errno;
		p = val + vl;
	}
	return 0;
}

static int chmod_fd(int fd, bool opath, uint32_t mode)
{
	char path[32];

	if (!opath)
		return fchmod(fd, mode) < 0 ? -errno : 0;
	if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	/* Kernels before 6.6: the /proc link of a descriptor that is not a
	 * symbolic link leads to its inode. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return chmod(path, mode) < 0 ? -errno : 0;
}

int meta_apply(int fd, bool opath, const struct bfo_wentry *e, bool symlink, bool mode_done,
	       const struct fid *now, int *owner_err)
{
	bool chown = (e->flags & BFO_WENTRY_OWNER) &&
		     !(now && now->owner_known && now->uid == e->uid && now->gid == e->gid);
	uint32_t mode = e->mode & 07777;
	int ret;

	/* xattrs after the chown, which clears security.capability (as
	 * cp -a does), and before the mode, which may take away the write
	 * permission a user.* attribute needs */
	if (chown && fchownat(fd, "", e->uid, e->gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		if (!owner_err || errno != EINVAL)
			return -errno;
		*owner_err = -errno;
		mode &= S_IRWXU;
	}
	if (e->xattrs_len && (ret = set_xattrs(fd, opath, e)))
		return ret;
	if (!symlink && (!mode_done || chown) && (ret = chmod_fd(fd, opath, mode)))
		return ret;
	if (e->flags & BFO_WENTRY_TIMES) {
		struct timespec ts[2] = {
			{ e->atime_sec, e->atime_nsec },
			{ e->mtime_sec, e->mtime_nsec },
		};

		if ((opath ? utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) :
			     futimens(fd, ts)) < 0)
			return -errno;
	}
	return 0;
}

void idmap_load(struct idmap *m, const char *path)
{
	FILE *f = fopen(path, "re");
	unsigned long long in, out, count;
	char line[128];

	m->n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		/* "inside outside count", each below 2^32 (the kernel's bounds) */
		if (m->n == sizeof(m->r) / sizeof(m->r[0]) ||
		    sscanf(line, "%llu %llu %llu", &in, &out, &count) != 3 ||
		    in > UINT32_MAX || count > (unsigned long long)UINT32_MAX + 1 - in) {
			m->n = UINT32_MAX;
			break;
		}
		m->r[m->n].first = (uint32_t)in;
		m->r[m->n++].count = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
	}
	if (!f)
		m->n = UINT32_MAX;   /* no user namespaces here: the one namespace maps all */
	else
		fclose(f);
}

bool idmap_has(const struct idmap *m, uint32_t id)
{
	if (m->n == UINT32_MAX)
		return true;
	for (uint32_t i = 0; i < m->n; i++)
		if (id >= m->r[i].first && id - m->r[i].first < m->r[i].count)
			return true;
	return false;
}

mode_t process_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned v = 022;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Umask: %o", &v) == 1)
			break;
	if (f)
		fclose(f);
	return (mode_t)v;
}

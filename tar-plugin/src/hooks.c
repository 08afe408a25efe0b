/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every libc name the plugin exports.  Each resolves the real function,
 * lets create (tar -c) and extract (tar -x) see the call when enter() or
 * xenter() allows it (tar's thread, not inside another hook, the plugin
 * on), keeps errno as libc left it, and ends in libc unless the plugin
 * took the call (a served read(), a buffered write(), deferred metadata).
 */
#include "bfo_tar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/xattr.h>
#include <unistd.h>

/* utimensat(fd, NULL, ...) and fstatat(fd, "", ...) are legitimate: NULL checks stay. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"

/* ------------------------------------------------------------ opens */

static int do_openat(int (*real)(int, const char *, int, ...), int dirfd,
		     const char *path, int flags, mode_t mode)
{
	struct ent *e = NULL;
	int fd, saved;

	if (!enter())
		return real(dirfd, path, flags, mode);
	saved = errno;
	/* tar's create of a new file: made unnamed, named once whole */
	if (plugin.extract_ok && (fd = before_open(dirfd, path, flags, mode, 1)) >= 0) {
		errno = saved;
		leave();
		return fd;
	}
	e = create_open_before(dirfd, path, flags);
	errno = saved;
	fd = real(dirfd, path, flags, mode);
	/* Out of descriptors while the queue holds some of tar's: they go
	 * back first, and tar never fails a file for them. */
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && plugin.extract_ok && fds_released()) {
		errno = saved;
		fd = real(dirfd, path, flags, mode);
	}
	saved = errno;
	if (plugin.extract_ok)
		after_open(dirfd, fd, path, flags);
	create_open_after(fd, e);
	errno = saved;
	leave();
	return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return (mode_t)va_arg(ap, int);
	return 0;
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_openat(real_openat, dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_openat(real_openat64 ? real_openat64 : real_openat, dirfd, path, flags, mode);
}

static int openat_2_shim(int dirfd, const char *path, int flags, ...)
{
	return real___openat_2(dirfd, path, flags);
}

static int openat64_2_shim(int dirfd, const char *path, int flags, ...)
{
	return real___openat64_2(dirfd, path, flags);
}

int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	resolve();
	return do_openat(openat_2_shim, dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	resolve();
	return do_openat(real___openat64_2 ? openat64_2_shim : openat_2_shim, dirfd, path, flags, 0);
}

static int do_open(int (*real)(const char *, int, ...), const char *path, int flags, mode_t mode)
{
	int fd, saved;

	if (!xenter())
		return real(path, flags, mode);
	saved = errno;
	before_open(AT_FDCWD, path, flags, mode, 0);
	errno = saved;
	fd = real(path, flags, mode);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && fds_released()) {
		errno = saved;
		fd = real(path, flags, mode);
	}
	leave();
	if (fd >= 0 && pending() && !(write_open(flags) && (flags & O_CREAT)) && xenter()) {
		saved = errno;
		after_open(AT_FDCWD, fd, path, flags);
		errno = saved;
		leave();
	}
	return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_open(real_open, path, flags, mode);
}

static int open_2_shim(const char *path, int flags, ...)
{
	return real___open_2(path, flags);
}

int __open_2(const char *path, int flags);

EXPORT int __open_2(const char *path, int flags)
{
	resolve();
	return do_open(open_2_shim, path, flags, 0);
}

/* ------------------------------------------------------------ fds */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct served *s = served_fd(fd);
	ssize_t r;

	if (s && enter()) {
		r = serve_read(s, buf, n);
		leave();
		return r;
	}
	resolve();
	archive_ahead_note_read(fd);
	r = real_read(fd, buf, n);
	archive_ahead_read(fd, r);
	return r;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	resolve();
	if (captured(fd) && write_captured(fd, buf, n))
		return (ssize_t)n;
	return real_write(fd, buf, n);
}

static off_t do_lseek(off_t (*real)(int, off_t, int), int fd, off_t off, int whence)
{
	struct served *s;
	off_t r;

	give_back(fd, 1);       /* a file being extracted: written out first (sparse members) */
	if ((s = served_fd(fd)) && enter()) {
		/* From here on this fd is libc's, at the position tar is at. */
		int saved = errno;

		r = real(fd, (off_t)served_pos(s), SEEK_SET);

		unserve(fd);
		errno = saved;
		leave();
		if (r < 0)
			return r;
	}
	r = real(fd, off, whence);
	archive_ahead_seek(fd, r);
	return r;
}

EXPORT off_t lseek(int fd, off_t off, int whence)
{
	resolve();
	return do_lseek(real_lseek, fd, off, whence);
}

EXPORT off_t lseek64(int fd, off_t off, int whence)
{
	resolve();
	return do_lseek(real_lseek64 ? real_lseek64 : real_lseek, fd, off, whence);
}

EXPORT int close(int fd)
{
	resolve();
	if (held(fd) && close_captured(fd) == 0)
		return 0;
	archive_ahead_closing(fd);
	closing_archive(fd);
	closing_fd(fd);
	if (served_fd(fd) && enter()) {
		int saved = errno;

		unserve(fd);
		errno = saved;
		leave();
	}
	return real_close(fd);
}

/* Calls we do not defer on a captured fd: written out, handed to libc. */
EXPORT int ftruncate(int fd, off_t len)
{
	resolve();
	give_back(fd, 1);
	return real_ftruncate(fd, len);
}

EXPORT int fsync(int fd)
{
	resolve();
	give_back(fd, 0);
	return real_fsync(fd);
}

EXPORT int dup(int fd)
{
	resolve();
	give_back(fd, 0);
	return real_dup(fd);
}

EXPORT int dup2(int fd, int fd2)
{
	resolve();
	give_back(fd, 0);
	give_back(fd2, 0);
	return real_dup2(fd, fd2);
}

/* ------------------------------------------------------------ directories */

EXPORT DIR *fdopendir(int fd)
{
	DIR *d;
	int saved;

	resolve();
	flush_all_first();      /* tar -x lists a directory: the files in it first */
	d = real_fdopendir(fd);
	if (!d || !enter())
		return d;
	saved = errno;
	create_dir_opened(d, fd);
	errno = saved;
	leave();
	return d;
}

EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *de;
	int saved;

	resolve();
	de = real_readdir(d);
	if (!enter())
		return de;
	saved = errno;
	if (de)
		create_dir_entry(d, de->d_name, de->d_type, de->d_ino, 0);
	else
		create_dir_entry(d, NULL, 0, 0, 1);
	errno = saved;
	leave();
	return de;
}

EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *de;
	int saved;

	resolve();
	de = real_readdir64(d);
	if (!enter())
		return de;
	saved = errno;
	if (de)
		create_dir_entry(d, de->d_name, de->d_type, de->d_ino, 0);
	else
		create_dir_entry(d, NULL, 0, 0, 1);
	errno = saved;
	leave();
	return de;
}

EXPORT DIR *opendir(const char *path)
{
	resolve();
	flush_all_first();
	return real_opendir(path);
}

EXPORT int closedir(DIR *d)
{
	resolve();
	if (enter()) {
		int saved = errno;

		create_dir_closed(d);
		errno = saved;
		leave();
	}
	return real_closedir(d);
}

/* ------------------------------------------------------------ metadata by fd */

EXPORT int futimens(int fd, const struct timespec ts[2])
{
	resolve();
	if (captured(fd) && defer_times(fd, ts) == 0)
		return 0;
	return real_futimens(fd, ts);
}

EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	resolve();
	if (!path && flags == 0 && captured(dirfd)) {
		if (defer_times(dirfd, ts) == 0)
			return 0;
	} else if (path) {
		note_metadata_by_name(dirfd, path, ts, flags);
	}
	return real_utimensat(dirfd, path, ts, flags);
}

EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	resolve();
	if (captured(fd) && defer_chown(fd, uid, gid) == 0)
		return 0;
	return real_fchown(fd, uid, gid);
}

EXPORT int fchmod(int fd, mode_t mode)
{
	resolve();
	if (captured(fd) && defer_chmod(fd, mode) == 0)
		return 0;
	return real_fchmod(fd, mode);
}

/* ------------------------------------------------------------ by name */

EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	resolve();
	by_name(dirfd, path, flags, DM_OWNER, 0);
	return real_fchownat(dirfd, path, uid, gid, flags);
}

EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	resolve();
	by_name(dirfd, path, flags, DM_MODE, mode);
	return real_fchmodat(dirfd, path, mode, flags);
}

EXPORT int setxattr(const char *path, const char *name, const void *v, size_t n, int flags)
{
	resolve();
	by_name(AT_FDCWD, path, 0, DM_NONE, 0);
	return real_setxattr(path, name, v, n, flags);
}

EXPORT int lsetxattr(const char *path, const char *name, const void *v, size_t n, int flags)
{
	resolve();
	by_name(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, DM_NONE, 0);
	return real_lsetxattr(path, name, v, n, flags);
}

EXPORT int linkat(int od, const char *op, int nd, const char *np, int flags)
{
	int r;

	resolve();
	if (link_replaced(od, op, nd, np, flags, NULL))
		return 0;
	flush_all_first();
	note_extracting();
	r = real_linkat(od, op, nd, np, flags);
	if (r < 0)
		create_failed(nd, np);
	return r;
}

EXPORT int renameat(int od, const char *op, int nd, const char *np)
{
	resolve();
	flush_all_first();
	return real_renameat(od, op, nd, np);
}

EXPORT int renameat2(int od, const char *op, int nd, const char *np, unsigned flags)
{
	resolve();
	flush_all_first();
	return real_renameat2(od, op, nd, np, flags);
}

/* tar's unlink of a file it is replacing is deferred: the new file takes
 * the old one's name atomically (extract_name.c). */
EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	resolve();
	if (unlink_deferred(dirfd, path, flags))
		return 0;
	flush_all_first();
	return real_unlinkat(dirfd, path, flags);
}

EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	resolve();
	name_call(dirfd, path);
	note_extracting();
	return real_mkdirat(dirfd, path, mode);
}

EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	int r;

	resolve();
	if (link_replaced(-1, NULL, dirfd, path, 0, target))
		return 0;
	name_call(dirfd, path);
	note_extracting();
	r = real_symlinkat(target, dirfd, path);
	if (r < 0)
		create_failed(dirfd, path);
	return r;
}

EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	resolve();
	name_call(dirfd, path);
	note_extracting();
	if (!real_mknodat) {
		errno = ENOSYS;
		return -1;
	}
	return real_mknodat(dirfd, path, mode, dev);
}

/* (glibc's mkfifoat calls its own mknodat, not the one above) */
EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	resolve();
	name_call(dirfd, path);
	note_extracting();
	if (!real_mkfifoat) {
		errno = ENOSYS;
		return -1;
	}
	return real_mkfifoat(dirfd, path, mode);
}

/* ------------------------------------------------------------ stat */

EXPORT int fstat(int fd, struct stat *sb)
{
	int r;

	resolve();
	give_back(fd, 0);
	r = real_fstat(fd, sb);
	if (stat_saw_pending(r, sb))
		r = real_fstat(fd, sb);
	if (r == 0)
		stat_unnamed_fd(fd, sb);
	return r;
}

EXPORT int fstatat(int dirfd, const char *path, struct stat *sb, int flags)
{
	int r;

	resolve();
	if ((flags & AT_EMPTY_PATH) && path && !*path)
		give_back(dirfd, 0);
	else
		looking(dirfd, path);
	r = real_fstatat(dirfd, path, sb, flags);
	if (stat_saw_pending(r, sb))
		r = real_fstatat(dirfd, path, sb, flags);
	if (r == 0 && (flags & AT_EMPTY_PATH) && path && !*path)
		stat_unnamed_fd(dirfd, sb);
	return r;
}

EXPORT int stat(const char *path, struct stat *sb)
{
	int r;

	resolve();
	looking(AT_FDCWD, path);
	r = real_stat(path, sb);
	if (stat_saw_pending(r, sb))
		r = real_stat(path, sb);
	return r;
}

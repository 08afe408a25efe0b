/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Destination paths of the writer.  Every path is relative to the writer's
 * root and resolved beneath it with openat2(): no component may be a
 * symbolic link (one planted in the destination must never redirect a
 * write), no '..' can climb out, and no mount point is crossed (the batch's
 * single syncfs() covers one file system only).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "write.h"
#include "fdlimit.h"

#define BENEATH (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

int wpath_check(const char *rel)
{
	const char *p = rel, *c;
	size_t n;

	if (!rel || !*rel || *rel == '/' || strlen(rel) >= BFO_WPATH_MAX)
		return -EINVAL;
	while (*p) {
		c = strchr(p, '/');
		n = c ? (size_t)(c - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		if (n > 255)
			return -ENAMETOOLONG;
		if (!c)
			break;
		p = c + 1;
		if (!*p)
			return -EINVAL;   /* trailing slash */
	}
	/* The journal directory at the root is the writer's own. */
	if (!strncmp(rel, BFO_JOURNAL_DIR, sizeof(BFO_JOURNAL_DIR) - 1) &&
	    (rel[sizeof(BFO_JOURNAL_DIR) - 1] == '\0' || rel[sizeof(BFO_JOURNAL_DIR) - 1] == '/'))
		return -EINVAL;
	return 0;
}

static int openat2_beneath(int dirfd, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = BENEATH,
	};
	uint64_t gen = fdl_gen();
	long fd;

	/* EAGAIN: a rename or mount race; EMFILE: see fdl_retry (the
	 * directory itself is not counted: its callers close it). */
	do {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	} while (fd < 0 && (errno == EAGAIN || fdl_retry(errno, &gen)));
	return fd < 0 ? -errno : (int)fd;
}

int wpath_open_dir(int rootfd, const char *dir, bool create)
{
	int fd, cur;
	char *copy, *p, *save = NULL;

	fd = openat2_beneath(rootfd, *dir ? dir : ".");
	if (fd >= 0 || (fd != -ENAMETOOLONG && (fd != -ENOENT || !create)))
		return fd;
	/* One component at a time, each resolved like the whole path: to
	 * create what is missing, or for a path longer than PATH_MAX. */
	copy = strdup(dir);
	if (!copy)
		return -ENOMEM;
	cur = openat2_beneath(rootfd, ".");
	for (p = strtok_r(copy, "/", &save); p && cur >= 0; p = strtok_r(NULL, "/", &save)) {
		int next = openat2_beneath(cur, p);

		if (next == -ENOENT && create) {
			if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST) {
				next = -errno;
			} else {
				next = openat2_beneath(cur, p);
			}
		}
		close(cur);
		cur = next;
	}
	free(copy);
	return cur;
}

int wpath_open_dir_held(int rootfd, const char *dir, bool create)
{
	int fd = wpath_open_dir(rootfd, dir, create);

	if (fd >= 0)
		fdl_hold();
	return fd;
}

/* Split rel at its last '/': dir gets the directory ("" at the root),
 * the return value points at the base name inside rel. */
const char *wpath_split(const char *rel, char *dir, size_t len)
{
	const char *slash = strrchr(rel, '/');
	size_t n = slash ? (size_t)(slash - rel) : 0;

	if (len == 0)
		return slash ? slash + 1 : rel;
	if (n >= len)
		n = len - 1;
	memcpy(dir, rel, n);
	dir[n] = '\0';
	return slash ? slash + 1 : rel;
}

int wpath_remove_tree(int dfd, const char *name, unsigned depth)
{
	struct stat st;
	int fd, ret = 0;
	DIR *d;
	struct dirent *de;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (depth > 4096)
		return -ELOOP;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	while (!ret && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			ret = wpath_remove_tree(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	if (!ret && unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		ret = -errno;
	return ret;
}

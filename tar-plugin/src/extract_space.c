/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: free space, and a handle on each file system tar extracts to.
 *
 * A write tar believes done must not fail later for want of room, so data
 * is only queued while the queue surely fits: the free space is looked up
 * (fstatfs, once per file system and flush) and every queued byte is
 * charged, rounded up to blocks, plus a block per file and per thing tar
 * creates by name, plus SPACE_MARGIN.  When a write does not fit, the
 * queue is written out and the space looked up again; if it still does not
 * fit, the file goes back to libc and tar's write() meets the full file
 * system itself: "Wrote only N of M bytes", "Cannot write: No space left
 * on device" and exit 2 come from tar as without the plugin.
 */
#include "extract.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#define SPACE_MARGIN  (4ull << 20)

/* The file systems tar extracts to (tar's thread; the flusher reads fd[]). */
static struct {
	int fd[MAX_DEVS];               /* a handle for fstatfs and syncfs: see fs_handle() */
	dev_t dev[MAX_DEVS];
	unsigned n;
	uint64_t avail[MAX_DEVS];       /* bytes free at the last look */
	uint64_t pend[MAX_DEVS];        /* charged since that look */
	uint64_t bs[MAX_DEVS];          /* block size */
	int looked[MAX_DEVS];           /* looked since the last flush */
} sp;

int known_dev(dev_t dev)
{
	for (unsigned i = 0; i < sp.n; i++)
		if (sp.dev[i] == dev)
			return 1;
	return 0;
}

/* A directory opened read-only (syncfs refuses O_PATH), if it is on dev. */
static int dir_on(int dirfd, const char *path, dev_t dev, struct stat *sb)
{
	int d = real_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (d >= 0 && (real_fstat(d, sb) < 0 || sb->st_dev != dev)) {
		real_close(d);
		d = -1;
	}
	return d;
}

/*
 * A handle on the file system of path (a file tar just created from
 * dirfd), for fstatfs and syncfs until exit.  Never that file, nor anything
 * else tar may remove: an fd keeps an unlinked inode alive, so the next file
 * tar creates gets a new inode number where plain tar gets the freed one
 * back (ext4), and tar's delayed links see it: a symlink whose target is
 * absolute or holds '..' is first an empty placeholder whose device and
 * inode tar records, and at the end tar replaces whatever still has them by
 * the link.  A later member of that name (tar unlinks the placeholder,
 * creates the file) then left the file where plain tar leaves the link.
 * So: the directory tar extracts from (tar holds it open itself), else the
 * root of the mount holding the file (found going up from the file's
 * directory; a mount point cannot be removed), or -1: the file goes to libc.
 */
static int fs_handle(int dirfd, const char *path, dev_t dev)
{
	const char *slash = strrchr(path, '/');
	struct stat sb, up;
	char *dir;
	int d, u;

	if ((d = dir_on(dirfd, ".", dev, &sb)) >= 0 || !slash)
		return d;
	if (!(dir = strndup(path, slash == path ? 1 : (size_t)(slash - path))))
		return -1;
	d = dir_on(dirfd, dir, dev, &sb);
	free(dir);
	for (int n = 0; d >= 0 && n < 4096; n++) {
		if ((u = dir_on(d, "..", dev, &up)) < 0)
			break;
		if (up.st_ino == sb.st_ino) {   /* "/" */
			real_close(u);
			break;
		}
		real_close(d);
		d = u;
		sb = up;
	}
	return d;
}

/* The file system's index here, or -1 (too many: its files go to libc). */
int note_dev(int dirfd, const char *path, dev_t dev)
{
	unsigned i;
	int d;

	for (i = 0; i < sp.n; i++)
		if (sp.dev[i] == dev)
			return (int)i;
	if (sp.n == MAX_DEVS || (d = fs_handle(dirfd, path, dev)) < 0)
		return -1;
	sp.dev[sp.n] = dev;
	sp.fd[sp.n] = d;
	sp.looked[sp.n] = 0;
	sp.pend[sp.n] = 0;
	return (int)sp.n++;
}

static int look(unsigned i)
{
	struct statfs fs;

	if (fstatfs(sp.fd[i], &fs) < 0 || fs.f_bsize <= 0)
		return -1;
	sp.bs[i] = (uint64_t)fs.f_bsize;
	sp.avail[i] = (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
	sp.pend[i] = 0;
	sp.looked[i] = 1;
	return 0;
}

static int fits(unsigned i, uint64_t bytes)
{
	return sp.pend[i] + bytes + SPACE_MARGIN <= sp.avail[i];
}

/* Charge bytes to file system i; 0 if the queue cannot take them. */
int reserve(unsigned i, uint64_t bytes)
{
	if (!sp.looked[i] && look(i) < 0)
		return 0;
	if (!fits(i, bytes)) {
		flush_queue();
		if (look(i) < 0 || !fits(i, bytes))
			return 0;
	}
	sp.pend[i] += bytes;
	return 1;
}

/* Blocks a file of n bytes holds. */
uint64_t blocks_of(unsigned i, uint64_t n)
{
	uint64_t bs = sp.bs[i] ? sp.bs[i] : 4096;

	return (n + bs - 1) / bs * bs;
}

/* tar created something by name (a directory, a link): a block, everywhere. */
void charge_name(void)
{
	for (unsigned i = 0; i < sp.n; i++)
		sp.pend[i] += sp.bs[i] ? sp.bs[i] : 4096;
	ex.dirty = 1;
}

/* A block of file system i, for what tar creates. */
uint64_t dev_block(unsigned i)
{
	return sp.bs[i] ? sp.bs[i] : 4096;
}

/* What was written shows in the next look. */
void space_forget_looks(void)
{
	for (unsigned i = 0; i < sp.n; i++)
		sp.looked[i] = 0;
}

unsigned space_ndevs(void)
{
	return sp.n;
}

int dev_fd(unsigned i)
{
	return sp.fd[i];
}

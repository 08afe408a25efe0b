/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: tar's calls while it extracts.  Its new files are made unnamed
 * (extract_name.c) and their fds captured, their write()s buffered and
 * their fd metadata deferred into the queue; a call that may depend on a
 * pending file (or name) flushes it first; a call the plugin does not
 * defer hands the file's I/O back to libc.
 */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct extract_state ex = { .errfd = -1, .queue_files = QUEUE_FILES_MAX };

/* tar opened path for writing, fd is the new file (named by tar's own
 * open): capture it. */
static void capture(int dirfd, int fd, const char *path)
{
	struct wfile *w;
	struct stat sb;
	int di;

	if (fd >= FDTAB_MAX || ex.wtab[fd] || real_fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size != 0 || (di = note_dev(dirfd, path, sb.st_dev)) < 0)
		return;
	ex.dirty = 1;
	if (!reserve((unsigned)di, dev_block((unsigned)di)) || !(w = wfile_new(path, (unsigned)di)))
		return;         /* little room left: tar writes it itself */
	if (queue_add(w) < 0) {
		wfile_free(w);
		return;
	}
	wfile_hold(w, fd, &sb);
}

/* A file of tar's whose writes and metadata the plugin takes. */
struct wfile *captured(int fd)
{
	struct wfile *w = (unsigned)fd < FDTAB_MAX ? ex.wtab[fd] : NULL;

	return w && !w->libc ? w : NULL;
}

/* A file of tar's the plugin holds (its close is the plugin's). */
struct wfile *held(int fd)
{
	return (unsigned)fd < FDTAB_MAX ? ex.wtab[fd] : NULL;
}

static int defer(struct wfile *w, const struct meta *m)
{
	if (w->nm == w->mcap) {
		unsigned nc = w->mcap ? 2 * w->mcap : 4;
		struct meta *p = realloc(w->m, nc * sizeof(*p));

		if (!p)
			return -1;
		w->m = p;
		w->mcap = nc;
	}
	w->m[w->nm++] = *m;
	return 0;
}

/* A write-open of tar's (extract or not), before and after the real call. */
int write_open(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int excl_create(int flags)
{
	return (flags & O_ACCMODE) == O_WRONLY && (flags & O_CREAT) && (flags & O_EXCL) &&
	       !(flags & (O_APPEND | O_PATH | O_DIRECT | O_SYNC | O_DSYNC)) && (flags & __O_TMPFILE) != __O_TMPFILE;
}

/*
 * Before tar's open: what it unlinked just before is unlinked now, unless
 * this is its create of that name; a name it reaches that is pending gets
 * its file first.  tar's create of a new file (O_EXCL) is made unnamed
 * here: its fd, or -1 (the real open is to run).
 */
int before_open(int dirfd, const char *path, int flags, mode_t mode, int by_openat)
{
	int create = excl_create(flags) && by_openat, fd;

	if (!victim_is(dirfd, path) || !create)
		victim_settle();
	note_eexist(-1, NULL);
	if (write_open(flags) && (flags & O_CREAT) && by_openat)  /* tar's extract opens; its archive uses open() */
		start_extracting();
	if (pending() && names_reach(dirfd, path))
		flush_queue();
	if (create && ex.extracting && (fd = unnamed_create(dirfd, path, flags, mode)) >= 0)
		return fd;
	victim_settle();
	if (write_open(flags) && !((flags & O_CREAT) && (flags & O_EXCL)))
		flush_if_pending(dirfd, path, (flags & O_NOFOLLOW) != 0);
	return -1;
}

void after_open(int dirfd, int fd, const char *path, int flags)
{
	struct stat sb;

	if (fd < 0) {
		if (errno == EEXIST && excl_create(flags))
			note_eexist(dirfd, path);       /* tar may unlink it next and open again */
		return;
	}
	if ((flags & O_ACCMODE) == O_WRONLY && (flags & O_CREAT) &&
	    (flags & (O_EXCL | O_TRUNC)) && !(flags & (O_APPEND | O_PATH | O_DIRECT | O_SYNC | O_DSYNC)) &&
	    !(flags & __O_TMPFILE)) {
		capture(dirfd, fd, path);
		return;
	}
	/* A file opened some other way (O_PATH for metadata, read) may be a
	 * pending one: what tar then sees must be complete. */
	if (pending() && real_fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && pending_inode(sb.st_dev, sb.st_ino))
		flush_queue();
}

/* tar closes a captured fd: queued (we keep the fd), flushed at the bounds. */
int close_captured(int fd)
{
	struct wfile *w = held(fd);
	int saved;

	if (!w || !xenter())
		return -1;
	saved = errno;
	w->closed = 1;
	ex.wtab[fd] = NULL;
	/* the queue's descriptors: its files' and their directories' */
	if (ex.nq + xdirs_open() >= ex.queue_files || ex.queued_bytes >= QUEUE_BYTES)
		flush_queue_behind();
	errno = saved;
	leave();
	return 0;
}

/* tar's write() to a captured fd, queued while it fits: 1, or 0 (not taken). */
static int queue_write(struct wfile *w, int fd, const void *buf, size_t n)
{
	uint64_t have = w->written + w->len;

	if (w->nm != 0 || have + n > WFILE_MAX ||
	    !reserve(w->di, blocks_of(w->di, have + n) - blocks_of(w->di, have)) ||
	    ex.wtab[fd] != w)
		return 0;
	if (w->len + n > w->cap) {
		size_t nc = w->cap ? w->cap : 4096;
		char *p;

		while (nc < w->len + n)
			nc *= 2;
		p = realloc(w->buf, nc);
		if (p) {
			w->buf = p;
			w->cap = nc;
		}
	}
	if (w->len + n > w->cap)
		return 0;
	memcpy(w->buf + w->len, buf, n);
	w->len += n;
	ex.queued_bytes += n;
	counters.xbytes += n;
	if (ex.queued_bytes >= QUEUE_BYTES)
		flush_queue_behind();   /* the files tar closed; this one stays */
	return 1;
}

/* 1: taken (tar's write() returns n); 0: libc writes it. */
int write_captured(int fd, const void *buf, size_t n)
{
	int saved, took;

	if (!captured(fd) || !xenter())
		return 0;
	saved = errno;
	took = queue_write(captured(fd), fd, buf, n);
	if (!took)
		detach(fd);     /* large, or written after its metadata: libc */
	errno = saved;
	leave();
	return took;
}

static int defer_hook(int fd, const struct meta *m)
{
	struct wfile *w = captured(fd);
	int r = -1;

	if (w && xenter()) {
		int saved = errno;

		r = defer(w, m);
		if (r < 0)
			detach(fd);
		errno = saved;
		leave();
	}
	return r;
}

/* futimens(fd), utimensat(fd, NULL), fchown(fd), fchmod(fd): 0 if deferred. */
int defer_times(int fd, const struct timespec ts[2])
{
	struct meta m = { .op = M_TIMES, .null_ts = !ts };

	if (ts)
		m.ts[0] = ts[0], m.ts[1] = ts[1];
	return defer_hook(fd, &m);
}

int defer_chown(int fd, uid_t uid, gid_t gid)
{
	struct meta m = { .op = M_CHOWN, .uid = uid, .gid = gid };

	return defer_hook(fd, &m);
}

int defer_chmod(int fd, mode_t mode)
{
	struct meta m = { .op = M_CHMOD, .mode = mode };

	return defer_hook(fd, &m);
}

/* Name-based calls: what tar unlinked just before is unlinked now; flushed
 * first when they reach a pending file or name, or its directory (but for
 * a directory's owner and mode where the links stay allowed:
 * dir_meta_unflushed). */
void by_name(int dirfd, const char *path, int flags, int what, mode_t mode)
{
	int saved;

	if (ex.extracting)
		ex.dirty = 1;      /* metadata by name: committed at exit too */
	if (!xenter())
		return;
	saved = errno;
	victim_settle();
	note_eexist(-1, NULL);
	if (pending()) {
		if ((flags & AT_EMPTY_PATH) && path && !*path && captured(dirfd))
			detach(dirfd);
		else if (what == DM_NONE || !dir_meta_unflushed(dirfd, path, flags, NULL, what, mode))
			flush_if_pending(dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) != 0);
	}
	errno = saved;
	leave();
}

/* utimensat() by name: metadata committed at exit too; flushed first when
 * it reaches a pending file or name, or its directory (but for a
 * directory's times, kept: dir_meta_unflushed). */
void note_metadata_by_name(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	int saved;

	if (!ex.extracting || !xenter())
		return;
	saved = errno;
	ex.dirty = 1;
	victim_settle();
	note_eexist(-1, NULL);
	if (pending() && !dir_meta_unflushed(dirfd, path, flags, ts, DM_TIMES, 0))
		flush_if_pending(dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) != 0);
	errno = saved;
	leave();
}

/* Calls that may depend on any pending file (links, renames, unlinks, a
 * directory's listing); they may change what a directory's name leads to. */
void flush_all_first(void)
{
	if (xenter()) {
		int saved = errno;

		xdir_names_changed();
		victim_settle();
		note_eexist(-1, NULL);
		if (pending())
			flush_queue();
		errno = saved;
		leave();
	}
}

/* tar closes fd (before libc does). */
void closing_fd(int fd)
{
	if (ex.extracting && xenter()) {
		xdir_dirfd_closed(fd);
		leave();
	}
}

/* tar's unlinkat(): 1 when deferred (extract_name.c: tar replaces a file),
 * and tar is told it succeeded. */
int unlink_deferred(int dirfd, const char *path, int flags)
{
	int saved, r;

	if (!ex.extracting || !xenter())
		return 0;
	saved = errno;
	victim_settle();
	r = defer_unlink(dirfd, path, flags);
	errno = saved;
	leave();
	return r;
}

/* tar's link or symlink, over the name it unlinked just before, made to
 * replace the old entry atomically: 1 if done (tar's call succeeded). */
int link_replaced(int od, const char *op, int nd, const char *np, int flags, const char *target)
{
	int saved, r;

	if (!ex.extracting || !xenter())
		return 0;
	saved = errno;
	if (victim_is(nd, np) && pending())
		flush_queue();  /* (the link's source may be pending) */
	r = link_replacing(od, op, nd, np, flags, target);
	errno = saved;
	leave();
	return r;
}

/* tar's create by name failed: on EEXIST it may unlink the name next and
 * create again (extract_name.c). */
void create_failed(int dirfd, const char *path)
{
	int saved = errno;

	if (saved == EEXIST && ex.extracting && xenter()) {
		note_eexist(dirfd, path);
		leave();
	}
	errno = saved;
}

/* tar creates something by name (a directory, a symlink, a node): what it
 * unlinked just before is unlinked now, a pending name it reaches gets its
 * file first. */
void name_call(int dirfd, const char *path)
{
	int saved;

	if (!xenter())
		return;
	saved = errno;
	victim_settle();
	note_eexist(-1, NULL);
	if (pending() && names_reach(dirfd, path))
		flush_queue();
	dir_times_entry_made(dirfd, path);
	errno = saved;
	leave();
}

/* tar looks a name up (stat): what it unlinked is gone, a pending name it
 * reaches has its file. */
void looking(int dirfd, const char *path)
{
	int saved;

	if (!xenter())
		return;
	saved = errno;
	victim_settle();
	if (pending() && names_reach(dirfd, path))
		flush_queue();
	errno = saved;
	leave();
}

/* tar creates something by name: extraction has begun; it takes room. */
void note_extracting(void)
{
	if (xenter()) {
		start_extracting();
		charge_name();
		leave();
	}
}

/* A stat that finds a pending file: flushed, then asked again. */
int stat_saw_pending(int r, const struct stat *sb)
{
	int again = 0;

	if (r == 0 && pending() && S_ISREG(sb->st_mode) && xenter()) {
		int saved = errno;

		if (pending_inode(sb->st_dev, sb->st_ino)) {
			flush_queue();
			again = 1;
		}
		errno = saved;
		leave();
	}
	return again;
}

/* Calls we do not defer on a captured fd: written out, handed to libc;
 * seek: a seek or truncate (a sparse member, which tar lays out itself). */
void give_back(int fd, int seek)
{
	if (captured(fd) && xenter()) {
		int saved = errno;

		if (seek)
			captured(fd)->seeked = 1;
		detach(fd);
		errno = saved;
		leave();
	}
}

/* tar's fstat of a file it holds that has no name yet: one link, as
 * plain tar's has. */
void stat_unnamed_fd(int fd, struct stat *sb)
{
	struct wfile *w;

	if (held(fd) && xenter()) {
		w = held(fd);
		if (w && unnamed(w) && sb->st_nlink == 0)
			sb->st_nlink = 1;
		leave();
	}
}

int extracting(void)
{
	return ex.extracting;
}

/* After fork(): the flusher and the writers stayed in the parent. */
void extract_forget(void)
{
	flusher_forget();
	roots_forget();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: tar's new regular files are made unnamed and take their names
 * only once whole, so that a kill at any point leaves each file absent or
 * whole, never empty or partial.
 *
 * tar creates a file with openat(dirfd, NAME, O_WRONLY|O_CREAT|O_EXCL).
 * The plugin checks that NAME is free (fstatat, no symlink followed) and
 * makes the file with O_TMPFILE in NAME's directory instead (held open,
 * O_PATH, until its files have their names).  The file takes NAME (linkat
 * of its descriptor where the kernel allows it, else of /proc/self/fd/N)
 * when the queue is flushed, after its data and metadata, and (durability
 * batch) after a syncfs that put them on disk (extract_queue.c).  Until
 * then NAME is pending: a name-based call of tar's that reaches it (any
 * component of its path) or the metadata of its directory flushes the
 * queue first, so tar sees what plain tar sees; a name that exists or is
 * pending goes to tar's own openat, which fails with plain tar's EEXIST.
 *
 * Replacing.  On EEXIST, tar unlinks the name and opens it again.  When
 * the name holds a non-directory that was there before tar began, the
 * unlink is deferred (tar is told it succeeded), the next open makes the
 * new file unnamed as above, and it replaces the old one atomically when
 * it takes the name (extract_replace.c); if tar does anything else by
 * name first, the unlink is carried out then.  A file born since tar
 * began (a member that came twice, a placeholder) is unlinked at once, as
 * plain tar does (ext4 then gives the next file its inode back, which
 * tar's delayed links see).
 *
 * Where O_TMPFILE is refused (a file system without it, no /proc), tar's
 * own open runs: the file has its name from the start, as in plain tar.
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

static unsigned xdirs_live;     /* atomic: descriptors the xdirs hold */

/* tar's thread: the last directory files were made in, and tar's name for
 * it, trusted until tar closes that dirfd, or links, renames or removes
 * anything but the files it replaces (tar's archives list a directory's
 * files together: one lookup of it). */
static struct xdir *xcache;
static struct {
	int dirfd;
	char *part;
} xkey = { .dirfd = -1 };

void xdir_put(struct xdir *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		real_close(d->fd);
		free(d);
		__atomic_sub_fetch(&xdirs_live, 1, __ATOMIC_RELAXED);
	}
}

int xdir_fd(const struct xdir *d)
{
	return d->fd;
}

unsigned xdirs_open(void)
{
	return __atomic_load_n(&xdirs_live, __ATOMIC_RELAXED);
}

/* tar's name for the cached directory may lead elsewhere now. */
void xdir_names_changed(void)
{
	free(xkey.part);
	xkey.part = NULL;
	xkey.dirfd = -1;
}

/* tar closes fd: a name relative to it means nothing any more. */
void xdir_dirfd_closed(int fd)
{
	if (xkey.part && fd == xkey.dirfd)
		xdir_names_changed();
}

/* Out of descriptors: the cache's goes back (tar's own open comes first). */
static void xcache_drop(void)
{
	xdir_names_changed();
	xdir_put(xcache);
	xcache = NULL;
}

static void xcache_name(int dirfd, const char *part)
{
	if (xkey.part && xkey.dirfd == dirfd && !strcmp(xkey.part, part))
		return;
	xdir_names_changed();
	if ((xkey.part = strdup(part)))
		xkey.dirfd = dirfd;
}

/* The directory part of tar's path, held (a reference for the caller). */
static struct xdir *xdir_get(int dirfd, const char *part)
{
	struct stat sb;
	struct xdir *d;
	int fd;

	if (xcache && xkey.part && xkey.dirfd == dirfd && !strcmp(xkey.part, part)) {
		__atomic_add_fetch(&xcache->refs, 1, __ATOMIC_RELAXED);
		return xcache;
	}
	if (real_fstatat(dirfd, part, &sb, 0) < 0 || !S_ISDIR(sb.st_mode))
		return NULL;
	if (xcache && xcache->dev == sb.st_dev && xcache->ino == sb.st_ino) {
		__atomic_add_fetch(&xcache->refs, 1, __ATOMIC_RELAXED);
		xcache_name(dirfd, part);
		return xcache;
	}
	fd = real_openat(dirfd, part, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && (fds_released() || xcache)) {
		xcache_drop();
		fd = real_openat(dirfd, part, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return NULL;
	if (real_fstat(fd, &sb) < 0 || !(d = malloc(sizeof(*d)))) {
		real_close(fd);
		return NULL;
	}
	*d = (struct xdir){ .fd = fd, .dev = sb.st_dev, .ino = sb.st_ino, .refs = 2 };
	__atomic_add_fetch(&xdirs_live, 1, __ATOMIC_RELAXED);
	xdir_put(xcache);
	xcache = d;
	xcache_name(dirfd, part);
	return d;
}

/* ------------------------------------------------------------ where O_TMPFILE works */

static struct {
	int proc;               /* -1 unknown, 0 no /proc/self/fd (no unnamed files), 1 */
	dev_t no[MAX_DEVS];     /* file systems that refused O_TMPFILE */
	unsigned nno;
} tf = { .proc = -1 };

static int tmpfile_ok(dev_t dev)
{
	struct stat sb;

	if (tf.proc < 0)
		tf.proc = real_fstatat(AT_FDCWD, "/proc/self/fd", &sb, 0) == 0;
	if (!tf.proc)
		return 0;
	for (unsigned i = 0; i < tf.nno; i++)
		if (tf.no[i] == dev)
			return 0;
	return 1;
}

static void tmpfile_refused(dev_t dev)
{
	if (tf.nno < MAX_DEVS)
		tf.no[tf.nno++] = dev;
}

/* path as its directory part (malloc'd; "." for none) and its last name;
 * 0 where that is not a plain name in a directory. */
int path_split(const char *path, char **part, const char **base)
{
	const char *s = strrchr(path, '/');
	size_t n;

	*base = s ? s + 1 : path;
	if (!**base || !strcmp(*base, ".") || !strcmp(*base, ".."))
		return 0;
	n = s ? (size_t)(s - path) : 0;
	if (s && n == 0)
		n = 1;          /* "/name" */
	*part = n ? strndup(path, n) : strdup(".");
	return *part != NULL;
}

/* ------------------------------------------------------------ entries born in this run */

/*
 * Whether the entry at dirfd/path was born since tar began extracting (by
 * tar: a member that came twice, a placeholder; or by another process):
 * its birth time (the change time where there is none) against the
 * extraction's start (extract_end.c: on the coarse clock the file systems
 * stamp with, just after a tick, so that no entry born before reads as
 * new nor one born since as older).  *sb: what it is.
 */
static int born_in_run(int dirfd, const char *path, struct stat *sb)
{
	struct statx sx;
	struct statx_timestamp t;

	if (statx(dirfd, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
		return -1;
	memset(sb, 0, sizeof(*sb));
	sb->st_mode = sx.stx_mode;
	sb->st_uid = sx.stx_uid;
	sb->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	sb->st_ino = sx.stx_ino;
	t = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime : sx.stx_ctime;
	return t.tv_sec > ex.t0.tv_sec || (t.tv_sec == ex.t0.tv_sec && t.tv_nsec >= ex.t0.tv_nsec);
}

/* ------------------------------------------------------------ pending names */

/*
 * The names of the unnamed files (queued, or in the flusher's generation):
 * a set of their hashes for a quick look at every component of a path
 * tar names, and their directory and hash for the exact answer.  Rebuilt
 * when files take their names (tar's thread only).
 */
#define NAME_SLOTS 8192u        /* four times the files queued and in flight at most */

struct pname {
	dev_t dev;              /* its directory */
	ino_t ino;
	uint64_t bh;
};

static struct {
	uint64_t h[NAME_SLOTS]; /* 0: empty */
	unsigned n;
	int full;               /* every name may be pending */
	struct pname *g;        /* the generation in flight */
	unsigned ng, gcap;
} pn;

static uint64_t hash_name(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h | 1;
}

static void table_add(uint64_t h)
{
	unsigned i = (unsigned)h & (NAME_SLOTS - 1);

	if (2 * (pn.n + 1) > NAME_SLOTS) {
		pn.full = 1;
		return;
	}
	for (; pn.h[i]; i = (i + 1) & (NAME_SLOTS - 1))
		if (pn.h[i] == h)
			return;
	pn.h[i] = h;
	pn.n++;
}

static int table_has(uint64_t h)
{
	if (pn.full)
		return 1;
	for (unsigned i = (unsigned)h & (NAME_SLOTS - 1); pn.h[i]; i = (i + 1) & (NAME_SLOTS - 1))
		if (pn.h[i] == h)
			return 1;
	return 0;
}

int unnamed(const struct wfile *w)
{
	return w->dir && !w->named;
}

void names_add(const struct wfile *w)
{
	if (unnamed(w))
		table_add(w->bh);
}

void names_rebuild(void)
{
	memset(pn.h, 0, sizeof(pn.h));
	pn.n = 0;
	pn.full = 0;
	for (unsigned i = 0; i < ex.nq; i++)
		names_add(ex.queue[i]);
	for (unsigned i = 0; i < pn.ng; i++)
		table_add(pn.g[i].bh);
	dir_times_prune();
}

/* The flusher takes g[0..n): their names stay pending until it is done. */
void names_handoff(struct wfile *const *g, unsigned n)
{
	if (n > pn.gcap) {
		struct pname *p = realloc(pn.g, n * sizeof(*p));

		if (!p) {
			pn.full = 1;    /* every name may be pending until the generation is done */
			pn.ng = 0;
			return;
		}
		pn.g = p;
		pn.gcap = n;
	}
	pn.ng = 0;
	for (unsigned i = 0; i < n; i++)
		if (unnamed(g[i]))
			pn.g[pn.ng++] = (struct pname){ g[i]->dir->dev, g[i]->dir->ino, g[i]->bh };
}

void names_generation_done(void)
{
	pn.ng = 0;
	names_rebuild();
}

static int name_pending(dev_t dev, ino_t ino, uint64_t bh)
{
	if (!table_has(bh))
		return 0;
	for (unsigned i = 0; i < ex.nq; i++) {
		const struct wfile *w = ex.queue[i];

		if (unnamed(w) && w->bh == bh && w->dir->dev == dev && w->dir->ino == ino)
			return 1;
	}
	for (unsigned i = 0; i < pn.ng; i++)
		if (pn.g[i].bh == bh && pn.g[i].dev == dev && pn.g[i].ino == ino)
			return 1;
	return pn.full;
}

/* Whether the directory dev/ino holds a pending name (its metadata would
 * change when the name comes). */
int names_dir_holds(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < ex.nq; i++) {
		const struct wfile *w = ex.queue[i];

		if (unnamed(w) && w->dir->dev == dev && w->dir->ino == ino)
			return 1;
	}
	for (unsigned i = 0; i < pn.ng; i++)
		if (pn.g[i].dev == dev && pn.g[i].ino == ino)
			return 1;
	return pn.full && (pn.n || pn.ng);
}

/*
 * Whether tar's path may reach a pending name: its last component is one
 * in the directory the rest leads to, or any other component has the name
 * of one (pending files are no directories: plain tar would meet ENOTDIR
 * there; conservatively yes).
 */
int names_reach(int dirfd, const char *path)
{
	const char *s, *e, *r;
	char dir[PATH_MAX];
	struct stat sb;
	uint64_t h;
	size_t n;

	if ((!pn.n && !pn.full) || !path)
		return 0;
	for (s = path; *s; s = e) {
		while (*s == '/')
			s++;
		for (e = s; *e && *e != '/'; e++)
			;
		if (e == s)
			break;
		h = hash_name(s, (size_t)(e - s));
		if (!table_has(h))
			continue;
		for (r = e; *r == '/'; r++)
			;
		if (*r)
			return 1;
		n = (size_t)(s - path);
		if (n >= sizeof(dir))
			return 1;
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (real_fstatat(dirfd, n ? dir : ".", &sb, 0) < 0)
			return 1;
		return name_pending(sb.st_dev, sb.st_ino, h);
	}
	return 0;
}

/* ------------------------------------------------------------ the deferred unlink */

static struct {
	int dirfd;              /* tar's last O_EXCL create that met EEXIST */
	char *path;
} ee = { .dirfd = -1 };

static struct {
	int active;
	int dirfd;              /* as tar named it */
	char *path;
	struct xdir *dir;       /* its directory, held */
	char *base;
	uint64_t bh;
	dev_t dev;              /* the old file */
	ino_t ino;
	char *settled;          /* the last one carried out before tar's open: not deferred again */
} vic;

void note_eexist(int dirfd, const char *path)
{
	free(ee.path);
	ee.path = path ? strdup(path) : NULL;
	ee.dirfd = dirfd;
}

/* Whether tar may unlink what is at sb from its directory d (a sticky
 * directory lets only the owners and root), and create there. */
static int may_replace(const struct stat *sb, const struct xdir *d)
{
	struct stat ds;
	uid_t me = geteuid();

	if (real_fstat(d->fd, &ds) < 0)
		return 0;
	if ((ds.st_mode & S_ISVTX) && me != 0 && sb->st_uid != me && ds.st_uid != me)
		return 0;
	return faccessat(d->fd, "", W_OK | X_OK, AT_EACCESS | AT_EMPTY_PATH) == 0 ||
	       (errno == EINVAL && me == 0);    /* no faccessat2: root may */
}

/*
 * tar's unlinkat(dirfd, path, flags): 1 when deferred (tar is told it
 * succeeded), 0 when it runs now.  Deferred only right after tar's
 * O_EXCL create of that very name met EEXIST (tar's way of replacing a
 * file), for a non-directory born before tar began, where the new file
 * can be made unnamed beside it.
 */
int defer_unlink(int dirfd, const char *path, int flags)
{
	int match = !flags && path && ee.path && ee.dirfd == dirfd && !strcmp(ee.path, path);
	const char *base;
	struct stat sb;
	struct xdir *d;
	char *part;

	note_eexist(-1, NULL);
	if (match && vic.settled && strcmp(vic.settled, path)) {
		free(vic.settled);      /* another name: the guard below is for a retry of this one */
		vic.settled = NULL;
	}
	if (!match || vic.active || (vic.settled && !strcmp(vic.settled, path)) ||
	    born_in_run(dirfd, path, &sb) != 0 || S_ISDIR(sb.st_mode) || !path_split(path, &part, &base))
		return 0;
	d = xdir_get(dirfd, part);
	free(part);
	if (!d || d->dev != sb.st_dev || !tmpfile_ok(d->dev) || !may_replace(&sb, d) ||
	    !(vic.path = strdup(path)) || !(vic.base = strdup(base))) {
		free(vic.path);
		vic.path = NULL;
		xdir_put(d);
		return 0;
	}
	vic.active = 1;
	vic.dirfd = dirfd;
	vic.dir = d;
	vic.bh = hash_name(base, strlen(base));
	vic.dev = sb.st_dev;
	vic.ino = sb.st_ino;
	return 1;
}

/* Whether tar's call on dirfd/path is its open of the name it unlinked. */
int victim_is(int dirfd, const char *path)
{
	return vic.active && vic.dirfd == dirfd && path && !strcmp(vic.path, path);
}

static void victim_drop(void)
{
	vic.active = 0;
	free(vic.path);
	free(vic.base);
	xdir_put(vic.dir);
	vic.path = vic.base = NULL;
	vic.dir = NULL;
	free(vic.settled);
	vic.settled = NULL;
}

/* tar did something else after its unlink: the unlink is carried out now. */
void victim_settle(void)
{
	if (!vic.active)
		return;
	real_unlinkat(vic.dirfd, vic.path, 0);
	free(vic.settled);
	vic.settled = vic.path;
	vic.path = NULL;
	free(vic.base);
	vic.base = NULL;
	xdir_put(vic.dir);
	vic.dir = NULL;
	vic.active = 0;
}

/*
 * tar's linkat(od, op, nd, np) or symlinkat(target, nd, np) of the name it
 * unlinked just before (a link member over an older file): made under a
 * temporary name beside it and renamed over it, so that the name holds
 * the old entry or the new one (a kill between the two leaves the
 * temporary: README).  1 if done, 0 if tar's own call is to run (the
 * unlink carried out first).
 */
int link_replacing(int od, const char *op, int nd, const char *np, int flags, const char *target)
{
	static unsigned seq;
	char tmp[64];
	int r;

	if (!victim_is(nd, np))
		return 0;
	snprintf(tmp, sizeof(tmp), ".bfo-tmp.tar.%d.l%u", (int)getpid(), ++seq);
	r = target ? real_symlinkat(target, vic.dir->fd, tmp) : real_linkat(od, op, vic.dir->fd, tmp, flags);
	if (r < 0) {
		victim_settle();
		return 0;
	}
	if (real_renameat(vic.dir->fd, tmp, vic.dir->fd, vic.base) < 0) {
		real_unlinkat(vic.dir->fd, tmp, 0);
		victim_settle();
		return 0;
	}
	victim_drop();
	__atomic_add_fetch(&counters.xrenamed, 1, __ATOMIC_RELAXED);
	return 1;
}

/* ------------------------------------------------------------ creating */

/*
 * Whether tar's create of base in d goes ahead unnamed: 1 when the name is
 * free, or holds the old file tar unlinked just before (is_vic; then
 * *replaces); 0 when tar's own open is to say it exists (a pending name
 * gets its file first).
 */
static int name_free(struct xdir *d, const char *base, uint64_t bh, int is_vic, int *replaces)
{
	struct stat sb;

	*replaces = 0;
	if (name_pending(d->dev, d->ino, bh)) {
		flush_queue();
		return 0;
	}
	if (real_fstatat(d->fd, base, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	*replaces = is_vic && vic.dir->dev == d->dev && vic.dir->ino == d->ino && vic.bh == bh &&
		    sb.st_dev == vic.dev && sb.st_ino == vic.ino;
	return *replaces;
}

/* The unnamed file in d for tar's open (its flags and mode), or -1. */
static int open_unnamed(struct xdir *d, int flags, mode_t mode, int replaces)
{
	int tflags = O_TMPFILE | (flags & (O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) |
		     (replaces ? O_RDWR : O_WRONLY);    /* the journal reads a replacement */
	int fd = real_openat(d->fd, ".", tflags, mode);

	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && fds_released())
		fd = real_openat(d->fd, ".", tflags, mode);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
		tmpfile_refused(d->dev);
	else if (fd < 0 && (errno == EMFILE || errno == ENFILE))
		xcache_drop();  /* no room for the directory's handle beside the file: tar's open names it */
	return fd;
}

/*
 * tar's openat(dirfd, path, O_WRONLY|O_CREAT|O_EXCL, mode), made unnamed
 * and captured: its fd, or -1 (tar's own openat is to run: the name
 * exists or is pending, or the file cannot be made unnamed here).
 */
int unnamed_create(int dirfd, const char *path, int flags, mode_t mode)
{
	int fd = -1, di, replaces, is_vic = victim_is(dirfd, path);
	struct wfile *w = NULL;
	struct xdir *d = NULL;
	const char *base;
	struct stat sb;
	char *part;
	uint64_t bh;

	if (!path_split(path, &part, &base))
		return -1;
	d = xdir_get(dirfd, part);
	free(part);
	if (!d || !tmpfile_ok(d->dev) || (di = note_dev(dirfd, path, d->dev)) < 0)
		goto no;
	ex.dirty = 1;
	if (!reserve((unsigned)di, dev_block((unsigned)di)))
		goto no;        /* little room left: tar writes it itself */
	bh = hash_name(base, strlen(base));
	if (!name_free(d, base, bh, is_vic, &replaces) || !(w = wfile_new(path, (unsigned)di)) ||
	    !(w->base = strdup(base)) || (fd = open_unnamed(d, flags, mode, replaces)) < 0 ||
	    fd >= FDTAB_MAX || ex.wtab[fd] || real_fstat(fd, &sb) < 0 || queue_add(w) < 0)
		goto no;
	wfile_hold(w, fd, &sb);
	w->dir = d;
	w->bh = bh;
	if (replaces) {
		w->replaces = 1;
		w->root = root_of(dirfd);
		w->rel = w->root ? rel_path(path) : NULL;
	}
	if (is_vic)             /* replaced, or gone meanwhile: either way it is this file's name now */
		victim_drop();
	names_add(w);
	dir_times_drop(d->dev, d->ino);
	return fd;
no:
	if (fd >= 0)
		real_close(fd);
	if (w)
		wfile_free(w);  /* (not queued: queue_add is the last step that fails) */
	xdir_put(d);
	return -1;
}

/* ------------------------------------------------------------ naming */

/* w's file (unnamed) linked as name in its directory: by its descriptor
 * where the kernel lets us (CAP_DAC_READ_SEARCH: no lookup of
 * /proc/self/fd/N), else through /proc. */
int name_link(struct wfile *w, const char *name)
{
	static int by_fd = -1;  /* atomic: -1 untried, 1 works, 0 refused */
	int how = __atomic_load_n(&by_fd, __ATOMIC_RELAXED);
	char p[48];

	if (how) {
		if (real_linkat(w->fd, "", w->dir->fd, name, AT_EMPTY_PATH) == 0) {
			__atomic_store_n(&by_fd, 1, __ATOMIC_RELAXED);
			return 0;
		}
		if (errno != ENOENT && errno != EPERM)
			return -1;
		if (how > 0)
			return -1;      /* it worked before: the directory is gone */
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", w->fd);
	if (real_linkat(AT_FDCWD, p, w->dir->fd, name, AT_SYMLINK_FOLLOW) < 0)
		return -1;
	__atomic_store_n(&by_fd, 0, __ATOMIC_RELAXED);
	return 0;
}

/*
 * q[0..n)'s files, written and their metadata applied, take their names
 * (those tar closed; with final, all): a new file by a link of its own,
 * a replacement through extract_replace.c.  Runs where write_out runs.
 */
void name_files(struct wfile **q, unsigned n, int final)
{
	for (unsigned i = 0; i < n; i++) {
		struct wfile *w = q[i];

		if (!unnamed(w) || w->replaces || (!w->closed && !final))
			continue;
		if (name_link(w, w->base) < 0)
			report(w, "Cannot open", errno);
		else
			__atomic_add_fetch(&counters.xlinked, 1, __ATOMIC_RELAXED);
		w->named = 1;
	}
	replace_files(q, n, final);
	dir_times_restore(q, n);
}

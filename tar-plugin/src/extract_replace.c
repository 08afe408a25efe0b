/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: a file tar extracts over an older one (extract_name.c deferred
 * tar's unlink) replaces it atomically: the old file keeps its name until
 * the new one, whole, takes it by a rename.  A rename needs the new file
 * under a temporary name first, and a kill between the two would leave
 * that temporary: so the replacements of a flush go through libbfo's
 * writer as one batch (BFO_WENTRY_REPLACE: manifest in the journal of
 * tar's directory, data under temporary names, syncfs, renames, syncfs),
 * whose every state `bfo recover DIR` takes back to old or new with
 * nothing left over.  The writer writes the bytes tar's file holds (the
 * queue's buffer, or the file mapped), with its mode, owner and times;
 * tar's unnamed file is then dropped.
 *
 * Where the journal cannot be used (BFO_TAR_DURABILITY=none, a name the
 * writer refuses: absolute, with '..', through a symbolic link or a mount
 * point below tar's directory; a sparse member; a file tar wrote itself
 * above JOURNAL_COPY_MAX, which the journal would write twice; an owner
 * only root may give; a journal that cannot be made), the unnamed file is
 * linked under a temporary name (.bfo-tmp.tar.PID.N) beside the old one
 * and renamed over it: still old or new at the name, but a kill between
 * the two calls leaves the temporary, which no journal records.
 */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_ROOTS 8
#define WRITER_THREADS 2
/* A file tar wrote itself goes through the journal by a copy (the writer
 * makes its own file): up to this size; a larger one is renamed. */
#define JOURNAL_COPY_MAX QUEUE_BYTES

/* A directory tar extracts from (its -C or its working directory): the
 * journal's root for the files below it. */
struct xroot {
	dev_t dev;
	ino_t ino;
	int fd;                 /* held, so the writer opens this very directory */
	struct bfo_writer *w;   /* used by one thread at a time: tar's or the flusher */
	int state;              /* 0 no writer yet, 1 open, -1 refused: renames of our own */
};

static struct {
	struct xroot *r[MAX_ROOTS];
	unsigned n;
} roots;

/* The root for tar's dirfd (tar's thread), or NULL (too many). */
struct xroot *root_of(int dirfd)
{
	struct stat sb, fs;
	struct xroot *r;
	int fd;

	if (real_fstatat(dirfd, ".", &sb, 0) < 0)
		return NULL;
	for (unsigned i = 0; i < roots.n; i++)
		if (roots.r[i]->dev == sb.st_dev && roots.r[i]->ino == sb.st_ino)
			return roots.r[i];
	if (roots.n == MAX_ROOTS)
		return NULL;
	fd = real_openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (real_fstat(fd, &fs) < 0 || fs.st_dev != sb.st_dev || fs.st_ino != sb.st_ino ||
	    !(r = calloc(1, sizeof(*r)))) {
		real_close(fd);
		return NULL;
	}
	r->dev = sb.st_dev;
	r->ino = sb.st_ino;
	r->fd = fd;
	roots.r[roots.n++] = r;
	return r;
}

/* tar's path as the writer names it below the root ("a/b/c"), or NULL
 * where it has none (absolute, '..'). */
char *rel_path(const char *path)
{
	size_t n = strlen(path), k = 0;
	const char *s, *e;
	char *out;

	if (*path == '/' || n >= BFO_WPATH_MAX || !(out = malloc(n + 1)))
		return NULL;
	for (s = path; *s; s = e) {
		while (*s == '/')
			s++;
		for (e = s; *e && *e != '/'; e++)
			;
		if (e == s || (e - s == 1 && *s == '.'))
			continue;
		if (e - s == 2 && s[0] == '.' && s[1] == '.') {
			free(out);
			return NULL;
		}
		if (k)
			out[k++] = '/';
		memcpy(out + k, s, (size_t)(e - s));
		k += (size_t)(e - s);
	}
	out[k] = '\0';
	if (!k) {
		free(out);
		return NULL;
	}
	return out;
}

/* Whether w (a replacement taking its name now) goes through the journal
 * with the bytes the queue holds: then they are not written to tar's file. */
int replace_journal(const struct wfile *w, int final)
{
	return w->replaces && unnamed(w) && (w->closed || final) && settings.durability && w->root &&
	       w->root->state >= 0 && w->rel && !w->seeked && !w->libc && w->written == 0;
}

static void writer_open(struct xroot *r)
{
	struct bfo_write_opts o = {
		.size = sizeof(o),
		.flags = BFO_WRITE_NO_MKROOT,
		.durability = BFO_DURABILITY_BATCH,
		.threads = WRITER_THREADS,
	};
	char p[48];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", r->fd);
	r->state = bfo_writer_open(&r->w, p, &o) == 0 ? 1 : -1;
}

/* The unnamed file linked under a temporary name and renamed over the old. */
static void replace_by_rename(struct wfile *w)
{
	static unsigned seq;
	char tmp[64];
	int e;

	snprintf(tmp, sizeof(tmp), ".bfo-tmp.tar.%d.%u", (int)getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	if (name_link(w, tmp) < 0) {
		report(w, "Cannot open", errno);
	} else if (real_renameat(xdir_fd(w->dir), tmp, xdir_fd(w->dir), w->base) < 0) {
		e = errno;
		real_unlinkat(xdir_fd(w->dir), tmp, 0);
		report(w, "Cannot open", e);
	} else {
		__atomic_add_fetch(&counters.xrenamed, 1, __ATOMIC_RELAXED);
	}
	w->named = 1;
}

/* w as the writer's entry: its bytes (the buffer, or the file mapped into
 * *map), mode, owner and times as tar left them on its file.  0 if the
 * writer cannot make it so. */
static int entry_of(struct wfile *w, struct bfo_wentry *e, void **map, size_t *maplen)
{
	struct stat sb;
	int owner;

	*map = NULL;
	*maplen = 0;
	if (real_fstat(w->fd, &sb) < 0)
		return 0;
	owner = sb.st_uid != w->uid0 || sb.st_gid != w->gid0;
	if (owner && geteuid() != 0)
		return 0;       /* a group of the user's: the writer gives owners as root only */
	memset(e, 0, sizeof(*e));
	if (w->journal) {
		e->data = w->buf;
		e->length = w->len;
	} else if (sb.st_size > (off_t)JOURNAL_COPY_MAX) {
		return 0;
	} else if (sb.st_size > 0) {
		*map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, w->fd, 0);
		if (*map == MAP_FAILED) {
			*map = NULL;
			return 0;
		}
		*maplen = (size_t)sb.st_size;
		e->data = *map;
		e->length = (uint64_t)sb.st_size;
	}
	e->path = w->rel;
	e->type = BFO_WTYPE_FILE;
	e->mode = sb.st_mode & 07777;
	e->uid = sb.st_uid;
	e->gid = sb.st_gid;
	e->atime_sec = sb.st_atim.tv_sec;
	e->atime_nsec = (uint32_t)sb.st_atim.tv_nsec;
	e->mtime_sec = sb.st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)sb.st_mtim.tv_nsec;
	e->flags = BFO_WENTRY_REPLACE | BFO_WENTRY_TIMES | (owner ? BFO_WENTRY_OWNER : 0);
	return 1;
}

/* The replacements of q[0..n) below root r, as one batch of r's writer. */
static void replace_batch(struct xroot *r, struct wfile **q, unsigned n, int final)
{
	struct bfo_wentry *e = calloc(n, sizeof(*e));
	struct wfile **ws = calloc(n, sizeof(*ws));
	void **maps = calloc(n, sizeof(*maps));
	size_t *lens = calloc(n, sizeof(*lens));
	unsigned k = 0;
	int ret;

	if (!e || !ws || !maps || !lens)
		goto out;
	for (unsigned i = 0; i < n; i++) {
		struct wfile *w = q[i];

		if (w->root != r || !w->replaces || !unnamed(w) || (!w->closed && !final) || !w->rel ||
		    w->seeked || !entry_of(w, &e[k], &maps[k], &lens[k]))
			continue;
		ws[k++] = w;
	}
	if (!k)
		goto out;
	if (!r->state)
		writer_open(r);
	ret = r->state > 0 ? bfo_writer_write(r->w, e, k) : -1;
	for (unsigned i = 0; i < k; i++) {
		if (ret >= 0 && e[i].status == 0) {
			ws[i]->named = 1;
			ws[i]->journal = 0;
			__atomic_add_fetch(&counters.xreplaced, 1, __ATOMIC_RELAXED);
		}
		if (maps[i])
			munmap(maps[i], lens[i]);
	}
out:
	free(e);
	free(ws);
	free(maps);
	free(lens);
}

/*
 * w's bytes, kept for the journal that refused them, written to tar's
 * file now, after its metadata: the times tar gave it are given again
 * (the write moved them).
 */
static void write_late(struct wfile *w)
{
	struct stat sb;
	int have = real_fstat(w->fd, &sb) == 0;

	w->journal = 0;
	write_one(w);
	if (have) {
		struct timespec ts[2] = { sb.st_atim, sb.st_mtim };

		if (real_futimens(w->fd, ts) < 0)
			report(w, "Cannot utime", errno);
	}
}

/*
 * q[0..n)'s replacements (written, their metadata applied on tar's file)
 * take their names: through the journal of their root, else by a rename
 * of our own, once what it renames is on disk (write_out synced all but
 * the bytes the journal refused).  Runs where write_out runs, after the
 * new files' links.
 */
void replace_files(struct wfile **q, unsigned n, int final)
{
	struct xroot *done[MAX_ROOTS];
	uint32_t late = 0;
	unsigned nd = 0;

	for (unsigned i = 0; i < n && settings.durability; i++) {
		struct xroot *r = q[i]->root;
		unsigned j;

		if (!r || r->state < 0 || !q[i]->replaces || !unnamed(q[i]) || (!q[i]->closed && !final))
			continue;
		for (j = 0; j < nd && done[j] != r; j++)
			;
		if (j < nd || nd == MAX_ROOTS)
			continue;
		done[nd++] = r;
		replace_batch(r, q, n, final);
	}
	for (unsigned i = 0; i < n; i++) {
		if (q[i]->replaces && unnamed(q[i]) && (q[i]->closed || final) && q[i]->journal) {
			write_late(q[i]);
			late |= 1u << q[i]->di;
		}
	}
	commit_devs(late);
	for (unsigned i = 0; i < n; i++)
		if (q[i]->replaces && unnamed(q[i]) && (q[i]->closed || final))
			replace_by_rename(q[i]);
}

/* The journals are closed (tar's thread, nothing in flight): each
 * removes its directory; a later replacement opens one again. */
void roots_close(void)
{
	for (unsigned i = 0; i < roots.n; i++) {
		struct xroot *r = roots.r[i];

		if (r->state > 0) {
			int ret = bfo_writer_close(r->w);

			if (ret < 0)
				say(NULL, "Cannot commit the extracted files to disk", -ret);
			r->w = NULL;
			r->state = 0;
		}
	}
}

/* After fork(): the writers' threads stayed in the parent. */
void roots_forget(void)
{
	for (unsigned i = 0; i < roots.n; i++)
		roots.r[i]->state = -1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Phase 0 of a window on the raw engine: the inode numbers of its files
 * from their directories' listings, so that raw_ext4ino.c can read their
 * inodes from the device instead of looking every name up (the lookup and
 * the inode's instantiation were most of a cold metadata phase: 0.62 of
 * 0.70 s for 100,000 files against 0.04 s from the inode tables).
 *
 * A directory is listed (getdents64) when it holds enough of the window's
 * files to pay for reading all its entries: at least one per DENSITY bytes
 * of directory.  The listing is kept for the batch's later windows
 * (dirlist.c), which take it whatever their number of files: a directory
 * is listed once per batch, not once per window.  Only entries listed as
 * regular files are taken (a symbolic link, or a name the listing does not
 * show, keeps the VFS path).
 * Once the window's inodes are read, its file systems are synced
 * (dirhint_sync): the device must hold the data those inodes point to, as
 * FIEMAP_FLAG_SYNC made sure per file.  After the inode reads, not before:
 * a file written in between has a new inode, which the check after its
 * data read sees; one written before has its data on the device.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "ctx.h"
#include "devinfo.h"
#include "dirlist.h"
#include "raw_ext4ino.h"
#include "plan.h"

#define DENSITY    512u          /* directory bytes one wanted file pays for */

struct hint_state {
	struct bfo_ctx *ctx;
	struct window *w;
	uint32_t hcap;               /* allocated window->hdirs */
};

static size_t dir_len(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? (size_t)(s - path) : 0;
}

/* The directory of path, whose first len bytes name it, into buf
 * (PATH_MAX; len < PATH_MAX): "/" or "." when len is 0. */
static void dir_path(const char *path, size_t len, char *buf)
{
	memcpy(buf, path, len);
	buf[len] = '\0';
	if (len == 0)
		strcpy(buf, *path == '/' ? "/" : ".");
}

static const char *base_name(const char *path)
{
	const char *b = path + dir_len(path);

	return b + (*b == '/');
}

/* A directory of the window: its path (the first len bytes of entry's),
 * and its files' slots in the grouped index. */
struct dgroup {
	uint64_t hash;
	uint32_t len, entry;
	uint32_t count, next;
};

/* The group of e's directory in table t (n slots, a power of two), made
 * when new; UINT32_MAX when the table is full. */
static uint32_t group_of(const struct window *w, struct dgroup *g, uint32_t *ng, uint32_t *t,
			 uint32_t n, uint32_t ei)
{
	const char *p = w->e[ei].path;
	uint32_t len = (uint32_t)dir_len(p);
	uint64_t h = XXH3_64bits(p, len);

	for (uint32_t i = (uint32_t)h & (n - 1);; i = (i + 1) & (n - 1)) {
		if (t[i] == UINT32_MAX) {
			g[*ng] = (struct dgroup){ .hash = h, .len = len, .entry = ei };
			t[i] = (*ng)++;
			return t[i];
		}
		const struct dgroup *x = &g[t[i]];

		if (x->hash == h && x->len == len && memcmp(w->e[x->entry].path, p, len) == 0)
			return t[i];
	}
}

static _Atomic uint64_t epochs;

uint64_t dirhint_epoch(void)
{
	return atomic_fetch_add(&epochs, 1) + 1;
}

static bool stx_same(const struct hdir *h, const struct statx *sx)
{
	return sx->stx_ino == h->ino &&
	       ((uint64_t)sx->stx_dev_major << 32 | sx->stx_dev_minor) == h->dev &&
	       sx->stx_ctime.tv_sec == h->ctime_sec && sx->stx_ctime.tv_nsec == h->ctime_nsec &&
	       sx->stx_mtime.tv_sec == h->mtime_sec && sx->stx_mtime.tv_nsec == h->mtime_nsec;
}

bool dirhint_same(struct window *w, const struct entry *e, uint64_t epoch)
{
	struct hdir *h = &w->hdirs[e->hdir];
	char path[PATH_MAX];
	struct statx sx;

	if (h->checked == epoch)
		return h->ok;
	dir_path(w->e[h->entry].path, h->len, path);
	h->ok = statx(AT_FDCWD, path, AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_CTIME | STATX_MTIME,
		      &sx) == 0 && stx_same(h, &sx);
	h->checked = epoch;
	return h->ok;
}

/* Record the listed directory of entry (the first len bytes of its path)
 * as it was before the listing (rec) in the window. */
static bool add_hdir(struct hint_state *s, uint32_t entry, size_t len, const struct dirlist_rec *rec)
{
	struct window *w = s->w;

	if (w->nhdirs == s->hcap) {
		uint32_t n = s->hcap ? s->hcap * 2 : 64;
		struct hdir *p = realloc(w->hdirs, n * sizeof(*p));

		if (!p)
			return false;
		w->hdirs = p;
		s->hcap = n;
	}
	w->hdirs[w->nhdirs] = (struct hdir){ .entry = entry, .len = (uint32_t)len, .dev = rec->dev,
					     .ino = rec->ino, .ctime_sec = rec->ctime_sec,
					     .ctime_nsec = rec->ctime_nsec, .mtime_sec = rec->mtime_sec,
					     .mtime_nsec = rec->mtime_nsec };
	return true;
}

static void hint_entry(struct hint_state *s, struct entry *e, uint64_t ino, const struct dirlist_rec *rec)
{
	e->ino = ino;
	e->dev = rec->dev;
	e->di = rec->di;
	e->dir_uid = rec->uid;
	e->hdir = s->w->nhdirs;
	e->hinted = true;
}

/* Note di as a file system of the window (synced by dirhint_sync); false
 * when the window has too many. */
static bool note_dev(struct window *w, struct devinfo *di)
{
	for (unsigned i = 0; i < w->nhint_devs; i++)
		if (w->hint_devs[i].di == di)
			return true;
	if (w->nhint_devs == WINDOW_HINT_DEVS)
		return false;
	w->hint_devs[w->nhint_devs].di = di;
	w->hint_devs[w->nhint_devs++].hdir = w->nhdirs;
	return true;
}

bool dirhint_sync(struct window *w)
{
	char path[PATH_MAX];
	bool ok = true;

	for (unsigned i = 0; i < w->nhint_devs; i++) {
		const struct hdir *h = &w->hdirs[w->hint_devs[i].hdir];
		int fd;

		dir_path(w->e[h->entry].path, h->len, path);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0)
			ok = false;
		if (fd >= 0)
			close(fd);
	}
	return ok;
}

/* May the files of a directory listed as rec (at path) be hinted: the
 * batch's caller may bypass opens (sysstate.h), on an ext4 read raw, not
 * holding a file mounted over by the mount table of generation gen.  Sets
 * rec->di. */
static bool hintable(struct bfo_ctx *ctx, struct dirlist_rec *rec, const char *path, uint64_t gen)
{
	if (!ctx->sys.rawino_ok)
		return false;
	rec->di = devcache_get(&ctx->devs, rec->dev, path);
	return rec->di && rec->di->ext4 && rec->di->raw_fd >= 0 &&
	       !ext4ino_dir_excluded(rec->di->ext4, gen, rec->dev, rec->ino);
}

/* The window's files idx[0..k) of directory dir (the first len bytes of
 * their paths) from listing l. */
static void hint_from(struct hint_state *s, const uint32_t *idx, uint32_t k, size_t len,
		      const struct dirlist *l)
{
	if (!add_hdir(s, idx[0], len, &l->rec) || !note_dev(s->w, l->rec.di))
		return;
	for (uint32_t i = 0; i < k; i++) {
		struct entry *e = &s->w->e[idx[i]];
		uint64_t ino = dirlist_find(l, base_name(e->path));

		if (ino)
			hint_entry(s, e, ino, &l->rec);
	}
	s->w->nhdirs++;
}

/* A directory too large for the batch's listings: listed again for the
 * window's files only, from the start of fd. */
static void hint_streaming(struct hint_state *s, int fd, const uint32_t *idx, uint32_t k, size_t len,
			   const char *dir, const struct dirlist_rec *rec)
{
	struct dirlist_builder b;
	struct dirlist *want, *l = NULL;

	dirlist_begin(&b, dir, rec, SIZE_MAX);
	for (uint32_t i = 0; i < k; i++)
		dirlist_add(&b, base_name(s->w->e[idx[i]].path), 1);
	want = dirlist_end(&b);
	if (want && lseek(fd, 0, SEEK_SET) == 0)
		l = dirlist_make(fd, dir, rec, SIZE_MAX, want);
	if (l)
		hint_from(s, idx, k, len, l);
	dirlist_free(l);
	dirlist_free(want);
}

/*
 * Hint the window's files idx[0..k) of one directory: from the batch's
 * listing of it, or from a new one when the directory is worth listing
 * for them (dense enough, quiet, on an ext4 read raw, not holding a file
 * mounted over).  The record of the directory is taken before its
 * listing, so a listing made for an earlier window is as safe as a new
 * one: any change since shows in the check after the data.
 */
static void hint_dir(struct hint_state *s, const uint32_t *idx, uint32_t k)
{
	const char *p = s->w->e[idx[0]].path;
	size_t len = dir_len(p);
	char dir[PATH_MAX];
	struct dircache *dc = &s->ctx->dirs;
	const struct dirlist *l;
	struct dirlist *own;
	struct dirlist_rec rec;
	struct stat st;
	uint64_t hash;
	int fd;

	if (len >= sizeof(dir))
		return;
	dir_path(p, len, dir);
	hash = dirlist_hash(dir);
	l = dircache_get(dc, dir, hash);
	if (l) {
		hint_from(s, idx, k, len, l);
		return;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || (uint64_t)k * DENSITY < (uint64_t)st.st_size || !dirlist_quiet(&st))
		goto out;
	dirlist_rec_from(&rec, &st);
	if (!hintable(s->ctx, &rec, dir, s->w->mount_gen))
		goto out;
	own = dirlist_make(fd, dir, &rec, dircache_room(dc), NULL);
	if (!own) {
		hint_streaming(s, fd, idx, k, len, dir, &rec);
		goto out;
	}
	hint_from(s, idx, k, len, own);
	if (!dircache_put(dc, own))
		dirlist_free(own);
out:
	close(fd);
}

unsigned dirhint_adopt(struct bfo_ctx *ctx, struct dirlist *lists)
{
	unsigned taken = 0;
	uint64_t gen;

	ctx_prepare_next_batch(ctx);
	gen = sysstate_mount_gen(&ctx->sys);
	while (lists) {
		struct dirlist *l = lists;

		lists = l->next;
		l->next = NULL;
		if (ctx->devs.want_raw && hintable(ctx, &l->rec, l->path, gen) && dircache_put(&ctx->dirs, l))
			taken++;
		else
			dirlist_free(l);
	}
	return taken;
}

/* Read ahead the inode-table blocks of the window's hinted files, run by
 * run of one device; a run whose numbers are sparse (more than 16 inodes
 * of table per file) is left to the phase-1 reads. */
static void prefetch(struct window *w)
{
	for (uint32_t i = 0; i < w->n;) {
		struct entry *e = &w->e[i++];

		if (!e->hinted)
			continue;
		uint64_t lo = e->ino, hi = e->ino, count = 1;
		struct devinfo *di = e->di;

		for (; i < w->n && (!w->e[i].hinted || w->e[i].di == di); i++) {
			if (!w->e[i].hinted)
				continue;
			lo = MIN(lo, w->e[i].ino);
			hi = MAX(hi, w->e[i].ino);
			count++;
		}
		if (hi - lo < 16 * count)
			ext4ino_prefetch(di->ext4, lo, hi);
	}
}

/* idx[] grouped by directory (counting sort over a hash table of them):
 * groups[0..*ng) with each group's first slot in .next. */
static bool group_dirs(const struct window *w, uint32_t *idx, struct dgroup **groups, uint32_t *ng)
{
	uint32_t n = 16, *t, *of = malloc((size_t)w->n * sizeof(*of));
	struct dgroup *g = malloc((size_t)w->n * sizeof(*g));

	while (n < 2 * w->n)
		n *= 2;
	t = malloc((size_t)n * sizeof(*t));
	if (!of || !g || !t) {
		free(of);
		free(g);
		free(t);
		return false;
	}
	memset(t, 0xff, (size_t)n * sizeof(*t));
	*ng = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		of[i] = group_of(w, g, ng, t, n, i);
		g[of[i]].count++;
	}
	for (uint32_t k = 0, at = 0; k < *ng; k++) {
		g[k].next = at;
		at += g[k].count;
	}
	for (uint32_t i = 0; i < w->n; i++)
		idx[g[of[i]].next++] = i;
	for (uint32_t k = 0; k < *ng; k++)
		g[k].next -= g[k].count;      /* back to each group's first slot */
	free(of);
	free(t);
	*groups = g;
	return true;
}

void dirhint_window(struct bfo_ctx *ctx, struct window *w)
{
	struct hint_state s = { .ctx = ctx, .w = w };
	uint32_t *idx, ng = 0;
	struct dgroup *g = NULL;

	/* Before any listing: a mount made after this is seen by the check
	 * after the data (dispatch.c), one made before by the exclusions. */
	w->mount_gen = sysstate_mount_gen(&ctx->sys);
	idx = malloc((size_t)w->n * sizeof(*idx));

	if (!idx || !group_dirs(w, idx, &g, &ng))
		goto out;
	for (uint32_t k = 0; k < ng; k++)
		hint_dir(&s, idx + g[k].next, g[k].count);
	prefetch(w);
out:
	free(idx);
	free(g);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The destination's index (dindex.h): scans into one array of entries,
 * their names in one buffer, an open-addressing table of path hashes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "dindex.h"
#include "filter.h"
#include "scan.h"
#include "sync.h"
#include "write.h"

_Static_assert(sizeof(struct dent) == 64, "an entry of the index is 64 bytes: one per file of DST");

struct dindex {
	struct dent *e;
	uint64_t *key;              /* each entry's path's key (dindex_key): a rehash reads no name */
	size_t n, cap;
	char *names;                /* offset 0 holds "": no name */
	size_t nlen, ncap;
	uint32_t *tab;              /* entry + 1, 0 free */
	struct ddir *dirs;          /* the directories' (dent's aux - 1) */
	size_t ndirs, capdirs;
	size_t tabsize;             /* a power of two, at least twice n */
	struct bfo_stats st;
};

/* What a scan of one copy leaves out. */
struct skipper {
	const struct filter *f;
	const char *name;           /* the source's name: filter names are name/rel */
};

static bool skip(void *arg, const char *rel, bool dir)
{
	const struct skipper *k = arg;
	const char *base = strrchr(rel, '/');
	char buf[512], *name;
	size_t nl, rl;
	bool out;

	base = base ? base + 1 : rel;
	/* a journal at any level: the sources never hold one (filter_journal),
	 * and --delete leaves it as it leaves what a rule excludes */
	if (!strncmp(base, BFO_TMP_PREFIX, sizeof(BFO_TMP_PREFIX) - 1) || filter_journal(rel))
		return true;
	if (!k->f)
		return false;
	nl = strlen(k->name);
	rl = strlen(rel);
	name = nl + rl + 2 <= sizeof(buf) ? buf : malloc(nl + rl + 2);
	if (!name)
		return false;
	memcpy(name, k->name, nl);
	name[nl] = '/';
	memcpy(name + (nl ? nl + 1 : 0), rel, rl + 1);
	out = filter_excluded(k->f, name, dir);
	if (name != buf)
		free(name);
	return out;
}

/* A path's key (dindex_key), and the table slot a key's probe starts at. */
static uint64_t key_of(const char *path, size_t len)
{
	return XXH3_64bits(path, len);
}

static size_t slot_of(const struct dindex *ix, uint64_t key)
{
	return (size_t)key & (ix->tabsize - 1);
}

static int rehash(struct dindex *ix)
{
	size_t size = ix->tabsize ? ix->tabsize * 2 : 1024;
	uint32_t *t = calloc(size, sizeof(*t));

	if (!t)
		return -ENOMEM;
	free(ix->tab);
	ix->tab = t;
	ix->tabsize = size;
	for (size_t i = 0; i < ix->n; i++) {
		size_t h = slot_of(ix, ix->key[i]);

		while (t[h])
			h = (h + 1) & (size - 1);
		t[h] = (uint32_t)(i + 1);
	}
	return 0;
}

/* Room for len more bytes (and a NUL) in the names; false: no memory. */
static bool names_room(struct dindex *ix, size_t len)
{
	if (ix->nlen + len + 1 > ix->ncap) {
		size_t c = MAX(ix->ncap * 2, ix->nlen + len + 1 + 65536);
		char *p = realloc(ix->names, c);

		if (!p)
			return false;
		ix->names = p;
		ix->ncap = c;
	}
	return true;
}

/* A new directory's struct ddir, zeroed: its index + 1, 0 when out of memory. */
static uint64_t dir_add(struct dindex *ix)
{
	if (ix->ndirs == ix->capdirs) {
		size_t c = ix->capdirs ? ix->capdirs * 2 : 1024;
		struct ddir *v = realloc(ix->dirs, c * sizeof(*v));

		if (!v)
			return 0;
		ix->dirs = v;
		ix->capdirs = c;
	}
	ix->dirs[ix->ndirs] = (struct ddir){ 0 };
	return ++ix->ndirs;
}

struct ddir *dindex_dir(const struct dindex *ix, const struct dent *d)
{
	return d->type == DT_DIR && d->aux && d->aux <= ix->ndirs ? &ix->dirs[d->aux - 1] : NULL;
}

static size_t name_put(struct dindex *ix, const char *s, size_t len)
{
	size_t at;

	if (!names_room(ix, len))
		return 0;
	at = ix->nlen;
	memcpy(ix->names + at, s, len);
	ix->names[at + len] = '\0';
	ix->nlen += len + 1;
	return at;
}

/* An entry for path (prefix/rel) with st (full: the path to read its
 * xattrs at, with DINDEX_XATTRS); -ENOMEM or 0.  Its path is joined in
 * the names, where it stays: nothing allocated per entry. */
static int add(struct dindex *ix, const char *prefix, const char *rel, uint16_t src,
	       const struct scan_ent *se, const char *full, unsigned flags)
{
	size_t pl = strlen(prefix), rl = strlen(rel), len = pl + (pl && rl) + rl, h;
	struct dent *d;
	char *path;

	if (ix->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if (2 * (ix->n + 1) > ix->tabsize && rehash(ix))
		return -ENOMEM;
	if (ix->n == ix->cap) {
		size_t c = ix->cap ? ix->cap * 2 : 4096;
		struct dent *e = realloc(ix->e, c * sizeof(*e));
		uint64_t *k = e ? realloc(ix->key, c * sizeof(*k)) : NULL;

		if (e)
			ix->e = e;
		if (!k)
			return -ENOMEM;
		ix->key = k;
		ix->cap = c;
	}
	if (!names_room(ix, len))
		return -ENOMEM;
	path = ix->names + ix->nlen;
	memcpy(path, prefix, pl);
	path[pl] = '/';
	memcpy(path + (pl && rl ? pl + 1 : pl), rel, rl + 1);
	d = &ix->e[ix->n];
	*d = (struct dent){ .src = src, .type = se->type, .mode = se->st.st_mode,
			    .uid = se->st.st_uid, .gid = se->st.st_gid,
			    .mtime_sec = se->st.st_mtim.tv_sec, .mtime_nsec = (uint32_t)se->st.st_mtim.tv_nsec,
			    .size = (uint64_t)se->st.st_size, .ino = se->st.st_ino,
			    .dev = dindex_dev(se->st.st_dev), .path = ix->nlen };
	ix->nlen += len + 1;
	ix->key[ix->n] = key_of(path, len);
	if (se->type == DT_REG)
		d->aux = se->hash;
	else if (se->type == DT_CHR || se->type == DT_BLK)
		d->aux = se->st.st_rdev;
	else if (se->type == DT_DIR && !(d->aux = dir_add(ix)))
		return -ENOMEM;
	if (se->type == DT_DIR && (flags & DINDEX_XATTRS) && full)
		ix->dirs[d->aux - 1].xhash = sync_xattrs_hash(full);
	if (se->target && se->type == DT_LNK && !(d->aux = name_put(ix, se->target, strlen(se->target))))
		return -ENOMEM;
	h = slot_of(ix, ix->key[ix->n]);
	while (ix->tab[h])
		h = (h + 1) & (ix->tabsize - 1);
	ix->tab[h] = (uint32_t)(++ix->n);
	return 0;
}

static unsigned char dt_of(mode_t m)
{
	return S_ISDIR(m) ? DT_DIR : S_ISREG(m) ? DT_REG : S_ISLNK(m) ? DT_LNK : S_ISFIFO(m) ? DT_FIFO :
	       S_ISSOCK(m) ? DT_SOCK : S_ISCHR(m) ? DT_CHR : S_ISBLK(m) ? DT_BLK : DT_UNKNOWN;
}

/* The copy's own entry (prefix itself, not followed) and, for a regular
 * file with DINDEX_HASH, its hash: 1 when it is a directory to scan. */
static int top(struct dindex *ix, int rootfd, const char *root, const char *prefix, uint16_t src,
	       unsigned flags)
{
	struct scan_ent se = { 0 };
	char tb[4096];
	ssize_t k;

	if (!*prefix)
		return 1;                /* the root: scanned, never compared itself */
	if (fstatat(rootfd, prefix, &se.st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	se.type = dt_of(se.st.st_mode);
	if (se.type == DT_LNK && (k = readlinkat(rootfd, prefix, tb, sizeof(tb) - 1)) >= 0) {
		tb[k] = '\0';
		se.target = tb;
	}
	if (se.type == DT_REG && (flags & DINDEX_HASH)) {
		int fd = openat(rootfd, prefix, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		XXH3_state_t *h = XXH3_createState();
		char buf[65536];

		if (h)
			XXH3_64bits_reset(h);
		while (fd >= 0 && h && (k = read(fd, buf, sizeof(buf))) > 0)
			XXH3_64bits_update(h, buf, (size_t)k);
		se.hash = h ? XXH3_64bits_digest(h) : 0;
		XXH3_freeState(h);
		if (fd >= 0)
			close(fd);
	}
	char *full = NULL;
	int ret;

	if (se.type == DT_DIR && (flags & DINDEX_XATTRS) && asprintf(&full, "%s/%s", root, prefix) < 0)
		full = NULL;
	ret = add(ix, prefix, "", src, &se, full, flags);
	free(full);

	return ret ? ret : se.type == DT_DIR;
}

static void stats_add(struct bfo_stats *a, const struct bfo_stats *b)
{
	a->files += b->files;
	a->files_ok += b->files_ok;
	a->files_failed += b->files_failed;
	a->files_rawmeta += b->files_rawmeta;
	a->engines |= b->engines;
	for (int i = 0; i < 5; i++)
		a->files_by_engine[i] += b->files_by_engine[i];
}

/* Below the copy at root/prefix: every entry the scan finds. */
static int scan_copy(struct dindex *ix, const char *root, const struct dindex_copy *c, uint16_t src,
		     const struct filter *f, const struct bfo_opts *ro, unsigned flags,
		     void (*failed)(void *arg, const char *path, int status), void *arg,
		     const atomic_bool *cancel)
{
	struct skipper k = { f, c->name };
	struct scan *s;
	struct scan_ent *e;
	struct bfo_stats st;
	char *dir = malloc(strlen(root) + strlen(c->prefix) + 2), *fp;
	long n;
	int ret, status;

	if (!dir)
		return -ENOMEM;
	sprintf(dir, "%s%s%s", root, *c->prefix ? "/" : "", c->prefix);
	ret = scan_start(&s, dir, ro, flags & DINDEX_HASH ? SCAN_HASH : 0, skip, &k);
	free(dir);
	if (ret)
		return ret;
	n = 0;
	while (!ret && !(cancel && atomic_load(cancel)) && (n = scan_next(s, &e)) > 0) {
		for (long i = 0; i < n && !ret; i++)
			if (!e[i].status)
				ret = add(ix, c->prefix, e[i].rel, src, &e[i], e[i].path, flags);
		while (failed && scan_failure(s, &fp, &status)) {
			failed(arg, fp, status);
			free(fp);
		}
	}
	while (failed && scan_failure(s, &fp, &status)) {
		failed(arg, fp, status);
		free(fp);
	}
	if (!ret && cancel && atomic_load(cancel))
		ret = -ECANCELED;       /* what is there is not known whole */
	scan_end(s, &st);
	stats_add(&ix->st, &st);
	return ret ? ret : n < 0 ? (int)n : 0;
}

int dindex_build(struct dindex **out, int rootfd, const char *root, const struct dindex_copy *copies,
		 unsigned n, const struct filter *f, const struct bfo_opts *ro, unsigned flags,
		 void (*failed)(void *arg, const char *path, int status), void *arg,
		 const atomic_bool *cancel)
{
	struct dindex *ix = calloc(1, sizeof(*ix));
	int ret = 0;

	/* offset 0: "", so that 0 means no name */
	if (!ix || (name_put(ix, "", 0), !ix->names) || rehash(ix)) {
		dindex_free(ix);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n && !ret; i++) {
		if (cancel && atomic_load(cancel)) {
			ret = -ECANCELED;
			break;
		}
		ret = top(ix, rootfd, root, copies[i].prefix, (uint16_t)i, flags);
		if (ret == 1)
			ret = scan_copy(ix, root, &copies[i], (uint16_t)i, f, ro, flags, failed, arg, cancel);
		else if (ret > 0)
			ret = 0;
	}
	if (ret) {
		dindex_free(ix);
		return ret;
	}
	*out = ix;
	return 0;
}

int dindex_add_found(struct dindex *ix, const char *path, const struct stat *st)
{
	struct scan_ent se = { .st = *st, .type = dt_of(st->st_mode) };

	return add(ix, path, "", UINT16_MAX, &se, NULL, 0);
}

struct dent *dindex_get(struct dindex *ix, const char *path)
{
	size_t len = strlen(path), h;

	if (!ix || !ix->tabsize)
		return NULL;
	for (h = slot_of(ix, key_of(path, len)); ix->tab[h]; h = (h + 1) & (ix->tabsize - 1)) {
		struct dent *d = &ix->e[ix->tab[h] - 1];

		if (!strcmp(ix->names + d->path, path))
			return d;
	}
	return NULL;
}

uint64_t dindex_key(const char *path)
{
	return key_of(path, strlen(path));
}

void dindex_prefetch(const struct dindex *ix, const uint64_t *keys, size_t n)
{
	if (!ix || !ix->tabsize)
		return;
	for (size_t i = 0; i < n; i++)
		__builtin_prefetch(&ix->tab[slot_of(ix, keys[i])]);
	for (size_t i = 0; i < n; i++) {
		uint32_t v = ix->tab[slot_of(ix, keys[i])];

		if (v) {
			const char *d = (const char *)&ix->e[v - 1];

			__builtin_prefetch(d);
			__builtin_prefetch(d + 64);
			__builtin_prefetch(d + sizeof(struct dent) - 1);
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t v = ix->tab[slot_of(ix, keys[i])];

		if (v)
			__builtin_prefetch(ix->names + ix->e[v - 1].path);
	}
}

const char *dindex_path(const struct dindex *ix, const struct dent *d)
{
	return ix->names + d->path;
}

const char *dindex_target(const struct dindex *ix, const struct dent *d)
{
	return d->type == DT_LNK && d->aux ? ix->names + d->aux : NULL;
}

struct dent *dindex_at(struct dindex *ix, size_t i)
{
	return ix && i < ix->n ? &ix->e[i] : NULL;
}

size_t dindex_count(const struct dindex *ix)
{
	return ix ? ix->n : 0;
}

void dindex_stats(const struct dindex *ix, struct bfo_stats *st)
{
	*st = ix->st;
}

void dindex_free(struct dindex *ix)
{
	if (!ix)
		return;
	free(ix->e);
	free(ix->key);
	free(ix->names);
	free(ix->tab);
	free(ix->dirs);
	free(ix);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The comparisons of a sync (sync.h): a list entry against the
 * destination's entry at its place (rsync's quick check, or the bytes),
 * and an entry of the other kind in the way (it makes way, or, holding
 * what the rules exclude, it stays).  What the list did not name goes in
 * sync_delete.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "copy_who.h"
#include "dindex.h"
#include "filter.h"
#include "sync.h"
#include "test_hooks.h"
#include "write.h"

/* ------------------------------------------------------------ comparing */

const char *sync_dest(const struct sync *y, uint16_t src, const char *rel, char *buf, size_t len)
{
	const char *pre = src < y->nsrc ? y->prefix[src] : "";
	size_t pl = strlen(pre), rl = strlen(rel), sep = *pre && *rel;

	/* (once per list record: no format parsed) */
	if (pl + sep + rl >= len) {
		snprintf(buf, len, "%s%s%s", pre, sep ? "/" : "", rel);
		return buf;
	}
	memcpy(buf, pre, pl);
	buf[pl] = '/';
	memcpy(buf + pl + sep, rel, rl + 1);
	return buf;
}

struct xattr {
	const char *name;
	const void *val;
	size_t len;
};

static int xattr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct xattr *)a)->name, ((const struct xattr *)b)->name);
}

/* What a copy takes everywhere: the user and trusted namespaces
 * (security.* and system.* are the destination system's own). */
static bool xattr_compared(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8);
}

/* The digest of v[0..k): by name, each name and value; never 0. */
static uint64_t xattrs_digest(struct xattr *v, size_t k)
{
	XXH3_state_t *s;
	uint64_t h = 0;

	if (!k || !(s = XXH3_createState()))
		return 0;
	qsort(v, k, sizeof(*v), xattr_cmp);
	XXH3_64bits_reset(s);
	for (size_t i = 0; i < k; i++) {
		uint64_t len = v[i].len;

		XXH3_64bits_update(s, v[i].name, strlen(v[i].name) + 1);
		XXH3_64bits_update(s, &len, sizeof(len));
		if (v[i].len)
			XXH3_64bits_update(s, v[i].val, v[i].len);
	}
	h = XXH3_64bits_digest(s) | 1;   /* (0 is "none") */
	XXH3_freeState(s);
	return h;
}

uint64_t sync_xattrs_hash(const char *path)
{
	ssize_t n = llistxattr(path, NULL, 0);
	char *names, *vals = NULL;
	struct xattr *v;
	size_t k = 0, at = 0;
	uint64_t h = 0;

	if (n <= 0 || !(names = malloc((size_t)n)))
		return 0;
	n = llistxattr(path, names, (size_t)n);
	v = n > 0 ? calloc((size_t)n, sizeof(*v)) : NULL;
	vals = v ? malloc(1u << 20) : NULL;
	for (char *p = names; vals && p < names + n; p += strlen(p) + 1) {
		ssize_t vl;

		if (!xattr_compared(p) || at + 65536 > (1u << 20) ||
		    (vl = lgetxattr(path, p, vals + at, 65536)) < 0)
			continue;
		v[k++] = (struct xattr){ p, vals + at, (size_t)vl };
		at += (size_t)vl;
	}
	if (vals)
		h = xattrs_digest(v, k);
	free(vals);
	free(v);
	free(names);
	return h;
}

uint64_t sync_xattrs_hash_packed(const void *packed, size_t len)
{
	const uint8_t *x = packed, *end = x + len;
	struct xattr v[256];
	size_t k = 0;

	/* (packing checked by its parser: name, NUL, u32 length, value) */
	while (x < end && k < sizeof(v) / sizeof(v[0])) {
		const char *name = (const char *)x;
		uint32_t vl;

		x += strlen(name) + 1;
		memcpy(&vl, x, sizeof(vl));
		x += sizeof(vl);
		if (xattr_compared(name))
			v[k++] = (struct xattr){ name, x, vl };
		x += vl;
	}
	return xattrs_digest(v, k);
}

/* The destination entry d already has the metadata the copy w would
 * give it: mode, owner (when the copy takes it), mtime (when the copy
 * takes it; else it is never the same). */
static bool same_meta(const struct dent *d, const struct bfo_wentry *w)
{
	return (d->mode & 07777) == w->mode &&
	       (!(w->flags & BFO_WENTRY_OWNER) || (d->uid == w->uid && d->gid == w->gid)) &&
	       (w->flags & BFO_WENTRY_TIMES) && d->mtime_sec == w->mtime_sec &&
	       d->mtime_nsec == w->mtime_nsec;
}

static bool same_file(const struct sync *y, const struct dent *d, const struct lent *e,
		      const struct bfo_wentry *w)
{
	if (d->type != DT_REG || d->size != (uint64_t)e->st.st_size)
		return false;
	if (!(y->flags & BFO_COPY_CHECKSUM))
		return same_meta(d, w);
	return d->aux == e->hash && (d->mode & 07777) == w->mode &&
	       (!(w->flags & BFO_WENTRY_OWNER) || (d->uid == w->uid && d->gid == w->gid));
}

static bool same_other(const struct sync *y, const struct dent *d, const struct lent *e,
		       const struct bfo_wentry *w)
{
	mode_t m = e->st.st_mode;
	const struct ddir *dd;
	const char *t;

	switch (d->type) {
	case DT_DIR:
		dd = dindex_dir(y->ix, d);
		return S_ISDIR(m) && same_meta(d, w) && (!(y->flags & BFO_COPY_ARCHIVE) ||
							 (dd ? dd->xhash : 0) == e->xhash);
	case DT_LNK:
		/* (a symbolic link's mode is always 0777: not compared) */
		t = dindex_target(y->ix, d);
		return S_ISLNK(m) && t && e->target && !strcmp(t, e->target) &&
		       (!(w->flags & BFO_WENTRY_OWNER) || (d->uid == w->uid && d->gid == w->gid)) &&
		       (w->flags & BFO_WENTRY_TIMES) && d->mtime_sec == w->mtime_sec &&
		       d->mtime_nsec == w->mtime_nsec;
	case DT_FIFO:
		return S_ISFIFO(m) && same_meta(d, w);
	case DT_SOCK:
		return S_ISSOCK(m) && same_meta(d, w);
	case DT_CHR:
	case DT_BLK:
		return (d->type == DT_CHR ? S_ISCHR(m) : S_ISBLK(m)) && d->aux == (uint64_t)e->st.st_rdev &&
		       same_meta(d, w);
	}
	return false;
}

/* A walk of the destination's tree below a directory in the way of an
 * entry of the other kind, as rsync's delete_dir_contents meets it. */
enum { TW_LOOK, TW_TAKE, TW_LEFT };
struct tw {
	struct sync *y;
	int what;                   /* TW_LOOK: count the entries, stop at an excluded one;
				       TW_TAKE: none is excluded, all go with the tree (named
				       deleted); TW_LEFT: what --delete may delete of it, added
				       to the index where the index does not have it */
	char *path, *fname;         /* its place below the root, its name for the rules */
	uint64_t entries;
	bool excluded;
};

static bool tw_join(char *buf, size_t at, const char *name)
{
	size_t nl = strlen(name);

	if (at + 1 + nl + 1 > BFO_WPATH_MAX)
		return false;
	buf[at] = '/';
	memcpy(buf + at + 1, name, nl + 1);
	return true;
}

/* The entries of directory name in dfd, path and fname holding pl and fl
 * bytes: 0, or -errno where it cannot be read (nothing may be assumed of
 * it then).  Children before their directory; no link followed. */
static int tw_dir(struct tw *t, int dfd, const char *name, size_t pl, size_t fl, unsigned depth)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret = 0;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	if (depth > 4096 || !(d = fdopendir(fd))) {
		close(fd);
		return depth > 4096 ? -ELOOP : -ENOMEM;
	}
	while (!ret && !t->excluded && (de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		struct stat st;
		bool out;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = errno == ENOENT ? 0 : -errno;
			continue;
		}
		if (!tw_join(t->path, pl, de->d_name) || !tw_join(t->fname, fl, de->d_name)) {
			ret = -ENAMETOOLONG;
			break;
		}
		t->entries++;
		out = t->y->filter && filter_excluded(t->y->filter, t->fname + (t->fname[0] == '/'),
						      S_ISDIR(st.st_mode));
		if (t->what == TW_LOOK && out)
			t->excluded = true;     /* protected: it stays, and so does the directory */
		else if (S_ISDIR(st.st_mode) && !(t->what == TW_LEFT && out))
			ret = tw_dir(t, dirfd(d), de->d_name, pl + 1 + nl, fl + 1 + nl, depth + 1);
		if (ret || t->what == TW_LOOK || (t->what == TW_LEFT && out))
			continue;
		struct dent *x = dindex_get(t->y->ix, t->path);

		if (t->what == TW_LEFT && !x) {
			ret = dindex_add_found(t->y->ix, t->path, &st);
		} else if (t->what == TW_TAKE && (!x || !x->seen)) {
			if (x)
				x->seen = 1;
			t->y->deleted_early++;
			if (t->y->deleted)
				t->y->deleted(t->y->arg, t->path);
		}
	}
	t->path[pl] = t->fname[fl] = '\0';
	closedir(d);
	return ret;
}

static int tw_run(struct tw *t, const char *dest, const struct lent *e, int what)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(dest, dir, sizeof(dir));
	const char *fn = e->src < t->y->nsrc ? t->y->fname[e->src] : "";
	int dfd, ret;

	t->what = what;
	t->excluded = false;
	snprintf(t->path, BFO_WPATH_MAX, "%s", dest);
	snprintf(t->fname, BFO_WPATH_MAX, "%s%s%s", fn, *fn && *e->rel ? "/" : "", e->rel);
	dfd = wpath_open_dir(t->y->rootfd, dir, false);
	if (dfd < 0)
		return dfd;
	ret = tw_dir(t, dfd, base, strlen(t->path), strlen(t->fname), 0);
	close(dfd);
	return ret;
}

/*
 * A destination directory d at dest, where list entry e goes and is not
 * one (a file or a link where the list has it), as rsync makes way: an
 * empty directory is replaced, one with entries only with --delete (what
 * is below it goes with it, each named as deleted), and never one that
 * holds an entry the filter excludes: that one is kept, with everything
 * below it that --delete may delete going the usual way (as rsync:
 * "cannot delete non-empty directory").  The replacement is the writer's
 * (BFO_WENTRY_REPLACE_TREE): atomic, and what it displaces goes once the
 * batch is durable.  Returns WANT_TREE, or WANT_SKIP (refused, reported).
 */
static uint8_t tree_in_way(struct sync *y, const char *dest, struct dent *d, const struct lent *e)
{
	struct tw t = { .y = y, .path = malloc(BFO_WPATH_MAX), .fname = malloc(BFO_WPATH_MAX) };
	char msg[BFO_WPATH_MAX + 128];
	int ret = t.path && t.fname ? tw_run(&t, dest, e, TW_LOOK) : -ENOMEM;

	if (!ret && !t.excluded && t.entries > y->delete_max - MIN(y->delete_max, y->deleted_early)) {
		snprintf(msg, sizeof(msg), "%s: not replaced (--max-delete: %llu entries below it would "
			 "be deleted)", dest, (unsigned long long)t.entries);
		if (y->report)
			y->report(y->arg, msg, -ENOTEMPTY);
		y->delete_held += t.entries;
		d->refused = 1;
		free(t.path);
		free(t.fname);
		return WANT_SKIP;
	}
	if (!ret && !t.excluded && (!t.entries || (y->flags & BFO_COPY_DELETE))) {
		ret = tw_run(&t, dest, e, TW_TAKE);
		free(t.path);
		free(t.fname);
		return ret ? WANT_SKIP : WANT_TREE;
	}
	bool excluded = t.excluded;

	snprintf(msg, sizeof(msg), "%s: cannot delete non-empty directory (%s), in the way of a%s",
		 dest, ret < 0 ? "it cannot be read" : excluded ? "it holds excluded entries" :
		 "no --delete", S_ISLNK(e->st.st_mode) ? " symbolic link" :
		 S_ISREG(e->st.st_mode) ? " file" : "n entry of another kind");
	if (y->report)
		y->report(y->arg, msg, ret < 0 ? ret : -ENOTEMPTY);
	d->refused = 1;
	/* (what of it the index does not have, the rules excluding the
	 * directory itself, --delete deletes all the same: rsync does) */
	if (!ret && (y->flags & BFO_COPY_DELETE))
		tw_run(&t, dest, e, TW_LEFT);
	free(t.path);
	free(t.fname);
	return WANT_SKIP;
}

/* An entry of the other kind at dest, where list entry e goes: WANT_TREE
 * (e takes its place), or WANT_SKIP (refused, reported). */
static uint8_t type_change(struct sync *y, const char *dest, struct dent *d, const struct lent *e)
{
	return d->type == DT_DIR ? tree_in_way(y, dest, d, e) : WANT_TREE;
}

/* The directory at dest, which the index does not have (the rules
 * exclude it as a directory), where non-directory e goes: indexed now,
 * named by the list, so that it is decided as any entry in the way.
 * NULL: nothing of the kind is there. */
static struct dent *unindexed_dir(struct sync *y, const char *dest)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(dest, dir, sizeof(dir));
	int dfd = wpath_open_dir(y->rootfd, dir, false);
	struct stat st;
	bool there = dfd >= 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);

	if (dfd >= 0)
		close(dfd);
	if (!there || dindex_add_found(y->ix, dest, &st))
		return NULL;
	return dindex_get(y->ix, dest);
}

/* A hard link group's later member e (dest, its entry d or NULL): linked
 * to the first member's copy where that is there and kept, else written
 * (the data path links it to the first it writes). */
static uint8_t decide_member(struct sync *y, const struct lent *e, struct dent *d)
{
	char buf[BFO_WPATH_MAX];
	struct dent *f = dindex_get(y->ix, sync_dest(y, e->link_src, e->link_rel, buf, sizeof(buf)));
	uint8_t replace = d ? WANT_REPLACE : 0;

	if (!f || f->written || f->type != DT_REG)
		return WANT_WRITE | replace;
	if (d && d->type == DT_REG && d->ino == f->ino && d->dev == f->dev)
		return WANT_SKIP;
	return WANT_LINK | replace;
}

uint8_t sync_decide(struct sync *y, const struct lent *e)
{
	char buf[BFO_WPATH_MAX];
	const char *dest = sync_dest(y, e->src, e->rel, buf, sizeof(buf));
	struct dent *d = y->ix ? dindex_get(y->ix, dest) : NULL;
	bool reg = S_ISREG(e->st.st_mode), same;
	struct bfo_wentry w = { 0 };
	uint8_t want, tree = 0;

	if (reg)
		y->tree_bytes += (uint64_t)e->st.st_size;
	if (reg && !e->link_rel)        /* (a hard link's later names are not files of their own) */
		y->tree_files++;
	if (!d && y->ix && y->filter && !S_ISDIR(e->st.st_mode))
		d = unindexed_dir(y, dest);
	if (d) {
		d->seen = 1;
		struct ddir *dd = S_ISDIR(e->st.st_mode) ? dindex_dir(y->ix, d) : NULL;

		if (dd) {
			/* its times come back after what happens below it */
			dd->want_times = true;
			dd->want_atime = e->st.st_atim.tv_sec;
			dd->want_atime_nsec = (uint32_t)e->st.st_atim.tv_nsec;
			dd->want_mtime = e->st.st_mtim.tv_sec;
			dd->want_mtime_nsec = (uint32_t)e->st.st_mtim.tv_nsec;
		}
		if ((d->type == DT_DIR) != !!S_ISDIR(e->st.st_mode)) {
			if ((tree = type_change(y, dest, d, e)) == WANT_SKIP)
				return WANT_NONE;
			d->tree = 1;
		}
	}
	if (d && reg && e->link_rel) {
		want = decide_member(y, e, d) | tree;
		if (want == WANT_SKIP)
			y->skipped++;
		goto decided;
	}
	if (!d) {
		want = e->link_rel && y->ix ? decide_member(y, e, NULL) : WANT_WRITE;
		goto decided;
	}
	if (!(y->flags & BFO_COPY_UPDATE)) {
		/* (replace everything: nothing compared) */
		want = WANT_WRITE | (S_ISDIR(e->st.st_mode) && !tree ? 0 : WANT_REPLACE | tree);
		d->written = 1;
		goto decided;
	}
	if (tree) {
		want = WANT_WRITE | WANT_REPLACE | WANT_TREE;
		d->written = 1;
		goto decided;
	}
	copy_meta(y->who, &w, e->st.st_mode, e->st.st_uid, e->st.st_gid, e->st.st_atim.tv_sec,
		  (uint32_t)e->st.st_atim.tv_nsec, e->st.st_mtim.tv_sec, (uint32_t)e->st.st_mtim.tv_nsec);
	same = reg ? same_file(y, d, e, &w) : same_other(y, d, e, &w);
	if (same) {
		y->skipped += reg;
		return WANT_SKIP;
	}
	/* a directory is not replaced: its metadata goes to the one there */
	want = WANT_WRITE | (S_ISDIR(e->st.st_mode) ? 0 : WANT_REPLACE);
	d->written = 1;
decided:
	if (want != WANT_SKIP) {
		y->wanted++;
		sync_touch(y, dest);
	}
	return want;
}

void sync_touch(struct sync *y, const char *path)
{
	char dir[BFO_WPATH_MAX];
	struct dent *d;

	wpath_split(path, dir, sizeof(dir));
	if (*dir && (d = dindex_get(y->ix, dir)) && dindex_dir(y->ix, d))
		dindex_dir(y->ix, d)->touched = true;
}

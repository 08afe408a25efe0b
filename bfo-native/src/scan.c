/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tree's entries and their metadata at batch speed (scan.h): the walk's
 * batches, their regular files' metadata (or bytes, hashed) from a read
 * context.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "plan.h"
#include "scan.h"
#include "walk.h"

#define SCAN_THREADS 8u
#define SCAN_BATCH 16384u

struct hashing {                /* a file arriving in pieces (SCAN_HASH) */
	uint64_t index;
	XXH3_state_t *st;
};

struct scan {
	struct walk *walk;
	struct bfo_ctx *ctx;
	unsigned flags;
	size_t rootlen;
	bool (*skip)(void *arg, const char *rel, bool dir);
	void *arg;
	struct scan_ent *e;         /* the batch handed out */
	size_t n, cap;
	size_t *slot;               /* read index - base -> entry */
	size_t nslot, capslot;
	uint64_t base;              /* read index of the batch's first regular file */
	uint64_t submitted;         /* paths given to the read engine in all */
	struct hashing *pieces;
	size_t npieces;
	bool reading;
};

static bool walk_skip(void *arg, const char *path, bool dir)
{
	struct scan *s = arg;

	return s->skip(s->arg, path + s->rootlen + (path[s->rootlen] == '/'), dir);
}

int scan_start(struct scan **out, const char *root, const struct bfo_opts *ro, unsigned flags,
	       bool (*skip)(void *arg, const char *rel, bool dir), void *arg)
{
	struct scan *s = calloc(1, sizeof(*s));
	struct bfo_opts o;
	int ret;

	if (!s)
		return -ENOMEM;
	bfo_opts_init(&o);
	if (ro)
		o = *ro;
	o.size = sizeof(o);
	o.flags |= BFO_READ_NOFOLLOW;
	if (!(flags & SCAN_HASH))
		o.flags |= BFO_READ_METADATA_ONLY;
	s->flags = flags;
	s->rootlen = strlen(root);
	s->skip = skip;
	s->arg = arg;
	ret = bfo_ctx_create(&s->ctx, &o);
	if (ret) {
		free(s);
		return ret;
	}
	/* The walk keeps its listings for the read engine, which then takes
	 * the files' inode numbers from them (raw: no directory read twice). */
	s->walk = walk_start_skip(root, SCAN_THREADS, SCAN_BATCH,
				  WALK_SORT | WALK_NOFOLLOW | WALK_ALL | WALK_LISTS,
				  skip ? walk_skip : NULL, s);
	if (!s->walk) {
		bfo_ctx_destroy(s->ctx);
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static void st_from(struct stat *st, const struct bfo_file *f)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = f->mode;
	st->st_uid = f->uid;
	st->st_gid = f->gid;
	st->st_size = (off_t)f->size;
	st->st_nlink = f->nlink;
	st->st_ino = f->ino;
	st->st_dev = makedev((unsigned)(f->dev >> 32), (unsigned)f->dev);
	st->st_mtim = (struct timespec){ f->mtime_sec, f->mtime_nsec };
	st->st_atim = (struct timespec){ f->atime_sec, f->atime_nsec };
	st->st_ctim = (struct timespec){ f->ctime_sec, f->ctime_nsec };
}

static XXH3_state_t *piece_state(struct scan *s, uint64_t index, bool make)
{
	for (size_t i = 0; i < s->npieces; i++)
		if (s->pieces[i].index == index)
			return s->pieces[i].st;
	if (!make)
		return NULL;
	struct hashing *p = realloc(s->pieces, (s->npieces + 1) * sizeof(*p));
	XXH3_state_t *st = XXH3_createState();

	if (!p || !st) {
		if (p)
			s->pieces = p;
		XXH3_freeState(st);
		return NULL;
	}
	s->pieces = p;
	XXH3_64bits_reset(st);
	s->pieces[s->npieces++] = (struct hashing){ index, st };
	return st;
}

static void piece_done(struct scan *s, uint64_t index)
{
	for (size_t i = 0; i < s->npieces; i++)
		if (s->pieces[i].index == index) {
			XXH3_freeState(s->pieces[i].st);
			s->pieces[i] = s->pieces[--s->npieces];
			return;
		}
}

/* One result of the read engine into its entry. */
static void take(struct scan *s, const struct bfo_file *f)
{
	struct scan_ent *e;
	bool last = f->flags & BFO_FILE_LAST;

	if (f->index < s->base || f->index - s->base >= s->nslot)
		return;
	e = &s->e[s->slot[f->index - s->base]];
	if (f->status < 0) {
		e->status = f->status;
		piece_done(s, f->index);
		return;
	}
	if (f->offset == 0)
		st_from(&e->st, f);
	if (!(s->flags & SCAN_HASH))
		return;
	if (f->offset == 0 && last) {
		e->hash = XXH3_64bits(f->data, f->length);
		return;
	}
	XXH3_state_t *st = piece_state(s, f->index, f->offset == 0);

	if (!st) {
		e->status = -ENOMEM;
		return;
	}
	XXH3_64bits_update(st, f->data, f->length);
	if (last) {
		e->hash = XXH3_64bits_digest(st);
		piece_done(s, f->index);
	}
}

/* Results until *pending of them (entries, not pieces) came. */
static int collect(struct scan *s, size_t *pending, int timeout_ms)
{
	struct bfo_file f[256];

	while (*pending) {
		int k = bfo_read_wait(s->ctx, f, 256, timeout_ms);

		if (k == -ETIME)
			return 0;
		if (k < 0 && k != -EAGAIN)
			return k;
		if (k <= 0)
			return -EIO;         /* the engine has nothing more: lost results */
		for (int i = 0; i < k; i++) {
			take(s, &f[i]);
			*pending -= (f[i].flags & BFO_FILE_LAST) != 0;
		}
		bfo_read_release(s->ctx, f, (unsigned)k);
		if (timeout_ms > 0)
			timeout_ms = 0;       /* (-1: until all came) */
	}
	return 0;
}

/* An entry that is not a regular file: its own lstat (directories: the
 * walk's, taken before it read them), a link's target. */
static void other(struct scan_ent *e, const struct walk_file *w)
{
	if (w->st) {
		e->st = *w->st;
	} else if (lstat(e->path, &e->st) < 0) {
		e->status = -errno;
		return;
	}
	if (S_ISLNK(e->st.st_mode)) {
		size_t cap = (size_t)e->st.st_size + 2 > 4096 ? (size_t)e->st.st_size + 2 : 4096;
		ssize_t k;

		if (!(e->target = malloc(cap)) || (k = readlink(e->path, e->target, cap - 1)) < 0) {
			e->status = e->target ? -errno : -ENOMEM;
			return;
		}
		e->target[k] = '\0';
	}
}

static void batch_free(struct scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->e[i].path);
		free(s->e[i].target);
	}
	s->n = 0;
}

long scan_next(struct scan *s, struct scan_ent **ents)
{
	struct walk_file *w;
	size_t n, pending = 0;
	int ret = 0;

	batch_free(s);
	n = walk_next(s->walk, &w);
	if (!n)
		return 0;
	if (n > s->cap || n > s->capslot) {
		struct scan_ent *e = realloc(s->e, n * sizeof(*e));
		size_t *sl = e ? realloc(s->slot, n * sizeof(*sl)) : NULL;

		if (e)
			s->e = e;
		if (sl)
			s->slot = sl;
		if (!e || !sl)
			return -ENOMEM;
		s->cap = s->capslot = n;
	}
	dirhint_adopt(s->ctx, walk_take_lists(s->walk));
	s->base = s->submitted;
	s->nslot = 0;
	for (size_t i = 0; i < n; i++) {
		struct scan_ent *e = &s->e[i];

		/* the walk's path is taken over: it frees it no more */
		*e = (struct scan_ent){ .path = w[i].path, .type = w[i].type };
		w[i].path = NULL;
		e->rel = e->path + s->rootlen + (e->path[s->rootlen] == '/');
		s->n = i + 1;
		if (w[i].type != DT_REG) {
			other(e, &w[i]);
			continue;
		}
		/* the read engine's queue may be full: take results first */
		while (!ret && (ret = bfo_read_submit(s->ctx, (const char *const *)&e->path, 1)) == 0) {
			bfo_read_flush(s->ctx);
			ret = collect(s, &pending, 10);
		}
		if (ret < 0)
			break;
		ret = 0;
		s->reading = true;
		s->slot[s->nslot++] = i;
		s->submitted++;
		pending++;
	}
	if (!ret && pending) {
		bfo_read_flush(s->ctx);
		ret = collect(s, &pending, -1);
	}
	if (ret < 0)
		return ret;
	/* (a result that never came is a failure, never an entry of no kind) */
	for (size_t i = 0; i < s->nslot; i++)
		if (!s->e[s->slot[i]].status && !s->e[s->slot[i]].st.st_mode)
			s->e[s->slot[i]].status = -EIO;
	*ents = s->e;
	return (long)s->n;
}

bool scan_failure(struct scan *s, char **path, int *status)
{
	return walk_failure(s->walk, path, status);
}

void scan_end(struct scan *s, struct bfo_stats *st)
{
	if (!s)
		return;
	batch_free(s);
	walk_end(s->walk, NULL, NULL);
	if (st)
		bfo_read_stats(s->ctx, st);
	bfo_ctx_destroy(s->ctx);
	for (size_t i = 0; i < s->npieces; i++)
		XXH3_freeState(s->pieces[i].st);
	free(s->pieces);
	free(s->e);
	free(s->slot);
	free(s);
}

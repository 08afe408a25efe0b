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

/* One walk batch's entries and where its regular files' results go. */
struct sbatch {
	struct scan_ent *e;
	size_t n, cap;
	size_t *slot;               /* read index - base -> entry */
	size_t nslot;
	char **paths;               /* the regular files' paths, for the engine */
	uint64_t base;              /* read index of the batch's first regular file */
	size_t pending;             /* regular files whose last result has not come */
};

/*
 * Two batches: the one handed out (out) and the next one (ahead), whose
 * files the read engine already has while the caller works through out, so
 * that the engine's metadata phase never waits on the caller's work nor the
 * caller on a window forming.
 */
struct scan {
	struct walk *walk;
	struct bfo_ctx *ctx;
	unsigned flags;
	size_t rootlen;
	bool (*skip)(void *arg, const char *rel, bool dir);
	void *arg;
	struct sbatch b[2];
	struct sbatch *out, *ahead;
	bool primed, walked;        /* the first batch taken; the walk over */
	uint64_t submitted;         /* paths given to the read engine in all */
	struct hashing *pieces;
	size_t npieces;
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
				  WALK_SORT | WALK_NOFOLLOW | WALK_ALL | WALK_LISTS | WALK_QUICK,
				  skip ? walk_skip : NULL, s);
	if (!s->walk) {
		bfo_ctx_destroy(s->ctx);
		free(s);
		return -ENOMEM;
	}
	s->out = &s->b[0];
	s->ahead = &s->b[1];
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

/* The batch a read index belongs to, or NULL. */
static struct sbatch *batch_of(struct scan *s, uint64_t index)
{
	for (int i = 0; i < 2; i++)
		if (index >= s->b[i].base && index - s->b[i].base < s->b[i].nslot)
			return &s->b[i];
	return NULL;
}

/* One result of the read engine into its entry. */
static void take(struct scan *s, const struct bfo_file *f)
{
	struct sbatch *b = batch_of(s, f->index);
	struct scan_ent *e;
	bool last = f->flags & BFO_FILE_LAST;

	if (!b)
		return;
	b->pending -= last && b->pending;
	e = &b->e[b->slot[f->index - b->base]];
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

static size_t pending(const struct scan *s, const struct sbatch *b)
{
	return b ? b->pending : s->b[0].pending + s->b[1].pending;
}

/* Results until all of b's came (b NULL: while any is pending; a timeout
 * of 0 or more: one wait of that long, then what is there). */
static int collect(struct scan *s, const struct sbatch *b, int timeout_ms)
{
	struct bfo_file f[256];

	while (pending(s, b)) {
		int k = bfo_read_wait(s->ctx, f, 256, timeout_ms);

		if (k == -ETIME)
			return 0;
		if (k < 0 && k != -EAGAIN)
			return k;
		if (k <= 0)
			return -EIO;         /* the engine has nothing more: lost results */
		for (int i = 0; i < k; i++)
			take(s, &f[i]);
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

static void batch_free(struct sbatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->e[i].path);
		free(b->e[i].target);
	}
	b->n = b->nslot = 0;
	b->pending = 0;
}

/* Give the engine b's regular files (their results come in later). */
static int submit(struct scan *s, struct sbatch *b)
{
	size_t done = 0;

	for (size_t i = 0; i < b->nslot; i++)
		b->paths[i] = b->e[b->slot[i]].path;
	while (done < b->nslot) {
		unsigned k = b->nslot - done > 65536 ? 65536 : (unsigned)(b->nslot - done);
		int ret = bfo_read_submit(s->ctx, (const char *const *)b->paths + done, k);

		if (ret < 0)
			return ret;
		done += (size_t)ret;
		b->pending += (size_t)ret;
		s->submitted += (size_t)ret;
		bfo_read_flush(s->ctx);
		/* the read engine's queue is full: take results first */
		if (!ret && (ret = collect(s, NULL, 10)) < 0)
			return ret;
	}
	return 0;
}

/* The walk's next batch into b, its regular files given to the read engine.
 * Returns 0 (b->n 0: the walk is over) or -errno. */
static int fill(struct scan *s, struct sbatch *b)
{
	struct walk_file *w;
	size_t n = walk_next(s->walk, &w);

	if (!n) {
		s->walked = true;
		return 0;
	}
	if (n > b->cap) {
		struct scan_ent *e = realloc(b->e, n * sizeof(*e));
		size_t *sl = e ? realloc(b->slot, n * sizeof(*sl)) : NULL;
		char **pa = sl ? realloc(b->paths, n * sizeof(*pa)) : NULL;

		if (e)
			b->e = e;
		if (sl)
			b->slot = sl;
		if (pa)
			b->paths = pa;
		if (!pa)
			return -ENOMEM;
		b->cap = n;
	}
	dirhint_adopt(s->ctx, walk_take_lists(s->walk));
	b->base = s->submitted;
	for (size_t i = 0; i < n; i++) {
		struct scan_ent *e = &b->e[i];

		/* the walk's path is taken over: it frees it no more */
		*e = (struct scan_ent){ .path = w[i].path, .type = w[i].type };
		w[i].path = NULL;
		e->rel = e->path + s->rootlen + (e->path[s->rootlen] == '/');
		b->n = i + 1;
		if (w[i].type == DT_REG)
			b->slot[b->nslot++] = i;
		else
			other(e, &w[i]);
	}
	return submit(s, b);
}

long scan_next(struct scan *s, struct scan_ent **ents)
{
	struct sbatch *b;
	int ret = 0;

	batch_free(s->out);
	if (!s->primed) {
		s->primed = true;
		ret = fill(s, s->ahead);
	}
	b = s->ahead;
	s->ahead = s->out;
	s->out = b;
	if (!ret && !b->n)
		return 0;
	if (!ret && !s->walked)
		ret = fill(s, s->ahead);
	if (!ret)
		ret = collect(s, b, -1);
	if (ret < 0)
		return ret;
	/* (a result that never came is a failure, never an entry of no kind) */
	for (size_t i = 0; i < b->nslot; i++)
		if (!b->e[b->slot[i]].status && !b->e[b->slot[i]].st.st_mode)
			b->e[b->slot[i]].status = -EIO;
	*ents = b->e;
	return (long)b->n;
}

bool scan_failure(struct scan *s, char **path, int *status)
{
	return walk_failure(s->walk, path, status);
}

void scan_end(struct scan *s, struct bfo_stats *st)
{
	if (!s)
		return;
	walk_end(s->walk, NULL, NULL);
	if (st)
		bfo_read_stats(s->ctx, st);
	bfo_ctx_destroy(s->ctx);
	for (size_t i = 0; i < s->npieces; i++)
		XXH3_freeState(s->pieces[i].st);
	free(s->pieces);
	for (int i = 0; i < 2; i++) {
		batch_free(&s->b[i]);
		free(s->b[i].e);
		free(s->b[i].slot);
		free(s->b[i].paths);
	}
	free(s);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directory listings of a batch (see dirlist.h).  What makes a listing
 * safe to use (the directory quiet before it, unchanged after the data is
 * read) is raw_dirhint.c's; this file only keeps the names.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "dirlist.h"
#include "test_hooks.h"

/* Bound on the listings a batch keeps: about 300,000 names of 30 bytes.
 * Directories past it are listed again by each window that needs them. */
#define DIRCACHE_BYTES (32u << 20)
#define DENTS_BUF      (32u << 10)
/* A directory changed less than this long ago is not listed: a change after
 * the listing must give it a newer ctime than the one recorded, and
 * timestamps move by clock ticks (ext4 stamps the coarse clock). */
#define QUIET_NS       (20 * 1000000LL)

static uint64_t name_hash(const char *name, size_t len)
{
	return XXH3_64bits(name, len);
}

uint64_t dirlist_hash(const char *path)
{
	return XXH3_64bits(path, strlen(path));
}

void dirlist_free(struct dirlist *l)
{
	if (!l)
		return;
	free(l->path);
	free(l->slots);
	free(l->inos);
	free(l->name_off);
	free(l->names);
	free(l);
}

/* Room for one more name of len bytes; false past max_bytes or out of memory. */
static bool grow(struct dirlist *l, struct dirlist_builder *b, size_t len)
{
	if (l->n == b->cap) {
		uint32_t n = b->cap ? b->cap * 2 : 256;
		uint64_t *i = realloc(l->inos, n * sizeof(*i));

		if (!i)
			return false;
		l->inos = i;
		uint32_t *o = realloc(l->name_off, n * sizeof(*o));

		if (!o)
			return false;
		l->name_off = o;
		b->cap = n;
	}
	if (b->used + len + 1 > b->names_cap) {
		size_t n = b->names_cap ? b->names_cap * 2 : 8192;
		char *p;

		while (n < b->used + len + 1)
			n *= 2;
		p = realloc(l->names, n);
		if (!p)
			return false;
		l->names = p;
		b->names_cap = n;
	}
	/* the slots index_names makes: at most four per name */
	l->bytes = b->names_cap + (size_t)b->cap * (sizeof(*l->inos) + sizeof(*l->name_off) + 4 * sizeof(*l->slots));
	return l->bytes <= b->max_bytes;
}

static bool add_name(struct dirlist *l, struct dirlist_builder *b, const char *name, uint64_t ino)
{
	size_t len = strlen(name);

	if (!grow(l, b, len))
		return false;
	memcpy(l->names + b->used, name, len + 1);
	l->name_off[l->n] = (uint32_t)b->used;
	l->inos[l->n++] = ino;
	b->used += len + 1;
	return true;
}

static bool index_names(struct dirlist *l)
{
	uint32_t n = 16;

	while (n < 2 * l->n)
		n *= 2;
	l->slots = calloc(n, sizeof(*l->slots));
	if (!l->slots)
		return false;
	l->nslots = n;
	for (uint32_t i = 0; i < l->n; i++) {
		const char *name = l->names + l->name_off[i];
		uint32_t h = (uint32_t)name_hash(name, strlen(name)) & (n - 1);

		while (l->slots[h])
			h = (h + 1) & (n - 1);
		l->slots[h] = i + 1;
	}
	return true;
}

void dirlist_begin(struct dirlist_builder *b, const char *path, const struct dirlist_rec *rec, size_t max_bytes)
{
	*b = (struct dirlist_builder){ .max_bytes = max_bytes };
	b->l = calloc(1, sizeof(*b->l));
	if (!b->l)
		return;
	b->l->hash = dirlist_hash(path);
	b->l->rec = *rec;
	b->l->path = strdup(path);
	if (!b->l->path) {
		dirlist_free(b->l);
		b->l = NULL;
	}
}

void dirlist_add(struct dirlist_builder *b, const char *name, uint64_t ino)
{
	if (b->l && !add_name(b->l, b, name, ino)) {
		dirlist_free(b->l);
		b->l = NULL;
	}
}

struct dirlist *dirlist_end(struct dirlist_builder *b)
{
	struct dirlist *l = b->l;

	b->l = NULL;
	if (l && !index_names(l)) {
		dirlist_free(l);
		return NULL;
	}
	return l;
}

struct dirlist *dirlist_make(int fd, const char *path, const struct dirlist_rec *rec, size_t max_bytes,
			     const struct dirlist *only)
{
	struct dirlist_builder b;
	char *dents = malloc(DENTS_BUF);

	if (!dents)
		return NULL;
	dirlist_begin(&b, path, rec, max_bytes);
	while (b.l) {
		long n = syscall(SYS_getdents64, fd, dents, DENTS_BUF);

		if (n < 0) {
			dirlist_free(b.l);
			b.l = NULL;
		}
		if (n <= 0)
			break;
		for (long off = 0; b.l && off < n;) {
			const struct linux_dirent64 *d = (const void *)(dents + off);

			off += d->d_reclen;
			if (d->d_type == DT_REG && (!only || dirlist_find(only, d->d_name)))
				dirlist_add(&b, d->d_name, d->d_ino);
		}
	}
	free(dents);
	return dirlist_end(&b);
}

bool dirlist_quiet(const struct stat *st)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME_COARSE, &now) < 0)
		return false;
	int64_t age = (int64_t)(now.tv_sec - st->st_ctim.tv_sec) * 1000000000LL +
		      (now.tv_nsec - st->st_ctim.tv_nsec);

	return age >= QUIET_NS;
}

void dirlist_rec_from(struct dirlist_rec *rec, const struct stat *st)
{
	*rec = (struct dirlist_rec){ .dev = (uint64_t)major(st->st_dev) << 32 | minor(st->st_dev),
				     .ino = st->st_ino, .ctime_sec = st->st_ctim.tv_sec,
				     .ctime_nsec = (uint32_t)st->st_ctim.tv_nsec, .mtime_sec = st->st_mtim.tv_sec,
				     .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec, .uid = st->st_uid };
}

uint64_t dirlist_find(const struct dirlist *l, const char *name)
{
	uint32_t n = l->nslots;

	for (uint32_t h = (uint32_t)name_hash(name, strlen(name)) & (n - 1); l->slots[h];
	     h = (h + 1) & (n - 1)) {
		uint32_t i = l->slots[h] - 1;

		if (strcmp(l->names + l->name_off[i], name) == 0)
			return l->inos[i];
	}
	return 0;
}

/* ------------------------------------------------------------ the cache */

void dircache_init(struct dircache *c)
{
	*c = (struct dircache){ 0 };
	pthread_mutex_init(&c->lock, NULL);
}

void dircache_clear(struct dircache *c)
{
	pthread_mutex_lock(&c->lock);
	for (uint32_t b = 0; b < c->nbuckets; b++) {
		while (c->buckets[b]) {
			struct dirlist *l = c->buckets[b];

			c->buckets[b] = l->next;
			dirlist_free(l);
		}
	}
	c->count = 0;
	c->bytes = 0;
	pthread_mutex_unlock(&c->lock);
}

void dircache_fini(struct dircache *c)
{
	dircache_clear(c);
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
}

static size_t bound(void)
{
	return bfo_test_hooks.dircache_bytes ? bfo_test_hooks.dircache_bytes : DIRCACHE_BYTES;
}

size_t dircache_room(struct dircache *c)
{
	size_t room;

	pthread_mutex_lock(&c->lock);
	room = c->bytes >= bound() ? 0 : bound() - c->bytes;
	pthread_mutex_unlock(&c->lock);
	return room;
}

static struct dirlist *lookup_locked(struct dircache *c, const char *path, uint64_t hash)
{
	if (!c->nbuckets)
		return NULL;
	for (struct dirlist *l = c->buckets[hash & (c->nbuckets - 1)]; l; l = l->next)
		if (l->hash == hash && strcmp(l->path, path) == 0)
			return l;
	return NULL;
}

const struct dirlist *dircache_get(struct dircache *c, const char *path, uint64_t hash)
{
	const struct dirlist *l;

	pthread_mutex_lock(&c->lock);
	l = lookup_locked(c, path, hash);
	pthread_mutex_unlock(&c->lock);
	return l;
}

/* Twice the buckets when they hold two listings each on average. */
static bool rehash_locked(struct dircache *c)
{
	uint32_t n = c->nbuckets ? c->nbuckets * 2 : 64;
	struct dirlist **b = calloc(n, sizeof(*b));

	if (!b)
		return false;
	for (uint32_t i = 0; i < c->nbuckets; i++) {
		while (c->buckets[i]) {
			struct dirlist *l = c->buckets[i];

			c->buckets[i] = l->next;
			l->next = b[l->hash & (n - 1)];
			b[l->hash & (n - 1)] = l;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = n;
	return true;
}

bool dircache_put(struct dircache *c, struct dirlist *l)
{
	bool taken = false;

	pthread_mutex_lock(&c->lock);
	if (c->bytes + l->bytes <= bound() && !lookup_locked(c, l->path, l->hash) &&
	    (c->count < 2 * c->nbuckets || rehash_locked(c))) {
		uint32_t b = l->hash & (c->nbuckets - 1);

		l->next = c->buckets[b];
		c->buckets[b] = l;
		c->count++;
		c->bytes += l->bytes;
		taken = true;
	}
	pthread_mutex_unlock(&c->lock);
	return taken;
}

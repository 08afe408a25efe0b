/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Create: tar's directory listings, mirrored as groups on a stack (one per
 * directory tar has open, newest on top), the subdirectories listed ahead
 * of tar ("kids"), and the handoff to libbfo's directory read-ahead.
 */
#include "create.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct ent *)a)->ino, y = ((const struct ent *)b)->ino;

	return x < y ? -1 : x > y;
}

/* A directory without files or subdirectories has no array (NULL), which
 * qsort() must not be given even for no elements. */
static void sort_ents(struct ent *a, size_t n, int (*cmp)(const void *, const void *))
{
	if (n)
		qsort(a, n, sizeof(*a), cmp);
}

static void group_free(struct group *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->e[i].name);
	for (size_t i = 0; i < g->nd; i++)
		free(g->d[i].name);
	free(g->e);
	free(g->d);
	free(g->kids);
	free(g->ht);
	free(g->path);
	free(g);
}

static void group_unlink(struct group *g)
{
	struct group **pp = &cr.top;

	while (*pp && *pp != g)
		pp = &(*pp)->older;
	if (*pp)
		*pp = g->older;
}

static struct group *group_by_dir(DIR *d)
{
	for (struct group *g = cr.top; g; g = g->older)
		if (g->dir == d)
			return g;
	return NULL;
}

struct group *group_by_fd(int fd)
{
	for (struct group *g = cr.top; g; g = g->older)
		if (g->dir && g->dirfd == fd)
			return g;
	return NULL;
}

/* An entry leaves E_INFLIGHT: its batch slot and its group's count go. */
void ent_landed(struct ent *e, uint32_t state)
{
	struct group *g = e->g;
	struct ent **slot = bent_at(e->bindex);

	if (slot)
		*slot = NULL;
	e->state = state;
	if (--g->inflight == 0 && g->gone) {
		group_unlink(g);
		group_free(g);
	}
}

static void group_add(struct group *g, const char *name, unsigned char type, uint64_t ino)
{
	struct ent **arr, *e;
	size_t *n, *cap;

	if (g->broken)
		return;
	if (type == DT_DIR) {
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return;
		arr = &g->d, n = &g->nd, cap = &g->dcap;
	} else if (type == DT_REG || type == DT_UNKNOWN) {
		arr = &g->e, n = &g->n, cap = &g->cap;
	} else {
		return;
	}
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		struct ent *p = nc < UINT32_MAX / 2 ? realloc(*arr, nc * sizeof(*p)) : NULL;

		if (!p) {
			g->broken = 1;
			return;
		}
		*arr = p;
		*cap = nc;
	}
	e = &(*arr)[*n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name) {
		g->broken = 1;
		return;
	}
	e->ino = ino;
	e->state = E_NEW;
	e->g = g;
	(*n)++;
}

/*
 * Hand g's next subdirectories (up to WARM_DIRS past those listed ahead or
 * entered) to libbfo's directory read-ahead, which reads each one and
 * stats its entries on its own threads.  Listed on tar's thread, one at a
 * time behind the device's queue of data reads, each cold directory and
 * each table of its files' inodes would cost tar a synchronous read (README:
 * How create works); read ahead, list_ahead(), cut_from() and tar's own
 * lstat find them in the cache.
 */
static void warm_subdirs(struct group *g)
{
	size_t end = g->next_sub + WARM_DIRS < g->nd ? g->next_sub + WARM_DIRS : g->nd;

	if (!cr.ahead && !cr.ahead_failed && bfo_dirahead_start(&cr.ahead, 0, 0, BFO_DIRAHEAD_STAT) < 0)
		cr.ahead_failed = 1;
	if (!cr.ahead)
		return;
	if (g->next_warm < g->next_sub)
		g->next_warm = g->next_sub;
	for (; g->next_warm < end; g->next_warm++) {
		char *p;
		int r;

		if (asprintf(&p, "%s/%s", g->path, g->d[g->next_warm].name) < 0)
			return;
		r = bfo_dirahead_add(cr.ahead, p);
		free(p);
		if (r < 0)      /* -EAGAIN: the queue is full, the rest comes later */
			return;
		counters.dirs_handed++;
	}
}

/* The listing is complete: order it as tar will and index the names. */
static void group_listed(struct group *g)
{
	size_t sz = 16;

	g->listed = 1;
	if (g->broken) {
		for (size_t i = 0; i < g->n; i++)
			free(g->e[i].name);
		for (size_t i = 0; i < g->nd; i++)
			free(g->d[i].name);
		g->n = g->nd = 0;
		return;
	}
	if (cr.sort == SORT_NAME) {
		sort_ents(g->e, g->n, cmp_name);
		sort_ents(g->d, g->nd, cmp_name);
	} else if (cr.sort == SORT_INODE) {
		sort_ents(g->e, g->n, cmp_ino);
		sort_ents(g->d, g->nd, cmp_ino);
	}
	warm_subdirs(g);
	while (sz < 2 * g->n)
		sz <<= 1;
	g->ht = calloc(sz, sizeof(*g->ht));
	if (!g->ht) {
		g->n = 0;       /* nothing to prefetch: tar reads through libc */
		return;
	}
	g->htmask = sz - 1;
	for (size_t i = 0; i < g->n; i++) {
		size_t h = hash_name(g->e[i].name) & g->htmask;

		while (g->ht[h])
			h = (h + 1) & g->htmask;
		g->ht[h] = (uint32_t)(i + 1);
		g->e[i].g = g;
	}
}

struct ent *group_find(struct group *g, const char *name)
{
	if (g->cursor < g->n && strcmp(g->e[g->cursor].name, name) == 0)
		return &g->e[g->cursor++];
	if (!g->ht)
		return NULL;
	for (size_t h = hash_name(name) & g->htmask; g->ht[h]; h = (h + 1) & g->htmask) {
		struct ent *e = &g->e[g->ht[h] - 1];

		if (strcmp(e->name, name) == 0) {
			g->cursor = (size_t)(e - g->e) + 1;
			return e;
		}
	}
	return NULL;
}

/*
 * List g's next subdirectory ahead of tar (it reads it the same way, with
 * O_NOFOLLOW: a symlink swapped in is not followed) and keep it as a kid.
 */
struct group *list_ahead(struct group *g)
{
	struct ent *sd = &g->d[g->next_sub++];
	struct group *k;
	struct dirent *de;
	DIR *d;
	int fd;

	warm_subdirs(g);
	if (cr.kids_alive >= MAX_KIDS)
		return NULL;
	if (g->nkids == g->kcap) {
		size_t nc = g->kcap ? 2 * g->kcap : 16;
		struct group **p = realloc(g->kids, nc * sizeof(*p));

		if (!p)
			return NULL;
		g->kids = p;
		g->kcap = nc;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->dirfd = -1;
	if (asprintf(&k->path, "%s/%s", g->path, sd->name) < 0) {
		free(k);
		return NULL;
	}
	fd = real_openat(AT_FDCWD, k->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd >= 0 ? real_fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			real_close(fd);
		group_free(k);
		return NULL;
	}
	while ((de = real_readdir(d)))
		group_add(k, de->d_name, de->d_type, de->d_ino);
	real_closedir(d);
	group_listed(k);
	g->kids[g->nkids++] = k;
	cr.kids_alive++;
	return k;
}

/* tar is done with g (or with the directory a kid stood for). */
static void group_close(struct group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct ent *e = &g->e[i];

		if (e->state == E_READY) {
			drop_held(&e->f, e->epoch);
			e->state = E_DONE;
		}
	}
	for (size_t i = 0; i < g->nkids; i++) {
		if (g->kids[i]) {
			cr.kids_alive--;
			group_close(g->kids[i]);
			g->kids[i] = NULL;
		}
	}
	g->dir = NULL;
	g->dirfd = -1;
	g->gone = 1;
	group_unlink(g);
	if (g->inflight == 0)
		group_free(g);
}

/* tar opened the directory at path: the kid listed ahead for it, if any. */
static struct group *adopt(const char *path)
{
	for (struct group *g = cr.top; g; g = g->older) {
		for (size_t i = 0; i < g->nkids; i++) {
			struct group *k = g->kids[i];

			if (k && strcmp(k->path, path) == 0) {
				g->kids[i] = NULL;
				cr.kids_alive--;
				return k;
			}
		}
	}
	return NULL;
}

/* tar entered g's subdirectory name: nothing before it needs listing ahead. */
static void entered(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t pl = slash ? (size_t)(slash - path) : 0;

	for (struct group *g = cr.top; g; g = g->older) {
		if (!g->listed || strlen(g->path) != pl || strncmp(g->path, path, pl) != 0)
			continue;
		for (size_t i = g->next_sub; i < g->nd; i++) {
			if (strcmp(g->d[i].name, slash + 1) == 0) {
				g->next_sub = i + 1;
				warm_subdirs(g);
				break;
			}
		}
		return;
	}
}

/* tar opened a directory stream: its listing, or the kid listed ahead for it. */
void create_dir_opened(DIR *d, int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;
	struct group *g;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || path[0] != '/')
		return;
	path[n] = '\0';
	entered(path);
	g = adopt(path);
	if (!g && (g = calloc(1, sizeof(*g)))) {
		g->path = strdup(path);
		if (!g->path) {
			free(g);
			g = NULL;
		}
	}
	if (g) {
		g->dir = d;
		g->dirfd = fd;
		g->older = cr.top;
		cr.top = g;
	}
}

/* One entry of tar's listing (end: the listing is complete). */
void create_dir_entry(DIR *d, const char *name, unsigned char type, uint64_t ino, int end)
{
	struct group *g = group_by_dir(d);

	if (!g || g->listed)
		return;
	if (end) {
		group_listed(g);
		topup();
		return;
	}
	group_add(g, name, type, ino);
}

void create_dir_closed(DIR *d)
{
	struct group *g = group_by_dir(d);

	if (g)
		group_close(g);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directory listings of a batch (dirlist.c): the names a directory lists
 * as regular files and their inode numbers, with the directory as it was
 * before the listing.  Made once per directory per batch and shared by the
 * batch's windows, so a directory whose files fall into several windows is
 * listed once (each listing of a large ext4 directory costs the kernel a
 * hash-ordered tree of all its entries).  Not installed.
 */
#ifndef BFO_DIRLIST_H
#define BFO_DIRLIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct devinfo;

/* What getdents64 fills in (glibc declares no such struct). */
struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* The directory as it was before its listing (fstat of the listed fd). */
struct dirlist_rec {
	uint64_t dev, ino;
	int64_t ctime_sec, mtime_sec;
	uint32_t ctime_nsec, mtime_nsec;
	uint32_t uid;
	struct devinfo *di;
};

/* Immutable once made; owned by the cache that took it, or by its maker. */
struct dirlist {
	uint64_t hash;             /* of path */
	char *path;
	struct dirlist_rec rec;
	uint32_t n, nslots;        /* names; hash slots (a power of two) */
	uint32_t *slots;           /* name index + 1, 0 empty */
	uint64_t *inos;
	uint32_t *name_off;
	char *names;
	size_t bytes;              /* memory it holds */
	struct dirlist *next;      /* in its cache bucket */
};

/* The listings of one batch, bounded by DIRCACHE_BYTES. */
struct dircache {
	pthread_mutex_t lock;
	struct dirlist **buckets;
	uint32_t nbuckets, count;
	size_t bytes;
};

void dircache_init(struct dircache *c);
/* Drop every listing: only when no window of the batch is in phase 0. */
void dircache_clear(struct dircache *c);
void dircache_fini(struct dircache *c);
/* Bytes a new listing may still use (0: the cache is full). */
size_t dircache_room(struct dircache *c);
/* The cached listing of directory path (hash: dirlist_hash(path)), or NULL. */
const struct dirlist *dircache_get(struct dircache *c, const char *path, uint64_t hash);
/* Hand l to the cache: true when taken (the cache frees it), false when
 * the directory is listed already or l does not fit (the caller frees it). */
bool dircache_put(struct dircache *c, struct dirlist *l);

uint64_t dirlist_hash(const char *path);
/* May a directory, as fstat saw it before its listing, be listed: changed
 * long enough ago that any later change gives it a newer ctime. */
bool dirlist_quiet(const struct stat *st);
/* rec from the directory's fstat before its listing (rec->di left NULL). */
void dirlist_rec_from(struct dirlist_rec *rec, const struct stat *st);
/*
 * List the directory open as fd (getdents64 from its start): regular
 * files only and, when only is not NULL, only the names it holds (a
 * listing for one window's files).  NULL when out of memory, on a listing
 * error, or when the listing would take more than max_bytes (the fd's
 * offset is then left anywhere: rewind it before listing again).
 */
struct dirlist *dirlist_make(int fd, const char *path, const struct dirlist_rec *rec, size_t max_bytes,
			     const struct dirlist *only);

/* A listing made from entries read elsewhere (the tree walk's readdir):
 * begin, add each regular file, end (NULL when out of memory or past
 * max_bytes, as any add made l NULL). */
struct dirlist_builder {
	struct dirlist *l;
	uint32_t cap;              /* l's inos and name_off */
	size_t names_cap, used;    /* l's names */
	size_t max_bytes;
};
void dirlist_begin(struct dirlist_builder *b, const char *path, const struct dirlist_rec *rec, size_t max_bytes);
void dirlist_add(struct dirlist_builder *b, const char *name, uint64_t ino);
struct dirlist *dirlist_end(struct dirlist_builder *b);
void dirlist_free(struct dirlist *l);
/* The inode number name was listed with, or 0 when it was not listed as a
 * regular file. */
uint64_t dirlist_find(const struct dirlist *l, const char *name);

#endif

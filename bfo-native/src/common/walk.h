/* SPDX-License-Identifier: Apache-2.0 */
/* A parallel directory walk, the library's own (the copier) and behind
 * bfo_walk_* (treewalk.c): regular files of a tree, handed out in batches
 * sorted by inode number. */
#ifndef BFO_WALK_H
#define BFO_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct walk_file {
	ino_t ino;
	unsigned char type;     /* DT_REG, or with WALK_ALL any DT_* */
	char *path;
	struct stat *st;        /* WALK_ALL directories: lstat taken before the
				   walk read them (their atime unchanged) */
};

/* walk_start flags */
#define WALK_SORT     (1u << 0) /* batches sorted by inode */
#define WALK_NOFOLLOW (1u << 1) /* symbolic links are skipped, not followed */
#define WALK_ALL      (1u << 2) /* every entry, directories included, links
				   as links (for copies): nothing is skipped */
#define WALK_LISTS    (1u << 3) /* keep each directory's listing (dirlist.h)
				   for walk_take_lists, up to WALK_LISTS_BYTES */
#define WALK_QUICK    (1u << 4) /* the first batch is handed out at an eighth
				   of batch_cap: a caller with a pipeline of
				   its own starts it sooner */

struct walk;

/*
 * Start walking root with nthreads threads.  Files are collected into a
 * buffer of batch_cap entries (the walk pauses while both of its two
 * buffers are full); batches are sorted by inode with WALK_SORT.  Without
 * WALK_ALL, symbolic links are returned (as regular files) when they point
 * at a regular file and WALK_NOFOLLOW is not given; special files, links to
 * directories and dangling links are skipped and counted.  With WALK_ALL
 * every entry below root is returned with its own type.
 */
struct walk *walk_start(const char *root, unsigned nthreads, size_t batch_cap, unsigned flags);

/*
 * walk_start, with skip(arg, path, dir) asked (on the walk's threads, so
 * it must be safe to call from several at once) about each entry found:
 * true leaves it out, and a directory is then not entered.
 */
struct walk *walk_start_skip(const char *root, unsigned nthreads, size_t batch_cap, unsigned flags,
			     bool (*skip)(void *arg, const char *path, bool dir), void *arg);

/*
 * The next batch: stores its files in *files and returns their number, 0
 * when the walk is over.  The batch (paths included) stays valid until the
 * next call.
 */
size_t walk_next(struct walk *w, struct walk_file **files);

/* Directories that could not be read are kept (up to this many at a time,
 * the rest only counted in walk_end's errors) for the caller to name. */
#define WALK_MAX_FAILURES 1024

/* The listings made so far (WALK_LISTS), as a list the caller owns (through
 * their next pointers; dirlist_free each), or NULL. */
struct dirlist *walk_take_lists(struct walk *w);

/*
 * Take the oldest directory the walk could not read: stores its path (the
 * caller frees it) and -errno; false when there is none (now).
 */
bool walk_failure(struct walk *w, char **path, int *status);

/* Entries skipped so far (special files, links to directories...), and
 * failures not taken with walk_failure() (kept, or beyond the bound). */
void walk_counts(struct walk *w, uint64_t *skipped, uint64_t *untaken);

/* Stop the threads, free everything; report skipped entries and the
 * errors not taken with walk_failure() (call it first). */
void walk_end(struct walk *w, uint64_t *skipped, uint64_t *errors);

#endif

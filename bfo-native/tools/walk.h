/* SPDX-License-Identifier: Apache-2.0 */
/* A parallel directory walk for the bfo command: regular files of a tree,
 * handed out in batches sorted by inode number. */
#ifndef BFO_WALK_H
#define BFO_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct walk_file {
	ino_t ino;
	char *path;
};

struct walk;

/*
 * Start walking root with nthreads threads.  Files are collected into a
 * buffer of batch_cap entries (the walk pauses while both of its two
 * buffers are full); batches are sorted by inode before they are handed
 * out, unless sort is false.  Symbolic links are returned when they point
 * at a regular file and nofollow is false; special files, links to
 * directories and dangling links are skipped and counted.
 */
struct walk *walk_start(const char *root, unsigned nthreads, size_t batch_cap, bool sort,
			bool nofollow);

/*
 * The next batch: stores its files in *files and returns their number, 0
 * when the walk is over.  The batch (paths included) stays valid until the
 * next call.
 */
size_t walk_next(struct walk *w, struct walk_file **files);

/* Stop the threads, free everything; report skipped entries and errors. */
void walk_end(struct walk *w, uint64_t *skipped, uint64_t *errors);

#endif

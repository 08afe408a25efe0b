/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The input streams of bfo write, parsed into writer entries without
 * touching the destination, so that the parsers run alone under a fuzzer
 * (fuzz/) as well as in the command.
 *
 * Every number and length read from a stream is checked against the
 * limits below before it is used; a stream that breaks one is refused
 * with its reason in st->err.  Whatever comes from the stream is hostile.
 */
#ifndef BFO_STREAM_H
#define BFO_STREAM_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bfo.h"

struct archive;

/* A file's SIZE: the largest off_t (a larger file cannot exist). */
#define STREAM_SIZE_MAX ((uint64_t)INT64_MAX)
/* A symbolic link's target: what symlink(2) takes, without its NUL. */
#define STREAM_TARGET_MAX (PATH_MAX - 1)
/* A PATH: what the writer takes (wpath_check), without its NUL. */
#define STREAM_PATH_MAX (BFO_WPATH_MAX - 1)
/* Files larger than this are handed on in pieces (bounded memory). */
#define STREAM_PIECE (16ull << 20)

struct stream {
	/*
	 * Takes one entry whose path and data (malloc'd, NUL-terminated for
	 * links) now belong to it; returns 0, or < 0 to stop the stream.
	 * Entries are handed on only once read whole: a record the stream
	 * ends inside gives nothing, except pieces of a large file before
	 * its last (BFO_WENTRY_MORE), which the writer drops at close.
	 */
	int (*entry)(void *ctx, struct bfo_wentry *e);
	void *ctx;
	bool owner;             /* tar: apply owners (BFO_WENTRY_OWNER) */
	FILE *warn;             /* skipped tar entries named here; NULL: silent */
	uint64_t line;          /* simple format: line of the current record */
	char err[512];          /* why the stream was refused */
};

/* Both return 0 at the stream's end, or -1 with st->err set (or what
 * st->entry returned, err then empty). */
int stream_simple(struct stream *st, FILE *in);
int stream_tar(struct stream *st, struct archive *a);

/* A reader of the archive formats bfo write --tar takes, not yet opened;
 * NULL when out of memory or libarchive cannot be loaded (archive_lib.h).  compressed: and the compressions it takes
 * (the fuzzers leave them out: a bomb of a few bytes would only time
 * them out in zlib's code, not ours). */
struct archive *stream_tar_reader(bool compressed);

#endif

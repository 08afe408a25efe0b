/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every fuzz target of a stream parser checks of the entries it
 * produces (fuzz_simple.c, fuzz_tar.c): each within the limits stream.h
 * promises, its bytes all readable (ASan sees an overrun), the pieces of
 * a file in order, and no file left unfinished by a stream that ended
 * well.  A broken promise aborts: libFuzzer reports it as a crash.
 */
#ifndef BFO_FUZZ_ENTRY_H
#define BFO_FUZZ_ENTRY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Bytes handed on per input before the sink stops the stream: a sparse
 * member may declare terabytes that take no input bytes. */
#define FUZZ_BYTES_MAX (64ull << 20)

struct fuzz_sink {
	char *open_path;        /* the file whose last piece is due, or NULL */
	uint64_t next_off;
	uint64_t bytes;
};

#define FUZZ_REQUIRE(cond) \
	do { if (!(cond)) { fprintf(stderr, "fuzz: broken: %s\n", #cond); abort(); } } while (0)

static void fuzz_piece(struct fuzz_sink *s, const struct bfo_wentry *e)
{
	FUZZ_REQUIRE(e->length <= STREAM_PIECE && e->data);
	FUZZ_REQUIRE(e->offset <= STREAM_SIZE_MAX - e->length);
	if (s->open_path) {
		FUZZ_REQUIRE(!strcmp(s->open_path, e->path) && e->offset == s->next_off);
	} else {
		FUZZ_REQUIRE(e->offset == 0);
	}
	/* Its last byte: ASan sees a buffer shorter than length. */
	if (e->length)
		(void)((const volatile uint8_t *)e->data)[e->length - 1];
	free(s->open_path);
	s->open_path = NULL;
	if (e->flags & BFO_WENTRY_MORE) {
		FUZZ_REQUIRE(e->length == STREAM_PIECE);
		s->open_path = strdup(e->path);
		s->next_off = e->offset + e->length;
	}
	s->bytes += e->length;
}

static int fuzz_entry(void *ctx, struct bfo_wentry *e)
{
	struct fuzz_sink *s = ctx;
	size_t pl;

	FUZZ_REQUIRE(e->path);
	pl = strlen(e->path);
	FUZZ_REQUIRE(pl >= 1 && pl <= STREAM_PATH_MAX);
	FUZZ_REQUIRE(e->mode <= 07777 && e->mtime_nsec < 1000000000u && e->atime_nsec < 1000000000u);
	FUZZ_REQUIRE(!s->open_path || e->type == BFO_WTYPE_FILE);
	switch (e->type) {
	case BFO_WTYPE_FILE:
		fuzz_piece(s, e);
		break;
	case BFO_WTYPE_SYMLINK:
	case BFO_WTYPE_HARDLINK: {
		size_t tl;

		FUZZ_REQUIRE(e->data);
		tl = strlen(e->data);
		FUZZ_REQUIRE(tl >= 1 && tl <= (e->type == BFO_WTYPE_SYMLINK ? (size_t)STREAM_TARGET_MAX
									     : (size_t)STREAM_PATH_MAX));
		break;
	}
	case BFO_WTYPE_DIR:
	case BFO_WTYPE_FIFO:
	case BFO_WTYPE_CHR:
	case BFO_WTYPE_BLK:
		FUZZ_REQUIRE(!e->data);
		break;
	default:
		FUZZ_REQUIRE(!"an entry type the writer does not know");
	}
	free((void *)e->path);
	free((void *)e->data);
	return s->bytes > FUZZ_BYTES_MAX ? -1 : 0;
}

/* After the stream: its verdict is consistent with what it handed on. */
static void fuzz_end(struct fuzz_sink *s, const struct stream *st, int ret)
{
	if (ret == 0) {
		FUZZ_REQUIRE(!st->err[0] && !s->open_path);
	} else {
		FUZZ_REQUIRE(ret < 0 && (st->err[0] || s->bytes > FUZZ_BYTES_MAX));
		FUZZ_REQUIRE(memchr(st->err, '\0', sizeof(st->err)));
	}
	free(s->open_path);
	s->open_path = NULL;
}

#endif

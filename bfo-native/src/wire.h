/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stream of bfo send and bfo recv (bfo_copier_send/recv): its layout,
 * its limits, and a parser that checks every field against them.  The
 * parser reads memory only, so it runs alone under a fuzzer; the receiver
 * treats whatever comes from the stream as hostile.  README.md describes
 * the format for other implementations.
 *
 * A stream: START (magic, version, flags), one SOURCES frame, BATCH frames,
 * one END frame.  A frame: a 32-byte head, meta_len bytes of records, the
 * xxh3-64 of head and records, then data_len bytes of file data in the
 * order of the records.  All numbers little-endian.
 */
#ifndef BFO_WIRE_H
#define BFO_WIRE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bfo.h"

#define WIRE_MAGIC "\x89" "BFO\r\n\x1a\n"     /* 8 bytes: a text or 7-bit transport mangles it */
#define WIRE_VERSION 1u
#define WIRE_START_LEN 16u                   /* magic, u32 version, u32 flags */
#define WIRE_F_ARCHIVE 1u                    /* sent by bfo send -a: xattrs included */

#define WIRE_FRAME_MAGIC 0x4d524642u         /* "BFRM" */
#define WIRE_HEAD_LEN 32u
#define WIRE_HASH_LEN 8u
#define WIRE_ENTRY_LEN 96u                   /* a BATCH record before its strings */
#define WIRE_SOURCE_LEN 4u                   /* a SOURCES record before its name */
#define WIRE_END_LEN 40u

enum wire_kind { WIRE_SOURCES = 1, WIRE_BATCH = 2, WIRE_END = 3 };

/* Limits: what a receiver allocates for one frame is bounded by these,
 * whatever the stream says.  A sender splits what would exceed them. */
#define WIRE_META_MAX (32u << 20)
#define WIRE_DATA_MAX (64u << 20)
#define WIRE_ENTRIES_MAX 65536u
#define WIRE_SOURCES_MAX 65535u
#define WIRE_NAME_MAX 255u                   /* a source's name: one component */
#define WIRE_PATH_MAX (BFO_WPATH_MAX - 1)
#define WIRE_TARGET_MAX (PATH_MAX - 1)       /* a symbolic link's target */
#define WIRE_XATTRS_MAX (1u << 20)           /* one entry's packed xattrs */
#define WIRE_PIECED_MAX 1024u                /* files in pieces begun and not ended */

/* wire_entry.flags */
#define WIRE_E_MORE  1u                      /* BFO_WENTRY_MORE */
#define WIRE_E_ABORT 2u                      /* BFO_WENTRY_ABORT */

struct wire_frame {
	uint32_t kind, count;
	uint64_t meta_len, data_len;
};

struct wire_source {
	bool dir;
	const char *name;           /* not NUL-terminated; "" for SRC/. */
	uint32_t name_len;
};

/* One BATCH record; strings point into the frame, not NUL-terminated. */
struct wire_entry {
	uint32_t type;              /* enum bfo_wtype */
	uint32_t flags;             /* WIRE_E_* */
	uint32_t mode;              /* the source's, 07777 */
	uint32_t uid, gid;
	uint16_t src;               /* source number; the path is below it */
	uint16_t target_src;        /* HARDLINK: the target's source */
	int64_t atime_sec, mtime_sec;
	uint32_t atime_nsec, mtime_nsec;
	uint64_t rdev, offset, length, size, hash;
	const char *path;           /* below the source; "" is the source itself */
	uint32_t path_len;
	const char *target;         /* SYMLINK target; HARDLINK path below target_src */
	uint32_t target_len;
	const uint8_t *xattrs;      /* bfo_wentry's packing, lengths little-endian */
	uint32_t xattrs_len;
	const uint8_t *data;        /* FILE: length bytes in the frame's data */
	bool hash_ok;               /* FILE: data matches hash */
};

struct wire_end {
	uint64_t files, bytes, others, errors, entries;
};

/* Parsers: 0, or -EBADMSG with *why saying what is wrong. */
int wire_start_parse(const uint8_t *b, uint32_t *flags, const char **why);
int wire_head_parse(const uint8_t *b, struct wire_frame *f, const char **why);
/* meta: the frame's meta_len record bytes (its hash already checked). */
int wire_sources_parse(const uint8_t *meta, const struct wire_frame *f,
		       struct wire_source *out, const char **why);
int wire_entries_parse(const uint8_t *meta, const uint8_t *data, const struct wire_frame *f,
		       uint32_t nsources, struct wire_entry *out, const char **why);
int wire_end_parse(const uint8_t *meta, const struct wire_frame *f, struct wire_end *end,
		   const char **why);
uint64_t wire_hash(const void *p, size_t n);
/* The hash of a frame's head and records, as stored after them. */
uint64_t wire_meta_hash(const uint8_t *head, const uint8_t *meta, size_t meta_len);

/* Encoders: each returns the bytes it stored at p. */
size_t wire_start_put(uint8_t *p, uint32_t flags);
size_t wire_head_put(uint8_t *p, uint32_t kind, uint32_t count, uint64_t meta_len,
		     uint64_t data_len);
size_t wire_entry_len(const struct wire_entry *e);
size_t wire_entry_put(uint8_t *p, const struct wire_entry *e);
size_t wire_source_put(uint8_t *p, const struct wire_source *s);
size_t wire_end_put(uint8_t *p, const struct wire_end *end);
void wire_put64(uint8_t *p, uint64_t v);

#endif

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
 *
 * Version 2 adds the file list: with WIRE_F_LIST the receiver answers on
 * a back channel (its own START, then HELLO: whether it wants the list),
 * the sender sends LIST frames (compact records: what it has) before the
 * data, the receiver answers each with a WANT frame (a byte per record),
 * and only what is wanted comes in BATCH frames; after END the receiver
 * sends ITEMS (what it deleted, when asked) and RESULT.  WIRE_F_ZSTD: what
 * follows START is one zstd stream, flushed at each frame's end.  A
 * receiver reads versions 1 and 2.
 */
#ifndef BFO_WIRE_H
#define BFO_WIRE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bfo.h"

#define WIRE_MAGIC "\x89" "BFO\r\n\x1a\n"     /* 8 bytes: a text or 7-bit transport mangles it */
#define WIRE_VERSION 2u
#define WIRE_VERSION_MIN 1u                  /* the oldest a receiver reads */
#define WIRE_START_LEN 16u                   /* magic, u32 version, u32 flags */
#define WIRE_F_ARCHIVE 1u                    /* sent by bfo send -a: xattrs included */
#define WIRE_F_LIST 2u                       /* the sender waits for HELLO (version 2) */
#define WIRE_F_ZSTD 4u                       /* the rest of the stream is zstd (version 2) */
#define WIRE_F_CHECKSUM 8u                   /* list records carry their files' hashes */
#define WIRE_F_ITEMS 16u                     /* the receiver names what it deletes (ITEMS) */
#define WIRE_F_ALL 31u

#define WIRE_FRAME_MAGIC 0x4d524642u         /* "BFRM" */
#define WIRE_HEAD_LEN 32u
#define WIRE_HASH_LEN 8u
#define WIRE_ENTRY_LEN 96u                   /* a BATCH record before its strings */
#define WIRE_SOURCE_LEN 4u                   /* a SOURCES record before its name */
#define WIRE_END_LEN 40u

enum wire_kind {
	WIRE_SOURCES = 1, WIRE_BATCH = 2, WIRE_END = 3, WIRE_LIST = 4,
	/* the back channel, receiver to sender */
	WIRE_HELLO = 16, WIRE_WANT = 17, WIRE_ITEMS = 18, WIRE_RESULT = 19,
};

#define WIRE_HELLO_LEN 8u                    /* u32 flags (WIRE_H_*), u32 0 */
#define WIRE_H_LIST 1u                       /* send the list: there is something to compare */
#define WIRE_RESULT_LEN 32u                  /* u64 files written, skipped, deleted, errors */

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

/* A LIST record (wire_list.c); strings point into the frame. */
struct wire_lent {
	uint32_t type;              /* enum bfo_wtype (HARDLINK: a later member of a group) */
	uint32_t mode;              /* 07777 */
	uint32_t uid, gid;
	int64_t mtime_sec, atime_sec;   /* atime: directories only (their times are put back) */
	uint32_t mtime_nsec, atime_nsec;
	uint64_t size, rdev, hash, xhash;
	const char *path;           /* below the source (decoded: NUL-terminated) */
	uint32_t path_len;
	const char *target;         /* SYMLINK: the target; HARDLINK: its first member's path */
	uint32_t target_len;
	uint16_t link_src;          /* HARDLINK: the first member's source */
};

/* The decoder's state over one LIST frame: names share prefixes with the
 * previous record's. */
struct wire_ldec {
	const uint8_t *p, *end;
	uint32_t left, nsources;
	uint16_t src;
	bool checksum;
	struct wire_lent prev;      /* for the fields a record leaves out */
	bool first;
	char name[2][WIRE_PATH_MAX + 1];  /* this record's name and the previous one's */
	unsigned cur;
};

/* Parsers: 0, or -EBADMSG with *why saying what is wrong. */
int wire_start_parse(const uint8_t *b, uint32_t *flags, const char **why);
/* ... of a stream of version *version (1 or 2). */
int wire_start_parse_v(const uint8_t *b, uint32_t *version, uint32_t *flags, const char **why);
/* LIST: the frame's meta (its hash checked) into d; then its records one
 * at a time into e (a record's fields each bounded, its path relative and
 * below its source). */
int wire_list_begin(struct wire_ldec *d, const uint8_t *meta, const struct wire_frame *f,
		    uint32_t nsources, bool checksum, const char **why);
int wire_list_next(struct wire_ldec *d, struct wire_lent *e, const char **why);
int wire_hello_parse(const uint8_t *meta, const struct wire_frame *f, uint32_t *flags,
		     const char **why);
/* A WANT frame's records (len bytes): the wants of its n list records, most
 * of them WANT_SKIP, as runs (varint records skipped, then a want byte). */
int wire_wants_parse(const uint8_t *meta, size_t len, uint8_t *wants, uint32_t n, const char **why);
int wire_head_parse(const uint8_t *b, struct wire_frame *f, const char **why);
/* meta: the frame's meta_len record bytes (its hash already checked). */
int wire_sources_parse(const uint8_t *meta, const struct wire_frame *f,
		       struct wire_source *out, const char **why);
int wire_entries_parse(const uint8_t *meta, const uint8_t *data, const struct wire_frame *f,
		       uint32_t nsources, struct wire_entry *out, const char **why);
int wire_end_parse(const uint8_t *meta, const struct wire_frame *f, struct wire_end *end,
		   const char **why);
uint64_t wire_hash(const void *p, size_t n);
/* A path below a source: no NUL, no empty, "." or ".." component, no
 * leading or trailing '/'; "" (the source itself) is one. */
bool wire_rel_ok(const char *p, uint32_t len);
/* The hash of a frame's head and records, as stored after them. */
uint64_t wire_meta_hash(const uint8_t *head, const uint8_t *meta, size_t meta_len);

/* Encoders: each returns the bytes it stored at p. */
size_t wire_start_put(uint8_t *p, uint32_t flags);
/* A LIST record: at most WIRE_LENT_MAX bytes; prev (the frame's previous
 * record, or NULL for the first) lets it leave out what repeats. */
#define WIRE_LENT_MAX (2 * WIRE_PATH_MAX + 128u)
size_t wire_lent_put(uint8_t *p, const struct wire_lent *e, const struct wire_lent *prev,
		     bool checksum);
/* A WANT frame's records for wants[0..n): at most 11 bytes a want. */
size_t wire_wants_put(uint8_t *p, const uint8_t *wants, uint32_t n);
size_t wire_head_put(uint8_t *p, uint32_t kind, uint32_t count, uint64_t meta_len,
		     uint64_t data_len);
size_t wire_entry_len(const struct wire_entry *e);
size_t wire_entry_put(uint8_t *p, const struct wire_entry *e);
size_t wire_source_put(uint8_t *p, const struct wire_source *s);
size_t wire_end_put(uint8_t *p, const struct wire_end *end);
void wire_put64(uint8_t *p, uint64_t v);

#endif

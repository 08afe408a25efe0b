/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The send/recv stream (wire.h): encoding, and parsing that bounds and
 * checks every field before anything is used.  Memory only; no I/O.
 */
#include <errno.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "wire.h"
#include "bfo.h"

_Static_assert(WIRE_VERSION == BFO_STREAM_VERSION, "bfo.h names the stream version wire.h writes");

#define BAD(msg) (*why = (msg), -EBADMSG)

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

void wire_put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

uint64_t wire_hash(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

uint64_t wire_meta_hash(const uint8_t *head, const uint8_t *meta, size_t meta_len)
{
	XXH3_state_t s;

	XXH3_64bits_reset(&s);
	XXH3_64bits_update(&s, head, WIRE_HEAD_LEN);
	XXH3_64bits_update(&s, meta, meta_len);
	return XXH3_64bits_digest(&s);
}

/* ------------------------------------------------------------ parsing */

int wire_start_parse_v(const uint8_t *b, uint32_t *version, uint32_t *flags, const char **why)
{
	uint32_t v;

	if (memcmp(b, WIRE_MAGIC, 8))
		return BAD("not a bfo stream (no bfo send at the other end?)");
	v = get32(b + 8);
	if (v > WIRE_VERSION || v < WIRE_VERSION_MIN) {
		*why = v > WIRE_VERSION ? "the sender's bfo is newer: its stream version is not one this bfo reads" :
					   "the sender's bfo is older: its stream version is not one this bfo reads";
		return -EPROTONOSUPPORT;
	}
	*version = v;
	*flags = get32(b + 12);
	if (*flags & ~(v == 1 ? WIRE_F_ARCHIVE : WIRE_F_ALL))
		return BAD("unknown stream flags");
	return 0;
}

int wire_start_parse(const uint8_t *b, uint32_t *flags, const char **why)
{
	uint32_t v;

	return wire_start_parse_v(b, &v, flags, why);
}

int wire_head_parse(const uint8_t *b, struct wire_frame *f, const char **why)
{
	if (get32(b) != WIRE_FRAME_MAGIC)
		return BAD("frame does not start with its magic");
	f->kind = get32(b + 4);
	f->count = get32(b + 8);
	f->meta_len = get64(b + 16);
	f->data_len = get64(b + 24);
	if (get32(b + 12))
		return BAD("frame head has reserved bits set");
	if ((f->kind < WIRE_SOURCES || f->kind > WIRE_LIST) &&
	    (f->kind < WIRE_HELLO || f->kind > WIRE_RESULT))
		return BAD("unknown frame kind");
	if (f->meta_len > WIRE_META_MAX || f->data_len > WIRE_DATA_MAX)
		return BAD("frame larger than the stream's limits");
	if (f->kind == WIRE_BATCH && (f->count > WIRE_ENTRIES_MAX ||
				      f->meta_len < (uint64_t)f->count * WIRE_ENTRY_LEN))
		return BAD("batch frame with too many records for its size");
	if (f->kind == WIRE_SOURCES && (f->count > WIRE_SOURCES_MAX || f->data_len ||
					f->meta_len < (uint64_t)f->count * WIRE_SOURCE_LEN))
		return BAD("bad sources frame");
	if (f->kind == WIRE_END && (f->count || f->data_len || f->meta_len != WIRE_END_LEN))
		return BAD("bad end frame");
	/* (a list record takes at least 5 bytes) */
	if (f->kind == WIRE_LIST && (f->count > WIRE_ENTRIES_MAX || f->data_len ||
				     f->meta_len < 4 + (uint64_t)f->count * 5))
		return BAD("bad list frame");
	if (f->kind == WIRE_HELLO && (f->count || f->data_len || f->meta_len != WIRE_HELLO_LEN))
		return BAD("bad hello frame");
	if (f->kind == WIRE_WANT && (f->count > WIRE_ENTRIES_MAX || f->data_len ||
				     f->meta_len > 11 * (uint64_t)f->count))
		return BAD("bad want frame");
	if (f->kind == WIRE_ITEMS && (f->count > WIRE_ENTRIES_MAX || f->data_len))
		return BAD("bad items frame");
	if (f->kind == WIRE_RESULT && (f->count || f->data_len || f->meta_len != WIRE_RESULT_LEN))
		return BAD("bad result frame");
	return 0;
}

/* A path below a source: no NUL, no empty, "." or ".." component, no
 * leading or trailing '/'.  "" (the source itself) is one. */
bool wire_rel_ok(const char *p, uint32_t len)
{
	uint32_t start = 0;

	if (!len)
		return true;
	if (memchr(p, '\0', len))
		return false;
	for (uint32_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		uint32_t cl = i - start;

		if (cl == 0 || (cl == 1 && p[start] == '.') ||
		    (cl == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

/* Packed xattrs: name (1 to 255 bytes) NUL, u32 length (at most 64 KiB,
 * Linux's largest value), value; back to back, nothing after. */
static bool xattrs_ok(const uint8_t *x, uint32_t len)
{
	uint32_t i = 0;

	while (i < len) {
		const uint8_t *nul = memchr(x + i, '\0', len - i);
		uint32_t nl, vl;

		if (!nul)
			return false;
		nl = (uint32_t)(nul - (x + i));
		if (nl == 0 || nl > 255 || len - i - nl - 1 < 4)
			return false;
		i += nl + 1;
		vl = get32(x + i);
		i += 4;
		if (vl > 65536 || vl > len - i)
			return false;
		i += vl;
	}
	return true;
}

int wire_sources_parse(const uint8_t *meta, const struct wire_frame *f,
		       struct wire_source *out, const char **why)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < f->count; i++) {
		struct wire_source *s = &out[i];
		uint8_t kind;

		if (f->meta_len - at < WIRE_SOURCE_LEN)
			return BAD("sources frame ends inside a record");
		kind = meta[at];
		s->name_len = get16(meta + at + 2);
		s->name = (const char *)meta + at + WIRE_SOURCE_LEN;
		at += WIRE_SOURCE_LEN;
		if ((kind != 1 && kind != 2) || meta[at - 3])
			return BAD("source of unknown kind");
		s->dir = kind == 1;
		if (s->name_len > WIRE_NAME_MAX || s->name_len > f->meta_len - at)
			return BAD("source name too long");
		if (memchr(s->name, '/', s->name_len) || !wire_rel_ok(s->name, s->name_len) ||
		    (!s->name_len && !s->dir))
			return BAD("source name is not one file name");
		at += s->name_len;
	}
	if (at != f->meta_len)
		return BAD("sources frame has bytes after its records");
	return 0;
}

/* The fixed fields of the record at r. */
static void entry_fixed(const uint8_t *r, struct wire_entry *e)
{
	e->type = r[0];
	e->flags = r[1];
	e->src = get16(r + 2);
	e->mode = get32(r + 4);
	e->uid = get32(r + 8);
	e->gid = get32(r + 12);
	e->atime_nsec = get32(r + 16);
	e->mtime_nsec = get32(r + 20);
	e->atime_sec = (int64_t)get64(r + 24);
	e->mtime_sec = (int64_t)get64(r + 32);
	e->rdev = get64(r + 40);
	e->offset = get64(r + 48);
	e->length = get64(r + 56);
	e->size = get64(r + 64);
	e->hash = get64(r + 72);
	e->path_len = get32(r + 80);
	e->target_len = get32(r + 84);
	e->target_src = get16(r + 88);
	e->xattrs_len = get32(r + 92);
}

/* The fields of e that do not depend on the frame: NULL or the reason. */
static const char *entry_check(const struct wire_entry *e, uint32_t nsources, uint16_t reserved)
{
	bool file = e->type == BFO_WTYPE_FILE;

	if (e->type > BFO_WTYPE_SOCK || reserved)
		return "record of unknown type";
	if (e->flags & ~(WIRE_E_MORE | WIRE_E_ABORT) || (!file && e->flags) ||
	    (e->flags == (WIRE_E_MORE | WIRE_E_ABORT)))
		return "record with bad flags";
	if (e->mode > 07777 || e->atime_nsec >= 1000000000u || e->mtime_nsec >= 1000000000u)
		return "record with a bad mode or time";
	if (e->src >= nsources)
		return "record of a source the stream did not name";
	if (e->size > (uint64_t)INT64_MAX || e->offset > e->size || e->length > e->size - e->offset)
		return "record with a bad size";
	if (!file && (e->size || e->offset || e->length || e->hash))
		return "data on a record that is not a file";
	if ((e->flags & WIRE_E_ABORT) && e->length)
		return "abort record with data";
	if (!(e->flags & WIRE_E_MORE) && !(e->flags & WIRE_E_ABORT) && file &&
	    e->offset + e->length != e->size)
		return "file record ends before its size";
	if (e->rdev && e->type != BFO_WTYPE_CHR && e->type != BFO_WTYPE_BLK)
		return "device number on a record that is not a device";
	if (e->path_len > WIRE_PATH_MAX || e->xattrs_len > WIRE_XATTRS_MAX)
		return "record path or xattrs too long";
	if (e->type == BFO_WTYPE_SYMLINK ? (!e->target_len || e->target_len > WIRE_TARGET_MAX) :
	    e->type == BFO_WTYPE_HARDLINK ? e->target_len > WIRE_PATH_MAX : e->target_len)
		return "record with a bad link target";
	if (e->type == BFO_WTYPE_HARDLINK ? e->target_src >= nsources : e->target_src)
		return "hard link to a source the stream did not name";
	return NULL;
}

int wire_entries_parse(const uint8_t *meta, const uint8_t *data, const struct wire_frame *f,
		       uint32_t nsources, struct wire_entry *out, const char **why)
{
	uint64_t at = 0, dat = 0;

	for (uint32_t i = 0; i < f->count; i++) {
		struct wire_entry *e = &out[i];
		const uint8_t *r = meta + at;
		const char *bad;

		if (f->meta_len - at < WIRE_ENTRY_LEN)
			return BAD("batch frame ends inside a record");
		entry_fixed(r, e);
		if ((bad = entry_check(e, nsources, get16(r + 90))))
			return BAD(bad);
		at += WIRE_ENTRY_LEN;
		if ((uint64_t)e->path_len + e->target_len + e->xattrs_len > f->meta_len - at)
			return BAD("record's strings run past its frame");
		e->path = (const char *)meta + at;
		e->target = e->path + e->path_len;
		e->xattrs = (const uint8_t *)e->target + e->target_len;
		at += (uint64_t)e->path_len + e->target_len + e->xattrs_len;
		if (!wire_rel_ok(e->path, e->path_len))
			return BAD("record path is not a relative path below its source");
		if (e->type == BFO_WTYPE_HARDLINK && !wire_rel_ok(e->target, e->target_len))
			return BAD("hard link target is not a path below its source");
		if (e->type == BFO_WTYPE_SYMLINK && memchr(e->target, '\0', e->target_len))
			return BAD("symbolic link target holds a NUL");
		if (!xattrs_ok(e->xattrs, e->xattrs_len))
			return BAD("record with malformed xattrs");
		if (e->length > f->data_len - dat)
			return BAD("file data runs past its frame");
		e->data = data + dat;
		dat += e->length;
		e->hash_ok = e->type != BFO_WTYPE_FILE || wire_hash(e->data, e->length) == e->hash;
	}
	if (at != f->meta_len || dat != f->data_len)
		return BAD("batch frame has bytes after its records");
	return 0;
}

int wire_end_parse(const uint8_t *meta, const struct wire_frame *f, struct wire_end *end,
		   const char **why)
{
	if (f->meta_len != WIRE_END_LEN)
		return BAD("bad end frame");
	end->files = get64(meta);
	end->bytes = get64(meta + 8);
	end->others = get64(meta + 16);
	end->errors = get64(meta + 24);
	end->entries = get64(meta + 32);
	return 0;
}

/* ------------------------------------------------------------ encoding */

size_t wire_start_put(uint8_t *p, uint32_t flags)
{
	memcpy(p, WIRE_MAGIC, 8);
	put32(p + 8, WIRE_VERSION);
	put32(p + 12, flags);
	return WIRE_START_LEN;
}

size_t wire_head_put(uint8_t *p, uint32_t kind, uint32_t count, uint64_t meta_len,
		     uint64_t data_len)
{
	put32(p, WIRE_FRAME_MAGIC);
	put32(p + 4, kind);
	put32(p + 8, count);
	put32(p + 12, 0);
	wire_put64(p + 16, meta_len);
	wire_put64(p + 24, data_len);
	return WIRE_HEAD_LEN;
}

size_t wire_entry_len(const struct wire_entry *e)
{
	return WIRE_ENTRY_LEN + (size_t)e->path_len + e->target_len + e->xattrs_len;
}

size_t wire_entry_put(uint8_t *p, const struct wire_entry *e)
{
	p[0] = (uint8_t)e->type;
	p[1] = (uint8_t)e->flags;
	put16(p + 2, e->src);
	put32(p + 4, e->mode);
	put32(p + 8, e->uid);
	put32(p + 12, e->gid);
	put32(p + 16, e->atime_nsec);
	put32(p + 20, e->mtime_nsec);
	wire_put64(p + 24, (uint64_t)e->atime_sec);
	wire_put64(p + 32, (uint64_t)e->mtime_sec);
	wire_put64(p + 40, e->rdev);
	wire_put64(p + 48, e->offset);
	wire_put64(p + 56, e->length);
	wire_put64(p + 64, e->size);
	wire_put64(p + 72, e->hash);
	put32(p + 80, e->path_len);
	put32(p + 84, e->target_len);
	put16(p + 88, e->target_src);
	put16(p + 90, 0);
	put32(p + 92, e->xattrs_len);
	p += WIRE_ENTRY_LEN;
	if (e->path_len)
		memcpy(p, e->path, e->path_len);
	if (e->target_len)
		memcpy(p + e->path_len, e->target, e->target_len);
	if (e->xattrs_len)
		memcpy(p + e->path_len + e->target_len, e->xattrs, e->xattrs_len);
	return wire_entry_len(e);
}

size_t wire_source_put(uint8_t *p, const struct wire_source *s)
{
	p[0] = s->dir ? 1 : 2;
	p[1] = 0;
	put16(p + 2, (uint16_t)s->name_len);
	if (s->name_len)
		memcpy(p + WIRE_SOURCE_LEN, s->name, s->name_len);
	return WIRE_SOURCE_LEN + s->name_len;
}

size_t wire_end_put(uint8_t *p, const struct wire_end *end)
{
	wire_put64(p, end->files);
	wire_put64(p + 8, end->bytes);
	wire_put64(p + 16, end->others);
	wire_put64(p + 24, end->errors);
	wire_put64(p + 32, end->entries);
	return WIRE_END_LEN;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The file list on the wire (version 2): LIST records, compact (names
 * share a prefix with the previous record's, mode, owner and mtime are left
 * out when they repeat, numbers are LEB128 varints), and the back
 * channel's small frames.  The decoder bounds every field before use,
 * as wire.c does for BATCH records.
 */
#include <errno.h>
#include <string.h>

#include "wire.h"

#define BAD(msg) (*why = (msg), -EBADMSG)

/* A record's first byte: its type (enum bfo_wtype) in the low 3 bits, and
 * what it holds where it does not repeat the record before it. */
#define L_TYPE  7u
#define L_MODE  8u
#define L_UID   16u
#define L_GID   32u
#define L_MTIME 64u             /* the mtime's seconds, as a difference from the previous one's */
#define L_SIZE  128u            /* a file's size (else the previous file's); a directory: its xattr digest */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* A varint at d->p: false when it runs past the frame or is longer than a
 * 64-bit number can be. */
static bool get_varint(struct wire_ldec *d, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (d->p >= d->end)
			return false;
		b = *d->p++;
		if (shift == 63 && b > 1)
			return false;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static void put64(uint8_t *p, uint64_t v)
{
	wire_put64(p, v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static bool has_size(uint32_t type)
{
	return type == BFO_WTYPE_FILE || type == BFO_WTYPE_HARDLINK;
}

size_t wire_lent_put(uint8_t *p, const struct wire_lent *e, const struct wire_lent *prev,
		     bool checksum)
{
	uint32_t flags = e->type, pre = 0;
	int64_t dt = e->mtime_sec - (prev ? prev->mtime_sec : 0);
	size_t n = 1;

	if (!prev || e->mode != prev->mode)
		flags |= L_MODE;
	if (!prev || e->uid != prev->uid)
		flags |= L_UID;
	if (!prev || e->gid != prev->gid)
		flags |= L_GID;
	if (!prev || dt)
		flags |= L_MTIME;
	if (has_size(e->type) ? !prev || e->size != prev->size : e->type == BFO_WTYPE_DIR && e->xhash)
		flags |= L_SIZE;
	while (prev && pre < prev->path_len && pre < e->path_len && prev->path[pre] == e->path[pre])
		pre++;
	p[0] = (uint8_t)flags;
	n += put_varint(p + n, pre);
	n += put_varint(p + n, e->path_len - pre);
	memcpy(p + n, e->path + pre, e->path_len - pre);
	n += e->path_len - pre;
	if (flags & L_MODE)
		n += put_varint(p + n, e->mode);
	if (flags & L_UID)
		n += put_varint(p + n, e->uid);
	if (flags & L_GID)
		n += put_varint(p + n, e->gid);
	if (flags & L_MTIME)     /* zigzag: small differences either way stay short */
		n += put_varint(p + n, ((uint64_t)dt << 1) ^ (uint64_t)(dt >> 63));
	n += put_varint(p + n, e->mtime_nsec);
	if (e->type == BFO_WTYPE_DIR) {
		n += put_varint(p + n, ((uint64_t)e->atime_sec << 1) ^ (uint64_t)(e->atime_sec >> 63));
		n += put_varint(p + n, e->atime_nsec);
	}
	if (has_size(e->type) && (flags & L_SIZE))
		n += put_varint(p + n, e->size);
	if (e->type == BFO_WTYPE_HARDLINK)
		n += put_varint(p + n, e->link_src);
	if (e->type == BFO_WTYPE_SYMLINK || e->type == BFO_WTYPE_HARDLINK) {
		n += put_varint(p + n, e->target_len);
		memcpy(p + n, e->target, e->target_len);
		n += e->target_len;
	}
	if (e->type == BFO_WTYPE_CHR || e->type == BFO_WTYPE_BLK)
		n += put_varint(p + n, e->rdev);
	if (checksum && has_size(e->type)) {
		put64(p + n, e->hash);
		n += 8;
	}
	if (e->type == BFO_WTYPE_DIR && (flags & L_SIZE)) {
		put64(p + n, e->xhash);
		n += 8;
	}
	return n;
}

int wire_list_begin(struct wire_ldec *d, const uint8_t *meta, const struct wire_frame *f,
		    uint32_t nsources, bool checksum, const char **why)
{
	if (f->meta_len < 4 || f->data_len)
		return BAD("list frame too short, or with data");
	d->src = (uint16_t)(meta[0] | meta[1] << 8);
	if (meta[2] || meta[3])
		return BAD("list frame with reserved bits set");
	if (d->src >= nsources)
		return BAD("list of a source the stream did not name");
	if (!f->count && f->meta_len != 4)
		return BAD("list frame has bytes after its records");
	d->p = meta + 4;
	d->end = meta + f->meta_len;
	d->left = f->count;
	d->nsources = nsources;
	d->checksum = checksum;
	d->first = true;
	d->cur = 0;
	d->prev.size = 0;
	d->prev.path = d->name[1];
	d->prev.path_len = 0;
	return 0;
}

/* The record's name: a prefix of the previous one's and its own bytes. */
static int get_path(struct wire_ldec *d, struct wire_lent *e, const char **why)
{
	uint64_t pre, suf;

	if (!get_varint(d, &pre) || !get_varint(d, &suf))
		return BAD("list record ends inside its name");
	if (pre > d->prev.path_len || suf > WIRE_PATH_MAX || pre + suf > WIRE_PATH_MAX)
		return BAD("list record name longer than the limits");
	if (suf > (uint64_t)(d->end - d->p))
		return BAD("list record name runs past its frame");
	char *name = d->name[d->cur];

	memcpy(name, d->prev.path, pre);
	memcpy(name + pre, d->p, suf);
	d->p += suf;
	e->path = name;
	e->path_len = (uint32_t)(pre + suf);
	name[e->path_len] = '\0';
	if (!wire_rel_ok(e->path, e->path_len))
		return BAD("list record name is not a relative path below its source");
	return 0;
}

/* The numbers a record may leave out (as the previous record's). */
static int get_meta(struct wire_ldec *d, struct wire_lent *e, uint32_t flags, const char **why)
{
	uint64_t v;

	if ((flags & L_MODE) && (!get_varint(d, &v) || v > 07777))
		return BAD("list record with a bad mode");
	if (flags & L_MODE)
		e->mode = (uint32_t)v;
	if ((flags & L_UID) && (!get_varint(d, &v) || v > UINT32_MAX))
		return BAD("list record with a bad owner");
	if (flags & L_UID)
		e->uid = (uint32_t)v;
	if ((flags & L_GID) && (!get_varint(d, &v) || v > UINT32_MAX))
		return BAD("list record with a bad group");
	if (flags & L_GID)
		e->gid = (uint32_t)v;
	if ((flags & L_MTIME) && !get_varint(d, &v))
		return BAD("list record with a bad time");
	/* (wrapping: any 64-bit time is reached from any other) */
	if (flags & L_MTIME)
		e->mtime_sec = (int64_t)((uint64_t)e->mtime_sec + (uint64_t)((int64_t)(v >> 1) ^ -(int64_t)(v & 1)));
	if (!get_varint(d, &v) || v >= 1000000000u)
		return BAD("list record with a bad time");
	e->mtime_nsec = (uint32_t)v;
	return 0;
}

/* What follows the numbers: size, link, device, hashes. */
static int get_tail(struct wire_ldec *d, struct wire_lent *e, uint32_t flags, const char **why)
{
	uint64_t v;

	e->size = has_size(e->type) ? d->prev.size : 0;
	e->rdev = e->hash = e->xhash = 0;
	e->atime_sec = 0;
	e->atime_nsec = 0;
	if (e->type == BFO_WTYPE_DIR) {
		if (!get_varint(d, &v))
			return BAD("list record with a bad time");
		e->atime_sec = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
		if (!get_varint(d, &v) || v >= 1000000000u)
			return BAD("list record with a bad time");
		e->atime_nsec = (uint32_t)v;
	}
	e->target = NULL;
	e->target_len = 0;
	e->link_src = 0;
	if ((flags & L_SIZE) && !has_size(e->type) && e->type != BFO_WTYPE_DIR)
		return BAD("list record with a size it cannot have");
	if (has_size(e->type) && (flags & L_SIZE) && !get_varint(d, &e->size))
		return BAD("list record with a bad size");
	if (e->size > (uint64_t)INT64_MAX)
		return BAD("list record with a bad size");
	if (e->type == BFO_WTYPE_HARDLINK) {
		if (!get_varint(d, &v) || v >= d->nsources)
			return BAD("hard link to a source the stream did not name");
		e->link_src = (uint16_t)v;
	}
	if (e->type == BFO_WTYPE_SYMLINK || e->type == BFO_WTYPE_HARDLINK) {
		uint64_t max = e->type == BFO_WTYPE_SYMLINK ? WIRE_TARGET_MAX : WIRE_PATH_MAX;

		if (!get_varint(d, &v) || !v || v > max || v > (uint64_t)(d->end - d->p))
			return BAD("list record with a bad link target");
		e->target = (const char *)d->p;
		e->target_len = (uint32_t)v;
		d->p += v;
		if (memchr(e->target, '\0', e->target_len) ||
		    (e->type == BFO_WTYPE_HARDLINK && !wire_rel_ok(e->target, e->target_len)))
			return BAD("list record with a bad link target");
	}
	if ((e->type == BFO_WTYPE_CHR || e->type == BFO_WTYPE_BLK) && !get_varint(d, &e->rdev))
		return BAD("list record with a bad device number");
	if ((d->checksum && has_size(e->type)) || (e->type == BFO_WTYPE_DIR && (flags & L_SIZE))) {
		if (d->end - d->p < 8)
			return BAD("list record ends inside its hash");
		*(e->type == BFO_WTYPE_DIR ? &e->xhash : &e->hash) = get64(d->p);
		d->p += 8;
	}
	return 0;
}

int wire_list_next(struct wire_ldec *d, struct wire_lent *e, const char **why)
{
	uint32_t flags;
	int ret;

	if (!d->left)
		return BAD("list frame has no more records");
	if (d->end - d->p < 1)
		return BAD("list frame ends inside a record");
	flags = *d->p++;
	e->type = flags & L_TYPE;
	if (e->type > BFO_WTYPE_SOCK)
		return BAD("list record of unknown type");
	if (d->first && (flags & (L_MODE | L_UID | L_GID | L_MTIME)) != (L_MODE | L_UID | L_GID | L_MTIME))
		return BAD("the first list record of a frame leaves fields out");
	/* what the record leaves out is the previous one's */
	e->mode = d->prev.mode;
	e->uid = d->prev.uid;
	e->gid = d->prev.gid;
	e->mtime_sec = d->first ? 0 : d->prev.mtime_sec;
	if ((ret = get_path(d, e, why)) || (ret = get_meta(d, e, flags, why)) ||
	    (ret = get_tail(d, e, flags, why)))
		return ret;
	d->left--;
	d->first = false;
	if (!d->left && d->p != d->end)
		return BAD("list frame has bytes after its records");
	/* the next record's prefix and left-out fields come from this one
	 * (its name stays where it is; the next one goes to the other buffer) */
	d->prev.path = d->name[d->cur];
	d->prev.path_len = e->path_len;
	d->prev.mode = e->mode;
	d->prev.uid = e->uid;
	d->prev.gid = e->gid;
	d->prev.mtime_sec = e->mtime_sec;
	d->prev.size = e->size;           /* (0 for what has no size, as the encoder has it) */
	d->cur ^= 1;
	return 0;
}

int wire_hello_parse(const uint8_t *meta, const struct wire_frame *f, uint32_t *flags,
		     const char **why)
{
	if (f->meta_len != WIRE_HELLO_LEN || f->count || f->data_len)
		return BAD("bad hello frame");
	*flags = (uint32_t)meta[0] | (uint32_t)meta[1] << 8 | (uint32_t)meta[2] << 16 |
		 (uint32_t)meta[3] << 24;
	if (*flags & ~WIRE_H_LIST || meta[4] || meta[5] || meta[6] || meta[7])
		return BAD("hello frame with unknown flags");
	return 0;
}

size_t wire_wants_put(uint8_t *p, const uint8_t *wants, uint32_t n)
{
	size_t len = 0;
	uint64_t skip = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (!wants[i]) {
			skip++;
			continue;
		}
		len += put_varint(p + len, skip);
		p[len++] = wants[i];
		skip = 0;
	}
	return len;
}

int wire_wants_parse(const uint8_t *meta, size_t len, uint8_t *wants, uint32_t n, const char **why)
{
	struct wire_ldec d;
	uint64_t at = 0, skip;

	d.p = meta;
	d.end = meta + len;
	memset(wants, 0, n);
	while (d.p < d.end) {
		if (!get_varint(&d, &skip) || skip >= n - at || d.p >= d.end)
			return BAD("a want frame names more records than it answers");
		at += skip;
		if (!*d.p)
			return BAD("a want frame with an empty want");
		wants[at++] = *d.p++;
	}
	return 0;
}

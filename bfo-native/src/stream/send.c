/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames of the stream out of a copier's batches (send.h).  Records are
 * packed into one buffer; file data is written straight from the read
 * engine's arena with writev, never copied.  A batch larger than a frame
 * may be is split over several frames, and a piece larger than a frame's
 * data over several pieces, so the receiver's bounds hold whatever the
 * read options.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "send.h"
#include "wio.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "xattrs go on the wire in the writer's host-order packing, little-endian");

static int reserve(struct wire_out *o, size_t meta, size_t iov)
{
	if (o->meta_len + meta > o->meta_cap) {
		size_t c = MAX(o->meta_cap * 2, o->meta_len + meta + 4096);
		uint8_t *p = realloc(o->meta, c);

		if (!p)
			return -ENOMEM;
		o->meta = p;
		o->meta_cap = c;
	}
	if (o->niov + iov > o->iov_cap) {
		size_t c = MAX(o->iov_cap * 2, o->niov + iov + 256);
		struct iovec *p = realloc(o->iov, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		o->iov = p;
		o->iov_cap = c;
	}
	return 0;
}

/* A new frame: room for its head, filled in when it is sent. */
static int frame_begin(struct wire_out *o)
{
	int ret = reserve(o, WIRE_HEAD_LEN, 1);

	if (ret)
		return ret;
	o->meta_len = WIRE_HEAD_LEN;
	o->niov = 1;                 /* iov[0]: head, records and hash */
	o->count = 0;
	o->data_len = 0;
	return 0;
}

static int frame_send(struct wire_out *o, uint32_t kind)
{
	size_t rec = o->meta_len - WIRE_HEAD_LEN;
	int ret = reserve(o, WIRE_HASH_LEN, 0);

	if (ret)
		return ret;
	wire_head_put(o->meta, kind, o->count, rec, o->data_len);
	wire_put64(o->meta + o->meta_len, wire_meta_hash(o->meta, o->meta + WIRE_HEAD_LEN, rec));
	o->meta_len += WIRE_HASH_LEN;
	o->iov[0] = (struct iovec){ o->meta, o->meta_len };
	ret = wio_writev(&o->io, o->iov, o->niov);
	o->entries += kind == WIRE_BATCH ? o->count : 0;
	return ret ? ret : frame_begin(o);
}

/* "K" or "K/REL" of the sender's namespace: K, and REL in *rel. */
static uint16_t split_src(const char *p, const char **rel)
{
	unsigned long k = strtoul(p, (char **)rel, 10);

	if (**rel == '/')
		(*rel)++;
	return (uint16_t)k;
}

static void to_wire(const struct bfo_wentry *e, uint64_t size, struct wire_entry *w)
{
	const char *rel;

	*w = (struct wire_entry){
		.type = e->type, .mode = e->mode & 07777, .uid = e->uid, .gid = e->gid,
		.atime_sec = e->atime_sec, .atime_nsec = e->atime_nsec,
		.mtime_sec = e->mtime_sec, .mtime_nsec = e->mtime_nsec, .rdev = e->rdev,
		.xattrs = e->xattrs, .xattrs_len = (uint32_t)e->xattrs_len,
	};
	w->src = split_src(e->path, &rel);
	w->path = rel;
	w->path_len = (uint32_t)strlen(rel);
	if (e->type == BFO_WTYPE_FILE) {
		w->flags = (e->flags & BFO_WENTRY_MORE ? WIRE_E_MORE : 0) |
			   (e->flags & BFO_WENTRY_ABORT ? WIRE_E_ABORT : 0);
		w->offset = e->offset;
		w->length = e->length;
		w->size = e->flags & BFO_WENTRY_ABORT ? e->offset : size;
		w->data = e->data;
	} else if (e->type == BFO_WTYPE_HARDLINK) {
		w->target_src = split_src(e->data, &rel);
		w->target = rel;
		w->target_len = (uint32_t)strlen(rel);
	} else if (e->type == BFO_WTYPE_SYMLINK) {
		w->target = e->data;
		w->target_len = (uint32_t)strlen(e->data);
	}
}

/* One record (a piece of at most WIRE_DATA_MAX) into the frame. */
static int put_record(struct wire_out *o, struct wire_entry *w)
{
	size_t len = wire_entry_len(w);
	int ret;

	if (o->count == WIRE_ENTRIES_MAX || o->meta_len - WIRE_HEAD_LEN + len > WIRE_META_MAX ||
	    o->data_len + w->length > WIRE_DATA_MAX)
		if ((ret = frame_send(o, WIRE_BATCH)))
			return ret;
	if ((ret = reserve(o, len, 1)))
		return ret;
	w->hash = w->type == BFO_WTYPE_FILE ? wire_hash(w->data, w->length) : 0;
	o->meta_len += wire_entry_put(o->meta + o->meta_len, w);
	if (w->length)
		o->iov[o->niov++] = (struct iovec){ (void *)w->data, w->length };
	o->data_len += w->length;
	o->count++;
	return 0;
}

int wire_out_batch(struct wire_out *o, const struct bfo_wentry *e, const uint64_t *sizes, size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		struct wire_entry w;

		if (e[i].status)
			continue;
		to_wire(&e[i], sizes[i], &w);
		if (e[i].type != BFO_WTYPE_FILE || w.length <= WIRE_DATA_MAX) {
			ret = put_record(o, &w);
			continue;
		}
		/* A piece too large for a frame: as pieces that fit. */
		uint32_t more = w.flags & WIRE_E_MORE;
		uint64_t end = w.offset + w.length;
		const uint8_t *d = w.data;

		for (uint64_t off = w.offset; off < end && !ret; off += WIRE_DATA_MAX) {
			struct wire_entry p = w;

			p.offset = off;
			p.length = MIN(WIRE_DATA_MAX, end - off);
			p.data = d + (off - w.offset);
			p.flags = off + p.length < end ? WIRE_E_MORE : more;
			ret = put_record(o, &p);
		}
	}
	if (!ret && o->count)
		ret = frame_send(o, WIRE_BATCH);
	return ret;
}

int wire_out_start(struct wire_out *o, int fd, uint32_t flags, int level,
		   const struct wire_source *s, uint32_t n)
{
	uint8_t start[WIRE_START_LEN];
	struct iovec iov = { start, wire_start_put(start, flags) };
	int ret;

	*o = (struct wire_out){ .cancel = o->cancel, .cancelfd = o->cancelfd };   /* the caller's */
	wio_init(&o->io, fd, o->cancelfd, o->cancel);
	if ((ret = wio_writev(&o->io, &iov, 1)) || (ret = frame_begin(o)))
		return ret;
	if ((flags & WIRE_F_ZSTD) && (ret = wio_compress(&o->io, level)))
		return ret;
	if (!s)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if ((ret = reserve(o, WIRE_SOURCE_LEN + s[i].name_len, 0)))
			return ret;
		o->meta_len += wire_source_put(o->meta + o->meta_len, &s[i]);
		o->count++;
	}
	return frame_send(o, WIRE_SOURCES);
}

int wire_out_list(struct wire_out *o, uint16_t src, const struct wire_lent *e, size_t n,
		  bool checksum, uint32_t *frames)
{
	const struct wire_lent *prev = NULL;
	int ret = 0;

	*frames = 0;
	for (size_t i = 0; i <= n && !ret; i++) {
		/* a frame ends with the batch, or before it would pass its limits */
		if (o->count && (i == n || o->count == WIRE_ENTRIES_MAX ||
				 o->meta_len - WIRE_HEAD_LEN + WIRE_LENT_MAX > WIRE_META_MAX)) {
			ret = frame_send(o, WIRE_LIST);
			++*frames;
			prev = NULL;
		}
		if (i == n || ret)
			break;
		if (!o->count) {
			if ((ret = reserve(o, 4, 0)))
				break;
			o->meta[o->meta_len] = (uint8_t)src;
			o->meta[o->meta_len + 1] = (uint8_t)(src >> 8);
			o->meta[o->meta_len + 2] = o->meta[o->meta_len + 3] = 0;
			o->meta_len += 4;
		}
		if ((ret = reserve(o, WIRE_LENT_MAX, 0)))
			break;
		o->meta_len += wire_lent_put(o->meta + o->meta_len, &e[i], prev, checksum);
		o->count++;
		prev = &e[i];
	}
	return ret;
}

int wire_out_frame(struct wire_out *o, uint32_t kind, uint32_t count, const void *meta, size_t len)
{
	int ret = reserve(o, len, 0);

	if (ret)
		return ret;
	if (len)
		memcpy(o->meta + o->meta_len, meta, len);
	o->meta_len += len;
	o->count = count;
	return frame_send(o, kind);
}

int wire_out_end(struct wire_out *o, const struct wire_end *end)
{
	struct wire_end e = *end;
	int ret = reserve(o, WIRE_END_LEN, 0);

	if (ret)
		return ret;
	e.entries = o->entries;
	o->meta_len += wire_end_put(o->meta + o->meta_len, &e);
	return frame_send(o, WIRE_END);
}

void wire_out_free(struct wire_out *o)
{
	wio_free(&o->io);
	free(o->meta);
	free(o->iov);
	o->meta = NULL;
	o->iov = NULL;
}

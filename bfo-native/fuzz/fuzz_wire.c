/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The send/recv stream's parsers (src/stream/wire.c, src/stream/wire_list.c) on hostile
 * bytes, frame after frame as bfo recv reads them (version 1 and 2: LIST
 * frames, their compact records decoded one by one) and as a sender reads
 * the receiver's answers (HELLO, WANT, ITEMS, RESULT heads).  The frame
 * hash is computed but not required to match, so that inputs the fuzzer
 * makes reach the record parsers; what they accept must be within the
 * stream's limits.
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const struct wire_entry *e, const uint8_t *lo, const uint8_t *hi)
{
	if (e->path_len > WIRE_PATH_MAX || e->mode > 07777 || e->type > BFO_WTYPE_SOCK ||
	    e->offset + e->length > e->size || (const uint8_t *)e->path < lo ||
	    (const uint8_t *)e->path + e->path_len > hi || (e->length && e->data + e->length > hi) ||
	    (e->path_len && memmem(e->path, e->path_len, "..", 2) && e->path_len == 2))
		__builtin_trap();
}

/* A decoded LIST record within the limits, its strings where they may be. */
static void check_lent(const struct wire_lent *e, const struct wire_ldec *d, const uint8_t *lo,
		       const uint8_t *hi)
{
	if (e->path_len > WIRE_PATH_MAX || e->path[e->path_len] || e->mode > 07777 ||
	    e->type > BFO_WTYPE_SOCK || e->mtime_nsec >= 1000000000u || e->size > (uint64_t)INT64_MAX ||
	    !wire_rel_ok(e->path, e->path_len) || (e->target && ((const uint8_t *)e->target < lo ||
	    (const uint8_t *)e->target + e->target_len > hi)) ||
	    (e->type == BFO_WTYPE_HARDLINK && e->link_src >= d->nsources) ||
	    (e->type == BFO_WTYPE_SYMLINK && (!e->target_len || e->target_len > WIRE_TARGET_MAX)))
		__builtin_trap();
}

static struct wire_ldec ldec;       /* (large: not on the stack) */

static void list_frame(const uint8_t *meta, const struct wire_frame *f, uint32_t nsources,
		       bool checksum, const uint8_t *lo, const uint8_t *hi)
{
	struct wire_lent e;
	const char *why;

	if (wire_list_begin(&ldec, meta, f, nsources, checksum, &why))
		return;
	for (uint32_t i = 0; i < f->count; i++) {
		if (wire_list_next(&ldec, &e, &why))
			return;
		check_lent(&e, &ldec, lo, hi);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	uint32_t flags, nsources = UINT32_MAX;
	const char *why;

	uint32_t version;

	if (size < WIRE_START_LEN || wire_start_parse_v(p, &version, &flags, &why))
		return 0;
	p += WIRE_START_LEN;
	while ((size_t)(end - p) >= WIRE_HEAD_LEN) {
		struct wire_frame f;
		const uint8_t *meta, *fdata;

		if (wire_head_parse(p, &f, &why))
			return 0;
		if ((uint64_t)(end - p) < WIRE_HEAD_LEN + f.meta_len + WIRE_HASH_LEN + f.data_len)
			return 0;
		meta = p + WIRE_HEAD_LEN;
		fdata = meta + f.meta_len + WIRE_HASH_LEN;
		(void)wire_meta_hash(p, meta, f.meta_len);
		p = fdata + f.data_len;
		if (f.kind == WIRE_SOURCES) {
			struct wire_source *s = calloc(f.count + 1, sizeof(*s));

			if (nsources == UINT32_MAX && !wire_sources_parse(meta, &f, s, &why))
				nsources = f.count;
			free(s);
		} else if (f.kind == WIRE_BATCH && nsources != UINT32_MAX) {
			struct wire_entry *e = calloc(f.count + 1, sizeof(*e));

			if (!wire_entries_parse(meta, fdata, &f, nsources, e, &why))
				for (uint32_t i = 0; i < f.count; i++)
					check_entry(&e[i], data, end);
			free(e);
		} else if (f.kind == WIRE_LIST && nsources != UINT32_MAX) {
			list_frame(meta, &f, nsources, flags & WIRE_F_CHECKSUM, data, end);
		} else if (f.kind == WIRE_HELLO) {
			uint32_t hello;

			if (!wire_hello_parse(meta, &f, &hello, &why) && (hello & ~WIRE_H_LIST))
				__builtin_trap();
		} else if (f.kind == WIRE_WANT) {
			uint8_t *w = malloc(f.count + 1);

			/* (the sender checks each want's bits) */
			if (w)
				(void)wire_wants_parse(meta, f.meta_len, w, f.count, &why);
			free(w);
		} else if (f.kind == WIRE_END) {
			struct wire_end en;

			wire_end_parse(meta, &f, &en, &why);
			return 0;
		}
	}
	return 0;
}

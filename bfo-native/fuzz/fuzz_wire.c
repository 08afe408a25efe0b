/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The send/recv stream's parsers (src/wire.c) on hostile bytes, frame
 * after frame as bfo recv reads them.  The frame hash is computed but not
 * required to match, so that inputs the fuzzer makes reach the record
 * parsers; what they accept must be within the stream's limits.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	uint32_t flags, nsources = UINT32_MAX;
	const char *why;

	if (size < WIRE_START_LEN || wire_start_parse(p, &flags, &why))
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
		} else if (f.kind == WIRE_END) {
			struct wire_end en;

			wire_end_parse(meta, &f, &en, &why);
			return 0;
		}
	}
	return 0;
}

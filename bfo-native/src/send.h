/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sending end of the stream (wire.h): a copier's batches, as it would
 * hand them to a writer, become frames written to a descriptor.  Entry
 * paths are in the sender's namespace: "K" or "K/REL", K the source
 * number in decimal; hard link targets likewise.
 */
#ifndef BFO_SEND_H
#define BFO_SEND_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bfo.h"
#include "wire.h"

struct iovec;

struct wire_out {
	int fd;
	/* Set (the copier cancelled): a frame being written stops where it
	 * is, so the receiver sees the stream cut at once; NULL: never. */
	const atomic_bool *cancel;
	uint8_t *meta;              /* the frame being built: head, records, hash */
	size_t meta_len, meta_cap;
	struct iovec *iov;          /* iov[0] the meta; then data in the caller's entries */
	size_t niov, iov_cap;
	uint32_t count;
	uint64_t data_len;
	uint64_t entries;           /* records sent in all */
};

/* Each returns 0 or -errno (-EPIPE: the receiver went away). */
int wire_out_start(struct wire_out *o, int fd, uint32_t flags, const struct wire_source *s,
		   uint32_t n);
/* sizes[i]: the whole file's size for a FILE entry (the size of all its
 * pieces).  Entries with a status are left out. */
int wire_out_batch(struct wire_out *o, const struct bfo_wentry *e, const uint64_t *sizes,
		   size_t n);
int wire_out_end(struct wire_out *o, const struct wire_end *end);
void wire_out_free(struct wire_out *o);

#endif

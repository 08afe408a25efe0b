/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sending end of the stream (wire.h): a copier's batches, as it would
 * hand them to a writer, become frames written to a descriptor.  Entry
 * paths are in the sender's namespace: "K" or "K/REL", K the source
 * number in decimal; hard link targets likewise.
 */
#ifndef BFO_SEND_H
#define BFO_SEND_H

#include <stddef.h>
#include <stdint.h>

#include "bfo.h"
#include "wio.h"
#include "wire.h"

struct iovec;

struct wire_out {
	struct wio io;              /* the descriptor, compressed or not, counted */
	/* Set (the copier cancelled): a frame being written stops where it
	 * is, so the receiver sees the stream cut at once; NULL: never.  The
	 * caller's, kept by wire_out_start. */
	const atomic_bool *cancel;
	int cancelfd;               /* readable once cancelled (-1: none); the caller's too */
	uint8_t *meta;              /* the frame being built: head, records, hash */
	size_t meta_len, meta_cap;
	struct iovec *iov;          /* iov[0] the meta; then data in the caller's entries */
	size_t niov, iov_cap;
	uint32_t count;
	uint64_t data_len;
	uint64_t entries;           /* records sent in all */
};

/* Each returns 0 or -errno (-EPIPE: the receiver went away; -ECANCELED:
 * *cancel was set, the frame cut short).  START (and,
 * with WIRE_F_ZSTD, the rest compressed at level), then the sources
 * (none when s is NULL: the back channel has no sources frame). */
int wire_out_start(struct wire_out *o, int fd, uint32_t flags, int level,
		   const struct wire_source *s, uint32_t n);
/* The list entries e[0..n) of source src as LIST frames (as many as
 * their size needs): their number in *frames. */
int wire_out_list(struct wire_out *o, uint16_t src, const struct wire_lent *e, size_t n,
		  bool checksum, uint32_t *frames);
/* A frame of kind with count and meta[0..len), no data (the back
 * channel's HELLO, WANT, ITEMS, RESULT). */
int wire_out_frame(struct wire_out *o, uint32_t kind, uint32_t count, const void *meta, size_t len);
/* sizes[i]: the whole file's size for a FILE entry (the size of all its
 * pieces).  Entries with a status are left out. */
int wire_out_batch(struct wire_out *o, const struct bfo_wentry *e, const uint64_t *sizes,
		   size_t n);
int wire_out_end(struct wire_out *o, const struct wire_end *end);
void wire_out_free(struct wire_out *o);

#endif

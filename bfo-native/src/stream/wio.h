/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stream's bytes on a descriptor: written whole (short writes
 * continued), read with a wakeup (another thread stops a reader that waits
 * on a silent peer), counted as they cross, and compressed with zstd when
 * asked (WIRE_F_ZSTD: everything after START).  libzstd is loaded when a
 * compressed stream is first made or met (libzstd.so.1), so libbfo needs
 * it only then.
 *
 * A compressed stream is flushed at the end of each wio_writev (a frame),
 * so the receiver can decode a frame without waiting for the next; its
 * decoder's window is bounded (WIO_WINDOW_LOG), whatever the stream says.
 */
#ifndef BFO_WIO_H
#define BFO_WIO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WIO_WINDOW_LOG 23           /* 8 MiB: the compressor's window, the decoder's bound */

struct iovec;

struct wio {
	int fd;
	int stopfd;                 /* readable means stop (-1: none) */
	const atomic_bool *cancel;  /* set: stops (may be NULL); see wio_writev, wio_read */
	void *z;                    /* ZSTD_CCtx (write) or ZSTD_DCtx (read), or NULL */
	bool writer;                /* z is a ZSTD_CCtx */
	uint8_t *buf;               /* write: compressed bytes; read: bytes from the fd */
	size_t cap, len, pos;
	uint64_t bytes;             /* that crossed the descriptor */
	bool eof;
	bool nowait;                /* writes never block (RWF_NOWAIT): see wio_init */
	bool fifo;                  /* a pipe: without RWF_NOWAIT, writes of what fits */
};

/* Plain until wio_compress / wio_decompress.  With a stopfd, writes to a
 * pipe or a socket go out with RWF_NOWAIT and wait in poll() beside the
 * stopfd when it is full, so a stop also ends a write to a reader that
 * stopped reading (a plain writev() would wait inside the kernel). */
void wio_init(struct wio *w, int fd, int stopfd, const atomic_bool *cancel);
/* From now on what is written is compressed at level (1..19, or zstd's
 * negative fast levels).  0, -EOPNOTSUPP (no libzstd) or -ENOMEM. */
int wio_compress(struct wio *w, int level);
/* From now on what is read is decompressed. */
int wio_decompress(struct wio *w);
/* All of iov[0..n) (modified as it goes); 0 or -errno (-EPIPE: the
 * reader went away; -ECANCELED: *cancel was set, before or between
 * writes: a signal's EINTR, or the short write it made, comes back here). */
int wio_writev(struct wio *w, struct iovec *iov, size_t n);
/* len bytes into p, or fewer only at the end of the stream: their count,
 * or -errno (-ECANCELED: stopped; -EBADMSG: a compressed stream that does
 * not decode). */
ssize_t wio_read(struct wio *w, void *p, size_t len);
void wio_free(struct wio *w);

/* Whether libzstd can be loaded here (for an error message up front). */
bool wio_zstd_available(void);

#endif

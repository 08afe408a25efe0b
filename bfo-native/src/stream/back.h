/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sender's end of the back channel (wire.h, version 2): what the
 * receiver answers (HELLO, WANT, ITEMS, RESULT), read on a thread of its
 * own and queued, so that the receiver's answers never wait behind the
 * stream, which may itself wait for the receiver.  The receiver is as
 * hostile as any stream: frames are bounded and checked (their hash, kind
 * and size) before they are queued.
 */
#ifndef BFO_BACK_H
#define BFO_BACK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wio.h"

struct bframe {
	uint32_t kind, count;
	uint8_t *meta;              /* the frame's records (count bytes for WANT) */
	size_t len;
	struct bframe *next;
};

struct back {
	struct wio io;
	int stopfd[2];
	pthread_t thread;
	bool started;
	pthread_mutex_t m;
	pthread_cond_t cv;
	struct bframe *head, *tail;
	size_t queued;              /* bytes queued (bounded by the sender's pending lists) */
	bool done;                  /* the reader ended: RESULT, end of stream or error */
	int err;                    /* its error (0: ended cleanly) */
	const char *why;
};

/* Start reading fd (the receiver's START is checked first). 0 or -errno. */
int back_start(struct back *b, int fd, const atomic_bool *cancel);
/* The next frame (the caller frees it with bframe_free), waiting up to
 * timeout_ms (-1: until one comes, the channel ends or the cancel given
 * to back_start is set); NULL when none came (b->done says whether one
 * ever will). */
struct bframe *back_next(struct back *b, int timeout_ms);
void bframe_free(struct bframe *f);
/* Stop the reader and free everything. */
void back_end(struct back *b);

#endif

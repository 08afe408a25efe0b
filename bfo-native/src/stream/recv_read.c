/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The receiver's reading (recv.h): a reader thread takes frames off the
 * stream (decompressed when it says so) and parses them (wire.c: every
 * field bounded, every file's hash checked) into one of two slots, while
 * the caller's thread writes the previous one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "copy.h"
#include "recv.h"
#include "wire.h"

/* ------------------------------------------------------------ reading */

void rx_stream_error(struct rx *x, const char *why, int status)
{
	copy_report(x->c, why ? why : "the stream", status);
}

/* Read exactly len bytes: 0, or -errno with why. */
static int take(struct rx *x, void *p, size_t len, const char **why)
{
	ssize_t k = wio_read(&x->in, p, len);

	if (k == (ssize_t)len)
		return 0;
	*why = k < 0 ? "reading the stream failed" :
	       "the stream ends inside a frame (the sender or its connection died)";
	return k < 0 ? (int)k : -EPIPE;
}

/* The next frame into s, checked and parsed. */
static int read_frame(struct rx *x, struct slot *s)
{
	struct wire_frame *f = &s->f;
	ssize_t k;
	size_t len;
	int ret;

	k = wio_read(&x->in, s->buf, WIRE_HEAD_LEN);
	if (k == 0) {
		s->eof = true;
		return 0;
	}
	if (k != WIRE_HEAD_LEN) {
		s->why = k < 0 ? "reading the stream failed" :
			 "the stream ends inside a frame (the sender or its connection died)";
		return k < 0 ? (int)k : -EPIPE;
	}
	if ((ret = wire_head_parse(s->buf, f, &s->why)))
		return ret;
	if (f->kind > WIRE_LIST || (f->kind == WIRE_LIST && x->version < 2)) {
		s->why = "a frame of a kind the stream does not carry";
		return -EBADMSG;
	}
	len = WIRE_HEAD_LEN + f->meta_len + WIRE_HASH_LEN + f->data_len;
	if (len > s->cap) {
		uint8_t *b = realloc(s->buf, len);

		if (!b) {
			s->why = "no memory for a frame";
			return -ENOMEM;
		}
		s->buf = b;
		s->cap = len;
	}
	if ((ret = take(x, s->buf + WIRE_HEAD_LEN, f->meta_len + WIRE_HASH_LEN, &s->why)))
		return ret;
	uint8_t *meta = s->buf + WIRE_HEAD_LEN, *data = meta + f->meta_len + WIRE_HASH_LEN;
	uint8_t want[WIRE_HASH_LEN];

	wire_put64(want, wire_meta_hash(s->buf, meta, f->meta_len));
	if (memcmp(want, meta + f->meta_len, WIRE_HASH_LEN)) {
		s->why = "frame records do not match their hash (corrupted stream)";
		return -EBADMSG;
	}
	if ((ret = take(x, data, f->data_len, &s->why)))
		return ret;
	if (f->kind == WIRE_SOURCES) {
		if (x->nsources != UINT32_MAX) {
			s->why = "a second sources frame";
			return -EBADMSG;
		}
		x->nsources = f->count;
	} else if (x->nsources == UINT32_MAX) {
		s->why = "the stream does not start with its sources";
		return -EBADMSG;
	}
	if (f->kind != WIRE_BATCH)
		return 0;
	if (f->count > s->capents) {
		struct wire_entry *e = realloc(s->ents, f->count * sizeof(*e));

		if (!e) {
			s->why = "no memory for a frame";
			return -ENOMEM;
		}
		s->ents = e;
		s->capents = f->count;
	}
	return wire_entries_parse(meta, data, f, x->nsources, s->ents, &s->why);
}

static void *reader(void *arg)
{
	struct rx *x = arg;

	for (;;) {
		struct slot *s;
		bool last, stop;

		pthread_mutex_lock(&x->m);
		while (x->produced - x->consumed == NSLOTS && !x->stop)
			pthread_cond_wait(&x->cv, &x->m);
		stop = x->stop;
		pthread_mutex_unlock(&x->m);
		if (stop)
			return NULL;
		s = &x->slot[x->produced % NSLOTS];
		s->eof = false;
		s->why = NULL;
		s->status = read_frame(x, s);
		last = s->eof || s->status || s->f.kind == WIRE_END;
		if (s->eof || s->status)
			atomic_store(&x->broken, true);
		pthread_mutex_lock(&x->m);
		x->produced++;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->m);
		if (last)
			return NULL;
	}
}

/* The next frame the reader has ready; NULL when the copier was cancelled
 * (a signal does not end a wait: it is looked at every 100 ms). */
struct slot *rx_next_frame(struct rx *x)
{
	struct slot *s = NULL;

	pthread_mutex_lock(&x->m);
	while (x->produced == x->consumed && !atomic_load(&x->c->cancel)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&x->cv, &x->m, &ts);
	}
	if (x->produced != x->consumed)
		s = &x->slot[x->consumed % NSLOTS];
	pthread_mutex_unlock(&x->m);
	return s;
}

void rx_done_frame(struct rx *x)
{
	pthread_mutex_lock(&x->m);
	x->consumed++;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
}

int rx_read_start(struct rx *x)
{
	uint8_t b[WIRE_START_LEN];
	const char *why = NULL;
	ssize_t k;
	int ret;

	/* on the caller's thread: the copier's cancel ends the wait */
	wio_init(&x->in, x->fd, x->c->wakefd, &x->c->cancel);
	k = wio_read(&x->in, b, sizeof(b));
	if (k == -ECANCELED)
		return (int)k;
	if (k < 0) {
		rx_stream_error(x, "reading the stream failed", (int)k);
		return (int)k;
	}
	if (k == 0) {
		why = "the stream is empty (the sender failed before it began?)";
		ret = -ENODATA;
	} else if (k < (ssize_t)sizeof(b)) {
		why = "not a bfo stream (too short)";
		ret = -EBADMSG;
	} else {
		ret = wire_start_parse_v(b, &x->version, &x->flags, &why);
	}
	if (!ret && (x->flags & WIRE_F_ZSTD) && (ret = wio_decompress(&x->in)))
		why = ret == -EOPNOTSUPP ? "the stream is compressed (zstd) and libzstd.so.1 is not here" :
		      "no memory for the stream's decompression";
	if (ret)
		rx_stream_error(x, why, ret);
	return ret;
}

int rx_reader_start(struct rx *x)
{
	sigset_t all, old;
	int ret;

	if (pipe2(x->stopfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	x->in.stopfd = x->stopfd[0];
	/* the reader leaves signals to the caller's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&x->thread, NULL, reader, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -EAGAIN;
	x->started = true;
	return 0;
}

void rx_reader_stop(struct rx *x)
{
	if (!x->started)
		return;
	/* The reader may wait for a slot or for the stream (when this side
	 * stopped early): both wake it. */
	pthread_mutex_lock(&x->m);
	x->stop = true;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
	if (write(x->stopfd[1], "", 1) < 0) {
		/* a full pipe already wakes it */
	}
	pthread_join(x->thread, NULL);
	x->started = false;
}

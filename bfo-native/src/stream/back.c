/* SPDX-License-Identifier: Apache-2.0 */
/* The back channel, read on its own thread and queued (back.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "back.h"
#include "wire.h"

/* The most a receiver may have queued and not taken: a WANT frame per
 * list frame in flight is far less. */
#define BACK_QUEUED_MAX (64u << 20)

static int fail(struct back *b, int err, const char *why)
{
	b->why = why;
	return err;
}

/* One frame off the channel: 1 queued, 0 the end (RESULT taken or the
 * stream ended), or -errno. */
static int read_one(struct back *b)
{
	uint8_t head[WIRE_HEAD_LEN], want[WIRE_HASH_LEN];
	struct wire_frame f;
	struct bframe *q;
	const char *why;
	ssize_t k = wio_read(&b->io, head, sizeof(head));
	int ret;

	if (k == 0)
		return 0;
	if (k != (ssize_t)sizeof(head))
		return fail(b, k < 0 ? (int)k : -EPIPE, "the receiver's answers end inside a frame");
	if ((ret = wire_head_parse(head, &f, &why)))
		return fail(b, ret, why);
	if (f.kind < WIRE_HELLO || f.data_len)
		return fail(b, -EBADMSG, "the receiver sent a frame of the wrong kind");
	q = calloc(1, sizeof(*q));
	if (!q || !(q->meta = malloc(f.meta_len + WIRE_HASH_LEN))) {
		free(q);
		return fail(b, -ENOMEM, "no memory for the receiver's answer");
	}
	*q = (struct bframe){ f.kind, f.count, q->meta, f.meta_len, NULL };
	k = wio_read(&b->io, q->meta, f.meta_len + WIRE_HASH_LEN);
	if (k != (ssize_t)(f.meta_len + WIRE_HASH_LEN)) {
		bframe_free(q);
		return fail(b, k < 0 ? (int)k : -EPIPE, "the receiver's answers end inside a frame");
	}
	wire_put64(want, wire_meta_hash(head, q->meta, f.meta_len));
	if (memcmp(want, q->meta + f.meta_len, WIRE_HASH_LEN)) {
		bframe_free(q);
		return fail(b, -EBADMSG, "an answer of the receiver does not match its hash");
	}
	pthread_mutex_lock(&b->m);
	if (b->queued + f.meta_len > BACK_QUEUED_MAX) {
		pthread_mutex_unlock(&b->m);
		bframe_free(q);
		return fail(b, -EBADMSG, "the receiver answers more than it was asked");
	}
	b->queued += f.meta_len;
	if (b->tail)
		b->tail->next = q;
	else
		b->head = q;
	b->tail = q;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->m);
	return f.kind == WIRE_RESULT ? 0 : 1;
}

static void *reader(void *arg)
{
	struct back *b = arg;
	uint8_t start[WIRE_START_LEN];
	uint32_t version, flags;
	const char *why = NULL;
	ssize_t k = wio_read(&b->io, start, sizeof(start));
	int ret;

	if (k != (ssize_t)sizeof(start))
		ret = fail(b, k < 0 ? (int)k : -EPIPE, "the receiver did not answer (an older bfo recv?)");
	else if ((ret = wire_start_parse_v(start, &version, &flags, &why)))
		ret = fail(b, ret, why);
	else if (version < 2)
		ret = fail(b, -EPROTONOSUPPORT, "the receiver answers with stream version 1");
	if (!ret)
		while ((ret = read_one(b)) > 0)
			;
	pthread_mutex_lock(&b->m);
	b->err = ret;
	b->done = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->m);
	return NULL;
}

int back_start(struct back *b, int fd, const atomic_bool *cancel)
{
	sigset_t all, old;
	int ret;

	*b = (struct back){ .stopfd = { -1, -1 } };
	pthread_mutex_init(&b->m, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (pipe2(b->stopfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	wio_init(&b->io, fd, b->stopfd[0], cancel);
	/* the reader leaves signals to the caller's thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&b->thread, NULL, reader, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return -ret;
	b->started = true;
	return 0;
}

/* now + ms on CLOCK_REALTIME (pthread_cond_timedwait's). */
static struct timespec after_ms(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

struct bframe *back_next(struct back *b, int timeout_ms)
{
	struct bframe *q;
	struct timespec ts = after_ms(timeout_ms < 0 ? 0 : timeout_ms);

	pthread_mutex_lock(&b->m);
	while (!b->head && !b->done && timeout_ms) {
		if (timeout_ms < 0) {
			/* a signal does not end a wait: the cancel is looked
			 * at every 100 ms */
			struct timespec slice = after_ms(100);

			if (b->io.cancel && atomic_load(b->io.cancel))
				break;
			pthread_cond_timedwait(&b->cv, &b->m, &slice);
		} else if (pthread_cond_timedwait(&b->cv, &b->m, &ts)) {
			break;
		}
	}
	q = b->head;
	if (q) {
		b->head = q->next;
		if (!b->head)
			b->tail = NULL;
		b->queued -= q->len;
	}
	pthread_mutex_unlock(&b->m);
	return q;
}

void bframe_free(struct bframe *f)
{
	if (f)
		free(f->meta);
	free(f);
}

void back_end(struct back *b)
{
	if (b->started) {
		if (write(b->stopfd[1], "", 1) < 0) {
			/* a full pipe wakes it as well */
		}
		pthread_join(b->thread, NULL);
	}
	while (b->head) {
		struct bframe *q = b->head;

		b->head = q->next;
		bframe_free(q);
	}
	for (int i = 0; i < 2; i++)
		if (b->stopfd[i] >= 0)
			close(b->stopfd[i]);
	wio_free(&b->io);
	pthread_mutex_destroy(&b->m);
	pthread_cond_destroy(&b->cv);
}

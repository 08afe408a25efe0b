/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: the flusher, the thread that writes and commits tar's files
 * while tar goes on.
 *
 * It writes out a generation of files tar has closed (data, metadata, a
 * syncfs of their file systems, names, close: extract_queue.c) while tar
 * goes on creating the next ones, so the batch's writes, tar's metadata
 * calls (deferred until after the data) and the wait for the disk overlap
 * tar's own open()s on another core instead of stopping it.  One
 * generation at most is in flight (memory stays at two queues); anything
 * that may depend on its files waits for it first (flush_queue,
 * pending_inode), as for the queue.
 */
#include "extract.h"

#include <signal.h>
#include <stdlib.h>

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wfile **gen;     /* handed to the flusher, not yet taken */
	unsigned ngen;
	int busy;               /* the flusher is writing one */
	int state;              /* 0 not started, 1 running, -1 could not start: all on tar's thread */
	/* tar's thread only: the files of the generation in flight, for pending_inode() */
	int inflight;
	dev_t *dev;
	ino_t *ino;
	unsigned nino;
} fl = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *flusher(void *unused)
{
	(void)unused;
	for (;;) {
		struct wfile **g;
		unsigned n;

		pthread_mutex_lock(&fl.lock);
		while (!fl.gen)
			pthread_cond_wait(&fl.cond, &fl.lock);
		g = fl.gen;
		n = fl.ngen;
		fl.gen = NULL;
		fl.busy = 1;
		pthread_mutex_unlock(&fl.lock);

		write_out(g, n, 0);     /* data, metadata, syncfs, names */
		for (unsigned i = 0; i < n; i++) {
			real_close(g[i]->fd);
			wfile_free(g[i]);
		}
		free(g);
		pthread_mutex_lock(&fl.lock);
		fl.busy = 0;
		pthread_cond_broadcast(&fl.cond);
		pthread_mutex_unlock(&fl.lock);
	}
	return NULL;
}

/* Waits until the generation in flight is written, metadata applied,
 * named and closed. */
void wait_generation(void)
{
	if (!fl.inflight)
		return;
	pthread_mutex_lock(&fl.lock);
	while (fl.gen || fl.busy)
		pthread_cond_wait(&fl.cond, &fl.lock);
	pthread_mutex_unlock(&fl.lock);
	fl.inflight = 0;
	fl.nino = 0;
	names_generation_done();
}

static int start_flusher(void)
{
	pthread_t t;
	sigset_t all, old;

	if (fl.state)
		return fl.state > 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);       /* signals stay tar's */
	fl.state = pthread_create(&t, NULL, flusher, NULL) == 0 ? 1 : -1;
	if (fl.state > 0)
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return fl.state > 0;
}

/*
 * The queue is full: its closed files go to the flusher and tar goes on.
 * The free space charged for them stays charged until a flush on tar's
 * thread looks again (what the flusher writes shows only once written).
 */
void flush_queue_behind(void)
{
	struct wfile **g;
	unsigned k = 0, kept = 0;
	uint64_t bytes = 0;
	dev_t *dv;
	ino_t *iv;

	wait_generation();
	if (!start_flusher() || !(g = malloc(ex.nq * sizeof(*g)))) {
		flush_queue();
		return;
	}
	if ((dv = realloc(fl.dev, ex.nq * sizeof(*dv))))
		fl.dev = dv;
	if ((iv = realloc(fl.ino, ex.nq * sizeof(*iv))))
		fl.ino = iv;
	if (!dv || !iv) {
		free(g);
		flush_queue();
		return;
	}
	for (unsigned i = 0; i < ex.nq; i++) {
		struct wfile *w = ex.queue[i];

		if (w->closed) {
			g[k] = w;
			fl.dev[k] = w->dev;
			fl.ino[k] = w->ino;
			bytes += w->len;
			k++;
		} else {
			ex.queue[kept++] = w;
		}
	}
	if (!k) {
		free(g);
		flush_queue();
		return;
	}
	ex.nq = kept;
	ex.queued_bytes -= bytes;
	fl.nino = k;
	fl.inflight = 1;
	names_handoff(g, k);
	names_rebuild();
	counters.xflushes++;
	counters.xbehind++;
	pthread_mutex_lock(&fl.lock);
	fl.gen = g;
	fl.ngen = k;
	pthread_cond_signal(&fl.cond);
	pthread_mutex_unlock(&fl.lock);
}

/* Whether dev/ino is a file of the generation in flight. */
int generation_has(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; fl.inflight && i < fl.nino; i++)
		if (fl.dev[i] == dev && fl.ino[i] == ino)
			return 1;
	return 0;
}

int generation_in_flight(void)
{
	return fl.inflight;
}

/* After fork(): the threads stayed in the parent. */
void flusher_forget(void)
{
	fl.inflight = 0;
	fl.state = -1;
}

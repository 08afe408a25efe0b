/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: the flusher and the syncer, the two threads that write and
 * commit tar's files while tar goes on.
 *
 * The flusher: a thread that writes out a generation of files tar has
 * closed (data, metadata, names, close) while tar goes on creating the next
 * ones, so the batch's writes and tar's five metadata calls per file
 * (deferred until after the data) overlap tar's own open()s on another
 * core instead of stopping it.  One generation at most is in flight
 * (memory stays at two queues); anything that may depend on its files
 * waits for it first (flush_queue, pending_inode), as for the queue.
 */
#include "extract.h"

#include <signal.h>
#include <stdlib.h>

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wfile **gen;     /* handed to the flusher, not yet taken */
	unsigned ngen;
	uint64_t blocks;        /* its files' sizes in whole blocks, for the syncer */
	uint32_t devmask;       /* bit i: some of its files are on file system i */
	int busy;               /* the flusher is writing one */
	int state;              /* 0 not started, 1 running, -1 could not start: all on tar's thread */
	/* tar's thread only: the files of the generation in flight, for pending_inode() */
	int inflight;
	dev_t *dev;
	ino_t *ino;
	unsigned nino;
} fl = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/*
 * The syncer: every SYNC_EVERY bytes the flusher has written, a syncfs()
 * of their file systems on a thread of its own, so the disk writes back
 * while tar is still creating files (the kernel would not start before its
 * dirty limit, far above a typical archive) and the syncfs at the end only
 * has the rest to do.  syncfs rather than a per-file sync_file_range:
 * writeback of many inodes at once allocates and merges their blocks into
 * large I/Os; per-file writeback issued small writes and was slower than
 * one syncfs at the end.  An error it meets is kept for final_flush() (the
 * file system reports it to one syncfs only).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t want;          /* bit i: file system i has data written since its last syncfs */
	int busy;
	int err[MAX_DEVS];      /* the first error an early syncfs met */
	int state;              /* 0 not started, 1 running, -1 could not start */
} sy = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *syncer(void *unused)
{
	(void)unused;
	for (;;) {
		uint32_t want;

		pthread_mutex_lock(&sy.lock);
		while (!sy.want)
			pthread_cond_wait(&sy.cond, &sy.lock);
		want = sy.want;
		sy.want = 0;
		sy.busy = 1;
		pthread_mutex_unlock(&sy.lock);
		for (unsigned i = 0; i < MAX_DEVS; i++) {
			int r;

			if (!(want & (1u << i)))
				continue;
			r = bfo_syncfs(dev_fd(i));
			pthread_mutex_lock(&sy.lock);
			counters.early_syncfs++;
			if (r < 0 && !sy.err[i])
				sy.err[i] = r;
			pthread_mutex_unlock(&sy.lock);
		}
		pthread_mutex_lock(&sy.lock);
		sy.busy = 0;
		pthread_cond_broadcast(&sy.cond);
		pthread_mutex_unlock(&sy.lock);
	}
	return NULL;
}

/* The flusher is idle: no early syncfs runs, or is asked for, after this. */
void syncer_quiet(void)
{
	pthread_mutex_lock(&sy.lock);
	sy.want = 0;
	while (sy.busy)
		pthread_cond_wait(&sy.cond, &sy.lock);
	pthread_mutex_unlock(&sy.lock);
}

/*
 * Tests only, hidden: a program that defines this symbol (tests/testhooks.c,
 * a library preloaded beside the plugin) makes the flusher, once it asked
 * for an early syncfs, wait until the syncer has run it, so that every
 * syncfs asked for runs while tar goes on (none merged with the next, none
 * dropped at the end) whatever the threads' timing.  Undefined, its
 * address is NULL: tar and every other program.
 */
extern const int bfo_tar_test_sync_each __attribute__((weak));

static void *flusher(void *unused)
{
	uint64_t unsynced = 0;
	uint32_t devmask = 0;

	(void)unused;
	for (;;) {
		struct wfile **g;
		unsigned n;
		uint64_t sync_bytes;
		uint32_t sync_mask;

		pthread_mutex_lock(&fl.lock);
		while (!fl.gen)
			pthread_cond_wait(&fl.cond, &fl.lock);
		g = fl.gen;
		n = fl.ngen;
		sync_bytes = fl.blocks;
		sync_mask = fl.devmask;
		fl.gen = NULL;
		fl.busy = 1;
		pthread_mutex_unlock(&fl.lock);

		write_out(g, n, 0);
		unsynced += sync_bytes;
		devmask |= sync_mask;
		for (unsigned i = 0; i < n; i++) {
			real_close(g[i]->fd);
			wfile_free(g[i]);
		}
		free(g);
		if (sy.state > 0 && unsynced >= SYNC_EVERY) {
			pthread_mutex_lock(&sy.lock);
			sy.want |= devmask;
			pthread_cond_broadcast(&sy.cond);
			while (&bfo_tar_test_sync_each && (sy.want || sy.busy))
				pthread_cond_wait(&sy.cond, &sy.lock);
			pthread_mutex_unlock(&sy.lock);
			unsynced = 0;
			devmask = 0;
		}

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
	/* the syncer first: the flusher reads sy.state */
	if (settings.durability) {
		sy.state = pthread_create(&t, NULL, syncer, NULL) == 0 ? 1 : -1;
		if (sy.state > 0)
			pthread_detach(t);
	}
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
	uint64_t bytes = 0, blocks = 0;
	uint32_t mask = 0;
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
			blocks += blocks_of(w->di, w->written + w->len);
			mask |= 1u << w->di;
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
	fl.blocks = blocks;
	fl.devmask = mask;
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

/* The first error an early syncfs met on file system i, now reported. */
int syncer_error(unsigned i)
{
	int e = sy.err[i];

	sy.err[i] = 0;
	return e;
}

/* After fork(): the threads stayed in the parent. */
void flusher_forget(void)
{
	fl.inflight = 0;
	fl.state = -1;
	sy.state = -1;
	sy.busy = 0;
}

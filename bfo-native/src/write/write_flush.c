/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writeback behind a writer's data (writer.h, struct flusher).  The
 * kernel starts writing a file system's dirty pages back on its own only
 * above dirty_background_ratio (10% of memory: gigabytes), so every byte
 * a batch wrote waited for its durability point: the batch's syncfs
 * (DURABILITY_BATCH), or the one syncfs the deferred batches share at
 * close (DURABILITY_CLOSE: 0.5 to 0.7 s at the end of a first copy of
 * 400 MB).  Here a thread runs syncfs behind the data as the directory
 * tasks write it, each time FLUSH_MIN_BYTES more were written (one syncfs
 * at a time; what is written meanwhile is taken by the next), so that the
 * device writes while the rest of the batch is created and the
 * durability point finds little left.  It is no durability point: the
 * manifests stay until the writer's own syncfs, as before.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "common.h"
#include "writer.h"

static void *flusher_main(void *arg)
{
	struct bfo_writer *w = arg;
	struct flusher *f = &w->fl;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (!f->stop && f->done == f->kicks)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->stop)
			break;
		f->done = f->kicks;
		pthread_mutex_unlock(&f->lock);
		syncfs(w->rootfd);      /* (a failure is the writer's own syncfs's to report) */
		stat_add(&w->st.writebacks, 1);
		pthread_mutex_lock(&f->lock);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* (f->lock held) */
static void kick(struct bfo_writer *w)
{
	struct flusher *f = &w->fl;

	if (!f->started && !f->failed) {
		sigset_t all, old;

		/* signals stay the caller's threads' */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		f->started = pthread_create(&f->thread, NULL, flusher_main, w) == 0;
		f->failed = !f->started;     /* then the durability point does it all, as before */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	f->kicks++;
	pthread_cond_signal(&f->cond);
}

void flusher_note(struct bfo_writer *w, uint64_t bytes)
{
	struct flusher *f = &w->fl;

	/* NONE asked for no sync at all; EACH syncs every file itself */
	if (!bytes || (w->o.durability != BFO_DURABILITY_BATCH &&
		       w->o.durability != BFO_DURABILITY_CLOSE))
		return;
	pthread_mutex_lock(&f->lock);
	f->bytes += bytes;
	if (f->bytes >= FLUSH_MIN_BYTES) {
		f->bytes = 0;
		kick(w);
	}
	pthread_mutex_unlock(&f->lock);
}

void flusher_stop(struct bfo_writer *w)
{
	struct flusher *f = &w->fl;

	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (f->started)
		pthread_join(f->thread, NULL);   /* (at most one syncfs under way) */
	f->started = false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DURABILITY_CLOSE's writeback while batches are written (writer.h,
 * struct flusher).  Deferred batches share one syncfs at close, and the
 * kernel starts writing a file system's dirty pages back on its own only
 * above dirty_background_ratio (10% of memory: gigabytes): so every byte
 * of a copy waited for that last syncfs, the tail of a first copy (0.5 to
 * 0.7 s for 400 MB).  Here a thread runs syncfs behind the deferred
 * batches, each time FLUSH_MIN_BYTES more were written (one syncfs at a
 * time; what is deferred meanwhile is taken by the next), so that the
 * writeback overlaps the batches that follow and the last syncfs finds
 * little left.  It is no durability point: the deferred manifests
 * stay until the writer's own syncfs, as before.
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

void flusher_kick(struct bfo_writer *w)
{
	struct flusher *f = &w->fl;

	pthread_mutex_lock(&f->lock);
	if (!f->started && !f->failed) {
		sigset_t all, old;

		/* signals stay the caller's threads' */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		f->started = pthread_create(&f->thread, NULL, flusher_main, w) == 0;
		f->failed = !f->started;     /* then the last syncfs does it all, as before */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	f->kicks++;
	pthread_cond_signal(&f->cond);
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

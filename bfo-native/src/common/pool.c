/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded set of worker threads with one FIFO of tasks.  The metadata phase
 * and the per-file reads both run here, so the number of threads (and thus
 * of descriptors they hold at once) is bounded by opts.threads. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"
#include "pool.h"

/* How much lower than the creating thread the workers run. */
#define POOL_NICE 10

static void *pool_main(void *arg)
{
	struct pool *p = arg;
	unsigned creds_seen = 0;

	/* Pool work (metadata of windows ahead, per-file reads) yields to the
	 * dispatcher and the caller, which are on the critical path: on two
	 * cores, sixteen busy workers at equal priority left the dispatcher an
	 * eighth of a core and stalled the data phase behind work for later
	 * windows.  Raising one's own nice value needs no privilege; failure
	 * only costs speed.  The value is pool_start's, not the creating
	 * thread's: a worker may start another (already niced) worker. */
	if (p->nice != INT_MIN)
		setpriority(PRIO_PROCESS, (id_t)gettid(), p->nice);

	pthread_mutex_lock(&p->lock);
	for (;;) {
		p->idle++;
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		p->idle--;
		struct pool_task *t = p->head;
		if (!t) {               /* stop requested and queue drained */
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		p->queued--;
		pthread_mutex_unlock(&p->lock);
		t->next = NULL;
		if (p->before_task)
			p->before_task(p->before_arg, &creds_seen);
		t->fn(t);
		pthread_mutex_lock(&p->lock);
	}
}

/* One more worker, under p->lock.  Workers must not take the application's
 * signals (a SIGINT handler in the bfo command, SIGPIPE in tar): all are
 * blocked while spawning so the thread inherits an all-blocked mask. */
static int pool_spawn_locked(struct pool *p)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&p->threads[p->nthreads], NULL, pool_main, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!ret)
		p->nthreads++;
	return ret;
}

/*
 * Threads start on demand, up to nthreads: a small batch needs one or two,
 * and starting them all would add to its fixed cost.  One starts now,
 * so that a pool that cannot have any thread fails here, not on a push.
 */
int pool_start(struct pool *p, unsigned nthreads)
{
	int ret, saved = errno;  /* the caller's errno is left as it was */

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->head = p->tail = NULL;
	p->stop = false;
	p->nthreads = p->idle = p->queued = 0;
	p->max = MAX(nthreads, 1u);
	errno = 0;
	p->nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	p->nice = errno ? INT_MIN : MIN(p->nice + POOL_NICE, 19);
	errno = saved;
	p->threads = calloc(p->max, sizeof(*p->threads));
	if (!p->threads)
		return -ENOMEM;
	pthread_mutex_lock(&p->lock);
	ret = pool_spawn_locked(p);
	pthread_mutex_unlock(&p->lock);
	if (ret) {
		pool_stop(p);
		return ret;
	}
	return 0;
}

void pool_stop(struct pool *p)
{
	unsigned i, n;

	if (!p->threads)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	n = p->nthreads;        /* no thread starts once stop is set */
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < n; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	p->threads = NULL;
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
}

void pool_push(struct pool *p, struct pool_task *t)
{
	t->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	p->queued++;
	/* More tasks waiting than idle workers: start one if allowed.  If
	 * that fails, the workers there are take the task in turn. */
	if (p->queued > p->idle && p->nthreads < p->max && !p->stop)
		pool_spawn_locked(p);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

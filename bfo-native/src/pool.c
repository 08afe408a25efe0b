/* SPDX-License-Identifier: Apache-2.0 */
/* A fixed set of worker threads with one FIFO of tasks.  The metadata phase
 * and the per-file reads both run here, so the number of threads (and thus
 * of descriptors they hold at once) is bounded by opts.threads. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

/* How much lower than the creating thread the workers run. */
#define POOL_NICE 10

static void *pool_main(void *arg)
{
	struct pool *p = arg;

	/* Pool work (metadata of windows ahead, per-file reads) yields to the
	 * dispatcher and the caller, which are on the critical path: on two
	 * cores, sixteen busy workers at equal priority left the dispatcher an
	 * eighth of a core and stalled the data phase behind work for later
	 * windows.  Raising one's own nice value needs no privilege; failure
	 * only costs speed. */
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, (id_t)gettid());

	if (errno == 0)
		setpriority(PRIO_PROCESS, (id_t)gettid(), MIN(nice_now + POOL_NICE, 19));

	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		struct pool_task *t = p->head;
		if (!t) {               /* stop requested and queue drained */
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		t->next = NULL;
		t->fn(t);
	}
}

int pool_start(struct pool *p, unsigned nthreads)
{
	sigset_t all, old;
	unsigned i;
	int ret = 0;

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->head = p->tail = NULL;
	p->stop = false;
	p->nthreads = 0;
	p->threads = calloc(nthreads, sizeof(*p->threads));
	if (!p->threads)
		return -ENOMEM;
	/* Workers must not take the application's signals (a SIGINT handler
	 * in the bfo command, SIGPIPE in tar): block them all while spawning
	 * so the threads inherit an all-blocked mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < nthreads; i++) {
		ret = -pthread_create(&p->threads[i], NULL, pool_main, p);
		if (ret)
			break;
		p->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		pool_stop(p);
		return ret;
	}
	return 0;
}

void pool_stop(struct pool *p)
{
	unsigned i;

	if (!p->threads)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nthreads; i++)
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
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

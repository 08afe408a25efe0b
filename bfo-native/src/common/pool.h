/* SPDX-License-Identifier: Apache-2.0 */
/* The worker threads: tasks run in the order pushed, threads start on
 * demand up to a bound. */
#ifndef BFO_POOL_H
#define BFO_POOL_H

#include <pthread.h>
#include <stdbool.h>

struct pool_task {
	void (*fn)(struct pool_task *task);
	struct pool_task *next;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pool_task *head, *tail;
	pthread_t *threads;
	unsigned nthreads;      /* started so far (threads grow on demand) */
	unsigned max;           /* at most this many */
	unsigned idle;          /* waiting for a task */
	unsigned queued;        /* tasks not yet taken */
	int nice;               /* the workers' nice value (pool_start's caller + POOL_NICE) */
	/* Set before pool_start, or NULL: called on each worker before each
	 * task, with a word of its own (the read context's makes the worker
	 * take the capabilities of the batch's caller, sysstate.h). */
	void (*before_task)(void *arg, unsigned *seen);
	void *before_arg;
	bool stop;
};

int pool_start(struct pool *p, unsigned nthreads);
void pool_stop(struct pool *p);
void pool_push(struct pool *p, struct pool_task *t);

#endif

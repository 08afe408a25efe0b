/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sender's file list, begun while the connection is still being made:
 * between machines the receiver answers whether it wants a list only once
 * the remote shell has logged in and started it (a third of a second with
 * a cold cache), time in which the sources can already be scanned.  The
 * list batches made meanwhile wait in a bounded queue; a receiver that wants
 * everything instead (a first copy) has the scan stopped and its batches
 * dropped, the walk then doing what a first copy does.
 *
 * The scan runs on a thread of its own; what it would report is kept and
 * said on the run's thread (the callbacks' promise), or dropped with the
 * batches.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "sync.h"

/* List entries made ahead (about 40 MB at most): as copy_sync.c's bound,
 * so that a rerun's whole list of 100,000 files is made while the remote
 * shell logs in and the receiver indexes what it has. */
#define PRESCAN_MAX 131072u

struct deferred {
	char *path;
	int status;
	struct deferred *next;
};

struct prescan {
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t cv;
	struct lbatch *head, *tail;
	unsigned n;                 /* batches queued */
	size_t nent;                /* their entries */
	bool done, stop;
	struct deferred *reps, **last;
	struct bfo_copier *c;
};

bool copy_report_deferred(struct bfo_copier *c, const char *path, int status)
{
	struct prescan *p = c->prescan;
	struct deferred *d;

	if (!p || !pthread_equal(pthread_self(), p->thread))
		return false;
	d = calloc(1, sizeof(*d));
	if (d && (d->path = strdup(path))) {
		d->status = status;
		pthread_mutex_lock(&p->m);
		*p->last = d;
		p->last = &d->next;
		pthread_mutex_unlock(&p->m);
	} else {
		free(d);
	}
	return true;
}

/* What the scan reported so far: said now (on the run's thread), or dropped. */
static void reports(struct bfo_copier *c, struct prescan *p, bool say)
{
	struct deferred *d;

	pthread_mutex_lock(&p->m);
	d = p->reps;
	p->reps = NULL;
	p->last = &p->reps;
	pthread_mutex_unlock(&p->m);
	while (d) {
		struct deferred *next = d->next;

		if (say)
			copy_report(c, d->path, d->status);
		free(d->path);
		free(d);
		d = next;
	}
}

static void emit(struct bfo_copier *c, struct lbatch *b)
{
	struct prescan *p = c->prescan;

	pthread_mutex_lock(&p->m);
	while (p->n && p->nent + b->n > PRESCAN_MAX && !p->stop)
		pthread_cond_wait(&p->cv, &p->m);
	if (p->stop) {
		pthread_mutex_unlock(&p->m);
		lbatch_free(b);
		return;
	}
	if (p->tail)
		p->tail->next = b;
	else
		p->head = b;
	p->tail = b;
	p->n++;
	p->nent += b->n;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->m);
}

static void *lister(void *arg)
{
	struct prescan *p = arg;
	struct bfo_copier *c = p->c;

	for (size_t i = 0; i < c->nsrcs && !atomic_load(&c->cancel); i++) {
		pthread_mutex_lock(&p->m);
		bool stop = p->stop;

		pthread_mutex_unlock(&p->m);
		if (stop)
			break;
		copy_list_source(c, (uint16_t)i, c->srcs[i].arg, &c->srcs[i].st, emit);
	}
	pthread_mutex_lock(&p->m);
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->m);
	return NULL;
}

int copy_prescan_start(struct bfo_copier *c)
{
	struct prescan *p = calloc(1, sizeof(*p));
	sigset_t all, old;
	int ret;

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->m, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->last = &p->reps;
	p->c = c;
	c->prescan = p;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&p->thread, NULL, lister, p);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		c->prescan = NULL;
		free(p);
		return -ret;
	}
	return 0;
}

void copy_prescan_take(struct bfo_copier *c, void (*use)(struct bfo_copier *c, struct lbatch *b))
{
	struct prescan *p = c->prescan;

	for (;;) {
		struct lbatch *b;

		pthread_mutex_lock(&p->m);
		while (!p->head && !p->done)
			pthread_cond_wait(&p->cv, &p->m);
		b = p->head;
		if (b) {
			p->head = b->next;
			if (!p->head)
				p->tail = NULL;
			p->n--;
			p->nent -= b->n;
			b->next = NULL;
			pthread_cond_broadcast(&p->cv);
		}
		pthread_mutex_unlock(&p->m);
		reports(c, p, true);
		if (!b)
			break;
		use(c, b);
	}
	pthread_join(p->thread, NULL);
	reports(c, p, true);
	c->prescan = NULL;
	pthread_mutex_destroy(&p->m);
	pthread_cond_destroy(&p->cv);
	free(p);
}

void copy_prescan_drop(struct bfo_copier *c)
{
	struct prescan *p = c->prescan;

	if (!p)
		return;
	pthread_mutex_lock(&p->m);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->m);
	pthread_join(p->thread, NULL);
	while (p->head) {
		struct lbatch *b = p->head;

		p->head = b->next;
		lbatch_free(b);
	}
	reports(c, p, false);
	c->prescan = NULL;
	pthread_mutex_destroy(&p->m);
	pthread_cond_destroy(&p->cv);
	free(p);
	/* what the list learned goes with it: the walk starts again */
	copy_list_free(c);
	c->list_errors = false;
	c->list_tree_bytes = 0;
}

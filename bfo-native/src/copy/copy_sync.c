/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A local run that compares through the destination's index (copy.h,
 * "copy_sync.c"): the index is built on a thread of its own while the
 * sources are listed; each list batch is decided against it, told
 * (BFO_COPY_DRY_RUN: only told) and applied; at the end --delete and the
 * directories' times.
 *
 * Both scans take about as long on a tree that did not change, so the
 * listing does not stop at its first batch to wait for the index: batches
 * made before the index is there wait in a queue (PENDING_MAX entries,
 * about 40 MB at most) and are decided, in their order, once it is.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "copy.h"
#include "dindex.h"
#include "filter.h"
#include "sync.h"
#include "test_hooks.h"

#define IX_FAILS_MAX 64u            /* unreadable directories named */
#define PENDING_MAX 131072u         /* list entries made ahead of the index */

struct ixjob {
	pthread_t thread;
	bool joined;
	atomic_bool built;          /* the thread's work is done: a join does not wait */
	struct lbatch *pend, **pend_last;   /* list batches waiting for the index */
	size_t npend;               /* their entries */
	int ret;
	struct dindex *ix;
	struct dindex_copy *copies;
	unsigned n;
	struct bfo_copier *c;
	/* failures, named on the run's thread after the join */
	char *fails[IX_FAILS_MAX];
	int status[IX_FAILS_MAX];
	unsigned nfails;
	uint64_t more;
};

static void ix_failed(void *arg, const char *path, int status)
{
	struct ixjob *j = arg;

	if (j->nfails < IX_FAILS_MAX && (j->fails[j->nfails] = strdup(path)))
		j->status[j->nfails++] = status;
	else
		j->more++;
}

static void *ix_main(void *arg)
{
	struct ixjob *j = arg;
	struct bfo_copier *c = j->c;

	j->ret = dindex_build(&j->ix, c->dst_fd, c->root, j->copies, j->n, c->filter, &c->ro,
			      (c->flags & BFO_COPY_CHECKSUM ? DINDEX_HASH : 0) |
			      (c->archive ? DINDEX_XATTRS : 0), ix_failed, j, &c->cancel);
	if (bfo_test_hooks.index_built)
		bfo_test_hooks.index_built(bfo_test_hooks.arg);
	atomic_store(&j->built, true);
	return NULL;
}

static void on_deleted(void *arg, const char *path)
{
	struct bfo_copier *c = arg;

	if (c->item)
		c->item(c->item_arg, '-', path);
}

static void on_failed(void *arg, const char *path, int status)
{
	copy_report(arg, path, status);
}

int copy_sync_start(struct bfo_copier *c)
{
	struct ixjob *j = calloc(1, sizeof(*j));
	sigset_t all, old;
	int ret;

	c->sync = (struct sync){ .who = &c->who, .flags = c->flags, .nsrc = (unsigned)c->nsrcs,
				 .rootfd = c->dst_fd, .cancel = &c->cancel, .filter = c->filter,
				 .report = on_failed, .deleted = on_deleted, .arg = c,
				 .delete_max = c->delete_max };
	if (!j || !(j->copies = calloc(c->nsrcs + 1, sizeof(*j->copies))) ||
	    !(c->sync.prefix = calloc(2 * (c->nsrcs + 1), sizeof(*c->sync.prefix)))) {
		if (j)
			free(j->copies);
		free(j);
		return -ENOMEM;
	}
	c->sync.fname = c->sync.prefix + c->nsrcs + 1;
	j->c = c;
	j->pend_last = &j->pend;
	for (size_t i = 0; i < c->nsrcs; i++) {
		c->sync.prefix[i] = c->srcs[i].prefix;
		c->sync.fname[i] = c->srcs[i].name;
		/* each place of the destination once, whatever copies hold it;
		 * none of a source the rules leave out (as rsync, which deletes
		 * only in what it sent) */
		if (!copy_covered(c, i) && !(c->filter && *c->srcs[i].name &&
					     filter_excluded(c->filter, c->srcs[i].name, !c->srcs[i].file)))
			j->copies[j->n++] = (struct dindex_copy){ c->srcs[i].prefix, c->srcs[i].name };
	}
	c->ixjob = j;
	if (c->dst_fd < 0) {
		j->joined = true;       /* no destination yet (a dry run): nothing there */
		return 0;
	}
	/* the index's thread leaves signals to the caller's thread (its
	 * build stops when the copier is cancelled) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&j->thread, NULL, ix_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		c->ixjob = NULL;
		free(j->copies);
		free(j);
		return -EAGAIN;
	}
	return 0;
}

struct dindex *copy_sync_index(struct bfo_copier *c)
{
	struct ixjob *j = c->ixjob;

	if (!j)
		return NULL;
	if (!j->joined) {
		if (!atomic_load(&j->built) && bfo_test_hooks.list_waits)
			bfo_test_hooks.list_waits(bfo_test_hooks.arg, j->npend);
		pthread_join(j->thread, NULL);
		j->joined = true;
		for (unsigned i = 0; i < j->nfails; i++) {
			copy_report(c, j->fails[i], j->status[i]);
			free(j->fails[i]);
		}
		if (j->nfails || j->more)
			c->list_errors = true;     /* what is there is not known whole */
		if (j->ret && j->ret != -ECANCELED)     /* (cancelled: the run says so) */
			copy_report(c, c->root, j->ret);
		if (j->ret)
			c->list_errors = true;
		c->sync.ix = j->ix;
	}
	return j->ix;
}

/* b decided against the index (there by now), told, applied; freed. */
static void decide(struct bfo_copier *c, struct lbatch *b)
{
	bool dry = c->flags & BFO_COPY_DRY_RUN;
	char buf[BFO_WPATH_MAX];

	for (size_t i = 0; i < b->n; i++) {
		struct lent *e = &b->e[i];

		e->want = (uint8_t)sync_decide(&c->sync, e);
		if (e->want == WANT_NONE) {
			e->want = WANT_SKIP;
			continue;
		}
		if (e->want == WANT_SKIP) {
			/* (a hard link's later names are not files of their own) */
			if (S_ISREG(e->st.st_mode) && !e->link_rel) {
				pthread_mutex_lock(&c->lock);
				c->st.skipped++;
				pthread_mutex_unlock(&c->lock);
			}
			continue;
		}
		const char *dest = sync_dest(&c->sync, e->src, e->rel, buf, sizeof(buf));

		if (dry && c->item && *dest)
			c->item(c->item_arg, '>', dest);   /* (else once written) */
		if (dry) {
			pthread_mutex_lock(&c->lock);
			if (S_ISREG(e->st.st_mode)) {
				c->st.files++;
				c->st.bytes += (uint64_t)e->st.st_size;
			} else if (*dest) {
				c->st.others++;
			}
			pthread_mutex_unlock(&c->lock);
		}
	}
	pthread_mutex_lock(&c->lock);
	c->st.tree_bytes = c->sync.tree_bytes;
	c->st.listed_files = c->sync.tree_files;
	pthread_mutex_unlock(&c->lock);
	if (!dry)
		copy_list_apply(c, b);
	lbatch_free(b);
	copy_drain(c, 0, false);
}

/* The oldest list batch waiting for the index, taken off the queue; NULL
 * when none waits. */
static struct lbatch *pend_take(struct ixjob *j)
{
	struct lbatch *b = j->pend;

	if (!b)
		return NULL;
	j->pend = b->next;
	if (!j->pend)
		j->pend_last = &j->pend;
	b->next = NULL;
	j->npend -= b->n;
	return b;
}

void copy_sync_flush(struct bfo_copier *c)
{
	struct ixjob *j = c->ixjob;
	struct lbatch *b;

	copy_sync_index(c);
	while (j && (b = pend_take(j)))
		decide(c, b);
}

void copy_sync_emit(struct bfo_copier *c, struct lbatch *b)
{
	struct ixjob *j = c->ixjob;
	size_t max = bfo_test_hooks.list_pending_max ? bfo_test_hooks.list_pending_max : PENDING_MAX;

	if (j && !j->joined && !atomic_load(&j->built) && j->npend + b->n <= max) {
		b->next = NULL;
		*j->pend_last = b;
		j->pend_last = &b->next;
		j->npend += b->n;
		return;
	}
	copy_sync_flush(c);
	decide(c, b);
}

void copy_sync_end(struct bfo_copier *c)
{
	struct ixjob *j = c->ixjob;
	uint64_t deleted = 0;

	if (!j)
		return;
	copy_sync_index(c);
	for (struct lbatch *b; (b = pend_take(j)); )
		lbatch_free(b);         /* (not flushed: a run that failed) */
	/* Nothing is deleted after a failure that may have hidden a source's
	 * entry (a directory not listed: its copy's entries would all seem
	 * gone), or when the run was cancelled or its stream broke.  Each
	 * says its own cause: a cancel (a signal) the caller's, a broken
	 * stream what broke it, a listing what it could not list. */
	bool cancelled = atomic_load(&c->cancel), broke = c->cut || c->send_err ||
			 (c->broken && atomic_load(c->broken));

	if ((c->flags & BFO_COPY_DELETE) && c->sync.ix && !c->list_errors && !cancelled && !broke)
		deleted = sync_delete(&c->sync, c->flags & BFO_COPY_DRY_RUN, on_deleted, on_failed, c);
	else if ((c->flags & BFO_COPY_DELETE) && broke && !cancelled)
		copy_report(c, "--delete: nothing deleted (the stream stopped before the sender's list "
			    "came whole)", -EIO);
	else if ((c->flags & BFO_COPY_DELETE) && c->list_errors && !cancelled)
		copy_report(c, "--delete: nothing deleted (some entries could not be listed)", -EIO);
	/* (cancelled: the run ends now, as it ends without a root's times) */
	if (c->sync.ix && !(c->flags & BFO_COPY_DRY_RUN) && !atomic_load(&c->cancel) &&
	    sync_dirs_fix(&c->sync, on_failed, c))
		c->tail_changed = true;
	if (deleted && !(c->flags & BFO_COPY_DRY_RUN))
		c->tail_changed = true;
	pthread_mutex_lock(&c->lock);
	c->st.deleted = deleted + c->sync.deleted_early;
	c->st.delete_held = c->sync.delete_held;
	c->st.tree_bytes = c->sync.tree_bytes;
	pthread_mutex_unlock(&c->lock);
	dindex_free(j->ix);
	free(j->copies);
	free(j);
	free(c->sync.prefix);
	c->sync = (struct sync){ 0 };
	c->ixjob = NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "arena.h"
#include "common.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
#endif

/* Chunks start on page boundaries: buffers of different groups never share
 * a page, and raw reads may later land in them with O_DIRECT alignment. */
#define CHUNK_ALIGN 4096
_Static_assert(CHUNK_ALIGN % DIRECT_ALIGN == 0, "direct reads need page-aligned chunks");

/*
 * The first time round the ring, each page costs a fault that zeroes it,
 * taken by whoever copies into it first: the dispatcher, on the data
 * path.  In a VM that is slow and erratic (the host backs the guest's free
 * memory anew), and the dispatcher's time is the batch's.  A pool thread
 * (below the dispatcher's priority) populates the pages ahead of the head
 * instead.
 *
 * How far ahead grows with what the arena has handed out (slow start,
 * from one huge page to PREFAULT_AHEAD): populating all of it as soon as
 * a context is made would cost a small batch milliseconds of a core, and
 * as much again to unmap.  Pages stay populated while the context lives,
 * so a context reused for the next batch (bfo_ctx_reset) pays nothing
 * again.
 */
#define PREFAULT_AHEAD (32u << 20)
#define PREFAULT_STEP  (2u << 20)

int arena_init(struct arena *a, size_t size)
{
	a->size = ALIGN_UP(size, CHUNK_ALIGN);
	/* MAP_NORESERVE: the arena is a ceiling, pages are touched on use. */
	a->base = mmap(NULL, a->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a->base == MAP_FAILED) {
		a->base = NULL;
		return -ENOMEM;
	}
	/* Huge pages: a 256 MiB arena costs 128 faults instead of 65,536
	 * the first time round the ring.  Advice only; failure is harmless. */
	madvise(a->base, a->size, MADV_HUGEPAGE);
	a->head = 0;
	a->first = a->last = NULL;
	a->in_use = 0;
	a->pool = NULL;
	a->fault_done = 0;
	a->allocated = 0;
	atomic_init(&a->fault_want, 0);
	atomic_init(&a->fault_running, false);
	atomic_init(&a->fault_stop, false);
	return 0;
}

/* One step per task, then back to the end of the pool's queue: with few
 * threads, metadata work queued meanwhile is not held up behind a whole
 * arena's worth of populating. */
static void prefault_run(struct pool_task *t)
{
	struct arena *a = (struct arena *)((char *)t - offsetof(struct arena, fault_task));
	size_t done = a->fault_done, want = atomic_load(&a->fault_want);

	if (done < want && !atomic_load(&a->fault_stop)) {
		size_t len = MIN((size_t)PREFAULT_STEP, want - done);

		/* Populating never changes bytes, so the dispatcher may be
		 * copying into these pages meanwhile. */
		if (madvise(a->base + done, len, MADV_POPULATE_WRITE) == 0)
			a->fault_done = done += len;
		else    /* kernel < 5.14, no memory: pages are faulted on use, as before */
			atomic_store(&a->fault_stop, true);
	}
	if (done < atomic_load(&a->fault_want) && !atomic_load(&a->fault_stop)) {
		pool_push(a->pool, t);
		return;
	}
	atomic_store(&a->fault_running, false);
	/* A want raised after our load saw us running and pushed nothing:
	 * take it up unless the raiser has. */
	if (done < atomic_load(&a->fault_want) && !atomic_load(&a->fault_stop) &&
	    !atomic_exchange(&a->fault_running, true))
		pool_push(a->pool, t);
}

/* Raise the populated target past the head (by as much as was ever
 * allocated, at least a step, at most PREFAULT_AHEAD); under the caller's
 * lock (one raiser at a time). */
static void prefault_ahead(struct arena *a)
{
	size_t want, ahead = MIN((size_t)PREFAULT_AHEAD, MAX((size_t)PREFAULT_STEP, a->allocated));

	if (!a->pool || atomic_load(&a->fault_stop))
		return;
	want = MIN(a->size, ALIGN_UP(a->head + ahead, PREFAULT_STEP));
	if (want <= atomic_load(&a->fault_want))
		return;
	atomic_store(&a->fault_want, want);
	if (!atomic_exchange(&a->fault_running, true))
		pool_push(a->pool, &a->fault_task);
}

/* Populate ahead on pool's threads from the first allocation on (not
 * before: a context that reads nothing, or only metadata, touches none of
 * its arena). */
void arena_prefault_start(struct arena *a, struct pool *pool)
{
	a->fault_task.fn = prefault_run;
	a->pool = pool;
}

/* No more populating: a task running ends after its current step.  Before
 * pool_stop(), which then waits for it. */
void arena_prefault_stop(struct arena *a)
{
	atomic_store(&a->fault_stop, true);
}

void arena_fini(struct arena *a)
{
	struct chunk *c = a->first, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	if (a->base)
		munmap(a->base, a->size);
	a->base = NULL;
	a->first = a->last = NULL;
}

struct chunk *arena_alloc(struct arena *a, size_t len)
{
	size_t off;
	struct chunk *c;

	len = ALIGN_UP(len ? len : 1, CHUNK_ALIGN);
	if (len > a->size)
		return NULL;
	if (!a->first) {
		off = 0;
	} else {
		size_t tail = a->first->off;
		bool wrapped = a->last->off < tail;

		if (!wrapped && a->size - a->head >= len)
			off = a->head;
		else if (!wrapped && tail >= len)
			off = 0;
		else if (wrapped && tail - a->head >= len)
			off = a->head;
		else
			return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->off = off;
	c->len = len;
	c->refs = 1;
	if (a->last)
		a->last->next = c;
	else
		a->first = c;
	a->last = c;
	a->head = off + len;
	a->in_use += len;
	a->allocated += len;
	prefault_ahead(a);
	return c;
}

void arena_put(struct arena *a, struct chunk *c)
{
	if (!c || --c->refs)
		return;
	c->freed = true;
	a->in_use -= c->len;
	/* Space comes back from the oldest end (the ring's tail)... */
	while (a->first && a->first->freed) {
		struct chunk *f = a->first;

		a->first = f->next;
		if (!a->first)
			a->last = NULL;
		free(f);
	}
	/* ...and from the newest end (its head): a freed newest chunk must
	 * not stay unusable behind an older chunk that is still held. */
	while (a->last && a->last->freed) {
		struct chunk *prev = NULL, *l = a->last;

		for (struct chunk *x = a->first; x != l; x = x->next)
			prev = x;
		if (prev)
			prev->next = NULL;
		else
			a->first = NULL;
		a->last = prev;
		a->head = prev ? prev->off + prev->len : 0;
		free(l);
	}
	if (!a->first)
		a->head = 0;
}

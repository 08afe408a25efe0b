/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

/* Chunks start on page boundaries: buffers of different groups never share
 * a page, and raw reads may later land in them with O_DIRECT alignment. */
#define CHUNK_ALIGN 4096

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
	return 0;
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

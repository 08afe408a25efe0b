/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arena is one mapping used as a ring of chunks.  Chunks are freed in
 * any order but space is reclaimed in allocation order, so the ring never
 * fragments and its pages, once touched, are reused rather than faulted in
 * again for every batch.
 */
#ifndef BFO_ARENA_H
#define BFO_ARENA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

/* Chunks start on a page: the O_DIRECT memory alignment of every block
 * device, so a raw region can be read straight into a file's buffer
 * (plan.c entry_offset, dispatch.c submit_region). */
#define DIRECT_ALIGN 4096u

struct chunk {
	size_t off, len;
	unsigned refs;
	bool freed;
	struct chunk *next;
};

struct arena {
	uint8_t *base;
	size_t size;
	size_t head;            /* next free byte */
	struct chunk *first, *last;
	size_t in_use;          /* bytes held by live chunks */
	/* pages populated ahead of the head on the pool (arena_prefault_start) */
	struct pool *pool;
	struct pool_task fault_task;
	size_t fault_done;      /* [0, fault_done) populated: the running task's */
	size_t allocated;       /* bytes ever allocated: how far ahead to populate */
	atomic_size_t fault_want;
	atomic_bool fault_running, fault_stop;
};

int arena_init(struct arena *a, size_t size);
void arena_prefault_start(struct arena *a, struct pool *pool);
void arena_prefault_stop(struct arena *a);
void arena_fini(struct arena *a);
struct chunk *arena_alloc(struct arena *a, size_t len);
void arena_put(struct arena *a, struct chunk *c);

#endif

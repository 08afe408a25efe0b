/* SPDX-License-Identifier: Apache-2.0 */
/* Per-file reads on the pool: whole files, pieces of large ones, and
 * re-reads of files that changed, for the dispatcher. */
#ifndef BFO_PORTABLE_H
#define BFO_PORTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "plan.h"
#include "pool.h"

struct bfo_ctx;

enum fjob_kind { FJ_WHOLE, FJ_PIECE };
/* Files per pool job: a job reads its files one after another, so a
 * batch saves the thread hand-offs (costly wake-ups, above all in VMs) that
 * one job per file would pay. */
#define FJOB_BATCH 16u

struct fitem {
	uint32_t ei;
	uint8_t *buf;
	uint64_t off, len;         /* FJ_PIECE: range; FJ_WHOLE: len = capacity */
	struct chunk *chunk;       /* own chunk (pieces, re-reads) or NULL */
	int32_t result;            /* 0, or -errno */
	bool changed;              /* metadata differed from the plan's: see fresh */
	bool fresh_ok;             /* fresh holds the file's current metadata */
	bool full;                 /* pseudo: the buffer filled before EOF */
	uint64_t got;              /* pseudo: bytes read, EOF seen */
	struct entry fresh;
};

struct fjob {
	struct pool_task task;
	struct bfo_ctx *ctx;
	struct window *w;
	enum fjob_kind kind;
	uint32_t n;
	struct fjob *next;
	struct fitem items[FJOB_BATCH];
};
void fjob_run(struct pool_task *t);

#endif

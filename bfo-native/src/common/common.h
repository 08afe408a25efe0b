/* SPDX-License-Identifier: Apache-2.0 */
/* What every part of libbfo uses: the export marker, arithmetic, the clock,
 * statistics counters and the trace.  Not installed. */
#ifndef BFO_COMMON_H
#define BFO_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Exported (with the version script, which keeps only bfo_*); everything
 * else is hidden by -fvisibility=hidden. */
#define BFO_API __attribute__((visibility("default")))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#define ALIGN_DOWN(x, a) ((x) / (a) * (a))

static inline uint64_t bfo_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Statistics bumped by several threads at once; read with a relaxed load. */
static inline void stat_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/*
 * BFO_TRACE=1 in the environment (read when a context is created) prints
 * the life of each window on stderr: when its phase 1 ends, when it becomes
 * active, when its groups get memory, when it retires.  For diagnosing the
 * pipeline; one line per window or group, never per file.
 */
extern uint64_t bfo_trace_start;
#define TRACE(fmt, ...)                                                         \
	do {                                                                    \
		if (bfo_trace_start)                                            \
			fprintf(stderr, "bfo-trace %8.3f " fmt "\n",            \
				(double)(bfo_now_ns() - bfo_trace_start) / 1e9,   \
				##__VA_ARGS__);                                 \
	} while (0)

#endif

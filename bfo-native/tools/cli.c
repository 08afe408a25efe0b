/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bfo.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_progress_init(struct cli_progress *p, const char *what, int enabled)
{
	p->enabled = enabled < 0 ? isatty(STDERR_FILENO) : enabled;
	p->what = what;
	p->t0 = p->last = now_ns();
}

void cli_progress_tick(struct cli_progress *p, uint64_t files, uint64_t bytes, bool final)
{
	uint64_t t = now_ns();

	if (!p->enabled || (!final && t - p->last < 250000000ull))
		return;
	p->last = t;
	if (final) {
		fputs("\r\033[K", stderr);
		return;
	}
	double s = (double)(t - p->t0) / 1e9;

	fprintf(stderr, "\r\033[K%s %" PRIu64 " files, %.1f MB, %.0f MB/s", p->what, files,
		(double)bytes / 1e6, s > 0 ? (double)bytes / 1e6 / s : 0.0);
}

int cli_durability(const char *s, uint32_t *out)
{
	if (!strcmp(s, "batch"))
		*out = BFO_DURABILITY_BATCH;
	else if (!strcmp(s, "none"))
		*out = BFO_DURABILITY_NONE;
	else if (!strcmp(s, "each"))
		*out = BFO_DURABILITY_EACH;
	else
		return -1;
	return 0;
}

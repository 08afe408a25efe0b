/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Create: its state (one place, used on tar's thread only) and its life:
 * set up at load, stopped when the plugin turns off, forgotten in a child.
 */
#include "create.h"

struct create_state cr;

void create_init(void)
{
	cr.batch_bytes = settings.arena_bytes / LOT_SHARE;
	cr.held_budget = settings.arena_bytes - settings.arena_bytes / 4;
	cr.sort = tar_sort_mode();
}

/* Stop reading ahead; fds being served stay served (their data is held). */
void create_stop(void)
{
	if (cr.ctx && cr.batch_open) {
		struct bfo_file fs[WAIT_MAX];
		int k;

		bfo_read_cancel(cr.ctx);
		while ((k = bfo_read_wait(cr.ctx, fs, WAIT_MAX, -1)) > 0)
			for (int i = 0; i < k; i++)
				take(&fs[i]);
		batch_over();
	}
	if (cr.ahead) {
		struct bfo_dirahead_stats ds;

		if (bfo_dirahead_stats(cr.ahead, &ds) == 0)
			counters.dirs_ahead += ds.read;
		bfo_dirahead_destroy(cr.ahead);
		cr.ahead = NULL;
	}
}

/* After fork(): libbfo's threads stayed in the parent. */
void create_forget(void)
{
	cr.ctx = NULL;
	cr.ahead = NULL;
}

int create_started(void)
{
	return cr.ctx != NULL;
}

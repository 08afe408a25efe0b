/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What bfo cp, bfo send and bfo recv show the user: failures per entry,
 * progress, --stats, and the exit status of a copier's result.
 */
#ifndef BFO_COPY_UI_H
#define BFO_COPY_UI_H

#include <stdbool.h>

#include "bfo.h"
#include "cli.h"

/* The options bfo cp, bfo send and bfo recv share (cli_opts.h). */
struct copy_args {
	struct bfo_write_opts wo;
	uint32_t flags;             /* BFO_COPY_* */
	bool stats;
	int progress;               /* 1, 0, or -1: when stderr is a terminal */
};

void copy_args_init(struct copy_args *a);
/* Option opt (enum copy_opt) with the index of its value word into a:
 * whether it was one of the shared ones. */
bool copy_args_opt(struct copy_args *a, int opt, int choice);

struct copy_ui {
	const char *cmd;            /* "cp", "send", "recv" */
	struct cli_progress prog;
	struct bfo_copy_callbacks cb;
	bool writes;                /* this side writes: its --stats name the writer */
};

/* progress: 1, 0, or -1 when stderr is a terminal. */
void copy_ui_init(struct copy_ui *ui, const char *cmd, const char *what, int progress,
		  bool writes);
/* c is cancelled on SIGINT/SIGTERM while it runs; NULL after. */
void copy_ui_running(struct bfo_copier *c);
/* The final progress line and, with stats, the statistics. */
void copy_ui_end(struct copy_ui *ui, struct bfo_copier *c, bool stats);
/* The exit status for a copier's return value. */
int copy_ui_exit(int ret);

#endif

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

/* The options bfo cp, bfo send and bfo recv share (getopt letters
 * a r u c S P N h, and the writer's from CLI_WRITE_LONGOPTS). */
#define COPY_UI_LONGOPTS                                          \
	{ "archive", no_argument, 0, 'a' },                       \
	{ "recursive", no_argument, 0, 'r' },                     \
	CLI_WRITE_LONGOPTS,                                       \
	{ "update", no_argument, 0, 'u' },                        \
	{ "checksum", no_argument, 0, 'c' },                      \
	{ "stats", no_argument, 0, 'S' },                         \
	{ "progress", no_argument, 0, 'P' },                      \
	{ "no-progress", no_argument, 0, 'N' },                   \
	{ "help", no_argument, 0, 'h' }

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

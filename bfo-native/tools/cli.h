/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the bfo command's subcommands. */
#ifndef BFO_CLI_H
#define BFO_CLI_H

#include <stdbool.h>
#include <stdint.h>

/* Progress on stderr, at most four times a second, when enabled (by
 * default: when stderr is a terminal). */
struct cli_progress {
	bool enabled;
	const char *what;
	uint64_t t0, last;
};

void cli_progress_init(struct cli_progress *p, const char *what, int enabled);
void cli_progress_tick(struct cli_progress *p, uint64_t files, uint64_t bytes, bool final);

struct bfo_write_opts;

/* The writer's options, shared by the subcommands that write:
 * --durability, --replace, --write-engine. */
#define CLI_WRITE_LONGOPTS                                        \
	{ "durability", required_argument, 0, 'D' },              \
	{ "replace", no_argument, 0, 'f' },                       \
	{ "write-engine", required_argument, 0, 'W' }

/* Apply getopt's opt (one of CLI_WRITE_LONGOPTS' letters) to wo.  Returns
 * 1 when opt was one of them, 0 when not, -1 for a bad value. */
int cli_write_opt(int opt, const char *arg, struct bfo_write_opts *wo);

/* A size with an optional K, M or G suffix (powers of 1024, an optional
 * "iB" or "B" after it).  Returns 0, or -1 when s is not one. */
int cli_size(const char *s, uint64_t *out);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cli_now_ns(void);

/* Report an error of opening the destination dest of cmd; a journal
 * directory refused as not the user's own is named with the reason. */
void cli_dest_error(const char *cmd, const char *dest, int err);

int cmd_cp(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_recover(int argc, char **argv);

#endif

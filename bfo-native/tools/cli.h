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

/* "none", "batch" or "each" to enum bfo_durability; -1 for anything else. */
int cli_durability(const char *s, uint32_t *out);

int cmd_cp(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_recover(int argc, char **argv);

#endif

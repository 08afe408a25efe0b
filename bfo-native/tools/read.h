/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo read and bfo plan: the paths they take (read_input.c), what they
 * print of the files and the batch (read_output.c), and the command
 * (read_cmd.c) that runs the batch between the two.
 */
#ifndef BFO_READ_H
#define BFO_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "bfo.h"

/* ------------------------------------------------------------- input */

/*
 * Paths come from the arguments: files as given, directories walked in
 * parallel (bfo_walk_*) and handed out in inode order across directories,
 * up to --sort-buffer files at a time.  On ext4 and XFS a file's data sits
 * near its inode and both are allocated in creation order within an
 * allocation group, so inode order is close to disk order: the library's
 * windows then cover dense stretches of the device and its metadata phase
 * reads inode tables front to back.
 */
#define SORT_BUFFER_DEFAULT (256u << 10)

struct read_input {
	char **args;
	int nargs, argi;
	bool nul;               /* paths on stdin are NUL-separated */
	bool nofollow;
	size_t sort_buffer;     /* 0: directories walked unsorted */
	struct bfo_ctx *share;  /* the walks' listings go to it (bfo_walk_share) */
	struct bfo_walk *walk;
	char *buf;              /* paths of the walk, laid end to end */
	size_t buf_cap, buf_len, buf_pos;
	uint64_t walk_taken;    /* failures of this walk named so far */
	FILE *stdin_f;
	volatile sig_atomic_t *stop;  /* when set, stdin ends (a signal came) */
	char *line;
	size_t line_cap;
	uint64_t skipped;       /* entries the walks skipped */
	uint64_t walk_errors;   /* directories the walks could not read */
};

/* The next path (malloc'd, the caller's), or NULL when the input is
 * exhausted.  Directories that cannot be read are named on stderr. */
char *input_next(struct read_input *in);

/* The paths a walk under way has handed out and not yet taken, laid end
 * to end as bfo_read_submit_packed() takes them (*len bytes), or NULL when
 * the input is not in a walk (input_next() then).  input_taken() says how
 * many of those bytes the library took.  Submitting the walk's buffer as
 * it is spares a malloc and a copy per path on the thread that feeds the
 * library (70 ms for 100,000 paths beside a busy metadata phase). */
const char *input_packed(struct read_input *in, size_t *len);
void input_taken(struct read_input *in, size_t bytes);

/* Frees what the input holds, a walk under way included. */
void input_end(struct read_input *in);

/* ------------------------------------------------------------- output */

/* Checksums of files delivered whole or in pieces (--checksum). */
struct checksums {
	struct hash_state *open;   /* files whose pieces are still coming */
};

/* Hash what f delivers and print '<xxh128>  <path>' once its file is
 * whole; with_data false (plan, --metadata-only): files delivered whole
 * print nothing, as there are no bytes to hash. */
void checksum_file(struct checksums *c, const struct bfo_file *f, bool with_data);

/* Frees the streaming hashes of files whose last piece never came (a
 * cancelled batch). */
void checksums_end(struct checksums *c);

/* --stats on stderr; skipped: entries the directory walks skipped. */
void print_stats(struct bfo_ctx *ctx, const struct bfo_stats *st, bool plan, uint64_t skipped);

/* --json: the statistics as one JSON line on stdout. */
void print_json(const struct bfo_stats *st, uint64_t skipped);

int cmd_read(int argc, char **argv, bool plan);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What bfo cp, bfo send and bfo recv show the user: failures per entry,
 * progress, --stats, and the exit status of a copier's result.
 */
#ifndef BFO_COPY_UI_H
#define BFO_COPY_UI_H

#include <stdbool.h>
#include <stdint.h>

#include "bfo.h"
#include "cli.h"

/* The options bfo cp, bfo send and bfo recv share (cli_opts.h). */
#define COPY_FILTERS_MAX 4096        /* --exclude and --include rules */

struct copy_args {
	struct bfo_write_opts wo;
	uint32_t flags;             /* BFO_COPY_* */
	bool stats;
	int progress;               /* 1, 0, or -1: when stderr is a terminal */
	bool verbose;               /* -v: each entry on stdout, the summary */
	bool server;                /* --server: the far side of bfo cp */
	bool compress;              /* -z */
	int level;                  /* --compress-level (0: zstd's default, 3) */
	const char **filters;       /* "- PATTERN" / "+ PATTERN", NULL-terminated */
	long long max_delete;       /* --max-delete=N, -1: none */
	unsigned nfilters;
};

void copy_args_init(struct copy_args *a);
/* Option opt (enum copy_opt) with its argument arg and the index of its
 * value word into a: 1 when it was one of the shared ones, 0 when not, -1
 * for a bad argument (said on stderr with the option's name). */
int copy_args_opt(struct copy_args *a, int opt, const char *arg, int choice);
void copy_args_free(struct copy_args *a);
/* The copier's options from a (filters, -z, the item callback of -v
 * and -n, printing on items; NULL: none): 0 or -errno (said). */
int copy_args_apply(const struct copy_args *a, struct bfo_copier *c, const char *cmd, FILE *items);

struct copy_ui {
	const char *cmd;            /* "cp", "send", "recv" */
	struct cli_progress prog;
	struct bfo_copy_callbacks cb;
	bool writes;                /* this side writes: its --stats name the writer */
	bool dry;                   /* a dry run: the summary says so */
	uint64_t held;              /* deletions --max-delete held back */
	bool server;                /* the far side of bfo cp: the near side sums up */
	bool pull;                  /* the near side of bfo cp HOST:SRC (it receives) */
	/* bfo cp HOST:: a broken stream's lines (-EPIPE, -ENODATA) held until
	 * the far side's exit says whether they are news (copy_ui_release) */
	bool hold;
	FILE *hold_f;
	char *hold_text;
	size_t hold_len;
	unsigned hold_lines;
};

/* progress: 1, 0, or -1 when stderr is a terminal. */
void copy_ui_init(struct copy_ui *ui, const char *cmd, const char *what, int progress,
		  bool writes);
/* c is cancelled on SIGINT/SIGTERM while it runs; NULL after. */
void copy_ui_running(struct bfo_copier *c);
/* The final progress line and, with stats, the statistics; with summary
 * (--stats, -v, -n) the summary line. */
void copy_ui_end(struct copy_ui *ui, struct bfo_copier *c, bool stats, bool summary);
/* --replace (the writer's option, in a->wo) and --checksum against the
 * default quick check in a->flags: --replace replaces every file (the
 * copier's BFO_COPY_REPLACE), --checksum compares content.  Returns 0, or
 * -1 when both were given. */
int copy_ui_modes(struct copy_args *a);
/* rsync's SRC/ (the contents of SRC) as the copier's SRC/. : srcs[0..n)
 * with each such name replaced by a malloc'd one (the others kept);
 * free with copy_ui_sources_free. */
char **copy_ui_sources(char *const *srcs, unsigned n);
void copy_ui_sources_free(char **srcs, char *const *orig, unsigned n);
/* A run of c that could not finish (ret < 0) on dest: a full destination
 * in one line (cli_full_error), any other error as cli_dest_error. */
void copy_ui_failed(struct copy_ui *ui, struct bfo_copier *c, const char *dest, int ret);
/* The lines ui held (hold): said when say, else dropped (the far side, or
 * the remote shell, said why the stream broke). */
void copy_ui_release(struct copy_ui *ui, bool say);
/* The exit status for a copier's return value (after copy_ui_end). */
int copy_ui_exit(const struct copy_ui *ui, int ret);

#endif

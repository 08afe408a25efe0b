/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the bfo command's subcommands. */
#ifndef BFO_CLI_H
#define BFO_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <signal.h>

/* Exit status of every subcommand: 0 all done, 1 some files failed (each
 * named on stderr), 2 usage or setup error, 128 + the signal when ended by
 * SIGINT (130) or SIGTERM (143), 11 when the destination's file system
 * or quota is full (the copying commands, bfo write). */
#define CLI_EXIT_SOME_FAILED 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_DEL_LIMIT 25   /* --max-delete stopped the deletions (rsync's 25) */
#define CLI_EXIT_NOSPACE 11     /* the destination's file system (or quota) is full: stopped
				   there, nothing torn (rsync's 11, "error in file I/O") */
#define CLI_EXIT_SIGNALED 128

/* Progress on stderr, at most four times a second, when enabled (by
 * default: when stderr is a terminal): "[what ]N files, X MB, Y MB/s",
 * the rate since init; the final tick clears the line. */
struct cli_progress {
	bool enabled;
	const char *what;       /* NULL: no word before the counts */
	uint64_t t0, last;      /* last 0: the next tick prints */
	bool whole_shown;       /* a copy's line since its listing became whole */
};

/* enabled: 1 on, 0 off, -1 when stderr is a terminal. */
void cli_progress_init(struct cli_progress *p, const char *what, int enabled);
/* Whether a tick now would print: for callers whose counts cost a call. */
bool cli_progress_due(const struct cli_progress *p);
void cli_progress_tick(struct cli_progress *p, uint64_t files, uint64_t bytes, bool final);
/* A copy's line: files and bytes copied, their rates; done (copied and
 * left as they were) of the listed files so far, and once the listing is
 * whole the share done and the time left at the rate so far (ETA),
 * cut to the terminal's width.  The final cli_progress_tick clears it. */
void cli_progress_copy(struct cli_progress *p, uint64_t files, uint64_t bytes, uint64_t done,
		       uint64_t listed, bool whole);

/*
 * SIGINT and SIGTERM end a command within a second, as cp, tar and rsync
 * end: the first is noted in cli_signal and hook (async-signal-safe, may
 * be NULL) called, which stops the work (bfo_copier_cancel,
 * bfo_writer_cancel); the command then ends its batch without a torn file
 * and exits with cli_exit_signal().  The default action comes back for
 * both at once, so a second signal ends bfo where it is (the journal and
 * `bfo recover` cover that, as a crash).  Without restart, a system call
 * the signal interrupts fails with EINTR (a read of stdin that would wait
 * for the writer of a pipe); with it, it goes on (stdout of bfo read, so
 * that no line is cut).
 */
extern volatile sig_atomic_t cli_signal;
void cli_on_signals(void (*hook)(int sig), bool restart);
/* 128 + the signal that came (130 for SIGINT, 143 for SIGTERM). */
int cli_exit_signal(void);

struct bfo_write_opts;

/* The writer's options (rows CO_DURABILITY, CO_REPLACE, CO_WENGINE of
 * cli_opts.h) into wo: whether opt was one of them.  choice: the index of
 * the value word. */
bool cli_write_opt(int opt, int choice, struct bfo_write_opts *wo);

/* A size with an optional K, M or G suffix (powers of 1024, an optional
 * "iB" or "B" after it) from min to max.  Returns 0, or -1 when s is not
 * one (*out then unchanged). */
int cli_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

struct bfo_stats;

/* What read the files of a batch, one line on f after indent: the files
 * of each engine that ran, and within an engine each path (raw: metadata
 * from the inode tables or through statx and FIEMAP; portable: large files
 * in pieces), the files that fell back to a per-file read, and the engine
 * that read most bytes. */
void cli_print_engines(FILE *f, const char *indent, const struct bfo_stats *st);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cli_now_ns(void);

/* Report an error of opening the destination dest of cmd; a journal
 * directory refused as not the user's own is named with the reason. */
void cli_dest_error(const char *cmd, const char *dest, int err);

/* The one line of a run stopped by a full destination (err -ENOSPC or
 * -EDQUOT; needed: bytes the batch in flight still had to write): the file
 * system by its mount point, what was needed, what is left. */
void cli_full_error(const char *cmd, const char *dest, int err, uint64_t needed);

/* A byte count for people (1.2 MB, 340 kB, 12 B) in buf. */
const char *cli_human(uint64_t b, char *buf, size_t len);

int cmd_cp(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_recv(int argc, char **argv);
int cmd_write(int argc, char **argv);
int cmd_recover(int argc, char **argv);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo write DIR: files from a stream on stdin written as batches through
 * the writer, and bfo recover DIR.
 *
 * The stream is a tar archive (--tar: gnu, pax, ustar or v7, plain or
 * compressed with gzip, bzip2, xz, lzma, lzip, zstd, lz4 or compress) or
 * the simple format (the default), one record per entry:
 *
 *   f MODE MTIME SIZE PATH\n   then SIZE bytes: a regular file
 *   d MODE MTIME PATH\n                          a directory
 *   l MODE MTIME LENGTH PATH\n then LENGTH bytes: a symbolic link's target
 *
 * MODE is octal permission bits (up to 7777), MTIME seconds since the epoch
 * (optionally with .NANOSECONDS, or - for the time of writing), PATH is
 * relative to DIR and runs to the end of the line (names holding a newline
 * need --tar).  Both streams are parsed by stream.c, which bounds every
 * number and length (stream.h).  For example:
 *
 *   printf 'f 644 0 5 a/hello\nworld' | bfo write /tmp/out
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "archive_lib.h"
#include "bfo.h"
#include "cli.h"
#include "cli_parse.h"
#include "stream.h"

/* Default batch: 64 MiB or 16,384 entries, whichever comes first. */
#define WBATCH_BYTES (64ull << 20)
#define WBATCH_ENTRIES 16384u

struct wr {
	struct bfo_writer *w;
	struct bfo_wentry *e;       /* each owns its path and data (stream.h) */
	size_t n, cap;
	uint64_t bytes;
	uint64_t files, total, errors;
	struct cli_progress prog;
	bool owner;
	uint64_t batch_bytes, batch_entries;
	int nospace;                /* -ENOSPC or -EDQUOT met: the stream stops there */
	uint64_t needed;            /* bytes of the files it refused in that batch */
};

static _Noreturn void die_oom(void)
{
	fprintf(stderr, "bfo: write: out of memory\n");
	exit(CLI_EXIT_USAGE);
}

static void wr_add(struct wr *r, const struct bfo_wentry *e)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->e = realloc(r->e, r->cap * sizeof(*r->e));
		if (!r->e)
			die_oom();
	}
	r->e[r->n++] = *e;
}

/* Interrupted: the batch being built is dropped, none begins. */
static void wr_drop(struct wr *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free((void *)r->e[i].path);
		free((void *)r->e[i].data);
	}
	r->n = 0;
	r->bytes = 0;
}

static void wr_flush(struct wr *r)
{
	if (cli_signal)
		wr_drop(r);
	if (!r->n)
		return;
	int ret = bfo_writer_write(r->w, r->e, (unsigned)r->n);

	if (ret == -ENOSPC || ret == -EDQUOT)
		r->nospace = ret;
	else if (ret < 0)
		fprintf(stderr, "bfo: write: batch failed: %s\n", bfo_strerror(ret));
	for (size_t i = 0; i < r->n; i++) {
		int st = r->e[i].status;

		if (st == -ECANCELED && cli_signal) {
			r->errors++;            /* not made, and not to be named */
		} else if (st == -ENOSPC || st == -EDQUOT) {
			/* a full file system: said once, at the end (cli_full_error) */
			r->nospace = st;
			r->needed += r->e[i].type == BFO_WTYPE_FILE ? r->e[i].length : 0;
			r->errors++;
		} else if (st) {
			fprintf(stderr, "bfo: write: %s: %s\n", r->e[i].path,
				bfo_strerror(r->e[i].status));
			r->errors++;
		} else if (!(r->e[i].flags & BFO_WENTRY_MORE)) {
			r->files++;
		}
		if (!r->e[i].status && r->e[i].owner_status) {
			/* written, kept as cp -a keeps it */
			fprintf(stderr, "bfo: write: %s: ownership not preserved: %s\n", r->e[i].path,
				bfo_strerror(r->e[i].owner_status));
			r->errors++;
		}
		if (!r->e[i].status && r->e[i].type == BFO_WTYPE_FILE)
			r->total += r->e[i].length;
		free((void *)r->e[i].path);
		free((void *)r->e[i].data);
	}
	r->n = 0;
	r->bytes = 0;
	cli_progress_tick(&r->prog, r->files, r->total, false);
}

static void wr_maybe_flush(struct wr *r)
{
	if (r->bytes >= r->batch_bytes || r->n >= r->batch_entries)
		wr_flush(r);
}

/* Takes an entry of the stream into the batch (stream.h). */
static int wr_entry(void *ctx, struct bfo_wentry *e)
{
	struct wr *r = ctx;

	if (cli_signal || r->nospace) {   /* the stream stops here */
		free((void *)e->path);
		free((void *)e->data);
		return -1;
	}
	wr_add(r, e);
	if (e->type == BFO_WTYPE_FILE)
		r->bytes += e->length;
	wr_maybe_flush(r);
	return 0;
}

/* stdin for libarchive (its own fd reader goes on after EINTR): read once
 * poll() says there are bytes, poll failing with EINTR on a signal; a
 * signal ends the archive (an error, not said: ours). */
static la_ssize_t stdin_read(struct archive *a, void *arg, const void **buf)
{
	static char b[1 << 20];
	struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };

	(void)a;
	(void)arg;
	*buf = b;
	for (;;) {
		if (cli_signal)
			return -1;
		if (poll(&pf, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		ssize_t n = read(STDIN_FILENO, b, sizeof(b));

		if (n >= 0 || errno != EINTR)
			return n;
	}
}

static int write_stream(struct wr *r, bool tar)
{
	struct stream st = { .entry = wr_entry, .ctx = r, .owner = r->owner, .warn = stderr };
	struct archive *a = NULL;
	const char *why;
	int ret;

	if (!tar) {
		ret = stream_simple(&st, stdin);
	} else if ((why = archive_lib_load()) != NULL) {
		fprintf(stderr, "bfo: write: %s\n", why);
		return -1;
	} else if (!(a = stream_tar_reader(true))) {
		die_oom();
	} else if (archive_read_open(a, NULL, NULL, stdin_read, NULL) != ARCHIVE_OK) {
		const char *e = archive_error_string(a);

		if (!cli_signal)
			fprintf(stderr, "bfo: write: %s\n", e ? e : "not an archive bfo reads");
		ret = -1;
	} else {
		ret = stream_tar(&st, a);
	}
	/* Interrupted, the stream may seem cut short: it was us. */
	if (ret < 0 && st.err[0] && !cli_signal)
		fprintf(stderr, "bfo: write: %s%s\n", tar ? "" : "stdin ", st.err);
	if (a)
		archive_read_free(a);
	return ret;
}

struct write_args {
	struct bfo_write_opts wo;
	bool tar, stats;
	uint64_t batch_bytes, batch_entries;
	const char *dir;
};

/* The command line into a: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct write_args *a)
{
	struct cli_parser p;
	int k;

	*a = (struct write_args){ .wo = { .size = sizeof(a->wo) }, .batch_bytes = WBATCH_BYTES,
				  .batch_entries = WBATCH_ENTRIES };
	cli_parse_init(&p, &cli_cmd_write, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0) {
		if (cli_write_opt(k, p.choice, &a->wo))
			continue;
		switch (k) {
		case CO_TAR: a->tar = true; break;
		case CO_STATS: a->stats = true; break;
		case CO_BATCH_BYTES:
		case CO_BATCH_FILES:
			if (cli_size(p.arg, 1, UINT64_MAX,
				     k == CO_BATCH_BYTES ? &a->batch_bytes : &a->batch_entries))
				return cli_bad_value(&p);
			break;
		}
	}
	if (k == CLI_STOP)
		return p.status;
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_write, argc == optind ? "no DIR given" :
				       "one DIR only (bfo write DIR < STREAM)");
	a->dir = argv[optind];
	/* Durable when the command returns: batches may share a syncfs. */
	if (a->wo.durability == BFO_DURABILITY_BATCH)
		a->wo.durability = BFO_DURABILITY_CLOSE;
	return -1;
}

/* Closes the writer, --stats naming how long its close took: the
 * durability point of deferred batches. */
static void close_writer(struct wr *r, const char *dir, bool stats)
{
	struct bfo_write_stats st;
	uint64_t t_close;
	int ret;

	bfo_writer_stats(r->w, &st);
	t_close = cli_now_ns();
	ret = bfo_writer_close(r->w);
	t_close = cli_now_ns() - t_close;
	if (ret && !cli_signal && !r->nospace) {   /* (a full file system: said after) */
		fprintf(stderr, "bfo: write: %s: %s\n", dir, bfo_strerror(ret));
		r->errors++;
	}
	cli_progress_tick(&r->prog, r->files, r->total, true);
	if (stats)
		fprintf(stderr, "bfo write: %" PRIu64 " entries, %.1f MB, %" PRIu64 " errors; engine %s, "
			"%" PRIu64 " batches, %" PRIu64 " syncs, %" PRIu64 " clones; seconds: manifest %.3f, "
			"data %.3f, sync %.3f, close %.3f\n",
			r->files, (double)r->total / 1e6, r->errors, bfo_wengine_name((int)st.engine),
			st.batches, st.syncs, st.clones, (double)st.ns_manifest / 1e9,
			(double)st.ns_data / 1e9, (double)st.ns_sync / 1e9, (double)t_close / 1e9);
}

static struct bfo_writer *volatile running_writer;

static void cancel_writer(int sig)
{
	struct bfo_writer *w = running_writer;

	(void)sig;
	if (w)
		bfo_writer_cancel(w);   /* async-signal-safe */
}

/* The batches an interrupt left journalled, and what finishes them. */
static void interrupted_note(const char *dir)
{
	char j[PATH_MAX];
	struct stat st;

	if (snprintf(j, sizeof(j), "%s/.bfo-journal", dir) < (int)sizeof(j) && lstat(j, &st) == 0)
		fprintf(stderr, "bfo: write: interrupted: the batches not yet durable are journalled in %s; "
			"'bfo recover %s' (or the next bfo write or cp there) checks them\n", j, dir);
}

int cmd_write(int argc, char **argv)
{
	struct write_args a;
	struct wr r;
	int ret = parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	r = (struct wr){ .batch_bytes = a.batch_bytes, .batch_entries = a.batch_entries,
			 .owner = geteuid() == 0 };
	ret = bfo_writer_open(&r.w, a.dir, &a.wo);
	if (ret) {
		cli_dest_error("write", a.dir, ret);
		return CLI_EXIT_USAGE;
	}
	cli_progress_init(&r.prog, "written", -1);
	running_writer = r.w;
	/* No SA_RESTART: a read of stdin waiting on a pipe ends at once. */
	cli_on_signals(cancel_writer, false);
	ret = write_stream(&r, a.tar);
	wr_flush(&r);
	running_writer = NULL;
	close_writer(&r, a.dir, a.stats);
	free(r.e);
	if (cli_signal) {
		interrupted_note(a.dir);
		return cli_exit_signal();
	}
	if (r.nospace) {
		cli_full_error("write", a.dir, r.nospace, r.needed);
		return CLI_EXIT_NOSPACE;
	}
	if (ret < 0)
		return CLI_EXIT_USAGE;
	return r.errors ? CLI_EXIT_SOME_FAILED : 0;
}

int cmd_recover(int argc, char **argv)
{
	struct bfo_recover_stats st;
	struct cli_parser p;
	int ret;

	cli_parse_init(&p, &cli_cmd_recover, argc, argv);
	while ((ret = cli_parse_next(&p)) >= 0)
		;
	if (ret == CLI_STOP)
		return p.status;
	if (argc - optind != 1)
		return cli_usage_error(&cli_cmd_recover, argc == optind ? "no DIR given" : "one DIR only");
	ret = bfo_journal_recover(argv[optind], &st);
	if (ret < 0) {
		cli_dest_error("recover", argv[optind], ret);
		return CLI_EXIT_USAGE;
	}
	printf("bfo recover: %d unfinished batch%s; %" PRIu64 " files complete, %" PRIu64
	       " finished from a stem, %" PRIu64 " torn or temporary files removed\n",
	       ret, ret == 1 ? "" : "es", st.complete, st.finished, st.removed);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* bfo cp: the copier (bfo_copier_*, src/copy.c) with cp's command line. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bfo.h"
#include "cli.h"

static struct bfo_copier *running;

static void on_signal(int sig)
{
	(void)sig;
	if (running)
		bfo_copier_cancel(running);   /* async-signal-safe */
}

static void on_error(void *arg, const char *path, int status)
{
	(void)arg;
	fprintf(stderr, "bfo: cp: %s: %s\n", path, bfo_strerror(status));
}

static void on_progress(void *arg, const struct bfo_copy_stats *st)
{
	cli_progress_tick(arg, st->files, st->bytes, false);
}

struct cp_args {
	struct bfo_write_opts wo;
	uint32_t flags;         /* BFO_COPY_* */
	bool stats;
	int progress;           /* 1, 0, or -1: when stderr is a terminal */
	char **srcs;
	unsigned nsrcs;
	const char *dst;
};

static void help(void)
{
	printf("usage: bfo cp [-a] [--durability none|batch|each] [--replace]\n"
	       "              [--write-engine auto|stem|batched|uring] [--stats] SRC... DST\n\n"
	       "Copies like cp -r (with -a like cp -a: modes, owner as root, times, links,\n"
	       "special files, xattrs), reading the sources as batches in disk order and\n"
	       "writing the copy as batches, one durability point each (default --durability\n"
	       "batch: durable when bfo cp returns). An existing destination file is an\n"
	       "error unless --replace.\n");
}

/* The command line into a: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct cp_args *a)
{
	static const struct option longopts[] = {
		{ "archive", no_argument, 0, 'a' },
		{ "recursive", no_argument, 0, 'r' },
		CLI_WRITE_LONGOPTS,
		{ "stats", no_argument, 0, 'S' },
		{ "progress", no_argument, 0, 'P' },
		{ "no-progress", no_argument, 0, 'N' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int opt;

	*a = (struct cp_args){ .wo = { .size = sizeof(a->wo) }, .progress = -1 };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "arfh", longopts, NULL)) != -1) {
		int w = cli_write_opt(opt, optarg, &a->wo);

		if (w < 0)
			goto usage;
		if (w)
			continue;
		switch (opt) {
		case 'a': a->flags |= BFO_COPY_ARCHIVE; break;
		case 'r': break;
		case 'S': a->stats = true; break;
		case 'P': a->progress = 1; break;
		case 'N': a->progress = 0; break;
		case 'h':
			help();
			return 0;
		default:
			goto usage;
		}
	}
	if (argc - optind < 2)
		goto usage;
	a->srcs = argv + optind;
	a->nsrcs = (unsigned)(argc - optind - 1);
	a->dst = argv[argc - 1];
	return -1;
usage:
	fprintf(stderr, "usage: bfo cp [-a] [--durability none|batch|each] [--replace] SRC... DST\n");
	return CLI_EXIT_USAGE;
}

static void print_stats(const struct bfo_copy_stats *st)
{
	fprintf(stderr, "bfo cp: %" PRIu64 " files, %" PRIu64 " other entries, %.1f MB, %" PRIu64
		" errors in %.3f s; read engine %s, write engine %s, %" PRIu64 " batches\n",
		st->files, st->others, (double)st->bytes / 1e6, st->errors, (double)st->ns_total / 1e9,
		bfo_engine_name((int)st->read_engine), bfo_wengine_name((int)st->write_engine),
		st->batches);
}

/* The exit status of bfo_copier_run()'s ret. */
static int exit_status(int ret)
{
	if (ret == -ECANCELED)
		return CLI_EXIT_INTERRUPTED;
	/* The destination refused (not a directory, its journal not ours). */
	if (ret < 0)
		return ret == -ENOTDIR || ret == -EINVAL || ret == -ELOOP || ret == -EPERM ?
		       CLI_EXIT_USAGE : CLI_EXIT_SOME_FAILED;
	return ret ? CLI_EXIT_SOME_FAILED : 0;
}

int cmd_cp(int argc, char **argv)
{
	struct cp_args a;
	struct cli_progress prog;
	struct bfo_copy_callbacks cb = { .error = on_error, .progress = on_progress, .arg = &prog };
	struct bfo_copy_stats st;
	struct bfo_copier *c;
	int ret = parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	cli_progress_init(&prog, "copied", a.progress);
	ret = bfo_copier_create(&c, NULL, &a.wo, a.flags, &cb);
	if (ret) {
		fprintf(stderr, "bfo: cp: %s\n", bfo_strerror(ret));
		return CLI_EXIT_USAGE;
	}
	running = c;
	cli_on_signals(on_signal);
	ret = bfo_copier_run(c, (const char *const *)a.srcs, a.nsrcs, a.dst);
	running = NULL;
	bfo_copier_stats(c, &st);
	cli_progress_tick(&prog, st.files, st.bytes, true);
	if (ret < 0 && ret != -ECANCELED)
		cli_dest_error("cp", a.dst, ret);
	if (a.stats)
		print_stats(&st);
	bfo_copier_destroy(c);
	return exit_status(ret);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo send SRC... > STREAM and bfo recv DST < STREAM: the two halves of a
 * copy between machines (bfo_copier_send/recv), over any transport: ssh,
 * a pipe, kubectl exec.  bfo cp HOST:... runs them itself.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bfo.h"
#include "cli.h"
#include "copy_ui.h"

struct sr_args {
	struct bfo_write_opts wo;
	uint32_t flags;
	bool stats;
	int progress;
	int first;                  /* argv index of the first path */
};

static const struct option longopts[] = {
	COPY_UI_LONGOPTS,
	{ 0, 0, 0, 0 },
};

static const char send_usage[] = "usage: bfo send [-a] [--stats] [--progress] SRC... > STREAM\n";
static const char recv_usage[] =
	"usage: bfo recv [-a] [--durability none|batch|each] [--replace | --update [--checksum]]\n"
	"                [--write-engine auto|stem|batched|uring] [--stats] DST < STREAM\n";

/* Options of either command (send takes no write options): -1 to go on,
 * or the exit status. */
static int parse(int argc, char **argv, bool recv, struct sr_args *a)
{
	int opt;

	*a = (struct sr_args){ .wo = { .size = sizeof(a->wo) }, .progress = -1 };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "arfuch", longopts, NULL)) != -1) {
		int w = recv ? cli_write_opt(opt, optarg, &a->wo) : 0;

		if (w < 0)
			goto usage;
		if (w)
			continue;
		switch (opt) {
		case 'a': a->flags |= BFO_COPY_ARCHIVE; break;
		case 'r': break;
		case 'u': if (!recv) goto usage; a->flags |= BFO_COPY_UPDATE; break;
		case 'c': if (!recv) goto usage; a->flags |= BFO_COPY_CHECKSUM; break;
		case 'S': a->stats = true; break;
		case 'P': a->progress = 1; break;
		case 'N': a->progress = 0; break;
		case 'h':
			fputs(recv ? recv_usage : send_usage, stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (recv ? argc - optind != 1 : argc - optind < 1)
		goto usage;
	if ((a->flags & BFO_COPY_CHECKSUM) && !(a->flags & BFO_COPY_UPDATE)) {
		fprintf(stderr, "bfo: recv: --checksum goes with --update\n");
		return CLI_EXIT_USAGE;
	}
	a->first = optind;
	return -1;
usage:
	fputs(recv ? recv_usage : send_usage, stderr);
	return CLI_EXIT_USAGE;
}

/* Run send (on stdout) or recv (from stdin) with the parsed options. */
static int run(bool recv, struct sr_args *a, char **paths, int npaths)
{
	const char *cmd = recv ? "recv" : "send";
	struct copy_ui ui;
	struct bfo_copier *c;
	int ret;

	copy_ui_init(&ui, cmd, recv ? "received" : "sent", a->progress, recv);
	ret = bfo_copier_create(&c, NULL, &a->wo, a->flags, &ui.cb);
	if (ret) {
		fprintf(stderr, "bfo: %s: %s\n", cmd, bfo_strerror(ret));
		return CLI_EXIT_USAGE;
	}
	copy_ui_running(c);
	ret = recv ? bfo_copier_recv(c, STDIN_FILENO, paths[0]) :
		     bfo_copier_send(c, (const char *const *)paths, (unsigned)npaths, STDOUT_FILENO);
	/* -EPIPE: said through the error callback ("the receiver went away"). */
	copy_ui_running(NULL);
	if (ret < 0 && ret != -EPIPE && ret != -ECANCELED && recv && ret != -EBADMSG &&
		 ret != -EPROTONOSUPPORT && ret != -ENODATA)
		cli_dest_error(cmd, paths[0], ret);   /* stream errors were said with their reason */
	else if (ret < 0 && ret != -EPIPE && ret != -ECANCELED && !recv)
		fprintf(stderr, "bfo: send: %s\n", bfo_strerror(ret));
	copy_ui_end(&ui, c, a->stats);
	bfo_copier_destroy(c);
	return ret == -EPIPE ? CLI_EXIT_SOME_FAILED : copy_ui_exit(ret);
}

int cmd_send(int argc, char **argv)
{
	struct sr_args a;
	int ret = parse(argc, argv, false, &a);

	if (ret >= 0)
		return ret;
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "bfo: send: the stream would go to a terminal: pipe it to bfo recv\n");
		return CLI_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);         /* a receiver gone is -EPIPE, said above */
	return run(false, &a, argv + a.first, argc - a.first);
}

int cmd_recv(int argc, char **argv)
{
	struct sr_args a;
	int ret = parse(argc, argv, true, &a);

	if (ret >= 0)
		return ret;
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "bfo: recv: the stream would come from a terminal: pipe bfo send to it\n");
		return CLI_EXIT_USAGE;
	}
	return run(true, &a, argv + a.first, 1);
}

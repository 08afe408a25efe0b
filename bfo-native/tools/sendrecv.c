/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo send SRC... > STREAM and bfo recv DST < STREAM: the two halves of a
 * copy between machines (bfo_copier_send/recv), over any transport: ssh,
 * a pipe, kubectl exec.  bfo cp HOST:... runs them itself.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bfo.h"
#include "cli.h"
#include "cli_parse.h"
#include "copy_ui.h"

struct sr_args {
	struct copy_args c;
	int first;                  /* argv index of the first path */
};

/* Options of either command (their tables say which each takes): -1 to
 * go on, or the exit status. */
static int parse(int argc, char **argv, bool recv, struct sr_args *a)
{
	const struct cli_cmd *cmd = recv ? &cli_cmd_recv : &cli_cmd_send;
	struct cli_parser p;
	int k;

	copy_args_init(&a->c);
	cli_parse_init(&p, cmd, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0)
		copy_args_opt(&a->c, k, p.choice);
	if (k == CLI_STOP)
		return p.status;
	if (recv && argc - optind != 1)
		return cli_usage_error(cmd, argc == optind ? "no DST given" : "one DST only (bfo recv DST < STREAM)");
	if (!recv && argc == optind)
		return cli_usage_error(cmd, "no SRC given");
	if ((a->c.flags & BFO_COPY_CHECKSUM) && !(a->c.flags & BFO_COPY_UPDATE))
		return cli_usage_error(cmd, "--checksum goes with --update");
	a->first = optind;
	return -1;
}

/* Run send (on stdout) or recv (from stdin) with the parsed options. */
static int run(bool recv, struct sr_args *a, char **paths, int npaths)
{
	const char *cmd = recv ? "recv" : "send";
	struct copy_ui ui;
	struct bfo_copier *c;
	int ret;

	copy_ui_init(&ui, cmd, recv ? "received" : "sent", a->c.progress, recv);
	ret = bfo_copier_create(&c, NULL, &a->c.wo, a->c.flags, &ui.cb);
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
	copy_ui_end(&ui, c, a->c.stats);
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

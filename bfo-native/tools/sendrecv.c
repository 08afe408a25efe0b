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
	if (recv)
		a->c.flags |= BFO_COPY_UPDATE | BFO_COPY_INTO;   /* as bfo cp */
	cli_parse_init(&p, cmd, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0)
		if (copy_args_opt(&a->c, k, p.arg, p.choice) < 0) {
			copy_args_free(&a->c);
			return cli_bad_value(&p);
		}
	if (k == CLI_STOP) {
		copy_args_free(&a->c);
		return p.status;
	}
	if (recv && argc - optind != 1)
		return cli_usage_error(cmd, argc == optind ? "no DST given" : "one DST only (bfo recv DST < STREAM)");
	if (!recv && argc == optind)
		return cli_usage_error(cmd, "no SRC given");
	if (recv && copy_ui_modes(&a->c))
		return cli_usage_error(cmd, "--checksum compares what is there, --replace replaces it: "
				       "one or the other");
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
	ui.dry = a->c.flags & BFO_COPY_DRY_RUN;
	ui.server = a->c.server;
	/* items: never on stdout where the stream or the answers go */
	if (copy_args_apply(&a->c, c, cmd, recv && !a->c.server ? stdout : recv ? NULL : stderr)) {
		bfo_copier_destroy(c);
		return CLI_EXIT_USAGE;
	}
	copy_ui_running(c);
	/* --server: the far side of bfo cp, the back channel on the other
	 * standard stream */
	if (recv) {
		ret = bfo_copier_recv_duplex(c, STDIN_FILENO, a->c.server ? STDOUT_FILENO : -1, paths[0]);
	} else {
		/* rsync's SRC/: the contents, as SRC/. */
		char **v = copy_ui_sources(paths, (unsigned)npaths);

		ret = v ? bfo_copier_send_duplex(c, (const char *const *)v, (unsigned)npaths, STDOUT_FILENO,
						 a->c.server ? STDIN_FILENO : -1) : -ENOMEM;
		copy_ui_sources_free(v, paths, (unsigned)npaths);
	}
	/* -EPIPE: said through the error callback ("the receiver went away"). */
	copy_ui_running(NULL);
	if (ret < 0 && ret != -EPIPE && ret != -ECANCELED && recv && ret != -EBADMSG &&
		 ret != -EPROTONOSUPPORT && ret != -ENODATA)
		copy_ui_failed(&ui, c, paths[0], ret);   /* stream errors were said with their reason */
	else if (ret < 0 && ret != -EPIPE && ret != -ECANCELED && !recv)
		fprintf(stderr, "bfo: send: %s\n", bfo_strerror(ret));
	/* (the far side of bfo cp leaves the summary to the near side) */
	copy_ui_end(&ui, c, a->c.stats, !a->c.server && (a->c.verbose || (a->c.flags & BFO_COPY_DRY_RUN)));
	bfo_copier_destroy(c);
	copy_args_free(&a->c);
	return ret == -EPIPE ? CLI_EXIT_SOME_FAILED : copy_ui_exit(&ui, ret);
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo - the command line of libbfo: the subcommands and their usage.
 *
 *   bfo read [OPTIONS] PATH...   read files (directories recursively; - for
 *                                paths on stdin) as batches (read_cmd.c)
 *   bfo plan [OPTIONS] PATH...   print the ORDER_LIST summary, read nothing
 *   bfo cp, bfo write, bfo recover   (copy.c, write_cmd.c)
 *   bfo send, bfo recv               (sendrecv.c; bfo cp HOST: runs them)
 *   bfo version
 *
 * Each command's options, synopsis and description are in one table
 * (cli_opts.c), from which its parser, its --help and its man page come.
 *
 * Exit status: 0 every file read, 1 some files failed (each named on
 * stderr), 2 usage or setup error.
 */
#include <stdio.h>
#include <string.h>

#include "bfo.h"
#include "cli.h"
#include "cli_parse.h"
#include "read.h"

static int cmd_version(int argc, char **argv)
{
	struct cli_parser p;
	int k;

	cli_parse_init(&p, &cli_cmd_version, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0)
		;
	if (k == CLI_STOP)
		return p.status;
	if (optind < argc)
		return cli_usage_error(&cli_cmd_version, "takes no arguments");
	printf("bfo %d.%d.%d (library %d)\n", BFO_VERSION_MAJOR, BFO_VERSION_MINOR,
	       BFO_VERSION_PATCH, bfo_version());
	return 0;
}

static int cmd_read_only(int argc, char **argv)
{
	return cmd_read(argc, argv, false);
}

static int cmd_plan(int argc, char **argv)
{
	return cmd_read(argc, argv, true);
}

/* What runs each command of cli_cmds[]. */
static const struct {
	const struct cli_cmd *cmd;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ &cli_cmd_read, cmd_read_only }, { &cli_cmd_plan, cmd_plan }, { &cli_cmd_cp, cmd_cp },
	{ &cli_cmd_send, cmd_send }, { &cli_cmd_recv, cmd_recv }, { &cli_cmd_write, cmd_write },
	{ &cli_cmd_recover, cmd_recover }, { &cli_cmd_version, cmd_version },
};

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;

	if (!name) {
		cli_help_all(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(name, "--version"))
		name = "version";
	if (!strcmp(name, "help") || !strcmp(name, "--help") || !strcmp(name, "-h")) {
		const struct cli_cmd *c = argc > 2 ? cli_cmd_find(argv[2]) : NULL;

		if (argc > 2 && !c) {
			fprintf(stderr, "bfo: unknown command '%s'; see 'bfo --help'\n", argv[2]);
			return CLI_EXIT_USAGE;
		}
		if (c)
			cli_help(c, stdout);
		else
			cli_help_all(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].cmd->name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "bfo: unknown command '%s'; see 'bfo --help'\n", name);
	return CLI_EXIT_USAGE;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line of a bfo command parsed against its table (cli_opts.h)
 * with getopt_long, and the help printed from the same table.
 *
 *	struct cli_parser p;
 *	int k;
 *
 *	cli_parse_init(&p, &cli_cmd_read, argc, argv);
 *	while ((k = cli_parse_next(&p)) >= 0)
 *		switch (k) {
 *		case RO_ENGINE: o.engine = p.choice; break;
 *		case RO_THREADS: if (bad(p.arg)) return cli_bad_value(&p); ...
 *		}
 *	if (k == CLI_STOP)
 *		return p.status;      (--help: 0; a usage error, already said: 2)
 *	operands from argv[optind]
 *
 * Errors name the command and the option: "bfo: read: --engine: invalid
 * value 'bogus' (auto, raw, uring, portable)"; an unknown option is one
 * line and "see 'bfo read --help'".
 */
#ifndef BFO_CLI_PARSE_H
#define BFO_CLI_PARSE_H

#include <getopt.h>
#include <stdio.h>

#include "cli_opts.h"

/* The most rows a table may have. */
#define CLI_OPTS_MAX 64

/* cli_parse_next(): the options are over (operands from optind on)... */
#define CLI_END (-1)
/* ...or the command is over: exit with p->status (said on stderr). */
#define CLI_STOP (-2)

struct cli_parser {
	const struct cli_cmd *cmd;
	int argc;
	char **argv;
	const struct cli_opt *opt;      /* the option just returned */
	const char *arg;                /* its argument, or NULL */
	int choice;                     /* index of arg in opt->values */
	int status;                     /* the exit status after CLI_STOP */
	struct option longopts[CLI_OPTS_MAX + 1];
	char shortopts[3 * CLI_OPTS_MAX + 2];
};

void cli_parse_init(struct cli_parser *p, const struct cli_cmd *cmd, int argc, char **argv);

/* The next option's row (its enumerator), CLI_END, or CLI_STOP after
 * --help (status 0) or a usage error said on stderr (status 2).  Values
 * of options with a value list are checked here. */
int cli_parse_next(struct cli_parser *p);

/* The option just returned had an argument the command cannot take: said
 * with what it accepts.  Returns the exit status (2). */
int cli_bad_value(const struct cli_parser *p);

/* "bfo: CMD: MESSAGE" and "see 'bfo CMD --help'" on stderr.  Returns the
 * exit status (2). */
__attribute__((format(printf, 2, 3)))
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...);

/* bfo CMD --help. */
void cli_help(const struct cli_cmd *cmd, FILE *f);

/* bfo --help: the commands and what is common to them. */
void cli_help_all(FILE *f);

/* The command named name, or NULL. */
const struct cli_cmd *cli_cmd_find(const char *name);

#endif

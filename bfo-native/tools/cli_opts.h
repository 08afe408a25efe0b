/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bfo command's options: one table per command.  A row is an option's
 * long name, short letter, argument, accepted values and help line; the
 * table also holds the command's synopsis and description.  getopt's
 * options (cli_parse.c), `bfo CMD --help` and the man pages (man/mkman.c,
 * run by the build) all come from these tables, so none can disagree with
 * another.
 *
 * Adding an option: an enumerator below (its place orders --help), its
 * row in the command's table in cli_opts.c,
 *	[CO_DRY_RUN] = { .name = "dry-run", .letter = 'n', .help = "..." },
 * and its case in the command's switch.  A value list (.values) makes the
 * parser check the argument and hand the index of the word
 * (cli_parser.choice); .arg names the argument (SIZE, N, ...).
 *
 * This file and cli_opts.c use nothing of libbfo but its header's enums, so
 * the man page generator links them alone.
 */
#ifndef BFO_CLI_OPTS_H
#define BFO_CLI_OPTS_H

struct cli_opt {
	const char *name;               /* long name, without "--"; NULL: no such option here */
	char letter;                    /* short option, or 0 */
	const char *arg;                /* its argument's name (SIZE, N, MODE...), NULL: none */
	const char *const *values;      /* the words arg may be (NULL-terminated), NULL: any */
	const char *help;               /* one line */
	const char *accepts;            /* what arg may be, for errors; NULL: said by
					   values, or by arg's name (SIZE, N) */
};

struct cli_cmd {
	const char *name;               /* "read" */
	const char *summary;            /* one line: bfo --help, the man page's NAME */
	const char *const *usage;       /* synopsis lines after "bfo NAME ", NULL-terminated */
	const char *text;               /* description: paragraphs split by an empty line;
					   lines starting with a space are kept as they are */
	const struct cli_opt *opts;     /* indexed by the command's enumerators */
	unsigned nopts;
};

/* Every command, in the order bfo --help lists them; NULL-terminated. */
extern const struct cli_cmd *const cli_cmds[];
extern const struct cli_cmd cli_cmd_read, cli_cmd_plan, cli_cmd_cp, cli_cmd_send,
	cli_cmd_recv, cli_cmd_write, cli_cmd_recover, cli_cmd_version;

/* What bfo --help and bfo.1 say beyond the list of commands. */
extern const char cli_intro_text[];
extern const char cli_exit_text[];

/* The value words, indexed by the library's enum each stands for. */
extern const char *const cli_engines[];       /* enum bfo_engine, up to portable */
extern const char *const cli_orders[];        /* enum bfo_order */
extern const char *const cli_durabilities[];  /* enum bfo_durability, up to each */
extern const char *const cli_wengines[];      /* enum bfo_wengine */

/* bfo read and bfo plan (one table). */
enum read_opt {
	RO_ENGINE, RO_ORDER, RO_CHECKSUM, RO_STATS, RO_JSON, RO_NULL, RO_NOFOLLOW,
	RO_STOP, RO_META, RO_PROGRESS, RO_NOPROGRESS, RO_SORTBUF,
	RO_WFILES, RO_WBYTES, RO_ARENA, RO_GAP, RO_MAXIO, RO_LEXT, RO_LFILE, RO_QD, RO_THREADS,
	RO_HELP,
	RO_N
};

/*
 * bfo cp, send, recv and write: one set of enumerators, each command's
 * table naming only the rows it takes (the others' names NULL), so an
 * option the four share has one case in the code.
 */
enum copy_opt {
	CO_ARCHIVE, CO_RECURSIVE, CO_TAR, CO_DURABILITY, CO_REPLACE, CO_UPDATE, CO_CHECKSUM,
	CO_WENGINE, CO_BATCH_BYTES, CO_BATCH_FILES, CO_RSH, CO_REMOTE_BFO,
	CO_DELETE, CO_MAX_DELETE, CO_DRY_RUN, CO_EXCLUDE, CO_INCLUDE, CO_COMPRESS, CO_COMPRESS_LEVEL,
	CO_VERBOSE, CO_SERVER,
	CO_STATS, CO_PROGRESS, CO_NOPROGRESS, CO_INFO,
	CO_HELP,
	CO_N
};

/* bfo recover and bfo version: --help alone. */
enum help_opt { HO_HELP, HO_N };

#endif

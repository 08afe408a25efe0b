/* SPDX-License-Identifier: Apache-2.0 */
/* Command lines parsed against the option tables, and their help (cli_parse.h). */
#include "cli_parse.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* getopt's value of row i: its letter, else a number past every char. */
#define LONG_ONLY_BASE 256

void cli_parse_init(struct cli_parser *p, const struct cli_cmd *cmd, int argc, char **argv)
{
	struct option *lo = p->longopts;
	char *so = p->shortopts;

	/* A table too large is a bug of this program, found by any run. */
	if (cmd->nopts > CLI_OPTS_MAX)
		abort();
	*p = (struct cli_parser){ .cmd = cmd, .argc = argc, .argv = argv };
	*so++ = ':';                /* ':' for a missing argument, said by us */
	for (unsigned i = 0; i < cmd->nopts; i++) {
		const struct cli_opt *o = &cmd->opts[i];

		if (!o->name)
			continue;
		*lo++ = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
					 o->letter ? o->letter : LONG_ONLY_BASE + (int)i };
		if (o->letter) {
			*so++ = o->letter;
			if (o->arg)
				*so++ = ':';
		}
	}
	*lo = (struct option){ 0 };
	*so = '\0';
	optind = 1;
	opterr = 0;
}

static int stop(struct cli_parser *p, int status)
{
	p->status = status;
	return CLI_STOP;
}

static void list_values(const char *const *v, FILE *f)
{
	for (int i = 0; v[i]; i++)
		fprintf(f, "%s%s", i ? ", " : "", v[i]);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bfo: %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee 'bfo %s --help'\n", cmd->name);
	return CLI_EXIT_USAGE;
}

/* What an argument of this name takes, for an error about it. */
static const char *accepts(const char *arg)
{
	if (!strcmp(arg, "SIZE"))
		return "a number of bytes, with K, M or G for powers of 1024";
	if (!strcmp(arg, "N"))
		return "a whole number from 1";
	return NULL;
}

int cli_bad_value(const struct cli_parser *p)
{
	const struct cli_opt *o = p->opt;
	const char *what = o->accepts ? o->accepts : o->arg ? accepts(o->arg) : NULL;

	fprintf(stderr, "bfo: %s: --%s: invalid value '%s'", p->cmd->name, o->name,
		p->arg ? p->arg : "");
	if (o->values) {
		fputs(" (", stderr);
		list_values(o->values, stderr);
		fputc(')', stderr);
	} else if (what) {
		fprintf(stderr, " (%s)", what);
	}
	fputc('\n', stderr);
	return CLI_EXIT_USAGE;
}

/* The rows whose long name starts with name[0..len); *exact: one equal to it. */
static unsigned prefix_rows(const struct cli_cmd *cmd, const char *name, size_t len,
			    const struct cli_opt **first, bool *exact)
{
	unsigned n = 0;

	*exact = false;
	for (unsigned i = 0; i < cmd->nopts; i++) {
		const struct cli_opt *o = &cmd->opts[i];

		if (!o->name || strncmp(o->name, name, len))
			continue;
		if (strlen(o->name) == len) {
			*first = o;
			*exact = true;
			return 1;
		}
		if (!n++)
			*first = o;
	}
	return n;
}

static int needs_value(struct cli_parser *p, const struct cli_opt *o)
{
	fprintf(stderr, "bfo: %s: --%s needs a value (", p->cmd->name, o->name);
	if (o->values)
		list_values(o->values, stderr);
	else
		fputs(o->accepts ? o->accepts : accepts(o->arg) ? accepts(o->arg) : o->arg, stderr);
	fputs(")\n", stderr);
	return stop(p, CLI_EXIT_USAGE);
}

/* A long option getopt refused (elem is the argument, "--name[=value]"). */
static int long_error(struct cli_parser *p, const char *elem, bool missing)
{
	const char *name = elem + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct cli_opt *o = NULL;
	bool exact;
	unsigned n = prefix_rows(p->cmd, name, len, &o, &exact);

	/* bfo plan takes bfo read's options but those it would ignore: a
	 * user who tries one hears why */
	if (n == 0 && p->cmd == &cli_cmd_plan &&
	    prefix_rows(&cli_cmd_read, name, len, &o, &exact) == 1 && exact)
		return stop(p, cli_usage_error(p->cmd, "--%s is bfo read's: bfo plan reads no data",
					       o->name));
	if (n == 0)
		return stop(p, cli_usage_error(p->cmd, "unknown option '--%.*s'", (int)len, name));
	if (n > 1) {
		fprintf(stderr, "bfo: %s: ambiguous option '--%.*s' (", p->cmd->name, (int)len, name);
		for (unsigned i = 0, k = 0; i < p->cmd->nopts; i++) {
			const char *on = p->cmd->opts[i].name;

			if (on && !strncmp(on, name, len))
				fprintf(stderr, "%s--%s", k++ ? ", " : "", on);
		}
		fprintf(stderr, ")\nsee 'bfo %s --help'\n", p->cmd->name);
		return stop(p, CLI_EXIT_USAGE);
	}
	if (missing || o->arg)
		return needs_value(p, o);
	return stop(p, cli_usage_error(p->cmd, "--%s takes no value", o->name));
}

static const struct cli_opt *row_of(const struct cli_cmd *cmd, int val)
{
	if (val >= LONG_ONLY_BASE)
		return (unsigned)(val - LONG_ONLY_BASE) < cmd->nopts ? &cmd->opts[val - LONG_ONLY_BASE] : NULL;
	for (unsigned i = 0; i < cmd->nopts; i++)
		if (cmd->opts[i].name && cmd->opts[i].letter == val)
			return &cmd->opts[i];
	return NULL;
}

int cli_parse_next(struct cli_parser *p)
{
	int before = optind;
	int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
	const struct cli_opt *o;

	if (c == -1)
		return CLI_END;
	if (c == '?' || c == ':') {
		/* A long option always moves optind past its argument; a short
		 * one inside a cluster ("-xa") does not. */
		const char *elem = optind > before ? p->argv[optind - 1] : NULL;

		if (elem && !strncmp(elem, "--", 2))
			return long_error(p, elem, c == ':');
		o = row_of(p->cmd, optopt);
		if (c == ':' && o)
			return needs_value(p, o);
		return stop(p, cli_usage_error(p->cmd, "unknown option '-%c'", optopt));
	}
	o = row_of(p->cmd, c);
	if (!o)
		return stop(p, cli_usage_error(p->cmd, "unknown option"));
	p->opt = o;
	p->arg = optarg;
	p->choice = -1;
	if (!strcmp(o->name, "help")) {
		cli_help(p->cmd, stdout);
		return stop(p, 0);
	}
	if (o->values) {
		for (int i = 0; o->values[i]; i++)
			if (!strcmp(o->values[i], optarg))
				p->choice = i;
		if (p->choice < 0)
			return stop(p, cli_bad_value(p));
	}
	return (int)(o - p->cmd->opts);
}

/* ------------------------------------------------------------- help */

#define HELP_WIDTH 79
#define HELP_COL 30

/* text as paragraphs filled to width after indent; lines that start with
 * a space are printed as they are. */
static void fill(FILE *f, const char *text, int indent, int width)
{
	const char *s = text;

	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);

		if (len == 0 || *s == ' ') {
			fprintf(f, "%*s%.*s\n", len ? indent : 0, "", (int)len, s);
			s += len + (nl != NULL);
			continue;
		}
		/* One paragraph line of the source: words filled. */
		int col = 0;
		const char *w = s, *end = s + len;

		while (w < end) {
			const char *we = w;

			while (we < end && *we != ' ')
				we++;
			int wl = (int)(we - w);

			if (col && col + 1 + wl > width - indent) {
				fputc('\n', f);
				col = 0;
			}
			fprintf(f, "%*s%.*s", col ? 1 : indent, "", wl, w);
			col += (col ? 1 : 0) + wl;
			w = we;
			while (w < end && *w == ' ')
				w++;
		}
		fputc('\n', f);
		s += len + (nl != NULL);
	}
}

/* words after col already printed, continued at col. */
static void wrap(FILE *f, const char *s, int col, int width)
{
	int at = col;

	while (*s) {
		size_t wl = strcspn(s, " ");

		if (at > col && at + 1 + (int)wl > width) {
			fprintf(f, "\n%*s", col, "");
			at = col;
		}
		if (at > col) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)wl, s);
		at += (int)wl;
		s += wl;
		s += strspn(s, " ");
	}
	fputc('\n', f);
}

/* "  -a, --archive" or "      --engine=auto|raw|uring|portable". */
static int option_left(const struct cli_opt *o, char *buf, size_t len)
{
	int n;

	if (o->letter)
		n = snprintf(buf, len, "  -%c, --%s", o->letter, o->name);
	else
		n = snprintf(buf, len, "      --%s", o->name);
	if (o->values) {
		for (int i = 0; o->values[i] && n < (int)len; i++)
			n += snprintf(buf + n, len - (size_t)n, "%c%s", i ? '|' : '=', o->values[i]);
	} else if (o->arg && n < (int)len) {
		n += snprintf(buf + n, len - (size_t)n, "=%s", o->arg);
	}
	return n;
}

void cli_help(const struct cli_cmd *cmd, FILE *f)
{
	char left[256];

	for (int i = 0; cmd->usage[i]; i++)
		fprintf(f, "%s bfo %s %s\n", i ? "      " : "usage:", cmd->name, cmd->usage[i]);
	fprintf(f, "\n");
	fill(f, cmd->summary, 0, HELP_WIDTH);
	if (cmd->text) {
		fputc('\n', f);
		fill(f, cmd->text, 0, HELP_WIDTH);
	}
	fprintf(f, "\nOptions:\n");
	for (unsigned i = 0; i < cmd->nopts; i++) {
		const struct cli_opt *o = &cmd->opts[i];

		if (!o->name)
			continue;
		int n = option_left(o, left, sizeof(left));

		if (n < HELP_COL - 1)
			fprintf(f, "%-*s", HELP_COL, left);
		else
			fprintf(f, "%s\n%*s", left, HELP_COL, "");
		wrap(f, o->help, HELP_COL, HELP_WIDTH);
	}
}

void cli_help_all(FILE *f)
{
	fprintf(f, "usage: bfo COMMAND [OPTIONS] ARGUMENTS...\n\n");
	fill(f, cli_intro_text, 0, HELP_WIDTH);
	fprintf(f, "\nCommands:\n");
	for (int i = 0; cli_cmds[i]; i++)
		fprintf(f, "  %-9s %s\n", cli_cmds[i]->name, cli_cmds[i]->summary);
	fprintf(f, "\n'bfo COMMAND --help' lists the options of COMMAND; 'man bfo-COMMAND' says more.\n");
	fill(f, cli_exit_text, 0, HELP_WIDTH);
}

const struct cli_cmd *cli_cmd_find(const char *name)
{
	for (int i = 0; cli_cmds[i]; i++)
		if (!strcmp(cli_cmds[i]->name, name))
			return cli_cmds[i];
	return NULL;
}

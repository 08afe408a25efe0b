/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_help: what a new user of the `bfo` command (BFO_CLI) is told.
 *  - `bfo --help` lists the commands (read, plan, cp, send, recv, write,
 *    recover, version); `bfo` alone lists them on stderr, exit 2;
 *  - `bfo CMD --help` (and `bfo help CMD`) prints that command's usage and
 *    its own options, one entry each; every option it lists is accepted by
 *    the command (`bfo CMD --OPT[=VALUE] --help` and `-L [VALUE] --help`
 *    print the same help, exit 0), and the options the issue named are
 *    among them (cp's --update, --replace, --rsh, --remote-bfo...);
 *  - errors name the command and the option: an unknown option is exactly
 *    two lines (the option, "see 'bfo CMD --help'"), a bad value names the
 *    option and the values its help lists, a missing value names the
 *    option;
 *  - the man pages the build wrote (BFO_MANDIR): bfo.1 names every
 *    command, bfo-CMD.1 lists exactly the options of `bfo CMD --help`,
 *    and groff reads each without a warning;
 *  - a man(3) page for every function libbfo.so exports (bfo_mkman3, from
 *    bfo.h's comments), with its synopsis, groff-clean.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

static const char *bfo = BFO_CLI;

#define MAX_OPTS 64

struct opt {
	char letter;            /* 0: none */
	char name[64];
	char arg[128];          /* "" none; "a|b|c" values; or a metavariable */
	bool values;
};

struct help {
	char *text;
	struct opt o[MAX_OPTS];
	int n;
};

static void run(struct tw_run *r, const char *first, ...)
{
	char *argv[32];
	int n = 0;
	va_list ap;

	argv[n++] = (char *)bfo;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		T_ASSERT(n < 31, "too many arguments");
		argv[n++] = (char *)a;
	}
	va_end(ap);
	argv[n] = NULL;
	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

/* The options of a help text: the lines after "Options:" that start with
 * "  -L, --name" or "      --name", with "=ARG" after the name. */
static void parse_help(struct help *h, const char *cmd, char *text)
{
	const char *p = strstr(text, "\nOptions:\n");

	h->text = text;
	h->n = 0;
	T_ASSERT(p, "bfo %s --help has no Options section:\n%s", cmd, text);
	for (p = strchr(p + 1, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
		const char *e = strchr(p, '\n');
		struct opt *o = &h->o[h->n];

		T_ASSERT(e, "unterminated help line");
		if (!strncmp(p, "  -", 3) && p[3] != '-') {
			o->letter = p[3];
			T_ASSERT(!strncmp(p + 4, ", --", 4), "bfo %s --help: '%.*s'", cmd, (int)(e - p), p);
			p += 8;
		} else if (!strncmp(p, "      --", 8)) {
			o->letter = 0;
			p += 8;
		} else {
			continue;       /* the continuation of a help line */
		}
		size_t nl = strcspn(p, "= \n");

		T_ASSERT(nl > 0 && nl < sizeof(o->name), "bfo %s --help: bad name at '%.20s'", cmd, p);
		memcpy(o->name, p, nl);
		o->name[nl] = '\0';
		o->arg[0] = '\0';
		if (p[nl] == '=') {
			size_t al = strcspn(p + nl + 1, " \n");

			T_ASSERT(al > 0 && al < sizeof(o->arg), "bfo %s --%s: bad argument", cmd, o->name);
			memcpy(o->arg, p + nl + 1, al);
			o->arg[al] = '\0';
		}
		o->values = strchr(o->arg, '|') != NULL;
		T_ASSERT(++h->n < MAX_OPTS, "too many options");
	}
	T_ASSERT(h->n > 0, "bfo %s --help lists no option", cmd);
}

static const struct opt *find(const struct help *h, const char *name)
{
	for (int i = 0; i < h->n; i++)
		if (!strcmp(h->o[i].name, name))
			return &h->o[i];
	return NULL;
}

/* A value the option takes: its first word, or one fitting its metavariable. */
static const char *good_value(const struct opt *o, char *buf, size_t len)
{
	if (o->values) {
		snprintf(buf, len, "%.*s", (int)strcspn(o->arg, "|"), o->arg);
		return buf;
	}
	if (!strcmp(o->arg, "SIZE"))
		return "1M";
	if (!strcmp(o->arg, "N"))
		return "8";
	return "x";             /* COMMAND, PATH: any word */
}

/* Every option the help lists is one the command takes, long and short. */
static void check_accepted(const char *cmd, const struct help *h)
{
	for (int i = 0; i < h->n; i++) {
		const struct opt *o = &h->o[i];
		char buf[160], lng[256], sh[3] = { '-', o->letter, 0 };
		const char *v = o->arg[0] ? good_value(o, buf, sizeof(buf)) : NULL;
		struct tw_run r;

		if (!strcmp(o->name, "help"))
			continue;
		if (v)
			snprintf(lng, sizeof(lng), "--%s=%s", o->name, v);
		else
			snprintf(lng, sizeof(lng), "--%s", o->name);
		run(&r, cmd, lng, "--help", NULL);
		T_ASSERT(r.status == 0 && !strcmp(r.out, h->text), "bfo %s %s --help: exit %d, stderr: %s",
			 cmd, lng, r.status, r.err);
		tw_run_free(&r);
		if (!o->letter)
			continue;
		run(&r, cmd, sh, v ? v : "--help", v ? "--help" : NULL, NULL);
		T_ASSERT(r.status == 0 && !strcmp(r.out, h->text), "bfo %s %s %s --help: exit %d, stderr: %s",
			 cmd, sh, v ? v : "", r.status, r.err);
		tw_run_free(&r);
	}
}

/* The errors of cmd's options say which option and what it takes. */
static void check_errors(const char *cmd, const struct help *h)
{
	char want[1024];
	struct tw_run r;

	run(&r, cmd, "--no-such-option-here", "x", NULL);
	snprintf(want, sizeof(want), "bfo: %s: unknown option '--no-such-option-here'\nsee 'bfo %s --help'\n",
		 cmd, cmd);
	T_ASSERT(r.status == 2 && !strcmp(r.err, want), "bfo %s --no-such-option-here: exit %d, stderr:\n%s",
		 cmd, r.status, r.err);
	tw_run_free(&r);
	run(&r, cmd, "-Z", "x", NULL);
	snprintf(want, sizeof(want), "bfo: %s: unknown option '-Z'\nsee 'bfo %s --help'\n", cmd, cmd);
	T_ASSERT(r.status == 2 && !strcmp(r.err, want), "bfo %s -Z: exit %d, stderr:\n%s", cmd, r.status, r.err);
	tw_run_free(&r);
	for (int i = 0; i < h->n; i++) {
		const struct opt *o = &h->o[i];
		char lng[256], list[256];
		size_t k = 0;

		if (!o->arg[0])
			continue;
		snprintf(lng, sizeof(lng), "--%s", o->name);
		run(&r, cmd, lng, NULL);
		snprintf(want, sizeof(want), "bfo: %s: --%s needs a value (", cmd, o->name);
		T_ASSERT(r.status == 2 && !strncmp(r.err, want, strlen(want)) && !strchr(r.err, '\n')[1],
			 "bfo %s %s (no value): exit %d, stderr:\n%s", cmd, lng, r.status, r.err);
		tw_run_free(&r);
		if (!o->values)
			continue;
		/* "a|b|c" of the help is "(a, b, c)" in the error */
		for (const char *a = o->arg; *a && k < sizeof(list) - 3; a++) {
			if (*a == '|') {
				list[k++] = ',';
				list[k++] = ' ';
			} else {
				list[k++] = *a;
			}
		}
		list[k] = '\0';
		snprintf(lng, sizeof(lng), "--%s=bogus", o->name);
		run(&r, cmd, lng, "x", "y", NULL);
		snprintf(want, sizeof(want), "bfo: %s: --%s: invalid value 'bogus' (%s)\n", cmd, o->name, list);
		T_ASSERT(r.status == 2 && !strcmp(r.err, want), "bfo %s %s: exit %d, stderr:\n%s\nexpected:\n%s",
			 cmd, lng, r.status, r.err, want);
		tw_run_free(&r);
	}
}

/* The option names of a man page: the tags after each .TP. */
static int man_options(const char *page, char names[][64], int max)
{
	FILE *f = fopen(page, "r");
	char line[1024];
	bool tag = false;
	int n = 0;

	T_ASSERT(f, "man page %s missing (the build writes it)", page);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, ".TP", 3)) {
			tag = true;
			continue;
		}
		if (!tag)
			continue;
		tag = false;
		const char *p = strstr(line, "\\-\\-");

		T_ASSERT(p && n < max, "%s: option tag without --: %s", page, line);
		p += 4;
		size_t k = 0;

		/* the name, its hyphens escaped as \- */
		while (*p && k < 63) {
			if (p[0] == '\\' && p[1] == '-') {
				names[n][k++] = '-';
				p += 2;
			} else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')) {
				names[n][k++] = *p++;
			} else {
				break;
			}
		}
		names[n++][k] = '\0';
	}
	fclose(f);
	return n;
}

/* Every function libbfo.so exports (nm -D) has its man(3) page, which
 * names it and its synopsis, and groff reads each without a warning. */
static void check_man3(bool have_groff)
{
	char lib[4096], *dir = strdup(BFO_CLI), *slash = strrchr(dir, '/'), *p, *nl;
	struct tw_run r;
	int pages = 0;

	*slash = '\0';
	snprintf(lib, sizeof(lib), "%s/libbfo.so", dir);
	tw_runl(&r, "sh", "-c", "nm -D --defined-only \"$1\" | awk '$2 == \"T\" && $3 ~ /^bfo_/ {sub(/@.*/, \"\", $3); print $3}'",
		"sh", lib, NULL);
	T_ASSERT(r.status == 0 && r.out_len, "nm %s: %s", lib, r.err);
	for (p = r.out; *p; p = nl + 1) {
		char page[4096], text[1 << 15], syn[128];
		FILE *f;
		size_t len;

		nl = strchr(p, '\n');
		*nl = '\0';
		snprintf(page, sizeof(page), "%s/../man3/%s.3", BFO_MANDIR, p);
		f = fopen(page, "r");
		T_ASSERT(f, "%s exports %s and has no man(3) page %s", lib, p, page);
		len = fread(text, 1, sizeof(text) - 1, f);
		text[len] = '\0';
		fclose(f);
		snprintf(syn, sizeof(syn), "%s(", p);
		T_ASSERT(strstr(text, ".SH SYNOPSIS") && strstr(text, syn), "%s: no synopsis of %s", page, p);
		if (have_groff) {
			struct tw_run g;

			tw_runl(&g, "groff", "-man", "-Tutf8", "-ww", "-z", page, NULL);
			T_ASSERT(g.status == 0 && g.err_len == 0, "groff warns about %s: %s", page, g.err);
			tw_run_free(&g);
		}
		pages++;
	}
	T_ASSERT(pages > 40, "only %d exported functions seen", pages);
	t_log("man(3): a page for each of the %d functions libbfo exports", pages);
	tw_run_free(&r);
	free(dir);
}

static void check_man(const char *cmd, const struct help *h, bool have_groff)
{
	char page[4096], names[MAX_OPTS][64];
	int n;

	snprintf(page, sizeof(page), "%s/bfo-%s.1", BFO_MANDIR, cmd);
	n = man_options(page, names, MAX_OPTS);
	T_ASSERT(n == h->n, "%s lists %d options, bfo %s --help %d", page, n, cmd, h->n);
	for (int i = 0; i < n; i++)
		T_ASSERT(find(h, names[i]), "%s lists --%s, bfo %s --help does not", page, names[i], cmd);
	if (have_groff) {
		struct tw_run r;

		tw_runl(&r, "groff", "-man", "-Tutf8", "-ww", "-z", page, NULL);
		T_ASSERT(r.status == 0 && r.err_len == 0, "groff warns about %s: %s", page, r.err);
		tw_run_free(&r);
	}
}

/* The options the first hour missed (issue 34), by command. */
static const struct {
	const char *cmd;
	const char *opts[12];
} required[] = {
	{ "read", { "engine", "order", "checksum", "stats", "json", "null", "no-follow", "metadata-only",
		    "help" } },
	{ "plan", { "engine", "stats", "help" } },
	{ "cp", { "archive", "update", "replace", "rsh", "remote-bfo", "write-engine", "checksum",
		  "durability", "stats", "help" } },
	{ "send", { "archive", "stats", "help" } },
	{ "recv", { "archive", "update", "replace", "durability", "write-engine", "checksum", "help" } },
	{ "write", { "tar", "durability", "replace", "batch-bytes", "batch-files", "help" } },
	{ "recover", { "help" } },
	{ "version", { "help" } },
};

int main(void)
{
	const size_t ncmd = sizeof(required) / sizeof(required[0]);
	bool have_groff = t_have_prog("groff");
	struct tw_run r, all;

	t_init("t_help", 300);
	if (access(bfo, X_OK) != 0)
		t_fail("the bfo command %s is missing", bfo);

	/* the list of commands, on stdout for --help, stderr for no command */
	run(&all, "--help", NULL);
	T_ASSERT(all.status == 0 && strstr(all.out, "\nCommands:\n"), "bfo --help: exit %d:\n%s", all.status,
		 all.out);
	for (size_t i = 0; i < ncmd; i++) {
		char line[64];

		snprintf(line, sizeof(line), "\n  %-9s ", required[i].cmd);
		T_ASSERT(strstr(all.out, line), "bfo --help does not list %s:\n%s", required[i].cmd, all.out);
	}
	tw_runl(&r, bfo, NULL);
	T_ASSERT(r.status == 2 && !strcmp(r.err, all.out), "bfo alone: exit %d, stderr:\n%s", r.status, r.err);
	tw_run_free(&r);
	run(&r, "frobnicate", "x", NULL);
	T_ASSERT(r.status == 2 && !strcmp(r.err, "bfo: unknown command 'frobnicate'; see 'bfo --help'\n"),
		 "bfo frobnicate: exit %d, stderr:\n%s", r.status, r.err);
	tw_run_free(&r);
	t_log("bfo --help lists the %zu commands", ncmd);

	for (size_t i = 0; i < ncmd; i++) {
		const char *cmd = required[i].cmd;
		struct help h;
		char usage[64];

		run(&r, cmd, "--help", NULL);
		snprintf(usage, sizeof(usage), "usage: bfo %s", cmd);
		T_ASSERT(r.status == 0 && !strncmp(r.out, usage, strlen(usage)) && r.err_len == 0,
			 "bfo %s --help: exit %d, stdout:\n%s\nstderr:\n%s", cmd, r.status, r.out, r.err);
		parse_help(&h, cmd, r.out);
		for (int k = 0; required[i].opts[k]; k++)
			T_ASSERT(find(&h, required[i].opts[k]), "bfo %s --help does not list --%s:\n%s", cmd,
				 required[i].opts[k], r.out);
		/* bfo help CMD and bfo CMD -h: the same text */
		struct tw_run r2;

		run(&r2, "help", cmd, NULL);
		T_ASSERT(r2.status == 0 && !strcmp(r2.out, r.out), "bfo help %s differs from bfo %s --help", cmd, cmd);
		tw_run_free(&r2);
		check_accepted(cmd, &h);
		check_errors(cmd, &h);
		check_man(cmd, &h, have_groff);
		t_log("bfo %s: --help lists %d options, each accepted, errors name them, bfo-%s.1 agrees",
		      cmd, h.n, cmd);
		tw_run_free(&r);
	}

	/* bfo.1 names every command's page */
	{
		char page[4096], text[1 << 16];
		FILE *f;
		size_t len;

		snprintf(page, sizeof(page), "%s/bfo.1", BFO_MANDIR);
		f = fopen(page, "r");
		T_ASSERT(f, "%s missing", page);
		len = fread(text, 1, sizeof(text) - 1, f);
		text[len] = '\0';
		fclose(f);
		for (size_t i = 0; i < ncmd; i++) {
			char ref[64];

			snprintf(ref, sizeof(ref), "bfo\\-%s", required[i].cmd);
			T_ASSERT(strstr(text, ref), "bfo.1 does not name %s", ref);
		}
		if (have_groff) {
			tw_runl(&r, "groff", "-man", "-Tutf8", "-ww", "-z", page, NULL);
			T_ASSERT(r.status == 0 && r.err_len == 0, "groff warns about bfo.1: %s", r.err);
			tw_run_free(&r);
		}
	}
	check_man3(have_groff);
	tw_run_free(&all);
	t_log("PASS%s", have_groff ? "" : " (groff not installed: the pages were not rendered)");
	return 0;
}

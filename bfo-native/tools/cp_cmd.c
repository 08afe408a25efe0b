/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo cp: the copier (bfo_copier_*, src/copy/copy.c) with cp's command line and
 * rsync's rules for where the copy goes and what it leaves alone;
 * with a [USER@]HOST:PATH source or destination, the far side runs bfo
 * recv or bfo send through a remote shell, as rsync runs its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bfo.h"
#include "cli.h"
#include "cli_parse.h"
#include "copy_ui.h"
#include "remote.h"

struct cp_args {
	struct copy_args c;
	char **srcs;
	char **named;           /* the sources as given (srcs: SRC/ as SRC/.) */
	unsigned nsrcs;
	const char *dst;
	const char *rsh;        /* rsync's -e */
	const char *remote_bfo; /* rsync's --rsync-path */
};

/* The command line into a: -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct cp_args *a)
{
	struct cli_parser p;
	int k;

	*a = (struct cp_args){ .rsh = "ssh", .remote_bfo = "bfo" };
	copy_args_init(&a->c);
	/* rsync's destination rule and quick check: a rerun converges */
	a->c.flags |= BFO_COPY_UPDATE | BFO_COPY_INTO;
	cli_parse_init(&p, &cli_cmd_cp, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0) {
		int r = copy_args_opt(&a->c, k, p.arg, p.choice);

		if (r < 0) {
			copy_args_free(&a->c);
			return cli_bad_value(&p);
		}
		if (r)
			continue;
		switch (k) {
		case CO_RSH: a->rsh = p.arg; break;
		case CO_REMOTE_BFO: a->remote_bfo = p.arg; break;
		}
	}
	if (k == CLI_STOP) {
		copy_args_free(&a->c);
		return p.status;
	}
	if (argc - optind < 2)
		return cli_usage_error(&cli_cmd_cp, argc == optind ? "no SRC and DST given" :
				       "no DST given (SRC... DST)");
	if (copy_ui_modes(&a->c))
		return cli_usage_error(&cli_cmd_cp, "--checksum compares what is there, --replace "
				       "replaces it: one or the other");
	a->srcs = a->named = argv + optind;
	a->nsrcs = (unsigned)(argc - optind - 1);
	a->dst = argv[argc - 1];
	return -1;
}

static int make_copier(struct cp_args *a, struct copy_ui *ui, struct bfo_copier **c)
{
	int ret = bfo_copier_create(c, NULL, &a->c.wo, a->c.flags, &ui->cb);

	if (ret) {
		fprintf(stderr, "bfo: cp: %s\n", bfo_strerror(ret));
		return ret;
	}
	ui->dry = a->c.flags & BFO_COPY_DRY_RUN;
	ret = copy_args_apply(&a->c, *c, "cp", stdout);
	if (ret) {
		bfo_copier_destroy(*c);
		*c = NULL;
	}
	return ret;
}

/* A source directory copied into itself is refused before anything is
 * written, in cp's words (the run would refuse it too, without them). */
static bool into_itself(const struct cp_args *a, struct bfo_copier *c)
{
	unsigned i = 0;
	int ret = bfo_copier_check(c, (const char *const *)a->srcs, a->nsrcs, a->dst, &i);

	if (ret == -ELOOP)
		fprintf(stderr, "bfo: cp: cannot copy a directory, '%s', into itself, '%s'\n",
			a->named[i], a->dst);
	else if (ret)
		fprintf(stderr, "bfo: cp: %s\n", bfo_strerror(ret));
	return ret != 0;
}

static int copy_local(struct cp_args *a)
{
	struct copy_ui ui;
	struct bfo_copier *c;
	int ret;

	copy_ui_init(&ui, "cp", "copied", a->c.progress, true);
	if (make_copier(a, &ui, &c))
		return CLI_EXIT_USAGE;
	if (into_itself(a, c)) {
		bfo_copier_destroy(c);
		return CLI_EXIT_USAGE;
	}
	copy_ui_running(c);
	ret = bfo_copier_run(c, (const char *const *)a->srcs, a->nsrcs, a->dst);
	copy_ui_running(NULL);
	if (ret < 0 && ret != -ECANCELED)
		copy_ui_failed(&ui, c, a->dst, ret);
	copy_ui_end(&ui, c, a->c.stats, a->c.verbose || (a->c.flags & BFO_COPY_DRY_RUN));
	bfo_copier_destroy(c);
	return copy_ui_exit(&ui, ret);
}

/* The far side's command line: bfo recv with our write options, or bfo
 * send; then "--" and the paths. */
static char **far_argv(const struct cp_args *a, bool recv, const char *const *paths, unsigned n)
{
	char **v = calloc(n + 24 + 2 * (size_t)a->c.nfilters, sizeof(*v));
	unsigned k = 0;

	if (!v)
		return NULL;
	v[k++] = (char *)a->remote_bfo;
	v[k++] = recv ? "recv" : "send";
	/* it answers (or hears) on its other standard stream */
	v[k++] = "--server";
	if (a->c.flags & BFO_COPY_ARCHIVE)
		v[k++] = "-a";
	/* the sender lists by the rules, the receiver keeps from deleting
	 * what they exclude */
	for (unsigned i = 0; i < a->c.nfilters; i++) {
		v[k++] = a->c.filters[i][0] == '-' ? "--exclude" : "--include";
		v[k++] = (char *)a->c.filters[i] + 2;
	}
	if (!recv) {
		if (a->c.flags & BFO_COPY_CHECKSUM)
			v[k++] = "--checksum";
		if (a->c.compress) {
			static char level[16];

			snprintf(level, sizeof(level), "%d", a->c.level ? a->c.level : 3);
			v[k++] = "--compress-level";
			v[k++] = level;
		}
	}
	if (recv) {
		if (a->c.flags & BFO_COPY_DELETE)
			v[k++] = "--delete";
		if (a->c.max_delete >= 0) {
			static char max[24];

			snprintf(max, sizeof(max), "%lld", a->c.max_delete);
			v[k++] = "--max-delete";
			v[k++] = max;
		}
		if (a->c.flags & BFO_COPY_DRY_RUN)
			v[k++] = "--dry-run";
		if (a->c.flags & BFO_COPY_REPLACE)
			v[k++] = "--replace";
		if (a->c.flags & BFO_COPY_UPDATE)
			v[k++] = "--update";
		if (a->c.flags & BFO_COPY_CHECKSUM)
			v[k++] = "--checksum";
		v[k++] = "--durability";
		v[k++] = (char *)cli_durabilities[a->c.wo.durability];
		v[k++] = "--write-engine";
		v[k++] = (char *)cli_wengines[a->c.wo.engine];
	}
	/* What was written and skipped (recv), or read (send), is known
	 * there: its line. */
	if (a->c.stats)
		v[k++] = "--stats";
	v[k++] = "--";
	for (unsigned i = 0; i < n; i++)
		v[k++] = (char *)(*paths[i] ? paths[i] : ".");
	return v;
}

/*
 * SRC... HOST:DST (dst_host set) or HOST:SRC... DST: the far side through
 * the remote shell, this side the copier's send or recv on its pipe.  The
 * exit status is the worse of the two sides'.
 */
static int copy_remote(struct cp_args *a, struct remote_arg *hosts, bool to_remote)
{
	const char **paths = calloc(a->nsrcs, sizeof(*paths));
	struct remote r = { .fd = -1, .reply = -1 };
	struct copy_ui ui;
	struct bfo_copier *c = NULL;
	char **v = NULL;
	int ret, local, far;

	if (!paths)
		return CLI_EXIT_USAGE;
	for (unsigned i = 0; i < a->nsrcs; i++)
		paths[i] = to_remote ? a->srcs[i] : hosts[i].path;
	if (to_remote)
		v = far_argv(a, true, &hosts[a->nsrcs].path, 1);
	else
		v = far_argv(a, false, paths, a->nsrcs);
	copy_ui_init(&ui, "cp", to_remote ? "sent" : "received", a->c.progress, !to_remote);
	ui.pull = !to_remote;
	ui.hold = true;
	if (!v || make_copier(a, &ui, &c) ||
	    remote_start(&r, a->rsh, hosts[to_remote ? a->nsrcs : 0].host, v, to_remote)) {
		free(v);
		free(paths);
		bfo_copier_destroy(c);
		return CLI_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);         /* a receiver gone is -EPIPE, said below */
	copy_ui_running(c);
	ret = to_remote ? bfo_copier_send_duplex(c, paths, a->nsrcs, r.fd, r.reply) :
			  bfo_copier_recv_duplex(c, r.fd, r.reply, a->dst);
	copy_ui_running(NULL);
	struct bfo_copy_stats st;

	bfo_copier_stats(c, &st);
	/* The far side's end first: when it (or the remote shell) failed, it
	 * said why, and this side's broken stream is no news. */
	far = remote_finish(&r, "cp", a->rsh, a->remote_bfo, cli_signal != 0, st.wire_received > 0);
	bool far_said = far != 0 && far != CLI_EXIT_SOME_FAILED && far != CLI_EXIT_DEL_LIMIT;

	copy_ui_release(&ui, !far_said);
	if (ret < 0 && ret != -ECANCELED && ret != -EPIPE && !to_remote &&
	    !(far_said && ret == -ENODATA))
		copy_ui_failed(&ui, c, a->dst, ret);
	copy_ui_end(&ui, c, a->c.stats, a->c.verbose || (a->c.flags & BFO_COPY_DRY_RUN));
	local = ret == -EPIPE ? CLI_EXIT_SOME_FAILED : copy_ui_exit(&ui, ret);
	if (far == CLI_EXIT_SOME_FAILED && (ret == -EPIPE || ret == -ENODATA))
		fprintf(stderr, "bfo: cp: the far side (%s %s %s) ended before the copy did\n",
			a->rsh, r.host, to_remote ? "bfo recv" : "bfo send");
	bfo_copier_destroy(c);
	free(v);
	free(paths);
	return far > local ? far : local;
}

int cmd_cp(int argc, char **argv)
{
	struct cp_args a;
	struct remote_arg *h;
	unsigned nremote = 0;
	int ret = parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	h = calloc(a.nsrcs + 1, sizeof(*h));
	if (!h)
		return CLI_EXIT_USAGE;
	for (unsigned i = 0; i <= a.nsrcs; i++)
		nremote += remote_parse(i < a.nsrcs ? a.srcs[i] : a.dst, &h[i]);
	/* Local sources: rsync's SRC/ is the copier's SRC/. (remote ones:
	 * the far bfo send does the same). */
	bool local_srcs = !nremote || h[a.nsrcs].host;
	char **orig = a.srcs, **mapped = local_srcs ? copy_ui_sources(a.srcs, a.nsrcs) : NULL;

	if (mapped)
		a.srcs = mapped;
	if (local_srcs && !mapped) {
		fprintf(stderr, "bfo: cp: %s\n", bfo_strerror(-ENOMEM));
		ret = CLI_EXIT_USAGE;
	} else if (!nremote) {
		ret = copy_local(&a);
	} else if (h[a.nsrcs].host && nremote > 1) {
		fprintf(stderr, "bfo: cp: the sources and the destination cannot both be remote\n");
		ret = CLI_EXIT_USAGE;
	} else if (!h[a.nsrcs].host && nremote != a.nsrcs) {
		fprintf(stderr, "bfo: cp: remote sources must all be remote (HOST:PATH)\n");
		ret = CLI_EXIT_USAGE;
	} else {
		for (unsigned i = 1; !h[a.nsrcs].host && i < a.nsrcs; i++)
			if (strcmp(h[i].host, h[0].host)) {
				fprintf(stderr, "bfo: cp: remote sources must all be on one host\n");
				ret = CLI_EXIT_USAGE;
			}
		if (ret < 0)
			ret = copy_remote(&a, h, h[a.nsrcs].host != NULL);
	}
	for (unsigned i = 0; i <= a.nsrcs; i++)
		free(h[i].host);
	free(h);
	copy_ui_sources_free(mapped, orig, a.nsrcs);
	copy_args_free(&a.c);
	return ret;
}

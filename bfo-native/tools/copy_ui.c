/* SPDX-License-Identifier: Apache-2.0 */
/* Reporting of the copying subcommands (copy_ui.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"
#include "copy_ui.h"

void copy_args_init(struct copy_args *a)
{
	*a = (struct copy_args){ .wo = { .size = sizeof(a->wo) }, .progress = -1, .max_delete = -1 };
}

/* A filter rule "- PATTERN" or "+ PATTERN" onto a's list. */
static int add_rule(struct copy_args *a, char sign, const char *pattern)
{
	const char **v;
	char *r;

	if (a->nfilters >= COPY_FILTERS_MAX || !*pattern)
		return -1;
	v = realloc(a->filters, (a->nfilters + 2) * sizeof(*v));
	if (!v || asprintf(&r, "%c %s", sign, pattern) < 0) {
		if (v)
			a->filters = v;
		return -1;
	}
	a->filters = v;
	v[a->nfilters++] = r;
	v[a->nfilters] = NULL;
	return 0;
}

int copy_args_opt(struct copy_args *a, int opt, const char *arg, int choice)
{
	char *end;
	long l;

	if (cli_write_opt(opt, choice, &a->wo))
		return 1;
	switch (opt) {
	case CO_ARCHIVE: a->flags |= BFO_COPY_ARCHIVE; return 1;
	case CO_RECURSIVE: return 1;
	case CO_UPDATE: a->flags |= BFO_COPY_UPDATE; return 1;
	case CO_CHECKSUM: a->flags |= BFO_COPY_CHECKSUM; return 1;
	case CO_DELETE: a->flags |= BFO_COPY_DELETE; return 1;
	case CO_MAX_DELETE:
		errno = 0;
		l = strtol(arg, &end, 10);
		if (*end || end == arg || !isdigit((unsigned char)*arg) || errno || l < 0 ||
		    l >= INT64_MAX)
			return -1;
		a->max_delete = l;
		return 1;
	case CO_DRY_RUN: a->flags |= BFO_COPY_DRY_RUN; return 1;
	case CO_EXCLUDE: return add_rule(a, '-', arg) ? -1 : 1;
	case CO_INCLUDE: return add_rule(a, '+', arg) ? -1 : 1;
	case CO_COMPRESS: a->compress = true; return 1;
	case CO_COMPRESS_LEVEL:
		l = strtol(arg, &end, 10);
		if (*end || end == arg || l < 1 || l > 19)
			return -1;
		a->level = (int)l;
		a->compress = true;
		return 1;
	case CO_VERBOSE: a->verbose = true; return 1;
	case CO_SERVER: a->server = true; return 1;
	case CO_STATS: a->stats = true; return 1;
	case CO_PROGRESS: a->progress = 1; return 1;
	case CO_NOPROGRESS: a->progress = 0; return 1;
	case CO_INFO: a->progress = choice == 0; return 1;
	}
	return 0;
}

void copy_args_free(struct copy_args *a)
{
	for (unsigned i = 0; i < a->nfilters; i++)
		free((char *)a->filters[i]);
	free(a->filters);
	a->filters = NULL;
	a->nfilters = 0;
}

/* -v and -n: each entry, as rsync -v prints them. */
static void on_item(void *arg, int what, const char *path)
{
	if (what == '-')
		fprintf(arg, "deleting %s\n", path);
	else
		fprintf(arg, "%s\n", path);
}

/* As cp -a says it (the entry is kept: the caller's, owner-only mode). */
static void on_owner_lost(void *arg, const char *path, int status)
{
	fprintf(stderr, "bfo: %s: %s: ownership not preserved: %s\n", (const char *)arg, path,
		bfo_strerror(status));
}

int copy_args_apply(const struct copy_args *a, struct bfo_copier *c, const char *cmd, FILE *items)
{
	struct bfo_copy_opts o = { .size = sizeof(o), .filters = a->filters,
				   .compress = a->compress ? (a->level ? a->level : 3) : 0,
				   .owner_lost = on_owner_lost, .owner_lost_arg = (void *)cmd,
				   .delete_limit = a->max_delete >= 0 ? (uint64_t)a->max_delete + 1 : 0 };
	int ret;

	if ((a->verbose || (a->flags & BFO_COPY_DRY_RUN)) && items) {
		o.item = on_item;
		o.item_arg = items;
	}
	ret = bfo_copier_set_opts(c, &o);
	if (ret)
		fprintf(stderr, "bfo: %s: %s\n", cmd, ret == -EINVAL ? "a filter rule bfo cannot take" :
			bfo_strerror(ret));
	return ret;
}

static struct bfo_copier *volatile running;

static void on_signal(int sig)
{
	struct bfo_copier *c = running;

	(void)sig;
	if (c)
		bfo_copier_cancel(c);   /* async-signal-safe; its writer's batch stops too */
}

/* Held lines beyond this are counted only. */
#define HOLD_LINES_MAX 16

static void on_error(void *arg, const char *path, int status)
{
	struct copy_ui *ui = arg;

	if (ui->hold && (status == -EPIPE || status == -ENODATA || status == -ECONNRESET)) {
		if (!ui->hold_f)
			ui->hold_f = open_memstream(&ui->hold_text, &ui->hold_len);
		if (ui->hold_f && ui->hold_lines++ < HOLD_LINES_MAX) {
			fprintf(ui->hold_f, "bfo: %s: %s: %s\n", ui->cmd, path, bfo_strerror(status));
			return;
		}
		if (ui->hold_f)
			return;
	}
	fprintf(stderr, "bfo: %s: %s: %s\n", ui->cmd, path, bfo_strerror(status));
}

void copy_ui_release(struct copy_ui *ui, bool say)
{
	if (!ui->hold_f)
		return;
	if (fclose(ui->hold_f) == 0 && say) {
		fputs(ui->hold_text, stderr);
		if (ui->hold_lines > HOLD_LINES_MAX)
			fprintf(stderr, "bfo: %s: %u more such lines\n", ui->cmd,
				ui->hold_lines - HOLD_LINES_MAX);
	}
	free(ui->hold_text);
	ui->hold_f = NULL;
	ui->hold_text = NULL;
	ui->hold_len = ui->hold_lines = 0;
}

static void on_progress(void *arg, const struct bfo_copy_stats *st)
{
	struct copy_ui *ui = arg;

	cli_progress_copy(&ui->prog, st->files, st->bytes, st->files + st->skipped, st->listed_files,
			  st->listed_whole);
}

void copy_ui_init(struct copy_ui *ui, const char *cmd, const char *what, int progress,
		  bool writes)
{
	*ui = (struct copy_ui){ 0 };    /* callers' structs are on their stacks */
	ui->cmd = cmd;
	ui->writes = writes;
	cli_progress_init(&ui->prog, what, progress);
	ui->cb = (struct bfo_copy_callbacks){ .error = on_error, .progress = on_progress, .arg = ui };
}

void copy_ui_running(struct bfo_copier *c)
{
	running = c;
	/* A signal before this or between runs: the copier is cancelled as
	 * it starts. */
	if (c && cli_signal)
		bfo_copier_cancel(c);
	if (c)
		cli_on_signals(on_signal, false);
}

/* The summary line: files sent (or copied), skipped, deleted; bytes on
 * the wire; the speed-up against the tree's bytes (rsync's: the tree's
 * bytes over the bytes that crossed, or here were written). */
static void summary(FILE *f, const struct copy_ui *ui, const struct bfo_copy_stats *st, bool dry)
{
	uint64_t wire = st->wire_sent + st->wire_received;
	uint64_t moved = wire ? wire : st->bytes;
	/* a copy between machines is summed up once, in the sender's terms:
	 * out is what went to the receiver, whichever side says it */
	uint64_t out = ui->pull ? st->wire_received : st->wire_sent;
	uint64_t in = ui->pull ? st->wire_sent : st->wire_received;
	char a[32], b[32], t[32];

	fprintf(f, "bfo %s: %s%" PRIu64 " files %s (%s), %" PRIu64 " skipped, %" PRIu64 " deleted",
		ui->cmd, dry ? "dry run: " : "", st->files, dry ? "to copy" : !ui->writes || ui->pull ? "sent" : wire ? "written" : "copied",
		cli_human(st->bytes, a, sizeof(a)), st->skipped, st->deleted);
	if (wire)
		fprintf(f, "; %s on the wire (%s out, %s in)", cli_human(wire, t, sizeof(t)),
			cli_human(out, a, sizeof(a)), cli_human(in, b, sizeof(b)));
	if (st->tree_bytes && moved)
		fprintf(f, "; tree %s, speed-up %.1f", cli_human(st->tree_bytes, a, sizeof(a)),
			(double)st->tree_bytes / (double)moved);
	else if (st->tree_bytes)
		fprintf(f, "; tree %s, none of it moved", cli_human(st->tree_bytes, a, sizeof(a)));
	fprintf(f, "\n");
}

/* The closing lines are made whole and written to stderr in one write:
 * the far side's lines share it (through ssh), and a line written in
 * pieces was cut by one of theirs. */
static void put_whole(char *text, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t k = write(STDERR_FILENO, text + done, len - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		done += (size_t)k;
	}
	free(text);
}

static void stats_lines(FILE *f, struct copy_ui *ui, struct bfo_copier *c, struct bfo_copy_stats st)
{
	fprintf(f, "bfo %s: %" PRIu64 " files, %" PRIu64 " other entries, %.1f MB, %" PRIu64
		" errors", ui->cmd, st.files, st.others, (double)st.bytes / 1e6, st.errors);
	/* Only the writing side skips (--update): a sender does not know. */
	if (ui->writes)
		fprintf(f, ", %" PRIu64 " skipped", st.skipped);
	fprintf(f, " in %.3f s", (double)st.ns_total / 1e9);
	if (st.read_engine)
		fprintf(f, "; read engine %s", bfo_engine_name((int)st.read_engine));
	if (ui->writes)
		fprintf(f, "; write engine %s, %" PRIu64 " batches",
			bfo_wengine_name((int)st.write_engine), st.batches);
	fprintf(f, "\n");
	/* The read side, when it ran here (not in bfo recv): which engine
	 * and path read how many files.  "read engine" above is the one that
	 * read most bytes. */
	struct bfo_stats rst;

	if (!bfo_copier_read_stats(c, &rst) && rst.files)
		cli_print_engines(f, "  read: ", &rst);
}

void copy_ui_failed(struct copy_ui *ui, struct bfo_copier *c, const char *dest, int ret)
{
	struct bfo_copy_stats st;

	if (ret != -ENOSPC && ret != -EDQUOT) {
		cli_dest_error(ui->cmd, dest, ret);
		return;
	}
	bfo_copier_stats(c, &st);
	cli_full_error(ui->cmd, dest, ret, st.space_needed);
}

void copy_ui_end(struct copy_ui *ui, struct bfo_copier *c, bool stats, bool sum)
{
	struct bfo_copy_stats st;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	bfo_copier_stats(c, &st);
	cli_progress_tick(&ui->prog, st.files, st.bytes, true);
	fflush(stdout);
	ui->held = st.delete_held;
	if (st.delete_held)
		fprintf(stderr, "bfo: %s: deletions stopped at --max-delete's limit: %" PRIu64
			" not deleted\n", ui->cmd, st.delete_held);
	if (!sum && !stats)
		return;
	f = open_memstream(&text, &len);
	if (!f)
		f = stderr;              /* (no memory: in pieces, as before) */
	/* (the far side of bfo cp: its --stats lines, the summary is the
	 * near side's) */
	if (!ui->server)
		summary(f, ui, &st, ui->dry);
	if (stats)
		stats_lines(f, ui, c, st);
	if (f != stderr && fclose(f) == 0)
		put_whole(text, len);
	else if (f != stderr)
		free(text);
}

int copy_ui_modes(struct copy_args *a)
{
	if (a->wo.flags & BFO_WRITE_REPLACE) {
		if (a->flags & BFO_COPY_CHECKSUM)
			return -1;
		a->wo.flags &= ~(uint32_t)BFO_WRITE_REPLACE;
		a->flags = (a->flags & ~(uint32_t)BFO_COPY_UPDATE) | BFO_COPY_REPLACE;
	}
	if (a->flags & BFO_COPY_CHECKSUM)
		a->flags |= BFO_COPY_UPDATE;
	return 0;
}

char **copy_ui_sources(char *const *srcs, unsigned n)
{
	char **v = calloc(n ? n : 1, sizeof(*v));

	for (unsigned i = 0; v && i < n; i++) {
		size_t l = strlen(srcs[i]);

		v[i] = srcs[i];
		if (l && srcs[i][l - 1] == '/' && asprintf(&v[i], "%s.", srcs[i]) < 0)
			v[i] = NULL;
		if (!v[i]) {
			copy_ui_sources_free(v, srcs, i);
			return NULL;
		}
	}
	return v;
}

void copy_ui_sources_free(char **srcs, char *const *orig, unsigned n)
{
	for (unsigned i = 0; srcs && i < n; i++)
		if (srcs[i] != orig[i])
			free(srcs[i]);
	free(srcs);
}

int copy_ui_exit(const struct copy_ui *ui, int ret)
{
	/* (the cause first: what a stream's far side says follows from it) */
	if (cli_signal)
		fprintf(stderr, "bfo: %s: stopped by SIG%s; no file is left torn, and the same "
			"command run again finishes the copy\n", ui->cmd, sigabbrev_np(cli_signal));
	/* (as rsync: the limit's status where nothing else went wrong) */
	if (ret == 0 && ui->held)
		return CLI_EXIT_DEL_LIMIT;
	if (ret == -ENOSPC || ret == -EDQUOT)
		return CLI_EXIT_NOSPACE;
	if (ret == -ECANCELED || (cli_signal && ret < 0))
		return cli_exit_signal();
	/* The destination refused (not a directory, its journal not ours),
	 * or the stream was not one to read. */
	if (ret < 0)
		return ret == -ENOTDIR || ret == -EINVAL || ret == -ELOOP || ret == -EPERM ||
		       ret == -EBADMSG || ret == -EPROTONOSUPPORT || ret == -ENODATA ?
		       CLI_EXIT_USAGE : CLI_EXIT_SOME_FAILED;
	return ret ? CLI_EXIT_SOME_FAILED : 0;
}

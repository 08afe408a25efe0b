/* SPDX-License-Identifier: Apache-2.0 */
/* Reporting of the copying subcommands (copy_ui.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cli_opts.h"
#include "copy_ui.h"

void copy_args_init(struct copy_args *a)
{
	*a = (struct copy_args){ .wo = { .size = sizeof(a->wo) }, .progress = -1 };
}

bool copy_args_opt(struct copy_args *a, int opt, int choice)
{
	if (cli_write_opt(opt, choice, &a->wo))
		return true;
	switch (opt) {
	case CO_ARCHIVE: a->flags |= BFO_COPY_ARCHIVE; return true;
	case CO_RECURSIVE: return true;
	case CO_UPDATE: a->flags |= BFO_COPY_UPDATE; return true;
	case CO_CHECKSUM: a->flags |= BFO_COPY_CHECKSUM; return true;
	case CO_STATS: a->stats = true; return true;
	case CO_PROGRESS: a->progress = 1; return true;
	case CO_NOPROGRESS: a->progress = 0; return true;
	}
	return false;
}

static struct bfo_copier *volatile running;

static void on_signal(int sig)
{
	struct bfo_copier *c = running;

	(void)sig;
	if (c)
		bfo_copier_cancel(c);   /* async-signal-safe; its writer's batch stops too */
}

static void on_error(void *arg, const char *path, int status)
{
	struct copy_ui *ui = arg;

	fprintf(stderr, "bfo: %s: %s: %s\n", ui->cmd, path, bfo_strerror(status));
}

static void on_progress(void *arg, const struct bfo_copy_stats *st)
{
	struct copy_ui *ui = arg;

	cli_progress_tick(&ui->prog, st->files, st->bytes, false);
}

void copy_ui_init(struct copy_ui *ui, const char *cmd, const char *what, int progress,
		  bool writes)
{
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

void copy_ui_end(struct copy_ui *ui, struct bfo_copier *c, bool stats)
{
	struct bfo_copy_stats st;

	bfo_copier_stats(c, &st);
	cli_progress_tick(&ui->prog, st.files, st.bytes, true);
	if (!stats)
		return;
	fprintf(stderr, "bfo %s: %" PRIu64 " files, %" PRIu64 " other entries, %.1f MB, %" PRIu64
		" errors", ui->cmd, st.files, st.others, (double)st.bytes / 1e6, st.errors);
	/* Only the writing side skips (--update): a sender does not know. */
	if (ui->writes)
		fprintf(stderr, ", %" PRIu64 " skipped", st.skipped);
	fprintf(stderr, " in %.3f s", (double)st.ns_total / 1e9);
	if (st.read_engine)
		fprintf(stderr, "; read engine %s", bfo_engine_name((int)st.read_engine));
	if (ui->writes)
		fprintf(stderr, "; write engine %s, %" PRIu64 " batches",
			bfo_wengine_name((int)st.write_engine), st.batches);
	fprintf(stderr, "\n");
	/* The read side, when it ran here (not in bfo recv): which engine
	 * and path read how many files.  "read engine" above is the one that
	 * read most bytes. */
	struct bfo_stats rst;

	if (!bfo_copier_read_stats(c, &rst) && rst.files)
		cli_print_engines(stderr, "  read: ", &rst);
}

int copy_ui_exit(int ret)
{
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo read and bfo plan: the paths of read_input.c submitted as one batch,
 * its results taken as they come (failures named, checksums printed), and
 * the batch's statistics at the end (read_output.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "bfo.h"
#include "cli.h"
#include "cli_parse.h"
#include "read.h"

/* Paths taken from the input per submit, results taken per wait. */
#define SUBMIT_CHUNK 4096u
#define WAIT_MAX 256u
#define WAIT_TICK_MS 100
#define SORT_BUFFER_MAX (1ull << 28)

/* ------------------------------------------------------------- options */

struct read_args {
	struct bfo_opts o;
	bool plan, checksum, stats, json, nul;
	int progress;           /* 1, 0, or -1: when stderr is a terminal */
	uint64_t sort_buffer;
	char **paths;
	int npaths;
};

/* One of the library's knobs (opt) set from arg; -1 for a bad value. */
static int set_knob(struct bfo_opts *o, int opt, const char *arg)
{
	bool count = opt == RO_WFILES || opt == RO_QD || opt == RO_THREADS;
	uint64_t v;

	/* A merge gap of 0 is the library's 1: adjacent extents only. */
	if (cli_size(arg, opt == RO_GAP ? 0 : 1, count ? UINT32_MAX : UINT64_MAX, &v))
		return -1;
	switch (opt) {
	case RO_WFILES: o->window_files = (uint32_t)v; break;
	case RO_QD: o->queue_depth = (uint32_t)v; break;
	case RO_THREADS: o->threads = (uint32_t)v; break;
	case RO_WBYTES: o->window_bytes = v; break;
	case RO_ARENA: o->arena_bytes = v; break;
	case RO_GAP: o->merge_gap = v ? v : 1; break;
	case RO_MAXIO: o->max_io = v; break;
	case RO_LEXT: o->large_extent = v; break;
	case RO_LFILE: o->large_file = v; break;
	}
	return 0;
}

/* One option (its row opt in cli_cmd_read's table) into a; -1 for a bad value. */
static int set_option(struct read_args *a, int opt, const struct cli_parser *p)
{
	switch (opt) {
	case RO_ENGINE: a->o.engine = (uint32_t)p->choice; return 0;
	case RO_ORDER: a->o.order = (uint32_t)p->choice; return 0;
	case RO_CHECKSUM: a->checksum = true; return 0;
	case RO_STATS: a->stats = true; return 0;
	case RO_JSON: a->json = true; return 0;
	case RO_NULL: a->nul = true; return 0;
	case RO_NOFOLLOW: a->o.flags |= BFO_READ_NOFOLLOW; return 0;
	case RO_STOP: a->o.flags |= BFO_READ_STOP_ON_ERROR; return 0;
	case RO_META: a->o.flags |= BFO_READ_METADATA_ONLY; return 0;
	case RO_PROGRESS: a->progress = 1; return 0;
	case RO_NOPROGRESS: a->progress = 0; return 0;
	case RO_SORTBUF: return cli_size(p->arg, 0, SORT_BUFFER_MAX, &a->sort_buffer);
	}
	return set_knob(&a->o, opt, p->arg);
}

/* The command line into a: -1 to go on, or the exit status (--help, or a
 * usage error named on stderr). */
static int parse_args(int argc, char **argv, bool plan, struct read_args *a)
{
	const struct cli_cmd *cmd = plan ? &cli_cmd_plan : &cli_cmd_read;
	struct cli_parser p;
	int k;

	*a = (struct read_args){ .plan = plan, .progress = -1, .sort_buffer = SORT_BUFFER_DEFAULT };
	bfo_opts_init(&a->o);
	if (plan)
		a->o.flags |= BFO_READ_PLAN_ONLY;
	cli_parse_init(&p, cmd, argc, argv);
	while ((k = cli_parse_next(&p)) >= 0)
		if (set_option(a, k, &p) < 0)
			return cli_bad_value(&p);
	if (k == CLI_STOP)
		return p.status;
	if (optind >= argc)
		return cli_usage_error(cmd, "no PATH given");
	a->paths = argv + optind;
	a->npaths = argc - optind;
	return -1;
}

/* ------------------------------------------------------------- the batch */

struct reader {
	const struct read_args *a;
	struct bfo_ctx *ctx;
	struct read_input in;
	char **paths;                 /* taken from the input, not yet all submitted */
	unsigned npaths, pos;
	bool input_done, finished, any_failed;
	struct bfo_file *files;
	struct checksums sums;
	struct cli_progress prog;
};

/* The next chunk of paths from the input, the last chunk's freed (the
 * library copied them). */
static void take_paths(struct reader *r)
{
	for (unsigned i = 0; i < r->npaths; i++) {
		free(r->paths[i]);
		r->paths[i] = NULL;
	}
	r->npaths = r->pos = 0;
	while (!r->input_done && r->npaths < SUBMIT_CHUNK) {
		if (r->npaths && r->in.walk)
			break;   /* the rest of the walk goes packed (feed) */
		char *p = input_next(&r->in);

		if (!p) {
			r->input_done = true;
			break;
		}
		r->paths[r->npaths++] = p;
	}
}

/* Keeps the library's input queue full, and finishes the batch once the
 * input is exhausted.  Returns whether any path went in. */
static bool feed(struct reader *r)
{
	bool progressed = false;

	while (!r->finished && !cli_signal) {
		if (r->pos == r->npaths) {
			size_t len;
			const char *buf = input_packed(&r->in, &len);

			if (buf) {
				long ret = bfo_read_submit_packed(r->ctx, buf, len);

				if (ret < 0) {
					fprintf(stderr, "bfo: submit: %s\n", bfo_strerror((int)ret));
					break;
				}
				input_taken(&r->in, (size_t)ret);
				progressed |= ret > 0;
				if ((size_t)ret < len)
					break;   /* queue full: consume results first */
				continue;
			}
			take_paths(r);
		}
		if (r->pos < r->npaths) {
			int ret = bfo_read_submit(r->ctx, (const char *const *)r->paths + r->pos,
						  r->npaths - r->pos);

			if (ret < 0) {
				fprintf(stderr, "bfo: submit: %s\n", bfo_strerror(ret));
				break;
			}
			r->pos += (unsigned)ret;
			progressed |= ret > 0;
			if (r->pos < r->npaths)
				break;   /* queue full: consume results first */
			continue;
		}
		if (r->input_done) {
			bfo_read_submit(r->ctx, NULL, 0);   /* a batch of no paths */
			bfo_read_finish(r->ctx);
			r->finished = true;
		}
	}
	return progressed;
}

static void name_failure(const struct bfo_file *f, bool nofollow)
{
	if (f->status == -EINVAL)
		fprintf(stderr, "bfo: %s: not a regular file\n", f->path);
	else if (f->status == -ELOOP && nofollow)
		fprintf(stderr, "bfo: %s: is a symbolic link (--no-follow)\n", f->path);
	else
		fprintf(stderr, "bfo: %s: %s\n", f->path, bfo_strerror(f->status));
}

/* Results of one wait: failures named, checksums taken. */
static void take_results(struct reader *r, int k)
{
	const struct bfo_opts *o = &r->a->o;

	for (int i = 0; i < k; i++) {
		const struct bfo_file *f = &r->files[i];

		if (f->status < 0) {
			r->any_failed = true;
			name_failure(f, o->flags & BFO_READ_NOFOLLOW);
		}
		if (r->a->checksum)
			checksum_file(&r->sums, f, !r->a->plan && !(o->flags & BFO_READ_METADATA_ONLY));
	}
	bfo_read_release(r->ctx, r->files, (unsigned)k);
	if (cli_progress_due(&r->prog)) {
		struct bfo_stats st;

		bfo_read_stats(r->ctx, &st);
		cli_progress_tick(&r->prog, st.files_ok + st.files_failed, st.bytes, false);
	}
}

/* Submits and waits until the batch is over.  Returns 0, or the exit
 * status of an interrupted (130, 143) or failed (2) batch.  A signal is
 * seen within WAIT_TICK_MS: the batch is then cancelled, which ends the
 * reads in flight and starts no other, and the wait returns once they
 * are over. */
static int run_batch(struct reader *r)
{
	bool cancelled = false;
	int status = 0;

	for (;;) {
		if (cli_signal && !cancelled) {
			bfo_read_cancel(r->ctx);
			cancelled = true;
			status = cli_exit_signal();
		}
		bool progressed = !cancelled && feed(r);
		int k = bfo_read_wait(r->ctx, r->files, WAIT_MAX,
				      cancelled ? -1 : progressed ? 0 : WAIT_TICK_MS);

		/* A signal may have ended the input (stdin) and so the batch,
		 * before it was seen above. */
		if (k == 0 || (cancelled && k == -EINVAL))   /* -EINVAL: no batch had begun */
			return cli_signal ? cli_exit_signal() : status;
		if (k == -ETIME || k == -EAGAIN)
			continue;
		if (k < 0) {
			fprintf(stderr, "bfo: %s\n", bfo_strerror(k));
			bfo_read_cancel(r->ctx);
			while (bfo_read_wait(r->ctx, r->files, WAIT_MAX, -1) > 0)
				;
			return CLI_EXIT_USAGE;
		}
		take_results(r, k);
	}
}

/* ------------------------------------------------------------- command */

static int start(struct reader *r)
{
	const struct bfo_opts *o = &r->a->o;
	int ret = bfo_ctx_create(&r->ctx, o);

	if (ret) {
		fprintf(stderr, "bfo: cannot start the %s engine: %s\n",
			bfo_engine_name((int)o->engine), bfo_strerror(ret));
		if (ret == -EOPNOTSUPP)
			fprintf(stderr, "bfo: io_uring is unavailable here; --engine portable works everywhere\n");
		return CLI_EXIT_USAGE;
	}
	/* Flags only, SA_RESTART: stdout goes on undisturbed, no line of it
	 * cut; stdin ends (read_input.c). */
	cli_on_signals(NULL, true);
	r->paths = calloc(SUBMIT_CHUNK, sizeof(*r->paths));
	r->files = malloc(WAIT_MAX * sizeof(*r->files));
	if (!r->paths || !r->files) {
		perror("bfo");
		return CLI_EXIT_USAGE;
	}
	r->in = (struct read_input){ .args = r->a->paths, .nargs = r->a->npaths, .nul = r->a->nul,
				     .nofollow = o->flags & BFO_READ_NOFOLLOW,
				     .sort_buffer = r->a->sort_buffer, .stop = &cli_signal };
	/* The walk's listings spare the raw engine listing the directories
	 * again. */
	if (o->engine == BFO_ENGINE_AUTO || o->engine == BFO_ENGINE_RAW)
		r->in.share = r->ctx;
	cli_progress_init(&r->prog, NULL, r->a->progress);
	/* The first results show at once, as bfo read has always shown them
	 * (cp and write wait a quarter second). */
	r->prog.last = 0;
	return 0;
}

int cmd_read(int argc, char **argv, bool plan)
{
	struct read_args a;
	struct reader r = { .a = &a };
	struct bfo_stats st;
	int status = parse_args(argc, argv, plan, &a);

	if (status >= 0)
		return status;
	status = start(&r);
	if (status)
		return status;
	status = run_batch(&r);
	cli_progress_tick(&r.prog, 0, 0, true);
	bfo_read_stats(r.ctx, &st);
	if (a.stats)
		print_stats(r.ctx, &st, plan, r.in.skipped);
	if (a.json)
		print_json(&st, r.in.skipped);
	fflush(stdout);
	bfo_ctx_destroy(r.ctx);
	for (unsigned i = 0; i < SUBMIT_CHUNK; i++)
		free(r.paths[i]);
	free(r.paths);
	free(r.files);
	checksums_end(&r.sums);
	input_end(&r.in);
	if (status)
		return status;
	return r.any_failed || r.in.walk_errors ? CLI_EXIT_SOME_FAILED : 0;
}

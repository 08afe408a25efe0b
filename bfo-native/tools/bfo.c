/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo - the command line of libbfo.
 *
 *   bfo read [OPTIONS] PATH...   read files (directories recursively; - for
 *                                paths on stdin) as batches
 *   bfo plan [OPTIONS] PATH...   print the ORDER_LIST summary, read nothing
 *   bfo version
 *
 * Exit status: 0 every file read, 1 some files failed (each named on
 * stderr), 2 usage or setup error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bfo.h"
#include "cli.h"
#include "walk.h"

#define EXIT_SOME_FAILED 1
#define EXIT_USAGE 2
#define SUBMIT_CHUNK 4096u
#define WAIT_MAX 256u

static const char *prog = "bfo";
static volatile sig_atomic_t interrupted;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bfo read [OPTIONS] PATH...   read files (directories recursively, - for stdin)\n"
		"       bfo plan [OPTIONS] PATH...   print the ORDER_LIST summary without reading data\n"
		"       bfo cp [-a] [--durability none|batch|each] SRC... DST   copy as batches\n"
		"       bfo write [--tar] DIR < STREAM   write a stream of files as batches\n"
		"       bfo recover DIR                  finish or remove unfinished batches\n"
		"       bfo version\n"
		"\n"
		"options:\n"
		"  --engine auto|raw|uring|portable   data engine (default auto)\n"
		"  --order auto|inode|physical        order of per-file reads (default auto)\n"
		"  --checksum        print '<xxh128>  <path>' per file, like xxh128sum\n"
		"  --stats           print what the batch did on stderr\n"
		"  --json            print the statistics as one JSON line, last on stdout\n"
		"  -0, --null        paths on stdin (-) are NUL-separated\n"
		"  --no-follow       refuse symbolic links instead of reading their target\n"
		"  --stop-on-error   stop at the first file that fails\n"
		"  --metadata-only   stat the files, read no data\n"
		"  --progress | --no-progress   progress on stderr (default: when a terminal)\n"
		"  --sort-buffer N   hand out up to N walked files at a time in inode order,\n"
		"                    close to disk order on ext4 and XFS (default 262144; 0: unsorted)\n"
		"  knobs (SIZE takes K, M, G): --window-files N --window-bytes SIZE --arena SIZE\n"
		"        --merge-gap SIZE (0: merge adjacent extents only) --max-io SIZE\n"
		"        --large-extent SIZE --large-file SIZE\n"
		"        --queue-depth N --threads N\n");
}

/* ------------------------------------------------------------- input */

/*
 * Paths come from the arguments: files as given, directories walked in
 * parallel (tools/walk.c) and handed out in inode order across directories,
 * up to --sort-buffer files at a time.  On ext4 and XFS a file's data sits
 * near its inode and both are allocated in creation order within an
 * allocation group, so inode order is close to disk order: the library's
 * windows then cover dense stretches of the device and its metadata phase
 * reads inode tables front to back.
 */
#define SORT_BUFFER_DEFAULT (256u << 10)
#define WALK_THREADS 8u

struct input {
	char **args;
	int nargs, argi;
	bool nul;
	bool nofollow;
	size_t sort_buffer;
	struct walk *walk;
	struct walk_file *batch;
	size_t nbatch, pos;
	FILE *stdin_f;
	char *line;
	size_t line_cap;
	uint64_t skipped;
	uint64_t walk_errors;
	char *cur;          /* the path returned last; the caller may take it */
};

/* Directories the walk could not read: named on stderr, counted as errors. */
static void print_walk_failures(struct input *in)
{
	char *path;
	int status;

	while (walk_failure(in->walk, &path, &status)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(-status));
		in->walk_errors++;
		free(path);
	}
}

/* Returns the next path, or NULL when the input is exhausted. */
static const char *input_next(struct input *in)
{
	free(in->cur);
	in->cur = NULL;
	for (;;) {
		if (in->walk) {
			if (in->pos < in->nbatch) {
				in->cur = in->batch[in->pos].path;
				in->batch[in->pos++].path = NULL;
				return in->cur;
			}
			in->nbatch = walk_next(in->walk, &in->batch);
			in->pos = 0;
			print_walk_failures(in);
			if (in->nbatch)
				continue;
			walk_end(in->walk, &in->skipped, &in->walk_errors);
			in->walk = NULL;
		}
		if (in->stdin_f) {
			ssize_t n = getdelim(&in->line, &in->line_cap, in->nul ? '\0' : '\n', in->stdin_f);

			if (n > 0) {
				if (!in->nul && in->line[n - 1] == '\n')
					in->line[--n] = '\0';
				if (n == 0)
					continue;
				in->cur = strdup(in->line);
				return in->cur;
			}
			in->stdin_f = NULL;
			continue;
		}
		if (in->argi >= in->nargs)
			return NULL;
		const char *a = in->args[in->argi++];
		struct stat st;

		if (!strcmp(a, "-")) {
			in->stdin_f = stdin;
			continue;
		}
		/* A named directory is walked (even through a symlink, like
		 * find -H); anything else named is read, or its error shown. */
		if (stat(a, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !(in->nofollow && lstat(a, &st) == 0 && S_ISLNK(st.st_mode))) {
			in->walk = walk_start(a, WALK_THREADS,
					      in->sort_buffer ? in->sort_buffer : 4096,
					      (in->sort_buffer ? WALK_SORT : 0) |
					      (in->nofollow ? WALK_NOFOLLOW : 0));
			if (!in->walk) {
				fprintf(stderr, "%s: %s: cannot start the walk\n", prog, a);
				in->walk_errors++;
			}
			continue;
		}
		in->cur = strdup(a);
		return in->cur;
	}
}

/* ------------------------------------------------------------- output */

struct hash_state {       /* streaming hash of a file delivered in pieces */
	uint64_t index;
	XXH3_state_t *st;
	struct hash_state *next;
};

static void print_path_line(const char *hex, const char *path)
{
	/* Escape like coreutils' *sum (and xxhsum): a leading backslash
	 * when the name holds a backslash or newline. */
	if (strpbrk(path, "\\\n")) {
		fputc('\\', stdout);
		fputs(hex, stdout);
		fputs("  ", stdout);
		for (const char *p = path; *p; p++) {
			if (*p == '\\')
				fputs("\\\\", stdout);
			else if (*p == '\n')
				fputs("\\n", stdout);
			else
				fputc(*p, stdout);
		}
		fputc('\n', stdout);
		return;
	}
	printf("%s  %s\n", hex, path);
}

static void print_hash(XXH128_hash_t h, const char *path)
{
	XXH128_canonical_t c;
	char hex[33];

	XXH128_canonicalFromHash(&c, h);
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
	print_path_line(hex, path);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static void print_stats(const struct bfo_stats *st, bool plan, uint64_t skipped)
{
	fprintf(stderr, "bfo %s: %" PRIu64 " files (%" PRIu64 " ok, %" PRIu64 " failed), %.1f MB in %.3f s (%.0f MB/s)\n",
		plan ? "plan" : "read", st->files, st->files_ok, st->files_failed,
		(double)st->bytes / 1e6, secs(st->ns_total),
		st->ns_total ? (double)st->bytes / 1e6 / secs(st->ns_total) : 0.0);
	fprintf(stderr, "  engine %s;", bfo_engine_name((int)st->engine));
	for (int e = BFO_ENGINE_RAW; e <= BFO_ENGINE_NONE; e++)
		if (st->files_by_engine[e])
			fprintf(stderr, " %s %" PRIu64 " files", bfo_engine_name(e), st->files_by_engine[e]);
	fprintf(stderr, "\n  I/Os %" PRIu64 ", merged regions %" PRIu64 " (%" PRIu64 " read straight into"
		" their file's buffer), extents %" PRIu64
		", device bytes %.1f MB (read through gaps %.1f MB), per-file fallbacks %" PRIu64
		", windows %" PRIu64 "\n",
		st->ios, st->regions, st->direct_regions, st->extents, (double)st->device_bytes / 1e6,
		(double)st->gap_bytes / 1e6, st->fallback_files, st->windows);
	fprintf(stderr, "  phases: metadata %.3f s, data %.3f s, total %.3f s (phases overlap)\n",
		secs(st->ns_meta), secs(st->ns_data), secs(st->ns_total));
	if (plan && st->files_ok)
		fprintf(stderr, "  fragmentation: %.3f extents per file, average region %.1f KiB\n",
			(double)st->extents / (double)st->files_ok,
			st->regions ? (double)st->device_bytes / 1024.0 / (double)st->regions : 0.0);
	if (skipped)
		fprintf(stderr, "  skipped in directory walks: %" PRIu64
			" (special files, links to directories, dangling links)\n", skipped);
}

static void print_json(const struct bfo_stats *st, uint64_t skipped)
{
	printf("{\"files\":%" PRIu64 ",\"files_ok\":%" PRIu64 ",\"files_failed\":%" PRIu64
	       ",\"bytes\":%" PRIu64 ",\"device_bytes\":%" PRIu64 ",\"ios\":%" PRIu64
	       ",\"regions\":%" PRIu64 ",\"direct_regions\":%" PRIu64 ",\"extents\":%" PRIu64
	       ",\"gap_bytes\":%" PRIu64
	       ",\"fallback_files\":%" PRIu64 ",\"windows\":%" PRIu64 ",\"skipped\":%" PRIu64
	       ",\"engine\":\"%s\",\"engines\":[",
	       st->files, st->files_ok, st->files_failed, st->bytes, st->device_bytes, st->ios,
	       st->regions, st->direct_regions, st->extents, st->gap_bytes, st->fallback_files, st->windows, skipped,
	       bfo_engine_name((int)st->engine));
	bool first = true;

	for (int e = BFO_ENGINE_RAW; e <= BFO_ENGINE_NONE; e++) {
		if (st->engines & (1u << e)) {
			printf("%s\"%s\"", first ? "" : ",", bfo_engine_name(e));
			first = false;
		}
	}
	printf("],\"files_by_engine\":{");
	first = true;
	for (int e = BFO_ENGINE_RAW; e <= BFO_ENGINE_NONE; e++) {
		if (st->files_by_engine[e]) {
			printf("%s\"%s\":%" PRIu64, first ? "" : ",", bfo_engine_name(e),
			       st->files_by_engine[e]);
			first = false;
		}
	}
	printf("},\"seconds\":{\"meta\":%.6f,\"data\":%.6f,\"total\":%.6f}}\n",
	       secs(st->ns_meta), secs(st->ns_data), secs(st->ns_total));
}

static void progress(struct bfo_ctx *ctx, bool final)
{
	static uint64_t last;
	struct timespec ts;
	struct bfo_stats st;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (!final && now - last < 250000000ull)
		return;
	last = now;
	bfo_read_stats(ctx, &st);
	if (final) {
		fputs("\r\033[K", stderr);
		return;
	}
	fprintf(stderr, "\r\033[K%" PRIu64 " files, %.1f MB, %.0f MB/s", st.files_ok + st.files_failed,
		(double)st.bytes / 1e6,
		st.ns_total ? (double)st.bytes / 1e6 / secs(st.ns_total) : 0.0);
}

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* ------------------------------------------------------------- main */

enum {
	OPT_ENGINE = 256, OPT_ORDER, OPT_CHECKSUM, OPT_STATS, OPT_JSON, OPT_NOFOLLOW,
	OPT_STOP, OPT_META, OPT_PROGRESS, OPT_NOPROGRESS, OPT_WFILES, OPT_WBYTES, OPT_ARENA,
	OPT_GAP, OPT_MAXIO, OPT_LEXT, OPT_LFILE, OPT_QD, OPT_THREADS, OPT_SORTBUF,
};

static int run(int argc, char **argv, bool plan)
{
	static const struct option longopts[] = {
		{ "engine", required_argument, 0, OPT_ENGINE },
		{ "order", required_argument, 0, OPT_ORDER },
		{ "checksum", no_argument, 0, OPT_CHECKSUM },
		{ "stats", no_argument, 0, OPT_STATS },
		{ "json", no_argument, 0, OPT_JSON },
		{ "null", no_argument, 0, '0' },
		{ "no-follow", no_argument, 0, OPT_NOFOLLOW },
		{ "stop-on-error", no_argument, 0, OPT_STOP },
		{ "metadata-only", no_argument, 0, OPT_META },
		{ "progress", no_argument, 0, OPT_PROGRESS },
		{ "no-progress", no_argument, 0, OPT_NOPROGRESS },
		{ "window-files", required_argument, 0, OPT_WFILES },
		{ "window-bytes", required_argument, 0, OPT_WBYTES },
		{ "arena", required_argument, 0, OPT_ARENA },
		{ "merge-gap", required_argument, 0, OPT_GAP },
		{ "max-io", required_argument, 0, OPT_MAXIO },
		{ "large-extent", required_argument, 0, OPT_LEXT },
		{ "large-file", required_argument, 0, OPT_LFILE },
		{ "queue-depth", required_argument, 0, OPT_QD },
		{ "threads", required_argument, 0, OPT_THREADS },
		{ "sort-buffer", required_argument, 0, OPT_SORTBUF },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct bfo_opts o;
	bool checksum = false, stats = false, json = false, nul = false;
	int show_progress = -1, c, ret;
	uint64_t v, sort_buffer = SORT_BUFFER_DEFAULT;

	bfo_opts_init(&o);
	if (plan)
		o.flags |= BFO_READ_PLAN_ONLY;
	optind = 1;
	while ((c = getopt_long(argc, argv, "0h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ENGINE:
			if (!strcmp(optarg, "auto")) o.engine = BFO_ENGINE_AUTO;
			else if (!strcmp(optarg, "raw")) o.engine = BFO_ENGINE_RAW;
			else if (!strcmp(optarg, "uring")) o.engine = BFO_ENGINE_URING;
			else if (!strcmp(optarg, "portable")) o.engine = BFO_ENGINE_PORTABLE;
			else goto bad;
			break;
		case OPT_ORDER:
			if (!strcmp(optarg, "auto")) o.order = BFO_ORDER_AUTO;
			else if (!strcmp(optarg, "inode")) o.order = BFO_ORDER_INODE;
			else if (!strcmp(optarg, "physical")) o.order = BFO_ORDER_PHYSICAL;
			else goto bad;
			break;
		case OPT_CHECKSUM: checksum = true; break;
		case OPT_STATS: stats = true; break;
		case OPT_JSON: json = true; break;
		case '0': nul = true; break;
		case OPT_NOFOLLOW: o.flags |= BFO_READ_NOFOLLOW; break;
		case OPT_STOP: o.flags |= BFO_READ_STOP_ON_ERROR; break;
		case OPT_META: o.flags |= BFO_READ_METADATA_ONLY; break;
		case OPT_PROGRESS: show_progress = 1; break;
		case OPT_SORTBUF:
			if (cli_size(optarg, 0, 1ull << 28, &sort_buffer))
				goto bad;
			break;
		case OPT_NOPROGRESS: show_progress = 0; break;
		case OPT_WFILES: case OPT_QD: case OPT_THREADS:
		case OPT_WBYTES: case OPT_ARENA: case OPT_GAP: case OPT_MAXIO:
		case OPT_LEXT: case OPT_LFILE:
			if (cli_size(optarg, 0, UINT64_MAX, &v) || (v == 0 && c != OPT_GAP) ||
			    ((c == OPT_WFILES || c == OPT_QD || c == OPT_THREADS) && v > UINT32_MAX))
				goto bad;
			if (c == OPT_GAP && v == 0)
				v = 1;   /* the library's "adjacent extents only" */
			if (c == OPT_WFILES) o.window_files = (uint32_t)v;
			else if (c == OPT_QD) o.queue_depth = (uint32_t)v;
			else if (c == OPT_THREADS) o.threads = (uint32_t)v;
			else if (c == OPT_WBYTES) o.window_bytes = v;
			else if (c == OPT_ARENA) o.arena_bytes = v;
			else if (c == OPT_GAP) o.merge_gap = v;
			else if (c == OPT_MAXIO) o.max_io = v;
			else if (c == OPT_LEXT) o.large_extent = v;
			else o.large_file = v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
		continue;
bad:
		fprintf(stderr, "%s: invalid value '%s'\n", prog, optarg);
		return EXIT_USAGE;
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no PATH given\n", prog);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (show_progress < 0)
		show_progress = isatty(STDERR_FILENO);

	struct bfo_ctx *ctx;

	ret = bfo_ctx_create(&ctx, &o);
	if (ret) {
		fprintf(stderr, "%s: cannot start the %s engine: %s\n", prog,
			bfo_engine_name((int)o.engine), bfo_strerror(ret));
		if (ret == -EOPNOTSUPP)
			fprintf(stderr, "%s: io_uring is unavailable here; --engine portable works everywhere\n", prog);
		return EXIT_USAGE;
	}

	struct sigaction sa = { .sa_handler = on_signal };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct input in = { .args = argv + optind, .nargs = argc - optind, .nul = nul,
			    .nofollow = o.flags & BFO_READ_NOFOLLOW, .sort_buffer = sort_buffer };

	const char **pending = malloc(SUBMIT_CHUNK * sizeof(*pending));
	char **owned = calloc(SUBMIT_CHUNK, sizeof(*owned));
	struct bfo_file *files = malloc(WAIT_MAX * sizeof(*files));
	struct hash_state *hashes = NULL;
	unsigned npending = 0, pos = 0;
	bool input_done = false, finished = false, any_failed = false;
	int status = 0;

	if (!pending || !owned || !files) {
		perror(prog);
		return EXIT_USAGE;
	}
	for (;;) {
		if (interrupted) {
			bfo_read_cancel(ctx);
			status = 130;
		}
		/* Keep the library's input queue full. */
		bool progressed = false;

		while (!finished && !interrupted) {
			if (pos == npending) {
				for (unsigned i = 0; i < npending; i++) {
					free(owned[i]);
					owned[i] = NULL;
				}
				npending = pos = 0;
				while (!input_done && npending < SUBMIT_CHUNK) {
					const char *p = input_next(&in);

					if (!p) {
						input_done = true;
						break;
					}
					owned[npending] = in.cur;
					in.cur = NULL;
					pending[npending] = owned[npending];
					npending++;
				}
			}
			if (pos < npending) {
				ret = bfo_read_submit(ctx, pending + pos, npending - pos);
				if (ret < 0) {
					fprintf(stderr, "%s: submit: %s\n", prog, bfo_strerror(ret));
					break;
				}
				pos += (unsigned)ret;
				progressed |= ret > 0;
				if (pos < npending)
					break;   /* queue full: consume results first */
				continue;
			}
			if (input_done) {
				bfo_read_submit(ctx, NULL, 0);   /* a batch of no paths */
				bfo_read_finish(ctx);
				finished = true;
			}
		}
		int k = bfo_read_wait(ctx, files, WAIT_MAX,
				      finished || interrupted ? -1 : (progressed ? 0 : 100));

		if (k == 0)
			break;
		if (k == -ETIME || k == -EAGAIN)
			continue;
		if (k < 0) {
			fprintf(stderr, "%s: %s\n", prog, bfo_strerror(k));
			status = EXIT_USAGE;
			bfo_read_cancel(ctx);
			while (bfo_read_wait(ctx, files, WAIT_MAX, -1) > 0)
				;
			break;
		}
		for (int i = 0; i < k; i++) {
			const struct bfo_file *f = &files[i];

			if (f->status < 0) {
				any_failed = true;
				if (f->status == -EINVAL)
					fprintf(stderr, "%s: %s: not a regular file\n", prog, f->path);
				else if (f->status == -ELOOP && (o.flags & BFO_READ_NOFOLLOW))
					fprintf(stderr, "%s: %s: is a symbolic link (--no-follow)\n", prog, f->path);
				else
					fprintf(stderr, "%s: %s: %s\n", prog, f->path, bfo_strerror(f->status));
			}
			if (!checksum)
				continue;
			if (f->status < 0 && !(f->flags & BFO_FILE_LAST))
				continue;
			/* A whole file is hashed at once; pieces of a large one
			 * arrive in order and are hashed as a stream keyed by
			 * their batch index. */
			struct hash_state **hp = &hashes;

			while (*hp && (*hp)->index != f->index)
				hp = &(*hp)->next;
			if (!*hp && (f->flags & BFO_FILE_LAST)) {
				if (f->status == 0 && !plan && !(o.flags & BFO_READ_METADATA_ONLY))
					print_hash(XXH3_128bits(f->data, f->length), f->path);
				continue;
			}
			if (!*hp) {
				struct hash_state *h = calloc(1, sizeof(*h));

				if (!h || !(h->st = XXH3_createState())) {
					perror(prog);
					exit(EXIT_USAGE);
				}
				h->index = f->index;
				XXH3_128bits_reset(h->st);
				*hp = h;
			}
			struct hash_state *h = *hp;

			if (f->status == 0)
				XXH3_128bits_update(h->st, f->data, f->length);
			if (f->flags & BFO_FILE_LAST) {
				if (f->status == 0)
					print_hash(XXH3_128bits_digest(h->st), f->path);
				XXH3_freeState(h->st);
				*hp = h->next;
				free(h);
			}
		}
		bfo_read_release(ctx, files, (unsigned)k);
		if (show_progress)
			progress(ctx, false);
	}
	if (show_progress)
		progress(ctx, true);

	struct bfo_stats st;

	bfo_read_stats(ctx, &st);
	if (stats) {
		char desc[1024];

		print_stats(&st, plan, in.skipped);
		bfo_ctx_describe(ctx, desc, sizeof(desc));
		fprintf(stderr, "  %s\n", desc);
	}
	if (json)
		print_json(&st, in.skipped);
	fflush(stdout);
	bfo_ctx_destroy(ctx);
	for (unsigned i = 0; i < SUBMIT_CHUNK; i++)
		free(owned[i]);
	free(owned);
	free(pending);
	free(files);
	free(in.line);
	if (in.walk)
		walk_end(in.walk, &in.skipped, &in.walk_errors);
	if (status)
		return status;
	if (any_failed || in.walk_errors)
		return EXIT_SOME_FAILED;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "read"))
		return run(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "plan"))
		return run(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "cp"))
		return cmd_cp(argc - 1, argv + 1);
	if (!strcmp(argv[1], "write"))
		return cmd_write(argc - 1, argv + 1);
	if (!strcmp(argv[1], "recover"))
		return cmd_recover(argc - 1, argv + 1);
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("bfo %d.%d.%d (library %d)\n", BFO_VERSION_MAJOR, BFO_VERSION_MINOR,
		       BFO_VERSION_PATCH, bfo_version());
		return 0;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}

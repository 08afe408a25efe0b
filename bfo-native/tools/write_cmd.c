/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo write DIR: files from a stream on stdin written as batches through
 * the writer, and bfo recover DIR.
 *
 * The stream is a tar archive (--tar; any format libarchive reads: gnu,
 * pax, ustar, compressed) or the simple format (the default), one record
 * per entry:
 *
 *   f MODE MTIME SIZE PATH\n   then SIZE bytes: a regular file
 *   d MODE MTIME PATH\n                          a directory
 *   l MODE MTIME LENGTH PATH\n then LENGTH bytes: a symbolic link's target
 *
 * MODE is octal permission bits, MTIME seconds since the epoch (optionally
 * with .NANOSECONDS, or - for the time of writing), PATH is relative to DIR and runs to the end of the
 * line (names holding a newline need --tar).  For example:
 *
 *   printf 'f 644 0 5 a/hello\nworld' | bfo write /tmp/out
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bfo.h"
#include "cli.h"

/* Default batch: 64 MiB or 16,384 entries, whichever comes first. */
#define WBATCH_BYTES (64ull << 20)
#define WBATCH_ENTRIES 16384u
/* Files larger than this are written in pieces (bounded memory). */
#define PIECE (16ull << 20)

struct wr {
	struct bfo_writer *w;
	struct bfo_wentry *e;
	char **bufs;                /* memory each entry owns: path, data */
	size_t n, cap;
	uint64_t bytes;
	uint64_t files, total, errors;
	struct cli_progress prog;
	bool owner;
	uint64_t batch_bytes, batch_entries;
};

static void die_oom(void)
{
	fprintf(stderr, "bfo: write: out of memory\n");
	exit(2);
}

static struct bfo_wentry *wr_add(struct wr *r, char *path)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->e = realloc(r->e, r->cap * sizeof(*r->e));
		r->bufs = realloc(r->bufs, r->cap * 2 * sizeof(*r->bufs));
		if (!r->e || !r->bufs)
			die_oom();
	}
	memset(&r->e[r->n], 0, sizeof(r->e[0]));
	r->e[r->n].path = path;
	r->bufs[2 * r->n] = path;
	r->bufs[2 * r->n + 1] = NULL;
	return &r->e[r->n++];
}

static void wr_flush(struct wr *r)
{
	if (!r->n)
		return;
	int ret = bfo_writer_write(r->w, r->e, (unsigned)r->n);

	if (ret < 0)
		fprintf(stderr, "bfo: write: batch failed: %s\n", bfo_strerror(ret));
	for (size_t i = 0; i < r->n; i++) {
		if (r->e[i].status) {
			fprintf(stderr, "bfo: write: %s: %s\n", r->e[i].path,
				bfo_strerror(r->e[i].status));
			r->errors++;
		} else if (!(r->e[i].flags & BFO_WENTRY_MORE)) {
			r->files++;
		}
		if (!r->e[i].status && r->e[i].type == BFO_WTYPE_FILE)
			r->total += r->e[i].length;
		free(r->bufs[2 * i]);
		free(r->bufs[2 * i + 1]);
	}
	r->n = 0;
	r->bytes = 0;
	cli_progress_tick(&r->prog, r->files, r->total, false);
}

static void wr_maybe_flush(struct wr *r)
{
	if (r->bytes >= r->batch_bytes || r->n >= r->batch_entries)
		wr_flush(r);
}

/* ---------------------------------------------------------- simple format */

static int read_exact(FILE *f, void *buf, uint64_t n)
{
	return n == 0 || fread(buf, 1, n, f) == n ? 0 : -1;
}

static int parse_time(const char *s, int64_t *sec, uint32_t *nsec)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	*sec = v;
	*nsec = 0;
	if (*end == '.') {
		char frac[10] = "000000000";
		size_t l = strspn(end + 1, "0123456789");

		memcpy(frac, end + 1, l > 9 ? 9 : l);
		*nsec = (uint32_t)strtoul(frac, NULL, 10);
		end += 1 + l;
	}
	return *end ? -1 : 0;
}

/*
 * A regular file of size bytes whose content read(ctx, buf, n) supplies:
 * one entry, or pieces of PIECE bytes (BFO_WENTRY_MORE on all but the last)
 * so memory stays bounded whatever the file's size.  tmpl carries the
 * metadata; every piece owns a copy of the path.
 */
static int add_file_pieces(struct wr *r, const struct bfo_wentry *tmpl, const char *path,
			   uint64_t size, int64_t (*rd)(void *ctx, char *buf, uint64_t n), void *ctx)
{
	uint64_t off = 0;

	do {
		uint64_t chunk = size - off < PIECE ? size - off : PIECE;
		char *d = malloc(chunk ? chunk : 1), *pc = strdup(path);

		if (!d || !pc)
			die_oom();
		int64_t got = rd(ctx, d, chunk);

		if (got < 0 || (uint64_t)got != chunk) {
			free(d);
			free(pc);
			return -1;
		}
		struct bfo_wentry *e = wr_add(r, pc);

		*e = *tmpl;
		e->path = pc;
		e->type = BFO_WTYPE_FILE;
		e->data = d;
		e->length = chunk;
		e->offset = off;
		r->bufs[2 * (r->n - 1) + 1] = d;
		off += chunk;
		if (off < size)
			e->flags |= BFO_WENTRY_MORE;
		r->bytes += chunk;
		wr_maybe_flush(r);
	} while (off < size);
	return 0;
}

static int64_t rd_file(void *ctx, char *buf, uint64_t n)
{
	return read_exact(ctx, buf, n) ? -1 : (int64_t)n;
}

static int64_t rd_archive(void *ctx, char *buf, uint64_t n)
{
	uint64_t got = 0;

	while (got < n) {
		la_ssize_t k = archive_read_data(ctx, buf + got, n - got);

		if (k <= 0)
			return k < 0 ? -1 : (int64_t)got;
		got += (uint64_t)k;
	}
	return (int64_t)got;
}

static int simple_stream(struct wr *r, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t lineno = 0;

	while ((len = getline(&line, &cap, in)) > 0) {
		char type, *fields[4], *save = NULL, *p;
		int nf = 0, need;

		lineno++;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (len < 2 || line[1] != ' ')
			goto bad;
		type = line[0];
		need = type == 'd' ? 2 : 3;   /* fields before PATH */
		p = line + 2;
		for (nf = 0; nf < need; nf++) {
			fields[nf] = strtok_r(nf ? NULL : p, " ", &save);
			if (!fields[nf])
				goto bad;
		}
		char *path = save;            /* the rest of the line */
		struct bfo_wentry t = { .flags = BFO_WENTRY_TIMES };

		if (!path || !*path)
			goto bad;
		t.mode = (uint32_t)strtoul(fields[0], NULL, 8);
		if (!strcmp(fields[1], "-"))          /* no time given: now */
			t.flags &= ~BFO_WENTRY_TIMES;
		else if (parse_time(fields[1], &t.mtime_sec, &t.mtime_nsec))
			goto bad;
		t.atime_sec = t.mtime_sec;
		t.atime_nsec = t.mtime_nsec;
		if (type == 'f') {
			if (add_file_pieces(r, &t, path, strtoull(fields[2], NULL, 10), rd_file, in))
				goto truncated;
			continue;
		}
		if (type != 'd' && type != 'l')
			goto bad;
		char *pc = strdup(path);

		if (!pc)
			die_oom();
		struct bfo_wentry *e = wr_add(r, pc);

		*e = t;
		e->path = pc;
		if (type == 'd') {
			e->type = BFO_WTYPE_DIR;
		} else {
			uint64_t size = strtoull(fields[2], NULL, 10);
			char *tg = malloc(size + 1);

			if (!tg || read_exact(in, tg, size)) {
				free(tg);
				goto truncated;
			}
			tg[size] = '\0';
			e->type = BFO_WTYPE_SYMLINK;
			e->data = tg;
			r->bufs[2 * (r->n - 1) + 1] = tg;
		}
		wr_maybe_flush(r);
	}
	free(line);
	return 0;
bad:
	fprintf(stderr, "bfo: write: stdin line %" PRIu64 ": not a record of the simple format "
		"(see bfo write --help)\n", lineno);
	free(line);
	return -1;
truncated:
	fprintf(stderr, "bfo: write: stdin ends inside a record (line %" PRIu64 ")\n", lineno);
	free(line);
	return -1;
}

/* ---------------------------------------------------------- tar */

static int tar_stream(struct wr *r)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	int ret = 0;

	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	if (archive_read_open_fd(a, STDIN_FILENO, 1 << 20) != ARCHIVE_OK) {
		fprintf(stderr, "bfo: write: %s\n", archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	while ((ret = archive_read_next_header(a, &ae)) == ARCHIVE_OK ||
	       ret == ARCHIVE_WARN) {
		const char *name = archive_entry_pathname(ae);
		mode_t type = archive_entry_filetype(ae);
		char *path;

		/* tar names: "./x" and "dir/" are x and dir here. */
		while (name && name[0] == '.' && name[1] == '/')
			name += 2;
		if (!name || !*name || !strcmp(name, "."))
			continue;
		path = strdup(name);
		if (!path)
			die_oom();
		for (size_t l = strlen(path); l > 1 && path[l - 1] == '/'; l--)
			path[l - 1] = '\0';

		struct bfo_wentry *e = wr_add(r, path);

		e->mode = archive_entry_perm(ae);
		e->flags = BFO_WENTRY_TIMES | (r->owner ? BFO_WENTRY_OWNER : 0);
		e->uid = (uint32_t)archive_entry_uid(ae);
		e->gid = (uint32_t)archive_entry_gid(ae);
		e->mtime_sec = archive_entry_mtime(ae);
		e->mtime_nsec = (uint32_t)archive_entry_mtime_nsec(ae);
		e->atime_sec = archive_entry_atime_is_set(ae) ? archive_entry_atime(ae) : e->mtime_sec;
		e->atime_nsec = archive_entry_atime_is_set(ae) ? (uint32_t)archive_entry_atime_nsec(ae) :
								 e->mtime_nsec;
		if (archive_entry_hardlink(ae)) {
			const char *hl = archive_entry_hardlink(ae);

			while (hl[0] == '.' && hl[1] == '/')
				hl += 2;
			char *t = strdup(hl);

			e->type = BFO_WTYPE_HARDLINK;
			e->data = t;
			r->bufs[2 * (r->n - 1) + 1] = t;
		} else if (type == AE_IFDIR) {
			e->type = BFO_WTYPE_DIR;
		} else if (type == AE_IFLNK) {
			char *t = strdup(archive_entry_symlink(ae));

			e->type = BFO_WTYPE_SYMLINK;
			e->data = t;
			r->bufs[2 * (r->n - 1) + 1] = t;
		} else if (type == AE_IFIFO || type == AE_IFCHR || type == AE_IFBLK) {
			e->type = type == AE_IFIFO ? BFO_WTYPE_FIFO : type == AE_IFCHR ?
				  BFO_WTYPE_CHR : BFO_WTYPE_BLK;
			e->rdev = (uint64_t)archive_entry_rdevmajor(ae) << 32 |
				  (uint32_t)archive_entry_rdevminor(ae);
		} else if (type == AE_IFREG) {
			struct bfo_wentry t = *e;

			r->n--;             /* re-added piece by piece */
			free(path);
			if (add_file_pieces(r, &t, name,
					    (uint64_t)archive_entry_size(ae), rd_archive, a)) {
				fprintf(stderr, "bfo: write: %s: archive ends inside this file\n", name);
				ret = ARCHIVE_FATAL;
				break;
			}
			continue;
		} else {
			fprintf(stderr, "bfo: write: %s: unsupported entry type, skipped\n", name);
			free(path);
			r->n--;
			continue;
		}
		wr_maybe_flush(r);
	}
	if (ret != ARCHIVE_EOF) {
		if (archive_error_string(a))
			fprintf(stderr, "bfo: write: %s\n", archive_error_string(a));
		ret = -1;
	} else {
		ret = 0;
	}
	archive_read_free(a);
	return ret;
}

int cmd_write(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tar", no_argument, 0, 't' },
		CLI_WRITE_LONGOPTS,
		{ "stats", no_argument, 0, 'S' },
		{ "batch-bytes", required_argument, 0, 'B' },
		{ "batch-files", required_argument, 0, 'F' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct bfo_write_opts wo = { .size = sizeof(wo) };
	struct wr r = { .batch_bytes = WBATCH_BYTES, .batch_entries = WBATCH_ENTRIES };
	bool tar = false, stats = false;
	int opt, ret;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "tfh", longopts, NULL)) != -1) {
		int w = cli_write_opt(opt, optarg, &wo);
		uint64_t v;

		if (w < 0)
			goto usage;
		if (w)
			continue;
		switch (opt) {
		case 't': tar = true; break;
		case 'S': stats = true; break;
		case 'B':
		case 'F':
			if (cli_size(optarg, &v) || v == 0)
				goto usage;
			if (opt == 'B')
				r.batch_bytes = v;
			else
				r.batch_entries = v;
			break;
		case 'h':
			printf("usage: bfo write [--tar] [--durability none|batch|each] [--replace]\n"
			       "                 [--batch-bytes SIZE] [--batch-files N] DIR < STREAM\n\n"
			       "Entries are written in batches of --batch-bytes (default 64M) or --batch-files\n"
			       "(default 16384), whichever fills first; each batch is journaled before its\n"
			       "data, and with --durability batch (the default) everything is durable when\n"
			       "bfo write returns (batches share syncfs calls, at most 64 per call).\n\n"
			       "The simple format, one record per entry (PATH relative to DIR, to the end of the line):\n"
			       "  f MODE MTIME SIZE PATH\\n followed by SIZE bytes    a regular file\n"
			       "  d MODE MTIME PATH\\n                                 a directory\n"
			       "  l MODE MTIME LENGTH PATH\\n followed by the target  a symbolic link\n"
			       "MODE in octal, MTIME in seconds since the epoch (.NANOSECONDS allowed, - for now).\n"
			       "--tar reads a tar archive instead (any format and compression libarchive reads).\n");
			return 0;
		default:
			goto usage;
		}
	}
	if (argc - optind != 1)
		goto usage;
	r.owner = geteuid() == 0;
	/* Durable when the command returns: batches may share a syncfs. */
	if (wo.durability == BFO_DURABILITY_BATCH)
		wo.durability = BFO_DURABILITY_CLOSE;
	ret = bfo_writer_open(&r.w, argv[optind], &wo);
	if (ret) {
		cli_dest_error("write", argv[optind], ret);
		return 2;
	}
	cli_progress_init(&r.prog, "written", -1);
	ret = tar ? tar_stream(&r) : simple_stream(&r, stdin);
	wr_flush(&r);

	struct bfo_write_stats st;

	bfo_writer_stats(r.w, &st);
	/* Close is the durability point of deferred batches: timed apart. */
	uint64_t t_close = cli_now_ns();
	int cret = bfo_writer_close(r.w);

	t_close = cli_now_ns() - t_close;

	if (cret) {
		fprintf(stderr, "bfo: write: %s: %s\n", argv[optind], bfo_strerror(cret));
		r.errors++;
	}
	cli_progress_tick(&r.prog, r.files, r.total, true);
	if (stats)
		fprintf(stderr, "bfo write: %" PRIu64 " entries, %.1f MB, %" PRIu64 " errors; engine %s, "
			"%" PRIu64 " batches, %" PRIu64 " syncs, %" PRIu64 " clones; seconds: manifest %.3f, "
			"data %.3f, sync %.3f, close %.3f\n",
			r.files, (double)r.total / 1e6, r.errors, bfo_wengine_name((int)st.engine),
			st.batches, st.syncs, st.clones, (double)st.ns_manifest / 1e9,
			(double)st.ns_data / 1e9, (double)st.ns_sync / 1e9, (double)t_close / 1e9);
	free(r.e);
	free(r.bufs);
	if (ret < 0)
		return 2;
	return r.errors ? 1 : 0;
usage:
	fprintf(stderr, "usage: bfo write [--tar] [--durability none|batch|each] [--replace] DIR < STREAM\n");
	return 2;
}

int cmd_recover(int argc, char **argv)
{
	struct bfo_recover_stats st;
	int ret;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: bfo recover DIR\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	ret = bfo_journal_recover(argv[1], &st);
	if (ret < 0) {
		cli_dest_error("recover", argv[1], ret);
		return 2;
	}
	printf("bfo recover: %d unfinished batch%s; %" PRIu64 " files complete, %" PRIu64
	       " finished from a stem, %" PRIu64 " torn or temporary files removed\n",
	       ret, ret == 1 ? "" : "es", st.complete, st.finished, st.removed);
	return 0;
}

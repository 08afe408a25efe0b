/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The streams of bfo write (the simple format and tar) parsed into writer
 * entries.  See stream.h; the formats and their limits are in README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "archive_lib.h"
#include "stream.h"

/* The record line: a type, three fields and a PATH. */
#define LINE_MAX_BYTES (STREAM_PATH_MAX + 128)

__attribute__((format(printf, 2, 3)))
static int refuse(struct stream *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->err, sizeof(st->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* Digits of base only (no sign, no space, at least one), at most max. */
static int parse_num(const char *s, unsigned base, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d = (unsigned)(unsigned char)*s - '0';

		if (d >= base || x > (max - d) / base)
			return -1;
		x = x * base + d;
	}
	*v = x;
	return 0;
}

/* [-]SECONDS[.NANOSECONDS], the fraction 1 to 9 digits; the sign is the
 * whole time's. */
static int parse_time(const char *s, int64_t *sec, uint32_t *nsec)
{
	bool neg = *s == '-';
	const char *dot = strchr(s + neg, '.');
	char whole[24];
	size_t wl = dot ? (size_t)(dot - s - neg) : strlen(s + neg);
	uint64_t v, ns = 0;

	if (wl == 0 || wl >= sizeof(whole))
		return -1;
	memcpy(whole, s + neg, wl);
	whole[wl] = '\0';
	if (parse_num(whole, 10, INT64_MAX, &v))
		return -1;
	if (dot) {
		size_t fl = strlen(dot + 1);

		if (fl == 0 || fl > 9 || parse_num(dot + 1, 10, UINT64_MAX, &ns))
			return -1;
		for (; fl < 9; fl++)
			ns *= 10;
	}
	/* -1.25 is 1.25 s before the epoch: { -2, 750000000 }, as touch -d @-1.25. */
	*sec = neg ? -(int64_t)v - (ns > 0) : (int64_t)v;
	*nsec = (uint32_t)(neg && ns ? 1000000000 - ns : ns);
	return 0;
}

/*
 * A regular file of size bytes that rd(ctx, buf, n) supplies: one entry,
 * or pieces of STREAM_PIECE bytes (BFO_WENTRY_MORE on all but the last).
 * Returns 0, 1 when the stream ends first (*got: bytes it held), or < 0.
 */
static int file_pieces(struct stream *st, const struct bfo_wentry *tmpl, const char *path,
		       uint64_t size, int64_t (*rd)(void *ctx, char *buf, uint64_t n), void *ctx,
		       uint64_t *got)
{
	uint64_t off = 0;

	*got = 0;
	do {
		uint64_t chunk = size - off < STREAM_PIECE ? size - off : STREAM_PIECE;
		char *d = malloc(chunk ? chunk : 1), *pc = strdup(path);
		int64_t n;

		if (!d || !pc) {
			free(d);
			free(pc);
			return refuse(st, "out of memory");
		}
		n = rd(ctx, d, chunk);
		if (n < 0 || (uint64_t)n != chunk) {
			free(d);
			free(pc);
			*got = off + (n > 0 ? (uint64_t)n : 0);
			return 1;
		}
		struct bfo_wentry e = *tmpl;

		e.path = pc;
		e.type = BFO_WTYPE_FILE;
		e.data = d;
		e.length = chunk;
		e.offset = off;
		off += chunk;
		if (off < size)
			e.flags |= BFO_WENTRY_MORE;
		int ret = st->entry(st->ctx, &e);

		if (ret < 0)
			return ret;
	} while (off < size);
	*got = size;
	return 0;
}

/* ---------------------------------------------------------- simple format */

static int64_t rd_file(void *ctx, char *buf, uint64_t n)
{
	return (int64_t)fread(buf, 1, n, ctx);
}

/* One line into buf without its newline: its length; -1 at the end of the
 * stream, -2 when longer than cap - 1 bytes. */
static ssize_t read_line(FILE *in, char *buf, size_t cap)
{
	size_t n = 0;
	int c;

	while ((c = getc_unlocked(in)) != EOF && c != '\n') {
		if (n + 1 >= cap)
			return -2;
		buf[n++] = (char)c;
	}
	if (c == EOF && n == 0)
		return -1;
	buf[n] = '\0';
	return (ssize_t)n;
}

static int simple_link(struct stream *st, FILE *in, struct bfo_wentry *e, const char *len_s)
{
	uint64_t len;

	if (parse_num(len_s, 10, STREAM_TARGET_MAX, &len) || len == 0)
		return refuse(st, "line %" PRIu64 ": LENGTH '%.40s' of a symbolic link's target is "
			      "not a number from 1 to %d", st->line, len_s, STREAM_TARGET_MAX);
	char *tg = malloc(len + 1);

	if (!tg)
		return refuse(st, "out of memory");
	size_t got = fread(tg, 1, len, in);

	tg[got] = '\0';
	if (got != len) {
		free(tg);
		return refuse(st, "line %" PRIu64 ": the stream ends inside this record (%s: %zu of "
			      "%" PRIu64 " bytes of its target)", st->line, e->path, got, len);
	}
	if (strlen(tg) != len) {
		free(tg);
		return refuse(st, "line %" PRIu64 ": the target of %s holds a NUL byte", st->line,
			      e->path);
	}
	e->type = BFO_WTYPE_SYMLINK;
	e->data = tg;
	return 0;
}

/* One record whose line (len bytes) is in line. */
static int simple_record(struct stream *st, FILE *in, char *line, size_t len)
{
	char type = line[0], *fields[3], *save = NULL;
	int need = type == 'd' ? 2 : 3;   /* fields before PATH */
	struct bfo_wentry t = { .flags = BFO_WENTRY_TIMES };
	uint64_t v;

	if (len < 2 || line[1] != ' ' || (type != 'f' && type != 'd' && type != 'l'))
		goto bad;
	if (strlen(line) != len)
		return refuse(st, "line %" PRIu64 ": holds a NUL byte", st->line);
	for (int nf = 0; nf < need; nf++) {
		fields[nf] = strtok_r(nf ? NULL : line + 2, " ", &save);
		if (!fields[nf])
			goto bad;
	}
	const char *path = save;          /* the rest of the line */

	if (!path || !*path)
		goto bad;
	if (strlen(path) > STREAM_PATH_MAX)
		return refuse(st, "line %" PRIu64 ": PATH is longer than %d bytes", st->line,
			      STREAM_PATH_MAX);
	if (parse_num(fields[0], 8, 07777, &v))
		return refuse(st, "line %" PRIu64 ": MODE '%.40s' is not octal permission bits "
			      "(at most 7777)", st->line, fields[0]);
	t.mode = (uint32_t)v;
	if (!strcmp(fields[1], "-"))          /* no time given: now */
		t.flags &= ~BFO_WENTRY_TIMES;
	else if (parse_time(fields[1], &t.mtime_sec, &t.mtime_nsec))
		return refuse(st, "line %" PRIu64 ": MTIME '%.40s' is not - or [-]SECONDS"
			      "[.NANOSECONDS] (up to 9 digits)", st->line, fields[1]);
	t.atime_sec = t.mtime_sec;
	t.atime_nsec = t.mtime_nsec;
	if (type == 'f') {
		uint64_t size, got;

		if (parse_num(fields[2], 10, STREAM_SIZE_MAX, &size))
			return refuse(st, "line %" PRIu64 ": SIZE '%.40s' is not a number of bytes up "
				      "to %" PRIu64, st->line, fields[2], STREAM_SIZE_MAX);
		int ret = file_pieces(st, &t, path, size, rd_file, in, &got);

		if (ret == 1)
			return refuse(st, "line %" PRIu64 ": the stream ends inside this record (%s: %"
				      PRIu64 " of %" PRIu64 " bytes)", st->line, path, got, size);
		return ret;
	}
	t.path = strdup(path);
	if (!t.path)
		return refuse(st, "out of memory");
	if (type == 'd') {
		t.type = BFO_WTYPE_DIR;
	} else if (simple_link(st, in, &t, fields[2])) {
		free((char *)t.path);
		return -1;
	}
	return st->entry(st->ctx, &t);
bad:
	return refuse(st, "line %" PRIu64 ": not a record of the simple format (see bfo write "
		      "--help)", st->line);
}

int stream_simple(struct stream *st, FILE *in)
{
	char *line = malloc(LINE_MAX_BYTES);
	ssize_t len;
	int ret = 0;

	st->err[0] = '\0';
	if (!line)
		return refuse(st, "out of memory");
	while (!ret && (len = read_line(in, line, LINE_MAX_BYTES)) != -1) {
		st->line++;
		if (len == -2)
			ret = refuse(st, "line %" PRIu64 ": longer than %d bytes (PATH at most %d)",
				     st->line, LINE_MAX_BYTES - 1, STREAM_PATH_MAX);
		else
			ret = simple_record(st, in, line, (size_t)len);
	}
	if (!ret && ferror(in))
		ret = refuse(st, "line %" PRIu64 ": read error", st->line);
	free(line);
	return ret;
}

/* ---------------------------------------------------------- tar */

struct archive *stream_tar_reader(bool compressed)
{
	struct archive *a;

	if (archive_lib_load() || !(a = archive_read_new()))
		return NULL;
	/*
	 * Tar formats only, and the compressions libarchive decodes itself:
	 * no other format's parser and no external program runs as root on
	 * a stream another user may have written.  GNU tar reads the same.
	 */
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a);
	if (!compressed)
		return a;
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_lzma(a);
	archive_read_support_filter_lzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_filter_lz4(a);
	archive_read_support_filter_compress(a);
	return a;
}

static int64_t rd_archive(void *ctx, char *buf, uint64_t n)
{
	uint64_t got = 0;

	while (got < n) {
		la_ssize_t k = archive_read_data(ctx, buf + got, n - got);

		if (k <= 0)
			break;
		got += (uint64_t)k;
	}
	return (int64_t)got;
}

/* A link's target: "./" dropped, 1 to max bytes; a copy or NULL. */
static char *tar_target(struct stream *st, const char *name, const char *tg, size_t max)
{
	char *t;

	while (tg && tg[0] == '.' && tg[1] == '/')
		tg += 2;
	if (!tg || !*tg || strlen(tg) > max) {
		refuse(st, "%.256s: the link's target is empty or longer than %zu bytes", name, max);
		return NULL;
	}
	t = strdup(tg);
	if (!t)
		refuse(st, "out of memory");
	return t;
}

/* The owner, times and device number of ae into e, each checked. */
static int tar_meta(struct stream *st, struct archive_entry *ae, struct bfo_wentry *e,
		    const char *name)
{
	int64_t uid = archive_entry_uid(ae), gid = archive_entry_gid(ae);
	long mns = archive_entry_mtime_nsec(ae);
	bool aset = archive_entry_atime_is_set(ae);
	long ans = aset ? archive_entry_atime_nsec(ae) : mns;

	/* (uid_t)-1 would mean "unchanged" to fchown: not an owner. */
	if (st->owner && (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX))
		return refuse(st, "%.256s: uid %" PRId64 " or gid %" PRId64 " is not from 0 to %u",
			      name, uid, gid, UINT32_MAX - 1);
	if (mns < 0 || mns > 999999999 || ans < 0 || ans > 999999999)
		return refuse(st, "%.256s: a time's nanoseconds are not from 0 to 999999999", name);
	e->mode = archive_entry_perm(ae) & 07777;
	e->flags = BFO_WENTRY_TIMES | (st->owner ? BFO_WENTRY_OWNER : 0);
	e->uid = st->owner ? (uint32_t)uid : 0;
	e->gid = st->owner ? (uint32_t)gid : 0;
	e->mtime_sec = archive_entry_mtime(ae);
	e->mtime_nsec = (uint32_t)mns;
	e->atime_sec = aset ? archive_entry_atime(ae) : e->mtime_sec;
	e->atime_nsec = (uint32_t)ans;
	if (archive_entry_filetype(ae) == AE_IFCHR || archive_entry_filetype(ae) == AE_IFBLK) {
		uint64_t ma = archive_entry_rdevmajor(ae), mi = archive_entry_rdevminor(ae);

		if (ma > UINT32_MAX || mi > UINT32_MAX)
			return refuse(st, "%.256s: device number %" PRIu64 ",%" PRIu64 " out of range",
				      name, ma, mi);
		e->rdev = ma << 32 | mi;
	}
	return 0;
}

/* One member of the archive: 0, 1 when skipped, or < 0. */
static int tar_member(struct stream *st, struct archive *a, struct archive_entry *ae)
{
	const char *name = archive_entry_pathname(ae);
	mode_t type = archive_entry_filetype(ae);
	struct bfo_wentry e = { 0 };
	char *tg = NULL;

	/* tar names: "./x" and "dir/" are x and dir here. */
	while (name && name[0] == '.' && name[1] == '/')
		name += 2;
	if (!name || !*name || !strcmp(name, "."))
		return 1;
	if (strlen(name) > STREAM_PATH_MAX)
		return refuse(st, "%.256s...: PATH longer than %d bytes", name, STREAM_PATH_MAX);
	if (tar_meta(st, ae, &e, name))
		return -1;
	if (archive_entry_hardlink(ae)) {
		tg = tar_target(st, name, archive_entry_hardlink(ae), STREAM_PATH_MAX);
		e.type = BFO_WTYPE_HARDLINK;
	} else if (type == AE_IFLNK) {
		tg = tar_target(st, name, archive_entry_symlink(ae), STREAM_TARGET_MAX);
		e.type = BFO_WTYPE_SYMLINK;
	} else if (type == AE_IFDIR || type == AE_IFIFO || type == AE_IFCHR || type == AE_IFBLK) {
		e.type = type == AE_IFDIR ? BFO_WTYPE_DIR : type == AE_IFIFO ? BFO_WTYPE_FIFO :
			 type == AE_IFCHR ? BFO_WTYPE_CHR : BFO_WTYPE_BLK;
	} else if (type == AE_IFREG) {
		int64_t size = archive_entry_size(ae);
		uint64_t got;
		int ret;

		if (size < 0)
			return refuse(st, "%.256s: size %" PRId64 " is negative", name, size);
		e.type = BFO_WTYPE_FILE;
		ret = file_pieces(st, &e, name, (uint64_t)size, rd_archive, a, &got);
		if (ret == 1)
			return refuse(st, "%.256s: the archive ends inside this file (%" PRIu64 " of %"
				      PRId64 " bytes): %s", name, got, size,
				      archive_error_string(a) ? archive_error_string(a) : "no more data");
		return ret;
	} else {
		if (st->warn)
			fprintf(st->warn, "bfo: write: %s: unsupported entry type, skipped\n", name);
		return 1;
	}
	if ((e.type == BFO_WTYPE_HARDLINK || e.type == BFO_WTYPE_SYMLINK) && !tg)
		return -1;
	e.data = tg;
	e.path = strdup(name);
	if (!e.path) {
		free(tg);
		return refuse(st, "out of memory");
	}
	/* The path of a directory runs without its trailing slashes. */
	for (size_t l = strlen(e.path); l > 1 && e.path[l - 1] == '/'; l--)
		((char *)e.path)[l - 1] = '\0';
	return st->entry(st->ctx, &e);
}

int stream_tar(struct stream *st, struct archive *a)
{
	struct archive_entry *ae;
	int ret;

	st->err[0] = '\0';
	while ((ret = archive_read_next_header(a, &ae)) == ARCHIVE_OK || ret == ARCHIVE_WARN) {
		int r = tar_member(st, a, ae);

		if (r < 0)
			return r;
	}
	if (ret != ARCHIVE_EOF)
		return refuse(st, "%s", archive_error_string(a) ? archive_error_string(a) :
			      "not a readable tar archive");
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo cp: the read engine on the source piped into the writer on the
 * destination (BFO_m).  Regular files stream out of the read engine in disk
 * order; directories, symbolic links and special files come from the walk.
 * Entries collect into a batch until it holds a quarter of the read arena
 * (or a fixed number of entries), then go to the writer as one batch while
 * the read engine keeps filling the rest of its arena: reading and writing
 * overlap with bounded memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "bfo.h"
#include "cli.h"
#include "walk.h"

#define BATCH_MAX_ENTRIES 16384u

struct hl {                         /* first copy of a multiply linked inode */
	uint64_t dev, ino;
	char *dest;
};

struct cp {
	bool archive;
	bool is_root;
	struct bfo_ctx *rctx;
	struct bfo_writer *w;
	uint64_t batch_bytes_max;
	/* the batch being built */
	struct bfo_wentry *e;
	char **owned;               /* strings the batch owns (paths, targets, xattrs) */
	size_t n, cap, nowned, capowned;
	uint64_t batch_bytes;
	struct bfo_file *held;      /* read entries the batch points into */
	size_t nheld, capheld;
	/* Where a read result goes: its source (by read index, two bytes per
	 * file) and that source's root and destination prefix. */
	uint16_t *src_of;
	size_t nsub, capsub;
	struct src { const char *root; size_t len; const char *prefix; bool file; } *srcs;
	size_t nsrcs;
	uint64_t *skip;             /* read indices whose later pieces are skipped */
	size_t nskip, capskip;
	/* hard links */
	struct hl *hls;
	size_t nhls, caphls;
	uint64_t files, bytes, errors;
	struct cli_progress prog;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fprintf(stderr, "bfo: out of memory\n");
		exit(2);
	}
	return q;
}

static char *own(struct cp *c, char *s)
{
	if (c->nowned == c->capowned) {
		c->capowned = c->capowned ? c->capowned * 2 : 1024;
		c->owned = xrealloc(c->owned, c->capowned * sizeof(*c->owned));
	}
	c->owned[c->nowned++] = s;
	return s;
}

static struct bfo_wentry *add(struct cp *c)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->e = xrealloc(c->e, c->cap * sizeof(*c->e));
	}
	memset(&c->e[c->n], 0, sizeof(c->e[0]));
	return &c->e[c->n++];
}

/* Packed xattrs of src (name, NUL, uint32 length, value), owned by the batch. */
static void take_xattrs(struct cp *c, const char *src, struct bfo_wentry *e)
{
	ssize_t n = llistxattr(src, NULL, 0);

	if (n <= 0)
		return;
	char *names = malloc((size_t)n);
	size_t cap = 256, len = 0;
	char *buf = malloc(cap);

	if (!names || !buf || (n = llistxattr(src, names, (size_t)n)) <= 0) {
		free(names);
		free(buf);
		return;
	}
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t vl = lgetxattr(src, k, NULL, 0);

		if (vl < 0)
			continue;
		size_t need = len + strlen(k) + 1 + sizeof(uint32_t) + (size_t)vl;

		while (need > cap)
			cap *= 2;
		buf = xrealloc(buf, cap);
		memcpy(buf + len, k, strlen(k) + 1);
		len += strlen(k) + 1;
		uint32_t v32 = (uint32_t)vl;

		vl = lgetxattr(src, k, buf + len + sizeof(v32), (size_t)vl);
		if (vl < 0) {
			len -= strlen(k) + 1;
			continue;
		}
		v32 = (uint32_t)vl;
		memcpy(buf + len, &v32, sizeof(v32));
		len += sizeof(v32) + (size_t)vl;
	}
	free(names);
	if (!len) {
		free(buf);
		return;
	}
	e->xattrs = own(c, buf);
	e->xattrs_len = len;
}

static void meta_from_stat(struct cp *c, struct bfo_wentry *e, const struct stat *st)
{
	e->mode = st->st_mode & 07777;
	if (!c->archive) {
		/* cp -r: the source's permission bits less the umask, no set-id
		 * bits, the current time, owned by whoever copies. */
		mode_t um = umask(0);

		umask(um);
		e->mode &= 0777 & ~um;
		return;
	}
	e->flags |= BFO_WENTRY_TIMES;
	e->atime_sec = st->st_atim.tv_sec;
	e->atime_nsec = (uint32_t)st->st_atim.tv_nsec;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	if (c->is_root) {
		e->flags |= BFO_WENTRY_OWNER;
		e->uid = st->st_uid;
		e->gid = st->st_gid;
	}
}

/* Write the batch, report its failures, give the read entries back. */
static void flush(struct cp *c)
{
	if (!c->n)
		return;
	int ret = bfo_writer_write(c->w, c->e, (unsigned)c->n);

	for (size_t i = 0; i < c->n; i++) {
		if (c->e[i].status) {
			fprintf(stderr, "bfo: cp: %s: %s\n", c->e[i].path, bfo_strerror(c->e[i].status));
			c->errors++;
		} else if (c->e[i].type == BFO_WTYPE_FILE && !(c->e[i].flags & BFO_WENTRY_MORE)) {
			c->files++;
		}
	}
	if (ret < 0)
		fprintf(stderr, "bfo: cp: batch failed: %s\n", bfo_strerror(ret));
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].type == BFO_WTYPE_FILE)
			c->bytes += c->e[i].status ? 0 : c->e[i].length;
	bfo_read_release(c->rctx, c->held, (unsigned)c->nheld);
	c->nheld = 0;
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	c->nowned = 0;
	c->n = 0;
	c->batch_bytes = 0;
	cli_progress_tick(&c->prog, c->files, c->bytes, false);
}

static void maybe_flush(struct cp *c)
{
	if (c->batch_bytes >= c->batch_bytes_max || c->n >= BATCH_MAX_ENTRIES)
		flush(c);
}

static const char *hl_find(struct cp *c, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < c->nhls; i++)
		if (c->hls[i].dev == dev && c->hls[i].ino == ino)
			return c->hls[i].dest;
	return NULL;
}

static char *join(const char *a, const char *b)
{
	char *p = malloc(strlen(a) + strlen(b) + 2);

	if (!p)
		exit(2);
	sprintf(p, "%s%s%s", a, *a && *b ? "/" : "", b);
	return p;
}

/* The destination of a read result, owned by the batch. */
static char *dest_of(struct cp *c, const struct bfo_file *f)
{
	const struct src *s = &c->srcs[c->src_of[f->index]];
	const char *rel = f->path + s->len + (f->path[s->len] == '/');

	return own(c, s->file ? strdup(s->prefix) : join(s->prefix, rel));
}

static bool skipped(struct cp *c, uint64_t index)
{
	for (size_t i = 0; i < c->nskip; i++)
		if (c->skip[i] == index)
			return true;
	return false;
}

/* A delivered file (or piece) becomes a FILE or HARDLINK entry. */
static void on_read(struct cp *c, struct bfo_file *f)
{
	struct bfo_wentry *e;
	bool last = f->flags & BFO_FILE_LAST;
	char *dest;

	if (c->nheld == c->capheld) {
		c->capheld = c->capheld ? c->capheld * 2 : 1024;
		c->held = xrealloc(c->held, c->capheld * sizeof(*c->held));
	}
	c->held[c->nheld++] = *f;
	if (f->offset > 0 && skipped(c, f->index))
		goto done;                      /* a hard link's later pieces */
	dest = dest_of(c, f);
	if (f->status < 0) {
		fprintf(stderr, "bfo: cp: %s: %s\n", f->path, bfo_strerror(f->status));
		c->errors++;
		if (f->offset > 0) {            /* earlier pieces were written */
			e = add(c);
			e->path = dest;
			e->type = BFO_WTYPE_FILE;
			e->flags = BFO_WENTRY_ABORT;
		}
		goto done;
	}
	/* Hard links: the first path of an inode is copied, the others link
	 * to that copy (which an earlier batch or this one writes first). */
	if (c->archive && f->nlink > 1 && f->offset == 0) {
		const char *first = hl_find(c, f->dev, f->ino);

		if (first) {
			e = add(c);
			e->path = dest;
			e->type = BFO_WTYPE_HARDLINK;
			e->data = first;
			if (!last) {
				if (c->nskip == c->capskip) {
					c->capskip = c->capskip ? c->capskip * 2 : 16;
					c->skip = xrealloc(c->skip, c->capskip * sizeof(*c->skip));
				}
				c->skip[c->nskip++] = f->index;
			}
			goto done;
		}
		if (c->nhls == c->caphls) {
			c->caphls = c->caphls ? c->caphls * 2 : 64;
			c->hls = xrealloc(c->hls, c->caphls * sizeof(*c->hls));
		}
		c->hls[c->nhls++] = (struct hl){ f->dev, f->ino, strdup(dest) };
	}
	e = add(c);
	e->path = dest;
	e->type = BFO_WTYPE_FILE;
	e->data = f->data;
	e->length = f->length;
	e->offset = f->offset;
	if (!last)
		e->flags |= BFO_WENTRY_MORE;
	struct stat st = { .st_mode = f->mode, .st_uid = f->uid, .st_gid = f->gid,
			   .st_atim = { f->atime_sec, f->atime_nsec },
			   .st_mtim = { f->mtime_sec, f->mtime_nsec } };

	meta_from_stat(c, e, &st);
	if (c->archive && f->offset == 0)
		take_xattrs(c, f->path, e);
	c->batch_bytes += f->length;
done:
	maybe_flush(c);
}

/* Take what the read engine has ready; with final, everything until the
 * batch of reads has ended. */
static void drain(struct cp *c, int timeout_ms, bool final)
{
	struct bfo_file files[256];
	int k;

	for (;;) {
		k = bfo_read_wait(c->rctx, files, 256, final ? -1 : timeout_ms);
		if (k > 0) {
			for (int i = 0; i < k; i++)
				on_read(c, &files[i]);
			timeout_ms = 0;
			continue;
		}
		if (k == -ENOBUFS) {     /* our batch holds the arena: write it */
			flush(c);
			continue;
		}
		if (k < 0 && k != -ETIME && k != -EAGAIN) {
			fprintf(stderr, "bfo: cp: read: %s\n", bfo_strerror(k));
			c->errors++;
		}
		return;
	}
}

/* Queue a source regular file for reading; its bytes arrive via on_read. */
static void submit_file(struct cp *c, const char *src, uint16_t srcno)
{
	int ret;

	while ((ret = bfo_read_submit(c->rctx, &src, 1)) == 0)
		drain(c, 50, false);
	if (ret < 0) {
		fprintf(stderr, "bfo: cp: %s: %s\n", src, bfo_strerror(ret));
		c->errors++;
		return;
	}
	if (c->nsub == c->capsub) {
		c->capsub = c->capsub ? c->capsub * 2 : 4096;
		c->src_of = xrealloc(c->src_of, c->capsub * sizeof(*c->src_of));
	}
	c->src_of[c->nsub++] = srcno;
}

/* Non-regular entries go straight into the batch. */
static void add_other(struct cp *c, const char *src, const char *dest, const struct stat *st)
{
	struct bfo_wentry *e;

	if (S_ISSOCK(st->st_mode)) {
		fprintf(stderr, "bfo: cp: %s: socket skipped\n", src);
		return;
	}
	e = add(c);
	e->path = own(c, strdup(dest));
	meta_from_stat(c, e, st);
	if (S_ISDIR(st->st_mode)) {
		e->type = BFO_WTYPE_DIR;
	} else if (S_ISLNK(st->st_mode)) {
		char *t = malloc((size_t)st->st_size + 2 > 4096 ? (size_t)st->st_size + 2 : 4096);
		ssize_t k = t ? readlink(src, t, (size_t)st->st_size + 1) : -1;

		if (k < 0) {
			fprintf(stderr, "bfo: cp: %s: %s\n", src, strerror(errno));
			free(t);
			c->n--;
			c->errors++;
			return;
		}
		t[k] = '\0';
		e->type = BFO_WTYPE_SYMLINK;
		e->data = own(c, t);
	} else if (S_ISFIFO(st->st_mode)) {
		e->type = BFO_WTYPE_FIFO;
	} else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		e->type = S_ISCHR(st->st_mode) ? BFO_WTYPE_CHR : BFO_WTYPE_BLK;
		e->rdev = (uint64_t)major(st->st_rdev) << 32 | minor(st->st_rdev);
	}
	if (c->archive)
		take_xattrs(c, src, e);
	maybe_flush(c);
}

/* Copy the tree at src to prefix (relative to the writer's root). */
static void copy_tree(struct cp *c, const char *src, const char *prefix, uint16_t srcno)
{
	struct walk *wk = walk_start(src, 8, 1u << 16, WALK_SORT | WALK_NOFOLLOW | WALK_ALL);
	struct walk_file *batch;
	size_t n, slen = strlen(src);
	uint64_t skipped = 0, errors = 0;

	if (!wk) {
		fprintf(stderr, "bfo: cp: %s: cannot walk\n", src);
		c->errors++;
		return;
	}
	while ((n = walk_next(wk, &batch)) > 0) {
		for (size_t i = 0; i < n; i++) {
			const char *p = batch[i].path;
			const char *rel = p + slen + (p[slen] == '/');
			char *dest = join(prefix, rel);
			struct stat st;

			if (batch[i].type == DT_REG) {
				submit_file(c, p, srcno);
			} else if (lstat(p, &st) == 0) {
				if (S_ISREG(st.st_mode))
					submit_file(c, p, srcno);
				else
					add_other(c, p, dest, &st);
			} else {
				fprintf(stderr, "bfo: cp: %s: %s\n", p, strerror(errno));
				c->errors++;
			}
			free(dest);
			drain(c, 0, false);
		}
	}
	walk_end(wk, &skipped, &errors);
	c->errors += errors;
}

int cmd_cp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "archive", no_argument, 0, 'a' },
		{ "recursive", no_argument, 0, 'r' },
		CLI_WRITE_LONGOPTS,
		{ "stats", no_argument, 0, 'S' },
		{ "progress", no_argument, 0, 'P' },
		{ "no-progress", no_argument, 0, 'N' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct bfo_write_opts wo = { .size = sizeof(wo) };
	struct bfo_opts ro;
	struct cp c = { 0 };
	bool stats = false;
	int progress = -1, opt, ret;

	bfo_opts_init(&ro);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "arfh", longopts, NULL)) != -1) {
		int w = cli_write_opt(opt, optarg, &wo);

		if (w < 0)
			goto usage;
		if (w)
			continue;
		switch (opt) {
		case 'a': c.archive = true; break;
		case 'r': break;
		case 'S': stats = true; break;
		case 'P': progress = 1; break;
		case 'N': progress = 0; break;
		case 'h':
			printf("usage: bfo cp [-a] [--durability none|batch|each] [--replace]\n"
			       "              [--write-engine auto|stem|batched] [--uring] [--stats] SRC... DST\n");
			return 0;
		default:
			goto usage;
		}
	}
	if (argc - optind < 2)
		goto usage;

	const char *dst = argv[argc - 1];
	int nsrc = argc - optind - 1;
	struct stat dst_st, src_st;
	bool dst_is_dir = stat(dst, &dst_st) == 0 && S_ISDIR(dst_st.st_mode);
	char *root, *single = NULL;

	if (nsrc > 1 && !dst_is_dir) {
		fprintf(stderr, "bfo: cp: target '%s' is not a directory\n", dst);
		return 2;
	}
	/* cp's rules: into DST when it is a directory, else DST is the copy. */
	if (dst_is_dir) {
		root = strdup(dst);
	} else {
		if (lstat(argv[optind], &src_st) < 0) {
			fprintf(stderr, "bfo: cp: %s: %s\n", argv[optind], strerror(errno));
			return 1;
		}
		if (S_ISDIR(src_st.st_mode)) {
			root = strdup(dst);
		} else {
			char *d = strdup(dst);

			root = strdup(dirname(d));
			free(d);
			d = strdup(dst);
			single = strdup(basename(d));
			free(d);
		}
	}
	c.is_root = geteuid() == 0;
	ret = bfo_writer_open(&c.w, root, &wo);
	if (ret) {
		fprintf(stderr, "bfo: cp: %s: %s\n", root, bfo_strerror(ret));
		return 2;
	}
	ret = bfo_ctx_create(&c.rctx, &ro);
	if (ret) {
		fprintf(stderr, "bfo: cp: cannot start the read engine: %s\n", bfo_strerror(ret));
		bfo_writer_close(c.w);
		return 2;
	}
	/* A batch takes at most a quarter of the read arena, so the engine
	 * reads ahead into the rest while the batch is written. */
	c.batch_bytes_max = ro.arena_bytes / 4;
	cli_progress_init(&c.prog, "copied", progress);

	const char *root_meta_src = NULL;

	c.srcs = calloc((size_t)nsrc, sizeof(*c.srcs));
	if (!c.srcs)
		return 2;
	for (int i = optind; i < argc - 1; i++) {
		const char *src = argv[i];
		char *sc = strdup(src), *prefix;
		uint16_t srcno = (uint16_t)c.nsrcs;

		if (lstat(src, &src_st) < 0) {
			fprintf(stderr, "bfo: cp: %s: %s\n", src, strerror(errno));
			c.errors++;
			free(sc);
			continue;
		}
		/* Strip trailing slashes for basename(). */
		for (size_t l = strlen(sc); l > 1 && sc[l - 1] == '/'; l--)
			sc[l - 1] = '\0';
		prefix = dst_is_dir ? strdup(basename(sc)) : strdup(single ? single : "");
		c.srcs[c.nsrcs++] = (struct src){ .root = sc, .len = strlen(sc), .prefix = prefix,
						  .file = !S_ISDIR(src_st.st_mode) };
		if (S_ISDIR(src_st.st_mode)) {
			if (*prefix)
				add_other(&c, src, prefix, &src_st);
			else
				root_meta_src = src;   /* DST itself is the copy */
			copy_tree(&c, sc, prefix, srcno);
		} else if (S_ISREG(src_st.st_mode)) {
			submit_file(&c, sc, srcno);
		} else {
			add_other(&c, src, prefix, &src_st);
		}
		drain(&c, 0, false);
	}
	bfo_read_submit(c.rctx, NULL, 0);
	bfo_read_finish(c.rctx);
	drain(&c, -1, true);
	flush(&c);

	struct bfo_stats rst;
	struct bfo_write_stats wst;

	bfo_read_stats(c.rctx, &rst);
	bfo_writer_stats(c.w, &wst);
	ret = bfo_writer_close(c.w);
	if (ret) {
		fprintf(stderr, "bfo: cp: %s: %s\n", root, bfo_strerror(ret));
		c.errors++;
	}
	/* DST itself stands for a source directory: its metadata too. */
	if (root_meta_src && c.archive && stat(root_meta_src, &src_st) == 0) {
		struct timespec ts[2] = { src_st.st_atim, src_st.st_mtim };

		if (c.is_root)
			lchown(root, src_st.st_uid, src_st.st_gid);
		chmod(root, src_st.st_mode & 07777);
		utimensat(AT_FDCWD, root, ts, 0);
	}
	cli_progress_tick(&c.prog, c.files, c.bytes, true);
	if (stats) {
		fprintf(stderr, "bfo cp: %" PRIu64 " files, %.1f MB, %" PRIu64 " errors; read engine %s, "
			"write engine %s, %" PRIu64 " batches, %" PRIu64 " syncs, %" PRIu64 " clones\n",
			c.files, (double)c.bytes / 1e6, c.errors, bfo_engine_name((int)rst.engine),
			bfo_wengine_name((int)wst.engine), wst.batches, wst.syncs, wst.clones);
	}
	bfo_ctx_destroy(c.rctx);
	for (size_t i = 0; i < c.nsrcs; i++) {
		free((char *)c.srcs[i].root);
		free((char *)c.srcs[i].prefix);
	}
	for (size_t i = 0; i < c.nhls; i++)
		free(c.hls[i].dest);
	free(c.srcs);
	free(c.src_of);
	free(c.skip);
	free(c.hls);
	free(c.e);
	free(c.owned);
	free(c.held);
	free(root);
	free(single);
	return c.errors ? 1 : 0;
usage:
	fprintf(stderr, "usage: bfo cp [-a] [--durability none|batch|each] [--replace] SRC... DST\n");
	return 2;
}

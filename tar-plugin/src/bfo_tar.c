/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libbfo_tar.so - an LD_PRELOAD plugin that makes an unmodified GNU tar
 * read the files it archives through libbfo's batch reader, and write the
 * files it extracts through libbfo's batch writer (see "extract" below).
 *
 * GNU tar (1.34) archives a directory like this (strace):
 *
 *	openat(parent, "dir", O_RDONLY|O_NOFOLLOW|...)  = D
 *	fdopendir(D); readdir()... until NULL            the whole listing
 *	for each entry, in --sort order (none: readdir order):
 *	    fstatat(D, name, AT_SYMLINK_NOFOLLOW)
 *	    openat(D, name, O_RDONLY|O_NOFOLLOW|...)     = F
 *	    fstat(F); read(F, ...)...; fstat(F); close(F)
 *	    (a subdirectory is archived right there, recursively)
 *	closedir(D)
 *
 * So the listing tells us which regular files tar is about to open, and in
 * which order.  A finished listing becomes a "group" on a stack that
 * mirrors tar's recursion.  From the groups (newest first) the plugin cuts
 * bounded lots (files, bytes) and hands them to one libbfo batch that
 * stays open (bfo_read_flush() after each lot), which reads each lot with
 * few large sorted I/Os on its own threads.  Three lots are in flight, so
 * while two are read the next one's metadata phase runs and the device
 * does not wait between lots.
 * Delivered files wait in libbfo's arena.  When tar opens one of them, the
 * open still goes to libc (tar keeps a real fd for fstat, xattrs, errors),
 * then the fd's identity, size, mtime and ctime are compared with what the
 * batch read; if they match, tar's read()s on that fd are served from
 * memory, otherwise the fd is left alone and tar reads it through libc.
 * tar's own "file changed as we read it" check (fstat before and after)
 * is untouched, so it still fires.  Files the listing did not announce,
 * large or sparse files, files tar opens before their batch or after a
 * failure: all go to libc.
 *
 * Interposition follows libeatmydata: the real functions are resolved once
 * with dlsym(RTLD_NEXT); a thread-local guard passes through every call the
 * plugin (or libbfo) makes while inside a hook; only tar's own thread is
 * served (libbfo's workers always pass through); errno is what libc left;
 * after fork() the child passes everything through; any internal failure
 * turns the plugin off and tar goes on through libc.
 *
 * Environment: BFO_TAR_STATS=FILE appends one line of counters at exit;
 * BFO_TAR_ARENA_MB sets the memory for file data (default 128);
 * BFO_TAR_ENGINE=raw|uring|portable forces libbfo's engine (default auto);
 * BFO_TAR_EXTRACT=off leaves tar -x to libc; BFO_TAR_DURABILITY=none: no
 * syncfs after extraction; BFO_TAR_SYNC_MB: a syncfs while extracting every
 * so many MiB written (default 32, 0: at the end only).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libintl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "bfo.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#define FDTAB_MAX     65536            /* fds above are never served */
#define SERVE_MAX     (1ull << 20)     /* larger files: libc (tar reads them well) */
#define BATCH_FILES   4096u            /* files of a lot, at most */
/*
 * Lots of an eighth of the arena, three being read at once.  With two of
 * a quarter, a lot that retired was replaced by one that spent 20-50 ms in
 * its metadata phase while a single lot was read: half the reads in
 * flight, and the device idle when that lot ended first (libbfo's trace
 * showed it between most lots on the mixed set).  Smaller lots, one more
 * in flight: tar of the mixed set 1.19 -> 1.04 s (medians of 5, cold),
 * of the 4k set 3.6 -> 3.1-3.4 s.
 */
#define LOT_SHARE     8u               /* a lot is at most arena / LOT_SHARE bytes */
#define MAX_LOTS      3u               /* lots being read at once */
#define MAX_LIVE      8u               /* lots whose data is not all given back */
#define WAIT_MAX      64u
#define WARM_DIRS     64u              /* subdirectories read ahead of the listing */
#define MAX_KIDS      1024u           /* directories listed ahead, at most */

enum sort_mode { SORT_NONE, SORT_NAME, SORT_INODE };

enum ent_state {
	E_NEW,          /* announced by a listing, not submitted */
	E_INFLIGHT,     /* submitted to libbfo, not delivered */
	E_READY,        /* data in the arena, waiting for tar's open */
	E_DONE,         /* served, skipped or failed: tar's open goes to libc */
};

struct group;

struct ent {
	char *name;
	uint64_t ino;           /* d_ino, for --sort=inode */
	uint32_t state;
	uint32_t epoch;         /* the libbfo batch it was submitted to */
	uint64_t bindex;        /* index in that batch */
	struct group *g;
	struct bfo_file f;      /* valid in E_READY */
};

/*
 * One directory listing.  Either tar's own (made through its readdir
 * calls, on the stack while tar has the directory open: dir != NULL), or
 * made ahead by the plugin for a subdirectory tar will enter next (a "kid"
 * of a group on the stack), which tar adopts when it opens that directory:
 * the read-ahead then runs across directories instead of stopping at each.
 */
struct group {
	struct group *older;    /* next on the stack */
	DIR *dir;               /* tar's stream, NULL for a kid not yet entered */
	int dirfd;
	int gone;               /* tar is done with it: freed when nothing is in flight */
	char *path;             /* absolute, from /proc/self/fd */
	struct ent *e;          /* regular files (or unknown types), tar's order */
	size_t n, cap;
	struct ent *d;          /* subdirectories, tar's order */
	size_t nd, dcap;
	size_t next_sub;        /* subdirectories before it were listed ahead or entered */
	size_t next_warm;       /* subdirectories before it were given to the read-ahead */
	struct group **kids;    /* listed ahead, in order; NULL once adopted or dropped */
	size_t nkids, kcap;
	size_t next_submit;     /* entries before it were submitted or skipped */
	uint32_t *ht;           /* name hash -> index + 1 */
	size_t htmask;
	size_t cursor;          /* where tar's next open is expected */
	unsigned inflight;      /* entries in E_INFLIGHT */
	int listed;
	int broken;             /* out of memory while listing: nothing is read ahead */
};

struct served {                 /* an fd of tar's whose read()s we answer */
	struct bfo_file f;      /* data released once consumed (data == NULL) */
	uint64_t pos;
	uint32_t epoch;
};

/* ------------------------------------------------------------ real calls */

static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);
static ssize_t (*real_read)(int, void *, size_t);
static int (*real_close)(int);
static off_t (*real_lseek)(int, off_t, int);
static off_t (*real_lseek64)(int, off_t, int);
static DIR *(*real_fdopendir)(int);
static struct dirent *(*real_readdir)(DIR *);
static struct dirent64 *(*real_readdir64)(DIR *);
static int (*real_closedir)(DIR *);

/* Extraction (below): tar's write-opens and the fds it writes. */
static int extract_ok;
/* archive read-ahead (see warmer()) */
static int read_last = -1;      /* tar's thread: fd of its last read() before extracting */
static int warm_src = -1;       /* tar's fd of the archive being read ahead */
static uint64_t warm_pos;       /* tar's offset in it (atomic: tar's thread writes) */
static int warm_stop;           /* atomic: the thread ends */
static void warm_end(void);
static void resolve_extract(void);
static void before_open(int dirfd, const char *path, int flags, int by_openat);
static void after_open(int dirfd, int fd, const char *path, int flags);
static struct wfile *captured(int fd);
static int close_captured(int fd);
static void final_flush(void);
static int extracting, dirty;
static void closing_archive(int fd);
static void note_extracting(void);
static inline int xenter(void);
static void give_back(int fd);

static int resolved;

static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
	if (resolved)
		return;
	real_openat = next_sym("openat");
	real_openat64 = next_sym("openat64");
	real___openat_2 = next_sym("__openat_2");
	real___openat64_2 = next_sym("__openat64_2");
	real_read = next_sym("read");
	real_close = next_sym("close");
	real_lseek = next_sym("lseek");
	real_lseek64 = next_sym("lseek64");
	real_fdopendir = next_sym("fdopendir");
	real_readdir = next_sym("readdir");
	real_readdir64 = next_sym("readdir64");
	real_closedir = next_sym("closedir");
	resolve_extract();
	resolved = 1;
}

/* ------------------------------------------------------------ state */

static int active;              /* 0: every hook passes through */
static pthread_t tar_thread;
static TLS int in_hook;
static enum sort_mode sort_mode;

static struct bfo_ctx *ctx;
static uint64_t arena_bytes = 128ull << 20;
static const char *engine_env;   /* BFO_TAR_ENGINE: raw, uring, portable (default auto) */
static uint64_t batch_bytes;    /* of a lot: arena / LOT_SHARE */
static uint64_t held_budget;    /* bytes of the live lots, at most this */
static uint64_t held_bytes;     /* ready data not yet consumed */

static struct group *top;       /* newest listing */
/*
 * libbfo's batch stays open while tar runs; the plugin submits lots to it.
 * A lot lives until all its files were delivered and given back: libbfo
 * keeps a group's arena chunk until the last file in it is released, so
 * a lot tar has mostly read still holds all of its memory.  The budget
 * therefore counts the bytes of the live lots, not the bytes held.
 * bent maps batch index bbase + i to its entry (NULL once delivered or
 * gone) over the live lots, oldest first.  epoch counts libbfo batches
 * (a new one after a cancel counts its indices from 0 again): a file of
 * an earlier batch given back late counts for no lot.
 */
static struct ent **bent;
static uint64_t bbase;
static unsigned bn, bcap;
static struct lot {
	uint64_t end;           /* batch index after its last file */
	unsigned left;          /* files not yet delivered */
	unsigned out;           /* files not yet given back to libbfo */
	uint64_t bytes;
} lots[MAX_LIVE];
static unsigned nlots;          /* live lots */
static uint32_t epoch;
static int batch_open;          /* libbfo's batch was started and not ended */

static struct served *fdtab[FDTAB_MAX];

/* libbfo's directory read-ahead, started with the first listing. */
static struct bfo_dirahead *ahead;
static int ahead_failed;

/*
 * Reading ahead starts with tar's first open of a listed file: tar lists
 * directories without reading them too (--listed-incremental scans the
 * whole tree first), and nothing is read for those.
 */
static int tar_reads;

static struct {
	uint64_t served, served_bytes, fallback, batches, ios, direct_ios, device_bytes, skipped, dirs_ahead;
} st;

/* Hooks do their own work only on tar's thread, outside another hook. */
static inline int enter(void)
{
	if (!active || in_hook || !pthread_equal(pthread_self(), tar_thread))
		return 0;
	in_hook = 1;
	return 1;
}

static inline void leave(void)
{
	in_hook = 0;
}

/* bent's slot for batch index i, or NULL (not in a live lot). */
static struct ent **bent_at(uint64_t i)
{
	return i >= bbase && i - bbase < bn ? &bent[i - bbase] : NULL;
}

/* Live lots with files not yet delivered. */
static unsigned lots_reading(void)
{
	unsigned n = 0;

	for (unsigned l = 0; l < nlots; l++)
		n += lots[l].left > 0;
	return n;
}

static uint64_t lots_bytes(void)
{
	uint64_t b = 0;

	for (unsigned l = 0; l < nlots; l++)
		b += lots[l].bytes;
	return b;
}

static struct lot *lot_of(uint64_t i)
{
	for (unsigned l = 0; l < nlots; l++)
		if (i < lots[l].end)
			return i >= (l ? lots[l - 1].end : bbase) ? &lots[l] : NULL;
	return NULL;
}

/* Dead lots leave from the oldest end, with their part of bent. */
static void lots_retire(void)
{
	while (nlots && !lots[0].left && !lots[0].out) {
		unsigned k = (unsigned)(lots[0].end - bbase);

		memmove(bent, bent + k, (bn - k) * sizeof(*bent));
		bn -= k;
		bbase = lots[0].end;
		memmove(lots, lots + 1, --nlots * sizeof(*lots));
	}
}

/* Give a delivered entry back to libbfo (of batch ep). */
static void release_file(struct bfo_file *f, uint32_t ep)
{
	struct lot *l;

	if (ctx)
		bfo_read_release(ctx, f, 1);
	if (ep == epoch && (f->flags & BFO_FILE_LAST) && (l = lot_of(f->index)) && l->out) {
		l->out--;
		lots_retire();
	}
}

/* Ready data tar will not read from us after all, or has read. */
static void drop_held(struct bfo_file *f, uint32_t ep)
{
	held_bytes -= f->length;
	release_file(f, ep);
}

/* ------------------------------------------------------------ groups */

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int cmp_ino(const void *a, const void *b)
{
	uint64_t x = ((const struct ent *)a)->ino, y = ((const struct ent *)b)->ino;

	return x < y ? -1 : x > y;
}

static unsigned kids_alive;

static void group_free(struct group *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->e[i].name);
	for (size_t i = 0; i < g->nd; i++)
		free(g->d[i].name);
	free(g->e);
	free(g->d);
	free(g->kids);
	free(g->ht);
	free(g->path);
	free(g);
}

static void group_unlink(struct group *g)
{
	struct group **pp = &top;

	while (*pp && *pp != g)
		pp = &(*pp)->older;
	if (*pp)
		*pp = g->older;
}

static struct group *group_by_dir(DIR *d)
{
	for (struct group *g = top; g; g = g->older)
		if (g->dir == d)
			return g;
	return NULL;
}

static struct group *group_by_fd(int fd)
{
	for (struct group *g = top; g; g = g->older)
		if (g->dir && g->dirfd == fd)
			return g;
	return NULL;
}

/* An entry leaves E_INFLIGHT: its batch slot and its group's count go. */
static void ent_landed(struct ent *e, uint32_t state)
{
	struct group *g = e->g;
	struct ent **slot = bent_at(e->bindex);

	if (slot)
		*slot = NULL;
	e->state = state;
	if (--g->inflight == 0 && g->gone) {
		group_unlink(g);
		group_free(g);
	}
}

static void group_add(struct group *g, const char *name, unsigned char type, uint64_t ino)
{
	struct ent **arr, *e;
	size_t *n, *cap;

	if (g->broken)
		return;
	if (type == DT_DIR) {
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return;
		arr = &g->d, n = &g->nd, cap = &g->dcap;
	} else if (type == DT_REG || type == DT_UNKNOWN) {
		arr = &g->e, n = &g->n, cap = &g->cap;
	} else {
		return;
	}
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		struct ent *p = nc < UINT32_MAX / 2 ? realloc(*arr, nc * sizeof(*p)) : NULL;

		if (!p) {
			g->broken = 1;
			return;
		}
		*arr = p;
		*cap = nc;
	}
	e = &(*arr)[*n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name) {
		g->broken = 1;
		return;
	}
	e->ino = ino;
	e->state = E_NEW;
	e->g = g;
	(*n)++;
}

/*
 * Hand g's next subdirectories (up to WARM_DIRS past those listed ahead or
 * entered) to libbfo's directory read-ahead, which reads each one and
 * stats its entries on its own threads.  Listed on tar's thread, one at a
 * time behind the device's queue of data reads, each cold directory and
 * each table of its files' inodes cost tar milliseconds: 0.25-0.4 s of a
 * 1.1-1.5 s run on the mixed set (100 directories), and 1.2 s of 4 s of
 * stat on the 100,000-file set.  Read ahead, list_ahead(), cut_from() and
 * tar's own lstat find them in the cache.
 */
static void warm_subdirs(struct group *g)
{
	size_t end = g->next_sub + WARM_DIRS < g->nd ? g->next_sub + WARM_DIRS : g->nd;

	if (!ahead && !ahead_failed && bfo_dirahead_start(&ahead, 0, 0, BFO_DIRAHEAD_STAT) < 0)
		ahead_failed = 1;
	if (!ahead)
		return;
	if (g->next_warm < g->next_sub)
		g->next_warm = g->next_sub;
	for (; g->next_warm < end; g->next_warm++) {
		char *p;
		int r;

		if (asprintf(&p, "%s/%s", g->path, g->d[g->next_warm].name) < 0)
			return;
		r = bfo_dirahead_add(ahead, p);
		free(p);
		if (r < 0)      /* -EAGAIN: the queue is full, the rest comes later */
			return;
	}
}

/* The listing is complete: order it as tar will and index the names. */
static void group_listed(struct group *g)
{
	size_t sz = 16;

	g->listed = 1;
	if (g->broken) {
		for (size_t i = 0; i < g->n; i++)
			free(g->e[i].name);
		for (size_t i = 0; i < g->nd; i++)
			free(g->d[i].name);
		g->n = g->nd = 0;
		return;
	}
	if (sort_mode == SORT_NAME) {
		qsort(g->e, g->n, sizeof(*g->e), cmp_name);
		qsort(g->d, g->nd, sizeof(*g->d), cmp_name);
	} else if (sort_mode == SORT_INODE) {
		qsort(g->e, g->n, sizeof(*g->e), cmp_ino);
		qsort(g->d, g->nd, sizeof(*g->d), cmp_ino);
	}
	warm_subdirs(g);
	while (sz < 2 * g->n)
		sz <<= 1;
	g->ht = calloc(sz, sizeof(*g->ht));
	if (!g->ht) {
		g->n = 0;       /* nothing to prefetch: tar reads through libc */
		return;
	}
	g->htmask = sz - 1;
	for (size_t i = 0; i < g->n; i++) {
		size_t h = hash_name(g->e[i].name) & g->htmask;

		while (g->ht[h])
			h = (h + 1) & g->htmask;
		g->ht[h] = (uint32_t)(i + 1);
		g->e[i].g = g;
	}
}

static struct ent *group_find(struct group *g, const char *name)
{
	if (g->cursor < g->n && strcmp(g->e[g->cursor].name, name) == 0)
		return &g->e[g->cursor++];
	if (!g->ht)
		return NULL;
	for (size_t h = hash_name(name) & g->htmask; g->ht[h]; h = (h + 1) & g->htmask) {
		struct ent *e = &g->e[g->ht[h] - 1];

		if (strcmp(e->name, name) == 0) {
			g->cursor = (size_t)(e - g->e) + 1;
			return e;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------ batches */

static void plugin_off(void);

static int ctx_start(void)
{
	struct bfo_opts o;

	if (ctx)
		return 0;
	bfo_opts_init(&o);
	o.arena_bytes = arena_bytes;
	o.large_file = SERVE_MAX;
	o.threads = 8;
	if (engine_env && strcmp(engine_env, "raw") == 0)
		o.engine = BFO_ENGINE_RAW;
	else if (engine_env && strcmp(engine_env, "uring") == 0)
		o.engine = BFO_ENGINE_URING;
	else if (engine_env && strcmp(engine_env, "portable") == 0)
		o.engine = BFO_ENGINE_PORTABLE;
	if (bfo_ctx_create(&ctx, &o) < 0) {
		ctx = NULL;
		return -1;
	}
	return 0;
}

/* libbfo's batch ended (cancelled): whatever it did not deliver goes to libc. */
static void batch_over(void)
{
	struct bfo_stats s;

	for (unsigned i = 0; i < bn; i++)
		if (bent[i])
			ent_landed(bent[i], E_DONE);
	if (bfo_read_stats(ctx, &s) == 0) {
		st.ios += s.ios;
		st.direct_ios += s.direct_regions;
		st.device_bytes += s.device_bytes;
	}
	bn = 0;
	bbase = 0;              /* a new batch counts from 0 again */
	nlots = 0;
	batch_open = 0;
	epoch++;                /* its entries still held count for no lot */
}

static void take(struct bfo_file *f)
{
	struct ent **slot = bent_at(f->index), *e = slot ? *slot : NULL;
	struct lot *l = (f->flags & BFO_FILE_LAST) ? lot_of(f->index) : NULL;

	if (l && l->left)
		l->left--;
	if (!e || f->status < 0 || f->offset != 0 || f->length != f->size ||
	    !(f->flags & BFO_FILE_LAST) || !f->data || e->g->gone) {
		/* failed, changed, or tar left that directory already */
		if (e)
			ent_landed(e, E_DONE);
		release_file(f, epoch);
		return;
	}
	e->f = *f;
	held_bytes += f->length;
	ent_landed(e, E_READY);
}

static void topup(void);

/*
 * Collect results.  until == NULL: whatever is there now; else wait until
 * that entry has landed.  to_idle: wait until every lot is out.  A lot
 * that retires makes room for the next one.
 */
static void pump(struct ent *until, int to_idle)
{
	struct bfo_file fs[WAIT_MAX];

	while (lots_reading()) {
		int wait_ms = (to_idle || (until && until->state == E_INFLIGHT)) ? -1 : 0;
		int k = bfo_read_wait(ctx, fs, WAIT_MAX, wait_ms);

		if (k > 0) {
			unsigned before = lots_reading();

			for (int i = 0; i < k; i++)
				take(&fs[i]);
			if (lots_reading() < before && !to_idle)
				topup();
			continue;
		}
		if (k == 0) {           /* cancelled below, or libbfo stopped it */
			batch_over();
			if (!to_idle)
				topup();
			continue;
		}
		if (k == -ETIME)
			return;
		if (k == -ENOBUFS || k == -EAGAIN) {
			/* ENOBUFS: the arena is all held by tar-to-be; EAGAIN:
			 * lots still counted but nothing in flight (cannot
			 * happen).  Give up what is in flight: libc reads it. */
			bfo_read_cancel(ctx);
			continue;
		}
		plugin_off();           /* anything else: libc from now on */
		return;
	}
}

static int bent_add(struct ent *e)
{
	if (bn == bcap) {
		unsigned nc = bcap ? 2 * bcap : 1024;
		struct ent **p = realloc(bent, nc * sizeof(*p));

		if (!p)
			return -1;
		bent = p;
		bcap = nc;
	}
	e->bindex = bbase + bn;
	e->epoch = epoch;
	bent[bn++] = e;
	return 0;
}

/* A lot being put together. */
struct cut {
	char *buf;
	size_t len, cap;
	uint64_t bytes;
	unsigned files;
	int full;
};

/*
 * Add g's files not yet submitted (from tar's position on) to the batch.
 * Each candidate is stat'ed here (so its inode is in cache when tar stats
 * it): only non-empty regular files up to SERVE_MAX that are not sparse
 * are worth reading ahead.
 */
static void cut_from(struct cut *c, struct group *g)
{
	size_t pl = strlen(g->path);

	if (g->next_submit < g->cursor)
		g->next_submit = g->cursor;
	for (; g->next_submit < g->n; g->next_submit++) {
		struct ent *e = &g->e[g->next_submit];
		struct stat sb;
		size_t nl;
		int r;

		if (e->state != E_NEW)
			continue;
		if (c->files >= BATCH_FILES || c->bytes >= batch_bytes) {
			c->full = 1;
			return;
		}
		nl = strlen(e->name);
		if (c->len + pl + nl + 2 > c->cap) {
			size_t nc = c->cap ? 2 * c->cap : 65536;
			char *p;

			while (nc < c->len + pl + nl + 2)
				nc *= 2;
			p = realloc(c->buf, nc);
			if (!p) {
				c->full = 1;
				return;
			}
			c->buf = p;
			c->cap = nc;
		}
		memcpy(c->buf + c->len, g->path, pl);
		c->buf[c->len + pl] = '/';
		memcpy(c->buf + c->len + pl + 1, e->name, nl + 1);
		e->state = E_DONE;
		r = g->dir ? fstatat(g->dirfd, e->name, &sb, AT_SYMLINK_NOFOLLOW)
			   : fstatat(AT_FDCWD, c->buf + c->len, &sb, AT_SYMLINK_NOFOLLOW);
		if (r < 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
		    (uint64_t)sb.st_size > SERVE_MAX ||
		    (uint64_t)sb.st_blocks * 512 < (uint64_t)sb.st_size) {
			st.skipped++;
			continue;
		}
		if (bent_add(e) < 0) {
			c->full = 1;
			return;
		}
		c->len += pl + nl + 2;
		e->state = E_INFLIGHT;
		g->inflight++;
		c->bytes += (uint64_t)sb.st_size;
		c->files++;
	}
}

/*
 * List g's next subdirectory ahead of tar (it reads it the same way, with
 * O_NOFOLLOW: a symlink swapped in is not followed) and keep it as a kid.
 */
static struct group *list_ahead(struct group *g)
{
	struct ent *sd = &g->d[g->next_sub++];
	struct group *k;
	struct dirent *de;
	DIR *d;
	int fd;

	warm_subdirs(g);
	if (kids_alive >= MAX_KIDS)
		return NULL;
	if (g->nkids == g->kcap) {
		size_t nc = g->kcap ? 2 * g->kcap : 16;
		struct group **p = realloc(g->kids, nc * sizeof(*p));

		if (!p)
			return NULL;
		g->kids = p;
		g->kcap = nc;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->dirfd = -1;
	if (asprintf(&k->path, "%s/%s", g->path, sd->name) < 0) {
		free(k);
		return NULL;
	}
	fd = real_openat(AT_FDCWD, k->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = fd >= 0 ? real_fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			real_close(fd);
		group_free(k);
		return NULL;
	}
	while ((de = real_readdir(d)))
		group_add(k, de->d_name, de->d_type, de->d_ino);
	real_closedir(d);
	group_listed(k);
	g->kids[g->nkids++] = k;
	kids_alive++;
	return k;
}

/* tar is done with g (or with the directory a kid stood for). */
static void group_close(struct group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct ent *e = &g->e[i];

		if (e->state == E_READY) {
			drop_held(&e->f, e->epoch);
			e->state = E_DONE;
		}
	}
	for (size_t i = 0; i < g->nkids; i++) {
		if (g->kids[i]) {
			kids_alive--;
			group_close(g->kids[i]);
			g->kids[i] = NULL;
		}
	}
	g->dir = NULL;
	g->dirfd = -1;
	g->gone = 1;
	group_unlink(g);
	if (g->inflight == 0)
		group_free(g);
}

/* tar opened the directory at path: the kid listed ahead for it, if any. */
static struct group *adopt(const char *path)
{
	for (struct group *g = top; g; g = g->older) {
		for (size_t i = 0; i < g->nkids; i++) {
			struct group *k = g->kids[i];

			if (k && strcmp(k->path, path) == 0) {
				g->kids[i] = NULL;
				kids_alive--;
				return k;
			}
		}
	}
	return NULL;
}

/* tar entered g's subdirectory name: nothing before it needs listing ahead. */
static void entered(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t pl = slash ? (size_t)(slash - path) : 0;

	for (struct group *g = top; g; g = g->older) {
		if (!g->listed || strlen(g->path) != pl || strncmp(g->path, path, pl) != 0)
			continue;
		for (size_t i = g->next_sub; i < g->nd; i++) {
			if (strcmp(g->d[i].name, slash + 1) == 0) {
				g->next_sub = i + 1;
				warm_subdirs(g);
				break;
			}
		}
		return;
	}
}

/*
 * Start lots until MAX_LOTS are in flight or memory is spoken for: the
 * files of the newest listings first, each followed by the subdirectories
 * listed ahead (more are listed as long as the lot has room), then older
 * listings.  Each lot is flushed into libbfo's open batch at once.
 */
static void topup(void)
{
	/* Only with room for a whole lot (so a lot, bounded by batch_bytes,
	 * always fits the budget): a sliver of budget freed by each file tar
	 * reads would otherwise start lots of a few files each. */
	while (lots_reading() < MAX_LOTS && nlots < MAX_LIVE && active && tar_reads &&
	       lots_bytes() + batch_bytes <= held_budget) {
		struct cut c = { 0 };
		unsigned first = bn;
		size_t done = 0;

		for (struct group *g = top; g && !c.full; g = g->older) {
			if (g->gone || !g->listed)
				continue;
			cut_from(&c, g);
			for (size_t i = 0; i < g->nkids && !c.full; i++)
				if (g->kids[i])
					cut_from(&c, g->kids[i]);
			while (!c.full && g->next_sub < g->nd) {
				struct group *k = list_ahead(g);

				if (k)
					cut_from(&c, k);
				else if (kids_alive >= MAX_KIDS)
					break;
			}
		}
		if (bn == first) {
			free(c.buf);
			return;
		}
		if (ctx_start() < 0) {
			free(c.buf);
			for (; bn > first; bn--)
				ent_landed(bent[bn - 1], E_DONE);
			plugin_off();
			return;
		}
		while (done < c.len) {
			long k = bfo_read_submit_packed(ctx, c.buf + done, c.len - done);

			if (k <= 0)
				break;
			done += (size_t)k;
		}
		free(c.buf);
		batch_open = 1;
		lots[nlots].end = bbase + bn;
		lots[nlots].left = lots[nlots].out = bn - first;
		lots[nlots].bytes = c.bytes;
		nlots++;
		st.batches++;
		if (done < c.len || bfo_read_flush(ctx) < 0) {
			/* Cannot happen with MAX_LOTS lots of BATCH_FILES below the
			 * input queue; if it does, what is in flight goes to libc. */
			bfo_read_cancel(ctx);
			return;
		}
	}
}

/* ------------------------------------------------------------ serving */

static int same_file(const struct bfo_file *f, const struct stat *sb)
{
	uint64_t dev = ((uint64_t)major(sb->st_dev) << 32) | minor(sb->st_dev);

	return f->dev == dev && f->ino == (uint64_t)sb->st_ino &&
	       f->size == (uint64_t)sb->st_size &&
	       f->mtime_sec == (int64_t)sb->st_mtim.tv_sec &&
	       f->mtime_nsec == (uint32_t)sb->st_mtim.tv_nsec &&
	       f->ctime_sec == (int64_t)sb->st_ctim.tv_sec &&
	       f->ctime_nsec == (uint32_t)sb->st_ctim.tv_nsec;
}

/* tar is about to open dirfd/name read-only: the entry we hold for it. */
static struct ent *lookup(int dirfd, const char *name, int flags)
{
	struct group *g;
	struct ent *e;

	if ((flags & (O_ACCMODE | O_CREAT | O_TRUNC | O_DIRECTORY | O_PATH)) != O_RDONLY ||
	    strchr(name, '/'))
		return NULL;
	g = group_by_fd(dirfd);
	if (!g || !g->listed)
		return NULL;
	e = group_find(g, name);
	if (!e)
		return NULL;
	tar_reads = 1;
	if (e->state == E_NEW) {
		/* tar is ahead of the read-ahead (a subdirectory listed while
		 * its parent's batch runs): let that batch land, then start
		 * the next one here, with this file first. */
		pump(NULL, 1);
		g->cursor = (size_t)(e - g->e);
		topup();
		g->cursor++;
	}
	if (e->state == E_INFLIGHT)
		pump(e, 0);
	if (e->state != E_READY) {
		e->state = E_DONE;
		st.fallback++;
		return NULL;
	}
	return e;
}

static void serve(int fd, struct ent *e)
{
	struct stat sb;
	struct served *s = NULL;

	e->state = E_DONE;
	if (fd >= FDTAB_MAX || fstat(fd, &sb) < 0 || !same_file(&e->f, &sb) ||
	    !(s = malloc(sizeof(*s)))) {
		drop_held(&e->f, e->epoch);
		st.fallback++;
		return;
	}
	s->f = e->f;
	s->pos = 0;
	s->epoch = e->epoch;
	if (fdtab[fd]) {                /* cannot be: tar closed it before */
		free(s);
		drop_held(&e->f, e->epoch);
		return;
	}
	fdtab[fd] = s;
	st.served++;
}

static void unserve(int fd)
{
	struct served *s = fdtab[fd];

	fdtab[fd] = NULL;
	if (s->f.data) {
		drop_held(&s->f, s->epoch);
	}
	free(s);
}

/* ------------------------------------------------------------ hooks */

static int do_openat(int (*real)(int, const char *, int, ...), int dirfd,
		     const char *path, int flags, mode_t mode)
{
	struct ent *e = NULL;
	int fd, saved;

	if (!enter())
		return real(dirfd, path, flags, mode);
	saved = errno;
	if (extract_ok)
		before_open(dirfd, path, flags, 1);
	pump(NULL, 0);
	e = lookup(dirfd, path, flags);
	errno = saved;
	fd = real(dirfd, path, flags, mode);
	saved = errno;
	if (extract_ok)
		after_open(dirfd, fd, path, flags);
	if (e) {
		if (fd >= 0) {
			serve(fd, e);
		} else {
			drop_held(&e->f, e->epoch);
			e->state = E_DONE;
		}
		topup();
	}
	errno = saved;
	leave();
	return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return (mode_t)va_arg(ap, int);
	return 0;
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_openat(real_openat, dirfd, path, flags, mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_openat(real_openat64 ? real_openat64 : real_openat, dirfd, path, flags, mode);
}

static int openat_2_shim(int dirfd, const char *path, int flags, ...)
{
	return real___openat_2(dirfd, path, flags);
}

static int openat64_2_shim(int dirfd, const char *path, int flags, ...)
{
	return real___openat64_2(dirfd, path, flags);
}

int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	resolve();
	return do_openat(openat_2_shim, dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	resolve();
	return do_openat(real___openat64_2 ? openat64_2_shim : openat_2_shim, dirfd, path, flags, 0);
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct served *s;
	ssize_t r;

	if ((unsigned)fd < FDTAB_MAX && (s = fdtab[fd]) && enter()) {
		uint64_t k = s->f.length - s->pos;

		if (k > n)
			k = n;
		if (k)
			memcpy(buf, (const char *)s->f.data + s->pos, k);
		s->pos += k;
		st.served_bytes += k;
		if (s->pos == s->f.length && s->f.data) {
			drop_held(&s->f, s->epoch);
			s->f.data = NULL;
		}
		leave();
		return (ssize_t)k;
	}
	resolve();
	if (extract_ok && !extracting && pthread_equal(pthread_self(), tar_thread))
		read_last = fd;
	r = real_read(fd, buf, n);
	if (r > 0 && fd >= 0 && fd == warm_src)
		__atomic_fetch_add(&warm_pos, (uint64_t)r, __ATOMIC_RELAXED);
	return r;
}

static off_t do_lseek(off_t (*real)(int, off_t, int), int fd, off_t off, int whence)
{
	off_t r;

	give_back(fd);          /* a file being extracted: written out first (sparse members) */
	if ((unsigned)fd < FDTAB_MAX && fdtab[fd] && enter()) {
		/* From here on this fd is libc's, at the position tar is at. */
		int saved = errno;

		r = real(fd, (off_t)fdtab[fd]->pos, SEEK_SET);

		unserve(fd);
		errno = saved;
		leave();
		if (r < 0)
			return r;
	}
	r = real(fd, off, whence);
	if (r >= 0 && fd >= 0 && fd == warm_src)
		__atomic_store_n(&warm_pos, (uint64_t)r, __ATOMIC_RELAXED);
	return r;
}

EXPORT off_t lseek(int fd, off_t off, int whence)
{
	resolve();
	return do_lseek(real_lseek, fd, off, whence);
}

EXPORT off_t lseek64(int fd, off_t off, int whence)
{
	resolve();
	return do_lseek(real_lseek64 ? real_lseek64 : real_lseek, fd, off, whence);
}

EXPORT int close(int fd)
{
	resolve();
	if (captured(fd) && close_captured(fd) == 0)
		return 0;
	if (fd == warm_src && fd >= 0)
		warm_end();
	if (extracting && dirty && fd >= 0)
		closing_archive(fd);
	if ((unsigned)fd < FDTAB_MAX && fdtab[fd] && enter()) {
		int saved = errno;

		unserve(fd);
		errno = saved;
		leave();
	}
	return real_close(fd);
}

EXPORT DIR *fdopendir(int fd)
{
	DIR *d;
	int saved;

	resolve();
	d = real_fdopendir(fd);
	if (!d || !enter())
		return d;
	saved = errno;
	{
		char link[64], path[PATH_MAX];
		ssize_t n;
		struct group *g;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, path, sizeof(path) - 1);
		if (n > 0 && path[0] == '/') {
			path[n] = '\0';
			entered(path);
			g = adopt(path);
			if (!g && (g = calloc(1, sizeof(*g)))) {
				g->path = strdup(path);
				if (!g->path) {
					free(g);
					g = NULL;
				}
			}
			if (g) {
				g->dir = d;
				g->dirfd = fd;
				g->older = top;
				top = g;
			}
		}
	}
	errno = saved;
	leave();
	return d;
}

static void note_entry(DIR *d, const char *name, unsigned char type, uint64_t ino, int end)
{
	struct group *g = group_by_dir(d);

	if (!g || g->listed)
		return;
	if (end) {
		group_listed(g);
		topup();
		return;
	}
	group_add(g, name, type, ino);
}

EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *de;
	int saved;

	resolve();
	de = real_readdir(d);
	if (!enter())
		return de;
	saved = errno;
	if (de)
		note_entry(d, de->d_name, de->d_type, de->d_ino, 0);
	else
		note_entry(d, NULL, 0, 0, 1);
	errno = saved;
	leave();
	return de;
}

EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *de;
	int saved;

	resolve();
	de = real_readdir64(d);
	if (!enter())
		return de;
	saved = errno;
	if (de)
		note_entry(d, de->d_name, de->d_type, de->d_ino, 0);
	else
		note_entry(d, NULL, 0, 0, 1);
	errno = saved;
	leave();
	return de;
}

EXPORT int closedir(DIR *d)
{
	resolve();
	if (enter()) {
		int saved = errno;
		struct group *g = group_by_dir(d);

		if (g)
			group_close(g);
		errno = saved;
		leave();
	}
	return real_closedir(d);
}

/* utimensat(fd, NULL, ...) and fstatat(fd, "", ...) are legitimate: NULL checks stay. */
#pragma GCC diagnostic ignored "-Wnonnull-compare"

/* ------------------------------------------------------------ extract */

/*
 * GNU tar (1.34) extracts a regular file like this (strace):
 *
 *	openat(dirfd, name, O_WRONLY|O_CREAT|O_EXCL|O_NOCTTY|O_NONBLOCK|O_CLOEXEC)
 *	write()...
 *	futimens(F) fchown(F) fchmod(F)     (utimensat(F, NULL...))
 *	close(F)
 *
 * and directories, symlinks and hard links by name (mkdirat, symlinkat,
 * linkat, utimensat/fchownat/fchmodat by name).  The plugin keeps the fd
 * tar opened (the file is written through that fd, never re-opened by
 * name), buffers its write()s, defers its fd-based metadata calls in
 * tar's order and, at tar's close(), queues the fd.  The queue is flushed
 * (one bfo_fdwrite() of all pending data, then the metadata in order,
 * then the closes; on the flusher thread, see below, when only full) when
 * it holds QUEUE_FILES files or QUEUE_BYTES bytes,
 * before any call that may depend on a pending file (a name-based call
 * that reaches one, a hard link, rename or unlink, a write-open without
 * O_EXCL, a stat that finds one), when tar closes its archive and at
 * exit, followed by one syncfs() per file system (BFO_TAR_DURABILITY=none:
 * no syncfs; see the syncer for the ones before).  Data is queued only while it surely fits on its file system
 * (see "Free space"): a full file system is met by tar's own write().  A file that
 * grows beyond WFILE_MAX, or on which tar seeks, truncates, syncs or dups
 * (sparse members), is written out and handed back to libc.  A deferred
 * write or metadata call that fails is reported the way tar reports it
 * ("tar: NAME: Cannot write: ...") and tar's exit status becomes 2.
 */
#define QUEUE_FILES   1024u
#define QUEUE_BYTES   (64ull << 20)
#define WFILE_MAX     (1ull << 20)
#define MAX_DEVS      16
#define SYNC_EVERY    (32ull << 20)   /* BFO_TAR_SYNC_MB; 0: one syncfs at the end only */

enum meta_op { M_TIMES, M_CHOWN, M_CHMOD };

struct meta {
	int op;
	struct timespec ts[2];
	int null_ts;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

struct wfile {
	int fd;
	int closed;             /* tar closed it; we still hold the fd */
	char *name;             /* as tar named it, for messages */
	dev_t dev;
	ino_t ino;
	unsigned di;            /* index of its file system in devs[] */
	uint64_t written;       /* bytes already in the file */
	char *buf;              /* bytes after that, not yet written */
	size_t len, cap;
	struct meta *m;
	unsigned nm, mcap;
};

static struct wfile *wtab[FDTAB_MAX];
static struct wfile **queue;    /* files with pending data or metadata, tar's order */
static unsigned nq, qcap;
static uint64_t queued_bytes;
/* extracting: tar created something, durability at exit (declared above) */
static int durability = 1;
static pid_t owner_pid;
static int deferred_failed;
static int devfd[MAX_DEVS];
static dev_t devs[MAX_DEVS];
static unsigned ndevs;
/*
 * Free space.  A write tar believes done must not fail later for want of
 * room, so data is only queued while the queue surely fits: the free space
 * is looked up (fstatfs, once per file system and flush) and every queued
 * byte is charged, rounded up to blocks, plus a block per file and per
 * thing tar creates by name, plus SPACE_MARGIN.  When a write does not fit,
 * the queue is written out and the space looked up again; if it still
 * does not fit, the file goes back to libc and tar's write() meets the
 * full file system itself: "Wrote only N of M bytes", "Cannot write: No
 * space left on device" and exit 2 come from tar as without the plugin.
 */
#define SPACE_MARGIN  (4ull << 20)
static uint64_t devfree[MAX_DEVS];      /* bytes free at the last look */
static uint64_t devpend[MAX_DEVS];      /* charged since that look */
static uint64_t devbs[MAX_DEVS];        /* block size */
static int devlooked[MAX_DEVS];         /* looked since the last flush */

static struct {
	uint64_t files, bytes, flushes, behind, detached, syncfs, early_syncfs;
	uint64_t read_ahead;    /* archive bytes read ahead of tar (atomic) */
} xst;

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_futimens)(int, const struct timespec *);
static int (*real_utimensat)(int, const char *, const struct timespec *, int);
static int (*real_fchown)(int, uid_t, gid_t);
static int (*real_fchmod)(int, mode_t);
static int (*real_fchownat)(int, const char *, uid_t, gid_t, int);
static int (*real_fchmodat)(int, const char *, mode_t, int);
static int (*real_linkat)(int, const char *, int, const char *, int);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_mkdirat)(int, const char *, mode_t);
static int (*real_symlinkat)(const char *, int, const char *);
static int (*real_fstat)(int, struct stat *);
static int (*real_fstatat)(int, const char *, struct stat *, int);
static int (*real_stat)(const char *, struct stat *);
static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_dup)(int);
static int (*real_dup2)(int, int);
static int (*real_setxattr)(const char *, const char *, const void *, size_t, int);
static int (*real_lsetxattr)(const char *, const char *, const void *, size_t, int);
static int (*real_open)(const char *, int, ...);
static int (*real___open_2)(const char *, int);

static void resolve_extract(void)
{
	real_write = next_sym("write");
	real_futimens = next_sym("futimens");
	real_utimensat = next_sym("utimensat");
	real_fchown = next_sym("fchown");
	real_fchmod = next_sym("fchmod");
	real_fchownat = next_sym("fchownat");
	real_fchmodat = next_sym("fchmodat");
	real_linkat = next_sym("linkat");
	real_renameat = next_sym("renameat");
	real_renameat2 = next_sym("renameat2");
	real_unlinkat = next_sym("unlinkat");
	real_mkdirat = next_sym("mkdirat");
	real_symlinkat = next_sym("symlinkat");
	real_fstat = next_sym("fstat");
	real_fstatat = next_sym("fstatat");
	real_stat = next_sym("stat");
	real_ftruncate = next_sym("ftruncate");
	real_fsync = next_sym("fsync");
	real_dup = next_sym("dup");
	real_dup2 = next_sym("dup2");
	real_setxattr = next_sym("setxattr");
	real_lsetxattr = next_sym("lsetxattr");
	real_open = next_sym("open");
	real___open_2 = next_sym("__open_2");
}


/*
 * Messages go where tar's stderr went, through our own copy of it: at
 * exit tar has closed stderr already (and stdout: no fflush then).
 */
static int errfd = -1, exiting;

static void say(const char *name, const char *what, int err)
{
	if (!exiting)
		fflush(stdout);
	if (errfd >= 0)
		dprintf(errfd, "tar: %s%s%s: %s\n", name ? name : "", name ? ": " : "", what, strerror(err));
	else
		fprintf(stderr, "tar: %s%s%s: %s\n", name ? name : "", name ? ": " : "", what, strerror(err));
	deferred_failed = 1;
}

static void report(const struct wfile *w, const char *what, int err)
{
	say(w->name, what, err);
}

static int known_dev(dev_t dev)
{
	for (unsigned i = 0; i < ndevs; i++)
		if (devs[i] == dev)
			return 1;
	return 0;
}

/* A directory opened read-only (syncfs refuses O_PATH), if it is on dev. */
static int dir_on(int dirfd, const char *path, dev_t dev, struct stat *sb)
{
	int d = real_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (d >= 0 && (real_fstat(d, sb) < 0 || sb->st_dev != dev)) {
		real_close(d);
		d = -1;
	}
	return d;
}

/*
 * A handle on the file system of path (a file tar just created from
 * dirfd), for fstatfs and syncfs until exit.  Never that file, nor anything
 * else tar may remove: an fd keeps an unlinked inode alive, so the next file
 * tar creates gets a new inode number where plain tar gets the freed one
 * back (ext4), and tar's delayed links see it: a symlink whose target is
 * absolute or holds '..' is first an empty placeholder whose device and
 * inode tar records, and at the end tar replaces whatever still has them by
 * the link.  A later member of that name (tar unlinks the placeholder,
 * creates the file) then left the file where plain tar leaves the link.
 * So: the directory tar extracts from (tar holds it open itself), else the
 * root of the mount holding the file (found going up from the file's
 * directory; a mount point cannot be removed), or -1: the file goes to libc.
 */
static int fs_handle(int dirfd, const char *path, dev_t dev)
{
	const char *slash = strrchr(path, '/');
	struct stat sb, up;
	char *dir;
	int d, u;

	if ((d = dir_on(dirfd, ".", dev, &sb)) >= 0 || !slash)
		return d;
	if (!(dir = strndup(path, slash == path ? 1 : (size_t)(slash - path))))
		return -1;
	d = dir_on(dirfd, dir, dev, &sb);
	free(dir);
	for (int n = 0; d >= 0 && n < 4096; n++) {
		if ((u = dir_on(d, "..", dev, &up)) < 0)
			break;
		if (up.st_ino == sb.st_ino) {   /* "/" */
			real_close(u);
			break;
		}
		real_close(d);
		d = u;
		sb = up;
	}
	return d;
}

/* The file system's index in devs[], or -1 (too many: its files go to libc). */
static int note_dev(int dirfd, const char *path, dev_t dev)
{
	unsigned i;
	int d;

	for (i = 0; i < ndevs; i++)
		if (devs[i] == dev)
			return (int)i;
	if (ndevs == MAX_DEVS || (d = fs_handle(dirfd, path, dev)) < 0)
		return -1;
	devs[ndevs] = dev;
	devfd[ndevs] = d;
	devlooked[ndevs] = 0;
	devpend[ndevs] = 0;
	return (int)ndevs++;
}

static int look(unsigned i)
{
	struct statfs fs;

	if (fstatfs(devfd[i], &fs) < 0 || fs.f_bsize <= 0)
		return -1;
	devbs[i] = (uint64_t)fs.f_bsize;
	devfree[i] = (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize;
	devpend[i] = 0;
	devlooked[i] = 1;
	return 0;
}

static int fits(unsigned i, uint64_t bytes)
{
	return devpend[i] + bytes + SPACE_MARGIN <= devfree[i];
}

static void flush_queue(void);

/* Charge bytes to file system i; 0 if the queue cannot take them. */
static int reserve(unsigned i, uint64_t bytes)
{
	if (!devlooked[i] && look(i) < 0)
		return 0;
	if (!fits(i, bytes)) {
		flush_queue();
		if (look(i) < 0 || !fits(i, bytes))
			return 0;
	}
	devpend[i] += bytes;
	return 1;
}

/* Blocks a file of n bytes holds. */
static uint64_t blocks_of(unsigned i, uint64_t n)
{
	uint64_t bs = devbs[i] ? devbs[i] : 4096;

	return (n + bs - 1) / bs * bs;
}

/* tar created something by name (a directory, a link): a block, everywhere. */
static void charge_name(void)
{
	for (unsigned i = 0; i < ndevs; i++)
		devpend[i] += devbs[i] ? devbs[i] : 4096;
	dirty = 1;
}

/* Deferred metadata, in tar's order; failures reported as tar words them. */
static void apply_meta(struct wfile *w)
{
	char what[96];

	for (unsigned i = 0; i < w->nm; i++) {
		struct meta *m = &w->m[i];

		switch (m->op) {
		case M_TIMES:
			if (real_futimens(w->fd, m->null_ts ? NULL : m->ts) < 0)
				report(w, "Cannot utime", errno);
			break;
		case M_CHOWN:
			if (real_fchown(w->fd, m->uid, m->gid) < 0) {
				snprintf(what, sizeof(what), "Cannot change ownership to uid %lu, gid %lu",
					 (unsigned long)m->uid, (unsigned long)m->gid);
				report(w, what, errno);
			}
			break;
		case M_CHMOD:
			if (real_fchmod(w->fd, m->mode) < 0) {
				snprintf(what, sizeof(what), "Cannot change mode to %04o", (unsigned)m->mode);
				report(w, what, errno);
			}
			break;
		}
	}
	w->nm = 0;
}

static void wfile_free(struct wfile *w)
{
	free(w->buf);
	free(w->m);
	free(w->name);
	free(w);
}

/*
 * The data of q[0..n) in one batch, then each file's metadata in tar's
 * order.  Runs on tar's thread (flush_queue) or on the flusher (a
 * generation of closed files): it touches nothing but the files.
 */
static void write_out(struct wfile **q, unsigned n)
{
	struct bfo_fdwrite_entry *e;
	unsigned m = 0;

	e = calloc(n, sizeof(*e));
	for (unsigned i = 0; i < n; i++) {
		struct wfile *w = q[i];

		if (!w->len)
			continue;
		if (e) {
			e[m].fd = w->fd;
			e[m].buf = w->buf;
			e[m].length = w->len;
			e[m].offset = w->written;
			m++;
		} else {        /* no memory for the batch: one by one */
			struct bfo_fdwrite_entry one = { .fd = w->fd, .buf = w->buf,
							 .length = w->len, .offset = w->written };

			if (bfo_fdwrite(&one, 1, BFO_FDWRITE_PORTABLE) != 0)
				report(w, "Cannot write", one.status < 0 ? -one.status : EIO);
			w->written += one.done;
			w->len = 0;
		}
	}
	if (e && m) {
		int r = bfo_fdwrite(e, m, 0);

		for (unsigned i = 0, k = 0; i < n && k < m; i++) {
			struct wfile *w = q[i];

			if (!w->len)
				continue;
			if (r < 0)
				e[k].status = r;
			if (e[k].status < 0)
				report(w, "Cannot write", -e[k].status);
			w->written += e[k].done;
			w->len = 0;
			k++;
		}
	}
	free(e);
	for (unsigned i = 0; i < n; i++)
		apply_meta(q[i]);
}

/*
 * The flusher: a thread that writes out a generation of files tar has
 * closed (data, metadata, close) while tar goes on creating the next
 * ones, so the batch's writes and tar's five metadata calls per file
 * (deferred until after the data) overlap tar's own open()s on another
 * core instead of stopping it.  One generation at most is in flight
 * (memory stays at two queues); anything that may depend on its files
 * waits for it first (flush_queue, pending_inode), as for the queue.
 */
static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gen_cond = PTHREAD_COND_INITIALIZER;
static struct wfile **gen;      /* handed to the flusher, not yet taken */
static unsigned ngen;
static uint64_t gen_blocks;     /* its files' sizes in whole blocks, for the syncer */
static uint32_t gen_devmask;    /* bit i: some of its files are on devs[i] */
static int gen_busy;            /* the flusher is writing one */
static int flusher_state;       /* 0 not started, 1 running, -1 could not start: all on tar's thread */
/* tar's thread only: the files of the generation in flight, for pending_inode() */
static int inflight;
static dev_t *gen_dev;
static ino_t *gen_ino;
static unsigned ngen_ino;

/*
 * The syncer: every sync_every bytes the flusher has written, a syncfs()
 * of their file systems on a thread of its own, so the disk writes back
 * while tar is still creating files (the kernel would not start before
 * its dirty limit, far above a typical archive) and the syncfs at the end
 * only has the rest to do.  syncfs rather than a per-file
 * sync_file_range: writeback of many inodes at once allocates and merges
 * their blocks into large I/Os; per-file writeback issued small writes
 * and was slower than one syncfs at the end.  An error it meets is kept
 * for final_flush() (the file system reports it to one syncfs only).
 */
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;
static uint32_t sync_want;      /* bit i: devfd[i] has data written since its last syncfs */
static int sync_busy;
static int sync_err[MAX_DEVS];  /* the first error an early syncfs met */
static int syncer_state;        /* 0 not started, 1 running, -1 could not start */
static uint64_t sync_every = SYNC_EVERY;

static void *syncer(void *unused)
{
	(void)unused;
	for (;;) {
		uint32_t want;

		pthread_mutex_lock(&sync_lock);
		while (!sync_want)
			pthread_cond_wait(&sync_cond, &sync_lock);
		want = sync_want;
		sync_want = 0;
		sync_busy = 1;
		pthread_mutex_unlock(&sync_lock);
		for (unsigned i = 0; i < MAX_DEVS; i++) {
			int r;

			if (!(want & (1u << i)))
				continue;
			r = bfo_syncfs(devfd[i]);
			pthread_mutex_lock(&sync_lock);
			xst.early_syncfs++;
			if (r < 0 && !sync_err[i])
				sync_err[i] = r;
			pthread_mutex_unlock(&sync_lock);
		}
		pthread_mutex_lock(&sync_lock);
		sync_busy = 0;
		pthread_cond_broadcast(&sync_cond);
		pthread_mutex_unlock(&sync_lock);
	}
	return NULL;
}

/* The flusher is idle: no early syncfs runs, or is asked for, after this. */
static void syncer_quiet(void)
{
	pthread_mutex_lock(&sync_lock);
	sync_want = 0;
	while (sync_busy)
		pthread_cond_wait(&sync_cond, &sync_lock);
	pthread_mutex_unlock(&sync_lock);
}

static void *flusher(void *unused)
{
	uint64_t unsynced = 0;
	uint32_t devmask = 0;

	(void)unused;
	for (;;) {
		struct wfile **g;
		unsigned n;
		uint64_t sync_bytes;
		uint32_t sync_mask;

		pthread_mutex_lock(&gen_lock);
		while (!gen)
			pthread_cond_wait(&gen_cond, &gen_lock);
		g = gen;
		n = ngen;
		sync_bytes = gen_blocks;
		sync_mask = gen_devmask;
		gen = NULL;
		gen_busy = 1;
		pthread_mutex_unlock(&gen_lock);

		write_out(g, n);
		unsynced += sync_bytes;
		devmask |= sync_mask;
		for (unsigned i = 0; i < n; i++) {
			real_close(g[i]->fd);
			wfile_free(g[i]);
		}
		free(g);
		if (syncer_state > 0 && unsynced >= sync_every) {
			pthread_mutex_lock(&sync_lock);
			sync_want |= devmask;
			pthread_cond_broadcast(&sync_cond);
			pthread_mutex_unlock(&sync_lock);
			unsynced = 0;
			devmask = 0;
		}

		pthread_mutex_lock(&gen_lock);
		gen_busy = 0;
		pthread_cond_broadcast(&gen_cond);
		pthread_mutex_unlock(&gen_lock);
	}
	return NULL;
}

/* Waits until the generation in flight is written, metadata applied and closed. */
static void wait_generation(void)
{
	if (!inflight)
		return;
	pthread_mutex_lock(&gen_lock);
	while (gen || gen_busy)
		pthread_cond_wait(&gen_cond, &gen_lock);
	pthread_mutex_unlock(&gen_lock);
	inflight = 0;
	ngen_ino = 0;
}

static int start_flusher(void)
{
	pthread_t t;
	sigset_t all, old;

	if (flusher_state)
		return flusher_state > 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);       /* signals stay tar's */
	/* the syncer first: the flusher reads syncer_state */
	if (durability && sync_every) {
		syncer_state = pthread_create(&t, NULL, syncer, NULL) == 0 ? 1 : -1;
		if (syncer_state > 0)
			pthread_detach(t);
	}
	flusher_state = pthread_create(&t, NULL, flusher, NULL) == 0 ? 1 : -1;
	if (flusher_state > 0)
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return flusher_state > 0;
}

/*
 * Write every queued file's data in one batch, then each file's metadata
 * in tar's order, then close what tar closed, after the generation in
 * flight.  Files tar still has open stay captured (their next bytes go
 * after what was written).
 */
static void flush_queue(void)
{
	unsigned kept = 0;

	wait_generation();
	if (!nq)
		return;
	xst.flushes++;
	write_out(queue, nq);
	for (unsigned i = 0; i < nq; i++) {
		struct wfile *w = queue[i];

		if (w->closed) {
			real_close(w->fd);
			wfile_free(w);
		} else {
			if (w->cap > (64u << 10)) {
				free(w->buf);
				w->buf = NULL;
				w->cap = 0;
			}
			queue[kept++] = w;   /* still tar's: stays queued */
		}
	}
	nq = kept;
	queued_bytes = 0;
	for (unsigned i = 0; i < ndevs; i++)
		devlooked[i] = 0;       /* what was written shows in the next look */
}

/*
 * The queue is full: its closed files go to the flusher and tar goes on.
 * The free space charged for them stays charged until a flush on tar's
 * thread looks again (what the flusher writes shows only once written).
 */
static void flush_queue_behind(void)
{
	struct wfile **g;
	unsigned k = 0, kept = 0;
	uint64_t bytes = 0, blocks = 0;
	uint32_t mask = 0;
	dev_t *dv;
	ino_t *iv;

	wait_generation();
	if (!start_flusher() || !(g = malloc(nq * sizeof(*g)))) {
		flush_queue();
		return;
	}
	if ((dv = realloc(gen_dev, nq * sizeof(*dv))))
		gen_dev = dv;
	if ((iv = realloc(gen_ino, nq * sizeof(*iv))))
		gen_ino = iv;
	if (!dv || !iv) {
		free(g);
		flush_queue();
		return;
	}
	for (unsigned i = 0; i < nq; i++) {
		struct wfile *w = queue[i];

		if (w->closed) {
			g[k] = w;
			gen_dev[k] = w->dev;
			gen_ino[k] = w->ino;
			bytes += w->len;
			blocks += blocks_of(w->di, w->written + w->len);
			mask |= 1u << w->di;
			k++;
		} else {
			queue[kept++] = w;
		}
	}
	if (!k) {
		free(g);
		flush_queue();
		return;
	}
	nq = kept;
	queued_bytes -= bytes;
	ngen_ino = k;
	inflight = 1;
	xst.flushes++;
	xst.behind++;
	pthread_mutex_lock(&gen_lock);
	gen = g;
	ngen = k;
	gen_blocks = blocks;
	gen_devmask = mask;
	pthread_cond_signal(&gen_cond);
	pthread_mutex_unlock(&gen_lock);
}

/* tar does something to fd we do not defer: write it out, give it back. */
static void detach(int fd)
{
	struct wfile *w = wtab[fd];

	flush_queue();
	wtab[fd] = NULL;
	for (unsigned i = 0; i < nq; i++) {
		if (queue[i] == w) {
			memmove(&queue[i], &queue[i + 1], (nq - i - 1) * sizeof(*queue));
			nq--;
			break;
		}
	}
	real_lseek(fd, (off_t)w->written, SEEK_SET);    /* where tar's writes left it */
	xst.detached++;
	wfile_free(w);
}

static int pending_inode(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < nq; i++)
		if (queue[i]->dev == dev && queue[i]->ino == ino)
			return 1;
	for (unsigned i = 0; inflight && i < ngen_ino; i++)
		if (gen_dev[i] == dev && gen_ino[i] == ino)
			return 1;
	return 0;
}

/* Files written later than tar believes: queued, or in the flusher's generation. */
static inline int pending(void)
{
	return nq || inflight;
}

/* Before a name-based call on dirfd/path: flush when it reaches a pending file. */
static void flush_if_pending(int dirfd, const char *path, int nofollow)
{
	struct stat sb;

	if (!pending())
		return;
	if (!path || real_fstatat(dirfd, path, &sb, nofollow ? AT_SYMLINK_NOFOLLOW : 0) < 0 ||
	    (S_ISREG(sb.st_mode) && pending_inode(sb.st_dev, sb.st_ino)))
		flush_queue();  /* also when unsure */
}

static int queue_add(struct wfile *w)
{
	if (nq == qcap) {
		unsigned nc = qcap ? 2 * qcap : 1024;
		struct wfile **p = realloc(queue, nc * sizeof(*p));

		if (!p)
			return -1;
		queue = p;
		qcap = nc;
	}
	queue[nq++] = w;
	return 0;
}

static void exit_flush(int status, void *unused);

/*
 * Archive read-ahead.  tar reads its archive in records (10 KiB) through
 * the page cache, and its own thread is the first to touch every page of
 * it.  Here (a VM whose host backs freshly read guest pages lazily) that
 * first touch made tar's read() cost 1.2 s of CPU per GiB, against 0.2 s
 * for pages already touched: 60% of tar's thread on the mixed set, whose
 * extraction is bound by that thread.  From tar's first extracted file on,
 * a thread of ours reads the archive (pread into one reused buffer, its
 * own open file so readahead sees one sequential reader) up to WARM_AHEAD
 * past tar's position, on the other core: tar then copies touched pages,
 * and the device sees a sequential reader far ahead of tar.  tar still
 * reads every byte itself through libc, so nothing it gets depends on
 * this thread; an error or EOF just ends it.  Only a regular file opened
 * read-only with WARM_MIN or more left is read ahead (not a pipe from a
 * compressor, not stdin from a terminal).
 */
#define WARM_AHEAD    (64ull << 20)
#define WARM_CHUNK    (1u << 20)
#define WARM_MIN      (8ull << 20)

static void *warmer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char *buf = malloc(WARM_CHUNK);
	uint64_t at = __atomic_load_n(&warm_pos, __ATOMIC_RELAXED);

	while (buf && !__atomic_load_n(&warm_stop, __ATOMIC_RELAXED)) {
		uint64_t pos = __atomic_load_n(&warm_pos, __ATOMIC_RELAXED);
		ssize_t k;

		if (at < pos)           /* tar caught up, or seeked past us */
			at = pos;
		if (at >= pos + WARM_AHEAD) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			continue;
		}
		k = pread(fd, buf, WARM_CHUNK, (off_t)at);
		if (k <= 0)
			break;
		at += (uint64_t)k;
		__atomic_fetch_add(&xst.read_ahead, (uint64_t)k, __ATOMIC_RELAXED);
	}
	free(buf);
	real_close(fd);
	return NULL;
}

/* tar created its first file: if the fd it last read is its archive (a
 * regular file it opened read-only, enough of it left), read it ahead. */
static void warm_start(void)
{
	char proc[40];
	struct stat sb;
	pthread_t t;
	sigset_t all, old;
	off_t pos;
	int fd = read_last, fl, own;

	if (fd < 0 || warm_src >= 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
	    (fl & O_ACCMODE) != O_RDONLY || real_fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (pos = real_lseek(fd, 0, SEEK_CUR)) < 0 || (uint64_t)sb.st_size < (uint64_t)pos + WARM_MIN)
		return;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	own = real_open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (own < 0)
		return;
	posix_fadvise(own, 0, 0, POSIX_FADV_SEQUENTIAL);
	__atomic_store_n(&warm_pos, (uint64_t)pos, __ATOMIC_RELAXED);
	__atomic_store_n(&warm_stop, 0, __ATOMIC_RELAXED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);       /* signals stay tar's */
	if (pthread_create(&t, NULL, warmer, (void *)(intptr_t)own) == 0) {
		pthread_detach(t);
		warm_src = fd;
	} else {
		real_close(own);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* tar closed its archive: the thread ends after its current pread. */
static void warm_end(void)
{
	__atomic_store_n(&warm_stop, 1, __ATOMIC_RELAXED);
	warm_src = -1;
}

static void start_extracting(void)
{
	if (extracting)
		return;
	extracting = 1;
	dirty = 1;
	errfd = fcntl(2, F_DUPFD_CLOEXEC, 10);
	/* Runs at tar's exit, with its status (tar has closed stdout and
	 * stderr itself by then: messages go to errfd). */
	on_exit(exit_flush, NULL);
	warm_start();
}

/* tar opened path for writing, fd is the new file: capture it. */
static void capture(int dirfd, int fd, const char *path)
{
	struct wfile *w;
	struct stat sb;
	int di;

	if (fd >= FDTAB_MAX || wtab[fd] || real_fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size != 0 || (di = note_dev(dirfd, path, sb.st_dev)) < 0)
		return;
	dirty = 1;
	if (!reserve((unsigned)di, devbs[di] ? devbs[di] : 4096) || !(w = calloc(1, sizeof(*w))))
		return;         /* little room left: tar writes it itself */
	w->name = strdup(path);
	if (!w->name || queue_add(w) < 0) {
		wfile_free(w);
		return;
	}
	w->fd = fd;
	w->dev = sb.st_dev;
	w->ino = sb.st_ino;
	w->di = (unsigned)di;
	wtab[fd] = w;
	xst.files++;
}

static struct wfile *captured(int fd)
{
	return (unsigned)fd < FDTAB_MAX ? wtab[fd] : NULL;
}

static int defer(struct wfile *w, const struct meta *m)
{
	if (w->nm == w->mcap) {
		unsigned nc = w->mcap ? 2 * w->mcap : 4;
		struct meta *p = realloc(w->m, nc * sizeof(*p));

		if (!p)
			return -1;
		w->m = p;
		w->mcap = nc;
	}
	w->m[w->nm++] = *m;
	return 0;
}

/* A write-open of tar's (extract or not), before and after the real call. */
static int write_open(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static void before_open(int dirfd, const char *path, int flags, int by_openat)
{
	if (!write_open(flags))
		return;
	if ((flags & O_CREAT) && by_openat)     /* tar's extract opens; its archive uses open() */
		start_extracting();
	if (!((flags & O_CREAT) && (flags & O_EXCL)))
		flush_if_pending(dirfd, path, (flags & O_NOFOLLOW) != 0);
}

static void after_open(int dirfd, int fd, const char *path, int flags)
{
	struct stat sb;

	if (fd < 0)
		return;
	if ((flags & O_ACCMODE) == O_WRONLY && (flags & O_CREAT) &&
	    (flags & (O_EXCL | O_TRUNC)) && !(flags & (O_APPEND | O_PATH | O_DIRECT | O_SYNC | O_DSYNC)) &&
	    !(flags & __O_TMPFILE)) {
		capture(dirfd, fd, path);
		return;
	}
	/* A file opened some other way (O_PATH for metadata, read) may be a
	 * pending one: what tar then sees must be complete. */
	if (pending() && real_fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && pending_inode(sb.st_dev, sb.st_ino))
		flush_queue();
}

/*
 * Everything written and committed: at tar's close of stdout/stderr (GNU
 * tar closes them itself at the end of main, before exit: messages must go
 * out before) and again at exit for anything after that.
 */


static void final_flush(void)
{
	struct stat sb;
	int cwd;

	for (int fd = 0; fd < FDTAB_MAX && nq; fd++)
		if (wtab[fd] && !wtab[fd]->closed)
			wtab[fd] = NULL;        /* tar never closed it: written, left open */
	flush_queue();
	if (!dirty)
		return;
	dirty = 0;
	syncer_quiet();
	for (unsigned i = 0; i < ndevs; i++) {
		if (durability) {
			int r = bfo_syncfs(devfd[i]);

			if (r == 0 && sync_err[i])
				r = sync_err[i];
			sync_err[i] = 0;

			xst.syncfs++;
			if (r < 0)
				say(NULL, "Cannot commit the extracted files to disk", -r);
		}
	}
	if (!durability)
		return;
	/* directories, symlinks, links made by name on a file system where
	 * no file was written */
	cwd = real_openat(AT_FDCWD, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd >= 0 && real_fstat(cwd, &sb) == 0 && !known_dev(sb.st_dev)) {
		bfo_syncfs(cwd);
		xst.syncfs++;
	}
	if (cwd >= 0)
		real_close(cwd);
}

/*
 * tar closes a read-only fd that is not a directory while extracting: its
 * archive (a file, a pipe from its compressor, stdin), so the members are
 * all out.  Everything is written and committed here, while tar can still
 * print what failed before its last words ("Exiting with failure status
 * ...") and before its close of stdout/stderr (fclose, past our hooks).
 */
static void closing_archive(int fd)
{
	int saved, fl;
	struct stat sb;

	if (!xenter())
		return;
	saved = errno;
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY && real_fstat(fd, &sb) == 0 &&
	    !S_ISDIR(sb.st_mode))
		final_flush();
	errno = saved;
	leave();
}

/*
 * At exit: what came after the archive's close (tar's delayed directory
 * metadata and links) is committed.  If a deferred write failed (another
 * process filled the disk after the free-space check, an I/O error), tar
 * did not see it: its status becomes 2, with tar's last words if it did
 * not say them itself (status 2 is the only one it says them for).
 */
static void exit_flush(int status, void *unused)
{
	(void)unused;
	if (getpid() != owner_pid || !pthread_equal(pthread_self(), tar_thread))
		return;
	in_hook = 1;
	exiting = 1;
	final_flush();
	in_hook = 0;
	if (deferred_failed) {
		if (status != 2 && errfd >= 0)
			dprintf(errfd, "tar: %s\n",
				dgettext("tar", "Exiting with failure status due to previous errors"));
		fflush(NULL);
		_exit(2);               /* tar's status for its own write errors */
	}
}

/* ------------------------------------------------------------ extract hooks */

static inline int xenter(void)
{
	return extract_ok && enter();
}


/* tar closes a captured fd: queued (we keep the fd), flushed at the bounds. */
static int close_captured(int fd)
{
	struct wfile *w = captured(fd);
	int saved;

	if (!w || !xenter())
		return -1;
	saved = errno;
	w->closed = 1;
	wtab[fd] = NULL;
	if (nq >= QUEUE_FILES || queued_bytes >= QUEUE_BYTES)
		flush_queue_behind();
	errno = saved;
	leave();
	return 0;
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct wfile *w;

	resolve();
	if ((w = captured(fd)) && xenter()) {
		int saved = errno, took = 0;

		uint64_t have = w->written + w->len;

		if (w->nm == 0 && have + n <= WFILE_MAX &&
		    reserve(w->di, blocks_of(w->di, have + n) - blocks_of(w->di, have)) &&
		    wtab[fd] == w) {
			if (w->len + n > w->cap) {
				size_t nc = w->cap ? w->cap : 4096;
				char *p;

				while (nc < w->len + n)
					nc *= 2;
				p = realloc(w->buf, nc);
				if (p) {
					w->buf = p;
					w->cap = nc;
				}
			}
			if (w->len + n <= w->cap) {
				memcpy(w->buf + w->len, buf, n);
				w->len += n;
				queued_bytes += n;
				xst.bytes += n;
				took = 1;
				if (queued_bytes >= QUEUE_BYTES)
					flush_queue_behind();   /* the files tar closed; this one stays */
			}
		}
		if (!took)
			detach(fd);     /* large, or written after its metadata: libc */
		errno = saved;
		leave();
		if (took)
			return (ssize_t)n;
	}
	return real_write(fd, buf, n);
}

static int defer_hook(int fd, const struct meta *m)
{
	struct wfile *w = captured(fd);
	int r = -1;

	if (w && xenter()) {
		int saved = errno;

		r = defer(w, m);
		if (r < 0)
			detach(fd);
		errno = saved;
		leave();
	}
	return r;
}

EXPORT int futimens(int fd, const struct timespec ts[2])
{
	struct meta m = { .op = M_TIMES, .null_ts = !ts };

	resolve();
	if (ts)
		m.ts[0] = ts[0], m.ts[1] = ts[1];
	if (captured(fd) && defer_hook(fd, &m) == 0)
		return 0;
	return real_futimens(fd, ts);
}

EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	resolve();
	if (!path && flags == 0 && captured(dirfd)) {
		struct meta m = { .op = M_TIMES, .null_ts = !ts };

		if (ts)
			m.ts[0] = ts[0], m.ts[1] = ts[1];
		if (defer_hook(dirfd, &m) == 0)
			return 0;
	} else if (path && extracting && xenter()) {
		int saved = errno;

		dirty = 1;      /* metadata by name: committed at exit too */

		flush_if_pending(dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) != 0);
		errno = saved;
		leave();
	}
	return real_utimensat(dirfd, path, ts, flags);
}

EXPORT int fchown(int fd, uid_t uid, gid_t gid)
{
	struct meta m = { .op = M_CHOWN, .uid = uid, .gid = gid };

	resolve();
	if (captured(fd) && defer_hook(fd, &m) == 0)
		return 0;
	return real_fchown(fd, uid, gid);
}

EXPORT int fchmod(int fd, mode_t mode)
{
	struct meta m = { .op = M_CHMOD, .mode = mode };

	resolve();
	if (captured(fd) && defer_hook(fd, &m) == 0)
		return 0;
	return real_fchmod(fd, mode);
}

/* Name-based calls: flushed first when they reach a pending file. */
static void by_name(int dirfd, const char *path, int flags)
{
	if (extracting)
		dirty = 1;      /* metadata by name: committed at exit too */
	if (pending() && xenter()) {
		int saved = errno;

		if ((flags & AT_EMPTY_PATH) && path && !*path && captured(dirfd))
			detach(dirfd);
		else
			flush_if_pending(dirfd, path, (flags & AT_SYMLINK_NOFOLLOW) != 0);
		errno = saved;
		leave();
	}
}

/* Calls that may depend on any pending file (links, renames, unlinks). */
static void flush_all_first(void)
{
	if (pending() && xenter()) {
		int saved = errno;

		flush_queue();
		errno = saved;
		leave();
	}
}

EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	resolve();
	by_name(dirfd, path, flags);
	return real_fchownat(dirfd, path, uid, gid, flags);
}

EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	resolve();
	by_name(dirfd, path, flags);
	return real_fchmodat(dirfd, path, mode, flags);
}

EXPORT int setxattr(const char *path, const char *name, const void *v, size_t n, int flags)
{
	resolve();
	by_name(AT_FDCWD, path, 0);
	return real_setxattr(path, name, v, n, flags);
}

EXPORT int lsetxattr(const char *path, const char *name, const void *v, size_t n, int flags)
{
	resolve();
	by_name(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
	return real_lsetxattr(path, name, v, n, flags);
}

EXPORT int linkat(int od, const char *op, int nd, const char *np, int flags)
{
	resolve();
	flush_all_first();
	note_extracting();
	return real_linkat(od, op, nd, np, flags);
}

EXPORT int renameat(int od, const char *op, int nd, const char *np)
{
	resolve();
	flush_all_first();
	return real_renameat(od, op, nd, np);
}

EXPORT int renameat2(int od, const char *op, int nd, const char *np, unsigned flags)
{
	resolve();
	flush_all_first();
	return real_renameat2(od, op, nd, np, flags);
}

EXPORT int unlinkat(int dirfd, const char *path, int flags)
{
	resolve();
	flush_all_first();
	return real_unlinkat(dirfd, path, flags);
}

/* tar creates something by name: extraction has begun; it takes room. */
static void note_extracting(void)
{
	if (xenter()) {
		start_extracting();
		charge_name();
		leave();
	}
}

EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
	resolve();
	note_extracting();
	return real_mkdirat(dirfd, path, mode);
}

EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	resolve();
	note_extracting();
	return real_symlinkat(target, dirfd, path);
}

/* A stat that finds a pending file: flushed, then asked again. */
static int stat_saw_pending(int r, const struct stat *sb)
{
	int again = 0;

	if (r == 0 && pending() && S_ISREG(sb->st_mode) && xenter()) {
		int saved = errno;

		if (pending_inode(sb->st_dev, sb->st_ino)) {
			flush_queue();
			again = 1;
		}
		errno = saved;
		leave();
	}
	return again;
}

EXPORT int fstat(int fd, struct stat *sb)
{
	int r;

	resolve();
	if (captured(fd) && xenter()) {
		int saved = errno;

		detach(fd);
		errno = saved;
		leave();
	}
	r = real_fstat(fd, sb);
	if (stat_saw_pending(r, sb))
		r = real_fstat(fd, sb);
	return r;
}

EXPORT int fstatat(int dirfd, const char *path, struct stat *sb, int flags)
{
	int r;

	resolve();
	if ((flags & AT_EMPTY_PATH) && path && !*path && captured(dirfd) && xenter()) {
		int saved = errno;

		detach(dirfd);
		errno = saved;
		leave();
	}
	r = real_fstatat(dirfd, path, sb, flags);
	if (stat_saw_pending(r, sb))
		r = real_fstatat(dirfd, path, sb, flags);
	return r;
}

EXPORT int stat(const char *path, struct stat *sb)
{
	int r;

	resolve();
	r = real_stat(path, sb);
	if (stat_saw_pending(r, sb))
		r = real_stat(path, sb);
	return r;
}

/* Calls we do not defer on a captured fd: written out, handed to libc. */
static void give_back(int fd)
{
	if (captured(fd) && xenter()) {
		int saved = errno;

		detach(fd);
		errno = saved;
		leave();
	}
}

EXPORT int ftruncate(int fd, off_t len)
{
	resolve();
	give_back(fd);
	return real_ftruncate(fd, len);
}

EXPORT int fsync(int fd)
{
	resolve();
	give_back(fd);
	return real_fsync(fd);
}

EXPORT int dup(int fd)
{
	resolve();
	give_back(fd);
	return real_dup(fd);
}

EXPORT int dup2(int fd, int fd2)
{
	resolve();
	give_back(fd);
	give_back(fd2);
	return real_dup2(fd, fd2);
}

static int do_open(int (*real)(const char *, int, ...), const char *path, int flags, mode_t mode)
{
	int fd, saved;

	if (!xenter())
		return real(path, flags, mode);
	before_open(AT_FDCWD, path, flags, 0);
	leave();
	fd = real(path, flags, mode);
	if (fd >= 0 && pending() && !(write_open(flags) && (flags & O_CREAT)) && xenter()) {
		saved = errno;
		after_open(AT_FDCWD, fd, path, flags);
		errno = saved;
		leave();
	}
	return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = open_mode(flags, ap);
	va_end(ap);
	resolve();
	return do_open(real_open, path, flags, mode);
}

static int open_2_shim(const char *path, int flags, ...)
{
	return real___open_2(path, flags);
}

int __open_2(const char *path, int flags);

EXPORT int __open_2(const char *path, int flags)
{
	resolve();
	return do_open(open_2_shim, path, flags, 0);
}

/* ------------------------------------------------------------ life cycle */

/* Stop reading ahead; fds being served stay served (their data is held). */
static void plugin_off(void)
{
	if (ctx && batch_open) {
		struct bfo_file fs[WAIT_MAX];
		int k;

		bfo_read_cancel(ctx);
		while ((k = bfo_read_wait(ctx, fs, WAIT_MAX, -1)) > 0)
			for (int i = 0; i < k; i++)
				take(&fs[i]);
		batch_over();
	}
	if (ahead) {
		struct bfo_dirahead_stats ds;

		if (bfo_dirahead_stats(ahead, &ds) == 0)
			st.dirs_ahead += ds.read;
		bfo_dirahead_destroy(ahead);
		ahead = NULL;
	}
	active = 0;
}

static void after_fork_child(void)
{
	/* The context's threads (and the flusher and syncer) did not come along: the child uses libc. */
	active = 0;
	ctx = NULL;
	ahead = NULL;
	inflight = 0;
	warm_src = -1;          /* the read-ahead thread stayed in the parent */
	flusher_state = -1;
	syncer_state = -1;
	sync_busy = 0;
}

static enum sort_mode parse_sort(const char *v)
{
	size_t n = strlen(v);

	if (n && strncmp(v, "name", n) == 0)
		return SORT_NAME;
	if (n && strncmp(v, "inode", n) == 0)
		return SORT_INODE;
	return SORT_NONE;
}

/* --sort=X (or an unambiguous abbreviation like --sor=X, or "--sort X"). */
static void scan_sort(char **argv, int argc)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq;
		size_t kl;

		if (strcmp(a, "--") == 0)
			return;
		if (strncmp(a, "--so", 4) != 0)
			continue;
		eq = strchr(a, '=');
		kl = eq ? (size_t)(eq - a) : strlen(a);
		if (kl > 6 || strncmp(a, "--sort", kl) != 0)
			continue;
		if (eq)
			sort_mode = parse_sort(eq + 1);
		else if (i + 1 < argc)
			sort_mode = parse_sort(argv[++i]);
	}
}

static void read_sort_mode(void)
{
	char buf[65536], *argv[4096];
	int argc = 0, fd;
	ssize_t n, len = 0;
	const char *env = getenv("TAR_OPTIONS");

	if (env) {
		char *copy = strdup(env), *save = NULL;

		for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t && argc < 4096;
		     t = strtok_r(NULL, " \t", &save))
			argv[argc++] = t;
		scan_sort(argv, argc);
		free(copy);
		argc = 0;
	}
	fd = real_openat(AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = real_read(fd, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	real_close(fd);
	buf[len] = '\0';
	for (ssize_t i = 0; i < len && argc < 4096; i += (ssize_t)strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	scan_sort(argv, argc);
}

/* Children (compressors, --to-command...) do not load the plugin again. */
static void strip_preload(void)
{
	const char *pre = getenv("LD_PRELOAD");
	char *out, *copy, *save = NULL;
	size_t ol = 0;

	if (!pre || !(copy = strdup(pre)) || !(out = calloc(1, strlen(pre) + 1))) {
		return;
	}
	for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
		const char *base = strrchr(t, '/');

		if (strcmp(base ? base + 1 : t, "libbfo_tar.so") == 0)
			continue;
		if (ol)
			out[ol++] = ':';
		memcpy(out + ol, t, strlen(t));
		ol += strlen(t);
	}
	if (ol)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
	free(copy);
	free(out);
}

/*
 * A BFO_TAR_* setting that is not one of its values is named on stderr (once,
 * before tar starts) and its default is kept: a typo must not silently
 * change memory use or durability, nor stop tar.
 */
static void setting_ignored(const char *name, const char *val, const char *why)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "bfo-tar: ignoring %s=%s (%s)\n", name, val, why);

	if (n > 0 && real_write)
		real_write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* name's value as a whole number of MiB in [lo, hi], else dflt (named on stderr when set). */
static uint64_t setting_mib(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end, why[96];
	unsigned long long x;
	int saved = errno, range;

	if (!v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	range = errno;
	errno = saved;
	if (*v >= '0' && *v <= '9' && !*end && !range && x >= lo && x <= hi)
		return (uint64_t)x << 20;
	snprintf(why, sizeof(why), "not a number of MiB from %llu to %llu; %llu kept",
		 (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)(dflt >> 20));
	setting_ignored(name, v, why);
	return dflt;
}

/* name's value if it is one of the words in vals (NULL-terminated, the
 * default first), else NULL (named on stderr when set). */
static const char *setting_word(const char *name, const char *const *vals)
{
	const char *v = getenv(name);
	char why[96];

	if (!v)
		return NULL;
	for (const char *const *w = vals; *w; w++)
		if (strcmp(v, *w) == 0)
			return v;
	snprintf(why, sizeof(why), "not one of its values; %s kept", vals[0]);
	setting_ignored(name, v, why);
	return NULL;
}

__attribute__((constructor)) static void bfo_tar_init(void)
{
	/* each list's default first */
	static const char *const engines[] = { "auto", "raw", "uring", "portable", NULL };
	static const char *const durabilities[] = { "batch", "none", NULL };
	static const char *const onoff[] = { "on", "off", NULL };

	resolve();
	strip_preload();
	if (!real_openat || !real_read || !real_close || !real_fdopendir ||
	    !real_readdir || !real_closedir || !real_lseek || !real___openat_2)
		return;
	engine_env = setting_word("BFO_TAR_ENGINE", engines);
	arena_bytes = setting_mib("BFO_TAR_ARENA_MB", 16, 65536, arena_bytes);
	batch_bytes = arena_bytes / LOT_SHARE;
	sync_every = setting_mib("BFO_TAR_SYNC_MB", 0, 1048576, sync_every);
	held_budget = arena_bytes - arena_bytes / 4;
	read_sort_mode();
	tar_thread = pthread_self();
	owner_pid = getpid();
	{
		const char *dur = setting_word("BFO_TAR_DURABILITY", durabilities);
		const char *x = setting_word("BFO_TAR_EXTRACT", onoff);

		durability = !(dur && strcmp(dur, "none") == 0);
		/* BFO_TAR_EXTRACT=off: tar -x is plain tar (the escape hatch). */
		extract_ok = !(x && strcmp(x, "off") == 0) && real_write && real_futimens &&
			     real_utimensat && real_fchown && real_fchmod && real_fchownat &&
			     real_fchmodat && real_linkat && real_renameat && real_renameat2 &&
			     real_unlinkat && real_mkdirat && real_symlinkat && real_fstat &&
			     real_fstatat && real_stat && real_ftruncate && real_fsync && real_dup &&
			     real_dup2 && real_setxattr && real_lsetxattr && real_open && real___open_2;
	}
	if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
		return;
	active = 1;
}

__attribute__((destructor)) static void bfo_tar_fini(void)
{
	const char *path = getenv("BFO_TAR_STATS");

	if (!pthread_equal(pthread_self(), tar_thread) || getpid() != owner_pid ||
	    (!active && !ctx && !extracting))
		return;
	in_hook = 1;
	if (active)
		plugin_off();
	if (path && *path) {
		FILE *f = fopen(path, "a");

		if (f) {
			fprintf(f, "bfo-tar: served=%llu served_bytes=%llu fallback=%llu "
				"skipped=%llu batches=%llu ios=%llu direct_ios=%llu device_bytes=%llu dirs_ahead=%llu "
				"xfiles=%llu xbytes=%llu xflushes=%llu xbehind=%llu xdetached=%llu syncfs=%llu early_syncfs=%llu "
				"xread_ahead=%llu\n",
				(unsigned long long)st.served, (unsigned long long)st.served_bytes,
				(unsigned long long)st.fallback, (unsigned long long)st.skipped,
				(unsigned long long)st.batches, (unsigned long long)st.ios,
				(unsigned long long)st.direct_ios, (unsigned long long)st.device_bytes, (unsigned long long)st.dirs_ahead,
				(unsigned long long)xst.files,
				(unsigned long long)xst.bytes, (unsigned long long)xst.flushes,
				(unsigned long long)xst.behind, (unsigned long long)xst.detached,
				(unsigned long long)xst.syncfs,
				(unsigned long long)xst.early_syncfs,
				(unsigned long long)__atomic_load_n(&xst.read_ahead, __ATOMIC_RELAXED));
			fclose(f);
		}
	}
	/* The context stays: tar's exit does not wait for our threads to be
	 * joined, and fds being served at exit still point into its arena. */
	in_hook = 0;
}

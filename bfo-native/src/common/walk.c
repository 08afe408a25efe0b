/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parallel directory walk.  Cold directories cost one read per few blocks;
 * reading many directories at once keeps the device busy where a single
 * readdir loop waits on each in turn.
 *
 * Threads take directories from a shared stack, read them whole, push the
 * subdirectories and append the files to the fill buffer.  When the fill
 * buffer is full the walk waits for the caller to take it (buffers are
 * swapped, so the caller sorts and hands out one batch while the threads
 * fill the other).
 */
#include "walk.h"
#include "fdlimit.h"
#include "dirlist.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct walk {
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* any state change; few waiters */
	char **dirs;                /* directories not yet read */
	size_t ndirs, dirs_cap;
	unsigned busy;              /* threads reading a directory */
	struct walk_file *fill;     /* threads append here */
	size_t nfill;
	struct walk_file *out;      /* the batch handed out last */
	size_t nout;
	struct walk_file *spare;    /* the sort's other buffer (made on first use) */
	size_t cap;
	size_t want;                /* entries a batch is handed out at (WALK_QUICK: fewer, first) */
	bool sort, nofollow, all, stop;
	bool lists_on;              /* WALK_LISTS */
	struct dirlist *lists;      /* made since the last walk_take_lists */
	size_t lists_bytes;         /* of all listings ever made: the bound */
	uint64_t skipped, errors;   /* errors: those not kept in fails[] */
	struct walk_failure {
		char *path;
		int status;
	} *fails;                   /* directories that could not be read, oldest first */
	size_t nfails, fails_head;
	pthread_t *threads;
	unsigned nthreads;
	bool (*skip)(void *arg, const char *path, bool dir);  /* walk_start_skip */
	void *skip_arg;
};

#define RADIX_BITS 11

/*
 * Sort the n files of *a by inode number, stably, using tmp (n entries):
 * a radix sort over the bits the largest number has (three passes for
 * 32-bit numbers), where qsort's comparisons were most of the time before
 * a tree's first window could start.  *a ends up as the sorted buffer, the
 * other one in *tmp.
 */
static void sort_by_ino(struct walk_file **a, struct walk_file **tmp, size_t n)
{
	static const unsigned R = 1u << RADIX_BITS;
	ino_t max = 0;
	size_t count[1u << RADIX_BITS];

	for (size_t i = 0; i < n; i++)
		max = max > (*a)[i].ino ? max : (*a)[i].ino;
	for (unsigned shift = 0; shift < sizeof(ino_t) * 8 && (max >> shift); shift += RADIX_BITS) {
		struct walk_file *src = *a, *dst = *tmp;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i].ino >> shift) & (R - 1)]++;
		for (size_t d = 0, at = 0; d < R; d++) {
			size_t c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].ino >> shift) & (R - 1)]++] = src[i];
		*a = dst;
		*tmp = src;
	}
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (a && dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

static bool walk_done_locked(struct walk *w)
{
	return w->stop || (w->ndirs == 0 && w->busy == 0);
}

static void push_dir_locked(struct walk *w, char *path)
{
	if (w->ndirs == w->dirs_cap) {
		size_t n = w->dirs_cap ? w->dirs_cap * 2 : 64;
		char **d = realloc(w->dirs, n * sizeof(*d));

		if (!d) {
			w->errors++;
			free(path);
			return;
		}
		w->dirs = d;
		w->dirs_cap = n;
	}
	w->dirs[w->ndirs++] = path;
}

/* Append one entry; waits while the fill buffer is full. */
static void add_file_locked(struct walk *w, ino_t ino, unsigned char type, char *path,
			    struct stat *st)
{
	while (w->nfill == w->cap && !w->stop)
		pthread_cond_wait(&w->cond, &w->lock);
	if (w->stop) {
		free(path);
		free(st);
		return;
	}
	w->fill[w->nfill].ino = ino;
	w->fill[w->nfill].type = type;
	w->fill[w->nfill].st = st;
	w->fill[w->nfill++].path = path;
	if (w->nfill == w->want)
		pthread_cond_broadcast(&w->cond);
}

#define WALK_LISTS_BYTES (32u << 20)

/* Start the listing of dir (open as d, not read yet) for walk_take_lists:
 * its record from fstat now, before any entry is read; none when it
 * changed too recently or the walk kept its bound of listings. */
static void list_begin(struct walk *w, DIR *d, const char *dir, struct dirlist_builder *lb)
{
	struct dirlist_rec rec;
	struct stat st;
	size_t room;

	pthread_mutex_lock(&w->lock);
	room = w->lists_bytes >= WALK_LISTS_BYTES ? 0 : WALK_LISTS_BYTES - w->lists_bytes;
	pthread_mutex_unlock(&w->lock);
	if (!room || fstat(dirfd(d), &st) < 0 || !dirlist_quiet(&st))
		return;
	dirlist_rec_from(&rec, &st);
	dirlist_begin(lb, dir, &rec, room);
}

/* The listing of a directory read to its end goes to w->lists. */
static void list_end(struct walk *w, struct dirlist_builder *lb, bool whole)
{
	struct dirlist *l;

	if (!whole) {
		dirlist_free(lb->l);
		return;
	}
	l = dirlist_end(lb);
	if (!l)
		return;
	pthread_mutex_lock(&w->lock);
	l->next = w->lists;
	w->lists = l;
	w->lists_bytes += l->bytes;
	pthread_mutex_unlock(&w->lock);
}

/* Directory dir could not be read (status): kept for the caller to name,
 * up to a bound; beyond it (or without memory) only counted, so a tree of
 * unreadable directories cannot grow the walk without limit. */
static void dir_failed(struct walk *w, const char *dir, int status)
{
	char *p = strdup(dir);

	pthread_mutex_lock(&w->lock);
	if (p && w->nfails < WALK_MAX_FAILURES) {
		w->fails[w->nfails].path = p;
		w->fails[w->nfails++].status = status;
	} else {
		free(p);
		w->errors++;
	}
	pthread_mutex_unlock(&w->lock);
}

static void read_dir(struct walk *w, char *dir)
{
	DIR *d = fdl_opendir(dir);
	struct dirent *de;

	if (!d) {
		dir_failed(w, dir, -errno);
		return;
	}
	struct dirlist_builder lb = { 0 };
	bool whole = false;        /* read to its end */

	if (w->lists_on)
		list_begin(w, d, dir, &lb);
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			whole = errno == 0;
			break;
		}
		unsigned char t = de->d_type;
		ino_t ino = de->d_ino;
		struct stat st;
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (lb.l && t == DT_REG)
			dirlist_add(&lb, de->d_name, ino);
		p = join(dir, de->d_name);
		if (!p)
			break;
		if (t == DT_UNKNOWN) {
			t = DT_FIFO;   /* skipped unless lstat says otherwise */
			if (lstat(p, &st) == 0)
				t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
				    S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
		}
		if (w->skip && w->skip(w->skip_arg, p, t == DT_DIR)) {
			/* left out, and a directory not entered */
			free(p);
			pthread_mutex_lock(&w->lock);
			w->skipped++;
			pthread_mutex_unlock(&w->lock);
			continue;
		}
		if (t == DT_LNK && !w->all) {
			/* A link is read when it leads to a regular file. */
			if (!w->nofollow && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
				t = DT_REG;
				ino = st.st_ino;
			}
		}
		/* A directory's metadata as it is before it is read: reading
		 * it updates its atime, which a copy keeps (as cp -a does). */
		struct stat *dst = NULL;

		if (t == DT_DIR && w->all && (dst = malloc(sizeof(*dst))) &&
		    lstat(p, dst) < 0) {
			free(dst);
			dst = NULL;
		}
		pthread_mutex_lock(&w->lock);
		if (t == DT_DIR) {
			if (w->all) {
				char *q = strdup(p);

				if (q)
					add_file_locked(w, ino, DT_DIR, q, dst);
				else
					free(dst);
			}
			push_dir_locked(w, p);
			pthread_cond_broadcast(&w->cond);
		} else if (t == DT_REG || w->all) {
			add_file_locked(w, ino, t, p, NULL);
		} else {
			w->skipped++;
			free(p);
		}
		bool stop = w->stop;

		pthread_mutex_unlock(&w->lock);
		if (stop)
			break;
	}
	if (lb.l)
		list_end(w, &lb, whole);
	fdl_closedir(d);
}

static void *walk_main(void *arg)
{
	struct walk *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->ndirs && !walk_done_locked(w))
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->ndirs)
			break;
		char *dir = w->dirs[--w->ndirs];

		w->busy++;
		pthread_mutex_unlock(&w->lock);
		read_dir(w, dir);
		free(dir);
		pthread_mutex_lock(&w->lock);
		w->busy--;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

struct walk *walk_start(const char *root, unsigned nthreads, size_t batch_cap, unsigned flags)
{
	return walk_start_skip(root, nthreads, batch_cap, flags, NULL, NULL);
}

struct walk *walk_start_skip(const char *root, unsigned nthreads, size_t batch_cap, unsigned flags,
			     bool (*skip)(void *arg, const char *path, bool dir), void *arg)
{
	struct walk *w = calloc(1, sizeof(*w));
	sigset_t all, old;

	if (!w)
		return NULL;
	w->skip = skip;
	w->skip_arg = arg;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->cap = batch_cap ? batch_cap : 1;
	w->want = flags & WALK_QUICK && w->cap >= 8 ? w->cap / 8 : w->cap;
	w->sort = flags & WALK_SORT;
	w->nofollow = flags & WALK_NOFOLLOW;
	w->all = flags & WALK_ALL;
	w->lists_on = flags & WALK_LISTS;
	w->fill = malloc(w->cap * sizeof(*w->fill));
	w->out = malloc(w->cap * sizeof(*w->out));
	/* A thread holds one directory open at a time. */
	nthreads = fdl_share(nthreads ? nthreads : 1, 1);
	w->threads = calloc(nthreads, sizeof(*w->threads));
	w->fails = calloc(WALK_MAX_FAILURES, sizeof(*w->fails));
	char *r = strdup(root);

	if (!w->fill || !w->out || !w->threads || !w->fails || !r) {
		free(r);
		walk_end(w, NULL, NULL);
		return NULL;
	}
	push_dir_locked(w, r);
	/* The walk's threads leave signals to the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < (nthreads ? nthreads : 1); i++)
		if (pthread_create(&w->threads[w->nthreads], NULL, walk_main, w) == 0)
			w->nthreads++;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!w->nthreads) {
		walk_end(w, NULL, NULL);
		return NULL;
	}
	return w;
}

size_t walk_next(struct walk *w, struct walk_file **files)
{
	struct walk_file *t;

	for (size_t i = 0; i < w->nout; i++) {
		free(w->out[i].path);
		free(w->out[i].st);
	}
	w->nout = 0;
	pthread_mutex_lock(&w->lock);
	while (w->nfill < w->want && !walk_done_locked(w))
		pthread_cond_wait(&w->cond, &w->lock);
	w->want = w->cap;
	/* Swap: the threads go on filling while this batch is used. */
	t = w->out;
	w->out = w->fill;
	w->nout = w->nfill;
	w->fill = t;
	w->nfill = 0;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	if (w->sort && w->nout > 1) {
		if (!w->spare)
			w->spare = malloc(w->cap * sizeof(*w->spare));
		if (w->spare)
			sort_by_ino(&w->out, &w->spare, w->nout);
		/* else handed out in the order listed: slower, still correct */
	}
	*files = w->out;
	return w->nout;
}

struct dirlist *walk_take_lists(struct walk *w)
{
	struct dirlist *l;

	pthread_mutex_lock(&w->lock);
	l = w->lists;
	w->lists = NULL;
	pthread_mutex_unlock(&w->lock);
	return l;
}

bool walk_failure(struct walk *w, char **path, int *status)
{
	bool got = false;

	pthread_mutex_lock(&w->lock);
	if (w->fails_head < w->nfails) {
		*path = w->fails[w->fails_head].path;
		*status = w->fails[w->fails_head++].status;
		got = true;
	}
	if (w->fails_head == w->nfails)
		w->fails_head = w->nfails = 0;
	pthread_mutex_unlock(&w->lock);
	return got;
}

void walk_counts(struct walk *w, uint64_t *skipped, uint64_t *untaken)
{
	pthread_mutex_lock(&w->lock);
	*skipped = w->skipped;
	*untaken = w->errors + (w->nfails - w->fails_head);
	pthread_mutex_unlock(&w->lock);
}

void walk_end(struct walk *w, uint64_t *skipped, uint64_t *errors)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	if (skipped)
		*skipped += w->skipped;
	if (errors)
		*errors += w->errors;
	for (size_t i = 0; i < w->nout; i++) {
		free(w->out[i].path);
		free(w->out[i].st);
	}
	for (size_t i = 0; i < w->nfill; i++) {
		free(w->fill[i].path);
		free(w->fill[i].st);
	}
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i]);
	while (w->lists) {
		struct dirlist *l = w->lists;

		w->lists = l->next;
		dirlist_free(l);
	}
	if (w->fails)
		for (size_t i = w->fails_head; i < w->nfails; i++)
			free(w->fails[i].path);
	free(w->fails);
	free(w->dirs);
	free(w->fill);
	free(w->out);
	free(w->spare);
	free(w->threads);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
}

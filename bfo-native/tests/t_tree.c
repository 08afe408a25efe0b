/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_tree: bfo_read_tree against read().  A tree of nested directories,
 * empty files, files read in pieces, symbolic links (to a file: read; to a
 * directory, dangling: skipped), an unreadable file and an unreadable
 * directory (as an ordinary user: root runs that part as nobody), given
 * as two directories, a file, a link to a directory and a missing path.
 * The expected set comes from nftw() and read(): every regular file (or
 * link to one) once, its pieces in offset order, its bytes those read()
 * gives; the unreadable ones with -EACCES; each batch index once.  Then:
 * the input queue overflowed many times (small windows) with the
 * descriptors back where they were, a stop by the callback, a context used
 * again, the invalid arguments.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_helpers.h"

struct want {
	char *path;
	uint8_t *data;
	uint64_t len, got;
	int status;
	bool done;
};

static struct want *wants;
static size_t nwant, capwant;
static const char *base, *top;   /* base/t is the tree */
static const char *from, *to;     /* nftw's paths under from are named under to */

static void want_add(const char *path, int status)
{
	struct want *w;

	if (nwant == capwant) {
		capwant = capwant ? capwant * 2 : 1024;
		wants = realloc(wants, capwant * sizeof(*wants));
		T_ASSERT(wants, "out of memory");
	}
	w = &wants[nwant++];
	*w = (struct want){ .path = strdup(path), .status = status };
	if (status == 0) {
		int r = t_read_plain(path, &w->data, &w->len);

		if (r < 0)
			w->status = r;   /* read() says so: the batch must too */
	}
}

static int want_cmp(const void *a, const void *b)
{
	return strcmp(((const struct want *)a)->path, ((const struct want *)b)->path);
}

/* What read() finds: regular files and links to them; an unreadable
 * directory is a failure entry of its own. */
static int visit(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	struct stat t;

	char *q = NULL;

	(void)ftw;
	if (from && !strncmp(p, from, strlen(from)))
		p = q = t_pathf("%s%s", to, p + strlen(from));
	if (type == FTW_F && S_ISREG(st->st_mode))
		want_add(p, access(p, R_OK) ? -errno : 0);
	else if (type == FTW_SL && stat(p, &t) == 0 && S_ISREG(t.st_mode))
		want_add(p, access(p, R_OK) ? -errno : 0);
	else if (type == FTW_DNR)
		want_add(p, -EACCES);
	free(q);
	return 0;
}

static void make_tree(const char *b)
{
	char *p;
	const char *d = top = t_pathf("%s/t", b);

	base = b;
	T_OK(t_sh("mkdir -p %s/a/b/c/d %s/e %s/empty-dir %s/locked", d, d, d, d));
	for (int i = 0; i < 40; i++) {
		p = t_pathf("%s/%s/f%02d", d, i % 4 == 0 ? "a" : i % 4 == 1 ? "a/b" : i % 4 == 2 ? "a/b/c/d" : "e", i);
		t_write_random(p, (uint64_t)i * 997 % 20000, (uint64_t)i + 1);
		free(p);
	}
	p = t_pathf("%s/e/large", d);
	t_write_random(p, 300 * 1024 + 17, 99);   /* pieces of 64 KiB */
	free(p);
	for (int i = 0; i < 3; i++) {
		p = t_pathf("%s/a/b/empty%d", d, i);
		t_write_bytes(p, "", 0);
		free(p);
	}
	p = t_pathf("%s/g", b);
	t_write_random(p, 5000, 7);
	free(p);
	T_OK(t_sh("ln -s f03 %s/e/link-to-file && ln -s ../a %s/e/link-to-dir && "
		  "ln -s nowhere %s/e/dangling && mkfifo %s/e/fifo", d, d, d, d));
	T_OK(t_sh("echo secret > %s/e/unreadable && chmod 000 %s/e/unreadable", d, d));
	T_OK(t_sh("echo hidden > %s/locked/x && chmod 000 %s/locked", d, d));
}

static struct want *want_find(const char *path)
{
	struct want key = { .path = (char *)path };

	return bsearch(&key, wants, nwant, sizeof(*wants), want_cmp);
}

struct seen {
	uint64_t *indices;
	size_t n, cap;
	unsigned calls, stop_after;
	int stop_with;
};

static int check_entry(void *arg, const struct bfo_file *f)
{
	struct seen *s = arg;
	struct want *w = want_find(f->path);

	s->calls++;
	T_ASSERT(w, "%s: not a file of the tree, or not one read() reads", f->path);
	T_ASSERT(!w->done, "%s: delivered after its last piece", f->path);
	if (f->status < 0 || w->status < 0) {
		T_ASSERT(f->status == w->status, "%s: status %d, read() says %d", f->path, f->status, w->status);
		T_ASSERT(f->flags & BFO_FILE_LAST, "%s: a failure not marked last", f->path);
		T_ASSERT(!f->data && !f->length, "%s: a failure with data", f->path);
	} else {
		T_ASSERT(f->offset == w->got, "%s: piece at %llu, expected %llu", f->path,
			 (unsigned long long)f->offset, (unsigned long long)w->got);
		T_ASSERT(f->offset + f->length <= w->len && (!f->length || !memcmp(w->data + f->offset, f->data, f->length)),
			 "%s: bytes at %llu differ from read()'s", f->path, (unsigned long long)f->offset);
		T_EQ(f->size, w->len);
		w->got += f->length;
	}
	if (f->flags & BFO_FILE_LAST) {
		T_ASSERT(f->status < 0 || w->got == w->len, "%s: %llu of %llu bytes", f->path,
			 (unsigned long long)w->got, (unsigned long long)w->len);
		w->done = true;
		if (f->index == UINT64_MAX) {
			T_ASSERT(f->status < 0 && S_ISDIR(f->mode), "%s: a walk failure that is not a directory's", f->path);
		} else {
			if (s->n == s->cap) {
				s->cap = s->cap ? 2 * s->cap : 1024;
				s->indices = realloc(s->indices, s->cap * sizeof(*s->indices));
			}
			s->indices[s->n++] = f->index;
		}
	}
	return s->stop_after && s->calls == s->stop_after ? s->stop_with : 0;
}

static int idx_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every wanted entry delivered once, indices unique; returns the failures. */
static long check_all(struct seen *s)
{
	long failed = 0;

	for (size_t i = 0; i < nwant; i++) {
		T_ASSERT(wants[i].done, "%s: never delivered", wants[i].path);
		failed += wants[i].status < 0;
		wants[i].done = false;
		wants[i].got = 0;
	}
	qsort(s->indices, s->n, sizeof(*s->indices), idx_cmp);
	for (size_t i = 1; i < s->n; i++)
		T_ASSERT(s->indices[i] != s->indices[i - 1], "index %llu delivered twice",
			 (unsigned long long)s->indices[i]);
	free(s->indices);
	*s = (struct seen){ 0 };
	return failed;
}

static void expect_tree(void)
{
	char *p, *q;

	for (size_t i = 0; i < nwant; i++)
		free(wants[i].path), free(wants[i].data);
	nwant = 0;
	T_OK(nftw(top, visit, 16, FTW_PHYS));
	/* the roots named besides the tree: a file, a missing path, a link
	 * to a directory (walked under its own name) */
	want_add(p = t_pathf("%s/g", base), 0), free(p);
	want_add(p = t_pathf("%s/missing", base), -ENOENT), free(p);
	from = p = t_pathf("%s/a", top);
	to = q = t_pathf("%s/e/link-to-dir", top);
	T_OK(nftw(p, visit, 16, FTW_PHYS));
	from = to = NULL;
	free(p), free(q);
	qsort(wants, nwant, sizeof(*wants), want_cmp);
}

static void run_engine(int engine)
{
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct seen s = { 0 };
	char *roots[5] = { t_pathf("%s", top), t_pathf("%s/g", base), t_pathf("%s/missing", base),
			   t_pathf("%s/e/link-to-dir", top), t_pathf("%s/empty-dir", top) };
	int fds = t_open_fds();
	long r, failed;

	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.window_files = 16;          /* the queue (32 paths) overflows many times */
	o.large_file = 64 * 1024;
	ctx = t_ctx(&o);
	for (int round = 0; round < 2; round++) {   /* the context again */
		r = bfo_read_tree(ctx, (const char *const *)roots, 5, 0, check_entry, &s);
		failed = check_all(&s);
		T_ASSERT(r == failed, "%s: bfo_read_tree returned %ld, read() fails %ld", t_engine(engine), r, failed);
	}
	T_ASSERT(nwant > 50, "only %zu files checked", nwant);

	/* a stop by the callback: its value back, nothing handed out after */
	s.stop_after = 5;
	s.stop_with = -EIO;
	r = bfo_read_tree(ctx, (const char *const *)roots, 5, 0, check_entry, &s);
	T_EQ(r, -EIO);
	T_EQ(s.calls, 5);
	for (size_t i = 0; i < nwant; i++)
		wants[i].done = false, wants[i].got = 0;
	free(s.indices);
	s = (struct seen){ .stop_after = 1, .stop_with = 1 };
	T_EQ(bfo_read_tree(ctx, (const char *const *)roots, 1, 0, check_entry, &s), -ECANCELED);
	for (size_t i = 0; i < nwant; i++)
		wants[i].done = false, wants[i].got = 0;
	free(s.indices);
	s = (struct seen){ 0 };
	/* and a whole read after it */
	r = bfo_read_tree(ctx, (const char *const *)roots, 5, 0, check_entry, &s);
	T_EQ(r, check_all(&s));

	T_EQ(bfo_read_tree(NULL, (const char *const *)roots, 1, 0, check_entry, NULL), -EINVAL);
	T_EQ(bfo_read_tree(ctx, (const char *const *)roots, 1, 0, NULL, NULL), -EINVAL);
	T_EQ(bfo_read_tree(ctx, (const char *const *)roots, 1, 1u << 20, check_entry, &s), -EINVAL);
	T_EQ(bfo_read_tree(ctx, NULL, 0, 0, check_entry, &s), 0);   /* no path: an empty batch */
	T_EQ(s.calls, 0);
	bfo_ctx_destroy(ctx);
	T_EQ(t_open_fds(), fds);
	for (int i = 0; i < 5; i++)
		free(roots[i]);
	t_log("%s: %zu entries as read() has them, the callback's stop, the context again",
	      t_engine(engine), nwant);
}

/* The checks as an ordinary user: root cannot be refused a file. */
static void as_user(void *arg)
{
	(void)arg;
	if (t_is_root() && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
		t_fail("cannot become nobody: %s", strerror(errno));
	expect_tree();
	{
		char *pw = t_pathf("%s/e/unreadable", top), *pl = t_pathf("%s/locked", top);
		struct want *w = want_find(pw), *l = want_find(pl);

		T_ASSERT(w && w->status == -EACCES && l && l->status == -EACCES,
			 "the unreadable file and directory are readable here");
		free(pw);
		free(pl);
	}
	for (int ei = 0; ei < 3; ei++)
		run_engine(t_engines_nonraw[ei]);
}

int main(void)
{
	t_init("t_tree", 600);
	make_tree(t_tmpdir());
	t_subtest("tree", 300, as_user, NULL);
	t_done();
	return 0;
}

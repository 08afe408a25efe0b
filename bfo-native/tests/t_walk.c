/* SPDX-License-Identifier: Apache-2.0 */
/* bfo_walk_*: the same regular files as a plain nftw() walk, in inode order
 * within each sort buffer (or unsorted with BFO_WALK_UNSORTED), links as
 * documented, failures named, bounded buffers (-ENOBUFS), and a walk
 * stopped half way frees everything. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfo.h"
#include "t_helpers.h"

static char **plain;
static size_t nplain, plain_cap;
static bool plain_nofollow;

static int plain_visit(const char *p, const struct stat *st, int type, struct FTW *f)
{
	struct stat t;

	(void)f;
	if (type == FTW_F && S_ISREG(st->st_mode)) {
		/* nftw with FTW_PHYS reports links as FTW_SL: only real files here */
	} else if (type == FTW_SL && !plain_nofollow && stat(p, &t) == 0 && S_ISREG(t.st_mode)) {
		/* a link to a regular file is read through */
	} else {
		return 0;
	}
	if (nplain == plain_cap) {
		plain_cap = plain_cap ? plain_cap * 2 : 256;
		plain = realloc(plain, plain_cap * sizeof(*plain));
		if (!plain)
			t_fail("out of memory");
	}
	plain[nplain++] = strdup(p);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void plain_walk(const char *root, bool nofollow)
{
	for (size_t i = 0; i < nplain; i++)
		free(plain[i]);
	nplain = 0;
	plain_nofollow = nofollow;
	if (nftw(root, plain_visit, 16, FTW_PHYS) < 0)
		t_fail("nftw %s: %s", root, strerror(errno));
	qsort(plain, nplain, sizeof(*plain), cmp_str);
}

/* Walks root with the API, checks the set against the plain walk and the
 * inode order inside each buffer of sort_files; returns the stats. */
static struct bfo_walk_stats api_walk(const char *root, size_t sort_files, unsigned flags,
				      size_t buflen, size_t *nfail)
{
	struct bfo_walk *w;
	struct bfo_walk_stats st;
	char *buf = malloc(buflen);
	char **got = NULL;
	ino_t *inos = NULL;
	size_t n = 0, cap = 0;
	long r;

	T_ASSERT(buf, "out of memory");
	T_ASSERT(bfo_walk_start(&w, root, sort_files, flags) == 0, "bfo_walk_start %s", root);
	while ((r = bfo_walk_next(w, buf, buflen)) > 0) {
		for (long off = 0; off < r;) {
			struct stat s;
			size_t len = strlen(buf + off);

			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				got = realloc(got, cap * sizeof(*got));
				inos = realloc(inos, cap * sizeof(*inos));
				T_ASSERT(got && inos, "out of memory");
			}
			got[n] = strdup(buf + off);
			T_ASSERT(stat(got[n], &s) == 0, "walk gave %s: %s", got[n], strerror(errno));
			inos[n++] = s.st_ino;
			off += (long)len + 1;
		}
	}
	T_ASSERT(r == 0, "bfo_walk_next: %ld", r);
	*nfail = 0;
	for (;;) {
		char path[4096];
		int status = 0, k = bfo_walk_failure(w, path, sizeof(path), &status);

		if (k == 0)
			break;
		T_ASSERT(k == 1 && status < 0, "bfo_walk_failure: %d status %d", k, status);
		t_log("failure named: %s: %s", path, strerror(-status));
		(*nfail)++;
	}
	T_ASSERT(bfo_walk_stats(w, &st) == 0, "bfo_walk_stats");
	T_ASSERT(st.files == n, "stats.files %llu, handed out %zu", (unsigned long long)st.files, n);
	bfo_walk_destroy(w);

	/* Inode order within each sort buffer: the buffers are sort_files
	 * long, except where the walk ran dry (then shorter): count the
	 * descents, which cannot exceed the number of buffers. */
	size_t descents = 0, buffer = sort_files ? sort_files : 262144;

	for (size_t i = 1; i < n; i++)
		if (inos[i] < inos[i - 1])
			descents++;
	if (!(flags & BFO_WALK_UNSORTED)) {
		T_ASSERT(descents <= n / buffer + 1 + n / 64,
			 "%zu descents in inode order over %zu files (buffer %zu)", descents, n, buffer);
		if (buffer >= n + 1)
			T_ASSERT(descents == 0, "one buffer, yet %zu descents in inode order", descents);
	}

	qsort(got, n, sizeof(*got), cmp_str);
	T_ASSERT(n == nplain, "walk: %zu files, nftw: %zu", n, nplain);
	for (size_t i = 0; i < n; i++) {
		T_ASSERT(!strcmp(got[i], plain[i]), "walk %s, nftw %s", got[i], plain[i]);
		free(got[i]);
	}
	free(got);
	free(inos);
	free(buf);
	return st;
}

int main(void)
{
	t_init("t_walk", 120);
	const char *base = t_tmpdir();
	char *root = t_path(base, "tree");
	uint64_t seed = 7;
	size_t nfail;
	struct bfo_walk_stats st;

	T_ASSERT(mkdir(root, 0755) == 0, "mkdir");
	for (int d = 0; d < 20; d++) {
		char *dir = t_pathf("%s/d%02d", root, d);
		char *sub = t_pathf("%s/d%02d/sub", root, d);

		T_ASSERT(mkdir(dir, 0755) == 0 && mkdir(sub, 0755) == 0, "mkdir");
		for (int f = 0; f < 150; f++) {
			char *p = t_pathf("%s/%s%03d", (f % 3) ? dir : sub, "file-with-a-longish-name-", f);

			t_write_random(p, t_rand_range(&seed, 0, 300), seed);
			free(p);
		}
		free(dir);
		free(sub);
	}
	char *fifo = t_path(root, "fifo"), *lf = t_path(root, "link-file");
	char *ld = t_path(root, "link-dir"), *dangling = t_path(root, "dangling");
	char *empty = t_path(root, "empty-dir");

	T_ASSERT(mkfifo(fifo, 0644) == 0, "mkfifo");
	T_ASSERT(symlink("d00/file-with-a-longish-name-001", lf) == 0, "symlink");
	T_ASSERT(symlink("d01", ld) == 0 && symlink("nowhere", dangling) == 0, "symlink");
	T_ASSERT(mkdir(empty, 0755) == 0, "mkdir");

	plain_walk(root, false);
	st = api_walk(root, 0, 0, 1 << 16, &nfail);
	T_ASSERT(nfail == 0, "failures on a readable tree: %zu", nfail);
	/* the fifo, the link to a directory and the dangling link */
	T_ASSERT(st.skipped == 3, "skipped %llu, expected 3", (unsigned long long)st.skipped);
	t_log("%zu files as nftw gives them, one sorted buffer, 3 entries skipped", nplain);

	st = api_walk(root, 100, 0, 256, &nfail);
	t_log("sort buffer of 100 files, 256-byte output buffer: same files");
	/* keeping listings for bfo_walk_share changes nothing handed out */
	st = api_walk(root, 0, BFO_WALK_LISTINGS, 1 << 16, &nfail);
	T_ASSERT(nfail == 0 && st.skipped == 3, "BFO_WALK_LISTINGS: %zu failures, skipped %llu",
		 nfail, (unsigned long long)st.skipped);

	/* Unsorted (bfo read --sort-buffer 0): the same files and skips. */
	st = api_walk(root, 64, BFO_WALK_UNSORTED, 1 << 16, &nfail);
	T_ASSERT(nfail == 0 && st.skipped == 3, "BFO_WALK_UNSORTED: %zu failures, skipped %llu",
		 nfail, (unsigned long long)st.skipped);
	st = api_walk(root, 0, BFO_WALK_UNSORTED, 1 << 16, &nfail);
	t_log("BFO_WALK_UNSORTED, buffers of 64 files and of 262144: same files, unsorted");

	plain_walk(root, true);
	st = api_walk(root, 0, BFO_WALK_NOFOLLOW, 1 << 16, &nfail);
	T_ASSERT(st.skipped == 4, "NOFOLLOW skipped %llu, expected 4", (unsigned long long)st.skipped);
	t_log("BFO_WALK_NOFOLLOW: the link to a file skipped too");

	/* A path longer than the buffer: -ENOBUFS, and it stays next. */
	{
		struct bfo_walk *w;
		char small[8], big[4096];
		long r;

		T_ASSERT(bfo_walk_start(&w, root, 0, 0) == 0, "start");
		r = bfo_walk_next(w, small, sizeof(small));
		T_ASSERT(r == -ENOBUFS, "tiny buffer: %ld, expected -ENOBUFS", r);
		r = bfo_walk_next(w, big, sizeof(big));
		T_ASSERT(r > 0 && !strncmp(big, root, strlen(root)), "after -ENOBUFS: %ld", r);
		bfo_walk_destroy(w);    /* half way: threads stopped, memory freed (ASan) */
	}
	/* Roots that cannot be walked: the walk's failures, named. */
	{
		char *missing = t_path(base, "missing");
		char *file = t_pathf("%s/d00/file-with-a-longish-name-001", root);
		const char *roots[2] = { missing, file };
		const int want[2] = { -ENOENT, -ENOTDIR };

		for (int i = 0; i < 2; i++) {
			struct bfo_walk *w;
			char out[4096], path[4096];
			int status = 0;

			T_ASSERT(bfo_walk_start(&w, roots[i], 0, 0) == 0, "start");
			T_ASSERT(bfo_walk_next(w, out, sizeof(out)) == 0, "files under %s", roots[i]);
			T_ASSERT(bfo_walk_failure(w, path, 4, &status) == -ENOBUFS, "short failure buffer");
			T_ASSERT(bfo_walk_failure(w, path, sizeof(path), &status) == 1 &&
				 !strcmp(path, roots[i]) && status == want[i],
				 "failure of %s: %s %d", roots[i], path, status);
			T_ASSERT(bfo_walk_failure(w, path, sizeof(path), &status) == 0, "second failure");
			bfo_walk_destroy(w);
		}
		free(missing);
		free(file);
		t_log("a missing root and a file as root: ENOENT and ENOTDIR, named");
	}
	{
		struct bfo_walk *w = NULL;

		T_ASSERT(bfo_walk_start(&w, NULL, 0, 0) == -EINVAL, "NULL root");
		T_ASSERT(bfo_walk_start(&w, root, 0, 0x80) == -EINVAL, "unknown flag");
		T_ASSERT(bfo_walk_share(NULL, NULL) == -EINVAL, "bfo_walk_share(NULL)");
		bfo_walk_destroy(NULL);
	}
	for (size_t i = 0; i < nplain; i++)
		free(plain[i]);
	free(plain);
	free(root);
	free(fifo);
	free(lf);
	free(ld);
	free(dangling);
	free(empty);
	t_done();
	return 0;
}

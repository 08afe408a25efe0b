/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_sync: `bfo cp` as a re-sync (issue 36): reruns that compare what the
 * destination has with the file list, --delete, --dry-run, --exclude and
 * --include, locally and through a remote shell (stream version 2: the
 * list, the wants, the back channel), -z, and kills in the middle.
 *
 * The tree: tw_gen_tree (every file type, odd names, hard links, a file
 * in pieces, xattrs, owners as root) and 300 files of 4 KiB in 6
 * directories.  A "change": 3 files rewritten (same size, new bytes and
 * mtime), 2 added and a new directory with one, 2 deleted and a directory
 * deleted with its files, one chmod, a symbolic link pointed elsewhere.
 *
 *  - local: after a change, `bfo cp -a --delete -v SRC DST` equals a fresh
 *    `cp -a SRC REF` entry by entry (atimes aside), says what it copied and
 *    deleted (-v lines: exactly the changed names, "deleting" exactly the
 *    deleted ones), counts them (summary: files, deleted); run again it
 *    copies and deletes nothing and changes nothing (a snapshot).
 *  - list ahead of the index: a local sync lists its sources while the
 *    destination's index is still being built (copy_sync.c).  A test hook
 *    parks the index's thread until the run waits for it: with the
 *    default bound the whole list (25,000 files) was made and queued by
 *    then; with a bound of one entry nothing was; with a bound below the
 *    list, a part.  Each run after a change equals cp -a, with the counts
 *    of what changed.
 *  - dry run: -n -v --delete prints what the real run then does (the same
 *    lines) and changes nothing (a snapshot).
 *  - filters: --exclude/--include with anchored, directory-only, '*' and
 *    '**' rules: the copy equals `rsync -a --delete` given the same rules,
 *    and an excluded file in DST survives --delete, as with rsync.
 *  - delete safety: a source directory that cannot be read (as uid 65534)
 *    deletes nothing (exit 1, said); a directory of DST swapped for a
 *    symbolic link to a directory outside at the moment its entries are
 *    deleted (test hook) deletes nothing outside DST; a remote receiver
 *    whose answers cannot be written (the remote shell closes its stdout)
 *    fails and deletes nothing, says so, and DST is as it was (a
 *    snapshot).
 *  - remote (push and pull through a remote shell that runs the far side
 *    here): after a change, --delete equals cp -a; a rerun with nothing
 *    changed sends no file and no file data (the summary, in the sender's
 *    terms both ways: 0 files sent, 0 B; the bytes on the wire a small share of the tree's bytes) and
 *    changes nothing; -z gives the same tree, and on text fewer bytes.
 *  - kill: the local and the remote sync (with --delete) killed at several
 *    points; after bfo recover each file of DST is its old or its new
 *    version, whole, and the same command then finishes the sync.  Then
 *    the same with SIGINT (to the process group, as ^C) and SIGTERM (to
 *    the process): exit 130 or 143 (or 0, done first), everything it
 *    started gone within BOUND_S s (the list, the back channel and the
 *    index scan stop too), no temporary left even before bfo recover.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_wutil.h"

#define BOUND_S 20                  /* signal to exit: generous, the machine may be loaded */

static bool root_user;

struct env {
	const char *tmp, *rsh;
	int gen;                    /* trees made so far */
};

static unsigned cpa_flags(void)
{
	return (root_user ? TW_CP_A : TW_CP_A & ~TW_OWNER) & ~TW_ATIME;
}

/* A source tree at path: the generated tree and 300 files of 4 KiB. */
static void make_tree(const char *path, uint64_t seed)
{
	tw_gen_tree(path, seed);
	for (int d = 0; d < 6; d++) {
		tw_mkdirs(tw_fmt("%s/bulk/d%d", path, d));
		for (int i = 0; i < 50; i++)
			t_write_random(tw_fmt("%s/bulk/d%d/f%02d", path, d, i), 4096, seed + (uint64_t)(d * 100 + i));
	}
	/* times in the past: a change made now moves them for sure */
	for (int d = 0; d < 6; d++)
		for (int i = 0; i < 50; i++)
			tw_gen_times(tw_fmt("%s/bulk/d%d/f%02d", path, d, i), 2000 + d * 100 + i);
}

/* The change; *written gets the names (below SRC's parent, as -v prints
 * them) it writes or makes, *deleted those it removes, one per line. */
static void change(const char *src, const char *name, char *written, size_t wl, char *deleted,
		   size_t dl)
{
	static const char *const rewritten[] = { "bulk/d0/f01", "bulk/d3/f17", "bulk/d5/f49" };
	static const char *const gone[] = { "bulk/d1/f05", "bulk/d2/f33" };

	written[0] = deleted[0] = '\0';
	for (int i = 0; i < 3; i++) {
		t_write_random(tw_fmt("%s/%s", src, rewritten[i]), 4096, 7000 + (uint64_t)i);
		snprintf(written + strlen(written), wl - strlen(written), "%s/%s\n", name, rewritten[i]);
	}
	t_write_random(tw_fmt("%s/bulk/d0/new1", src), 1000, 7100);
	t_write_random(tw_fmt("%s/bulk/new2", src), 70000, 7101);
	tw_mkdirs(tw_fmt("%s/bulk/newdir", src));
	t_write_random(tw_fmt("%s/bulk/newdir/n", src), 10, 7102);
	snprintf(written + strlen(written), wl - strlen(written),
		 "%s/bulk/d0/new1\n%s/bulk/new2\n%s/bulk/newdir\n%s/bulk/newdir/n\n", name, name, name, name);
	for (int i = 0; i < 2; i++) {
		T_ASSERT(unlink(tw_fmt("%s/%s", src, gone[i])) == 0, "unlink");
		snprintf(deleted + strlen(deleted), dl - strlen(deleted), "%s/%s\n", name, gone[i]);
	}
	T_ASSERT(t_sh("rm -rf '%s/bulk/d4'", src) == 0, "rm d4");
	for (int i = 0; i < 50; i++)
		snprintf(deleted + strlen(deleted), dl - strlen(deleted), "%s/bulk/d4/f%02d\n", name, i);
	snprintf(deleted + strlen(deleted), dl - strlen(deleted), "%s/bulk/d4\n", name);
	T_ASSERT(chmod(tw_fmt("%s/bulk/d2/f00", src), 0600) == 0, "chmod");
	snprintf(written + strlen(written), wl - strlen(written), "%s/bulk/d2/f00\n", name);
	T_ASSERT(unlink(tw_fmt("%s/a/rel", src)) == 0 && symlink("elsewhere", tw_fmt("%s/a/rel", src)) == 0,
		 "symlink");
	snprintf(written + strlen(written), wl - strlen(written), "%s/a/rel\n", name);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lines of text, sorted, as one string (for comparing sets of names). */
static char *sorted_lines(const char *text, const char *only_prefix, bool strip)
{
	char *copy = strdup(text), **v = calloc(strlen(text) + 1, sizeof(*v)), *out;
	size_t n = 0, len = 0;

	T_ASSERT(copy && v, "memory");
	for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n"))
		if (!only_prefix || !strncmp(l, only_prefix, strlen(only_prefix)))
			v[n++] = strip && only_prefix ? l + strlen(only_prefix) : l;
	qsort(v, n, sizeof(*v), str_cmp);
	out = calloc(strlen(text) + 2, 1);
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(out + len, "%s\n", v[i]);
	free(copy);
	free(v);
	return out;
}

/* "N files" ("N files copied", "... sent") and "N deleted" of a summary line. */
static long summary_of(const char *err, const char *word)
{
	const char *p = strstr(err, word);

	while (p && p > err && p[-1] == ' ')
		p--;
	while (p && p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p ? strtol(p, NULL, 10) : -1;
}

/* The directories whose -v line a change makes: a directory is named when
 * its metadata (mtime) changed, which any change inside it does. */
static bool is_dir_line(const char *src_parent, const char *line)
{
	struct stat st;

	return lstat(tw_fmt("%s/%s", src_parent, line), &st) == 0 && S_ISDIR(st.st_mode);
}

/* The written set of a -v output, directories aside (their times move
 * with what changes in them; which ones rsync names differs too). */
static char *files_of(const char *out, const char *src_parent)
{
	char *copy = strdup(out), *keep = calloc(strlen(out) + 2, 1), *sorted;
	size_t len = 0;

	for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n"))
		if (strncmp(l, "deleting ", 9) && !is_dir_line(src_parent, l))
			len += (size_t)sprintf(keep + len, "%s\n", l);
	sorted = sorted_lines(keep, NULL, false);
	free(copy);
	free(keep);
	return sorted;
}

/* ------------------------------------------------------------ local */

static void scenario_local(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "lsrc"), *dst = t_path(v->tmp, "ldst"), *ref = t_path(v->tmp, "lref");
	char written[4096], deleted[8192], msg[4096];
	struct tw_run r;

	make_tree(src, 11);
	tw_runl(&r, BFO_CLI, "cp", "-a", src, dst, (char *)NULL);
	T_ASSERT(r.status == 0, "first copy: %s", r.err);
	tw_run_free(&r);
	change(src, "lsrc", written, sizeof(written), deleted, sizeof(deleted));
	tw_runl(&r, BFO_CLI, "cp", "-a", "--delete", "-v", src, dst, (char *)NULL);
	TW_CHECK(r.status == 0, "[--delete -v] exit %d: %s", r.status, r.err);
	{
		char *got = files_of(r.out, v->tmp), *want = files_of(written, v->tmp);
		char *gotd = sorted_lines(r.out, "deleting ", true), *wantd = sorted_lines(deleted, NULL, false);

		/* (the chmod'ed file and the retargeted link are written again too) */
		TW_CHECK(!strcmp(got, want), "[--delete -v] written:\n%s\nexpected:\n%s", got, want);
		TW_CHECK(!strcmp(gotd, wantd), "[--delete -v] deleted:\n%s\nexpected:\n%s", gotd, wantd);
		TW_CHECK(summary_of(r.err, " files copied") == 7 && summary_of(r.err, " deleted") == 53,
			 "[--delete -v] summary (want 7 files, 53 deleted): %s", r.err);
		free(got);
		free(want);
		free(gotd);
		free(wantd);
	}
	tw_run_free(&r);
	tw_mkdirs(ref);
	tw_runl(&r, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: %s", r.err);
	tw_run_free(&r);
	tw_expect_copy(tw_fmt("%s/lsrc", ref), tw_fmt("%s/lsrc", dst), cpa_flags() | TW_TOP,
		       "local sync after a change (--delete)");
	/* nothing changed: nothing copied, deleted or touched */
	struct tw_snap *snap = tw_snapshot(dst);

	tw_runl(&r, BFO_CLI, "cp", "-a", "--delete", "-v", src, dst, (char *)NULL);
	TW_CHECK(r.status == 0 && r.out_len == 0 && summary_of(r.err, " files copied") == 0 &&
		 summary_of(r.err, " deleted") == 0, "[no change] exit %d, stdout: %s, stderr: %s", r.status,
		 r.out, r.err);
	TW_CHECK(tw_snap_diff(snap, dst, false, msg, sizeof(msg)) == 0, "[no change] the copy changed: %s", msg);
	tw_run_free(&r);
	tw_snap_free(snap);
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	t_log("local: a change synced with --delete equals cp -a; -v named exactly what changed; "
	      "a rerun did nothing");
	tw_checks_end();
}

/* ------------------------------------------------------------ list ahead */

/* 25,000 files: more than one list batch for sure (a list batch is the
 * walk batches until 4,096 entries are reached, each walk batch at most
 * 16,384: 20,479 entries at most), so that a bound below the list's size
 * queues a part of it */
#define AHEAD_DIRS 25
#define AHEAD_FILES 1000

struct ahead {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool go;
	int built, waits;
	size_t pending;
};

/* the index's thread, its scan done: parked until the run waits for it */
static void ahead_built(void *arg)
{
	struct ahead *a = arg;

	pthread_mutex_lock(&a->m);
	a->built++;
	while (!a->go)
		pthread_cond_wait(&a->cv, &a->m);
	pthread_mutex_unlock(&a->m);
}

static void ahead_waits(void *arg, size_t pending)
{
	struct ahead *a = arg;

	pthread_mutex_lock(&a->m);
	a->waits++;
	a->pending = pending;
	a->go = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->m);
}

static size_t ahead_n;

static int ahead_count_visit(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)p, (void)st, (void)type, (void)f;
	ahead_n++;
	return 0;
}

/* Entries of the tree at path, itself included: the list's entries. */
static size_t ahead_count(const char *path)
{
	ahead_n = 0;
	T_ASSERT(nftw(path, ahead_count_visit, 16, FTW_PHYS) == 0, "nftw %s", path);
	return ahead_n;
}

static void scenario_ahead(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "asrc"), *dst = t_path(v->tmp, "adst"), *ref = t_path(v->tmp, "aref");
	const char *srcs[] = { src };
	struct tw_run r;

	for (int d = 0; d < AHEAD_DIRS; d++) {
		tw_mkdirs(tw_fmt("%s/d%02d", src, d));
		for (int i = 0; i < AHEAD_FILES; i++)
			t_write_random(tw_fmt("%s/d%02d/f%04d", src, d, i), 64, (uint64_t)(d * AHEAD_FILES + i));
		for (int i = 0; i < AHEAD_FILES; i++)
			tw_gen_times(tw_fmt("%s/d%02d/f%04d", src, d, i), d * AHEAD_FILES + i);
	}
	tw_runl(&r, BFO_CLI, "cp", "-a", src, dst, (char *)NULL);
	T_ASSERT(r.status == 0, "first copy: %s", r.err);
	tw_run_free(&r);
	/* the reference: cp -a once, then each round's change made to it as
	 * to the source (a cp -a of the whole tree per round took most of the
	 * subtest's time on a loaded machine) */
	tw_mkdirs(ref);
	tw_runl(&r, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: %s", r.err);
	tw_run_free(&r);
	for (int k = 0; k < 3; k++) {
		static const char *const what[] = { "the whole list queued", "nothing queued", "a part queued" };
		struct ahead a = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0, 0 };
		struct bfo_copy_stats st;
		struct bfo_copier *c;
		size_t total;
		int ret;

		/* the change: 3 files rewritten, 2 added, 3 deleted */
		char *changed[5];

		for (int i = 0; i < 3; i++) {
			changed[i] = t_pathf("d%02d/f%04d", 5 * k + i, 10 * k + i);
			t_write_random(tw_fmt("%s/%s", src, changed[i]), 64, 9000 + (uint64_t)(10 * k + i));
		}
		for (int i = 0; i < 2; i++) {
			changed[3 + i] = t_pathf("d%02d/new%d-%d", 7 * k, k, i);
			t_write_random(tw_fmt("%s/%s", src, changed[3 + i]), 64, 9100 + (uint64_t)(10 * k + i));
		}
		for (int i = 0; i < 3; i++) {
			const char *rel = tw_fmt("d%02d/f%04d", 5 * k + i + 2, 100 + 10 * k + i);

			T_ASSERT(unlink(tw_fmt("%s/%s", src, rel)) == 0 && unlink(tw_fmt("%s/asrc/%s", ref, rel)) == 0,
				 "unlink %s: %s", rel, strerror(errno));
		}
		for (int i = 0; i < 5; i++) {
			tw_runl(&r, "cp", "-a", tw_fmt("%s/%s", src, changed[i]), tw_fmt("%s/asrc/%s", ref, changed[i]),
				(char *)NULL);
			T_ASSERT(r.status == 0, "cp -a %s: %s", changed[i], r.err);
			tw_run_free(&r);
			free(changed[i]);
		}
		for (int d = 0; d < AHEAD_DIRS; d++) {
			struct stat ds;

			T_ASSERT(stat(tw_fmt("%s/d%02d", src, d), &ds) == 0 &&
				 utimensat(AT_FDCWD, tw_fmt("%s/asrc/d%02d", ref, d),
					   (const struct timespec[2]){ ds.st_atim, ds.st_mtim }, 0) == 0,
				 "times of d%02d: %s", d, strerror(errno));
		}
		total = ahead_count(src);
		bfo_test_hooks.arg = &a;
		bfo_test_hooks.index_built = ahead_built;
		bfo_test_hooks.list_waits = ahead_waits;
		bfo_test_hooks.list_pending_max = k == 0 ? 0 : k == 1 ? 1 : total - 1;
		T_OK(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE | BFO_COPY_UPDATE | BFO_COPY_INTO |
				       BFO_COPY_DELETE, NULL));
		ret = bfo_copier_run(c, srcs, 1, dst);
		bfo_test_hooks.index_built = NULL;
		bfo_test_hooks.list_waits = NULL;
		bfo_test_hooks.list_pending_max = 0;
		bfo_test_hooks.arg = NULL;
		T_OK(bfo_copier_stats(c, &st));
		bfo_copier_destroy(c);
		TW_CHECK(ret == 0, "[%s] the run: %s", what[k], ret < 0 ? bfo_strerror(ret) : "errors");
		TW_CHECK(a.built == 1 && a.waits == 1, "[%s] the index built %d times, waited for %d times (1, 1)",
			 what[k], a.built, a.waits);
		if (k == 0)
			TW_CHECK(a.pending == total, "[%s] %zu of the list's %zu entries made before the index was",
				 what[k], a.pending, total);
		else if (k == 1)
			TW_CHECK(a.pending == 0, "[%s] %zu entries queued with a bound of 1", what[k], a.pending);
		else
			TW_CHECK(a.pending > 0 && a.pending < total, "[%s] %zu of %zu entries queued (bound %zu)",
				 what[k], a.pending, total, total - 1);
		TW_CHECK(st.files == 5 && st.deleted == 3 && st.skipped == (uint64_t)(AHEAD_DIRS * AHEAD_FILES - 3 * (k + 1) +
										   2 * k - 3),
			 "[%s] %llu files copied (5), %llu deleted (3), %llu skipped", what[k],
			 (unsigned long long)st.files, (unsigned long long)st.deleted,
			 (unsigned long long)st.skipped);
		tw_expect_copy(tw_fmt("%s/asrc", ref), tw_fmt("%s/asrc", dst), cpa_flags() | TW_TOP, what[k]);
	}
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	t_log("list ahead of the index: the list made while the index was parked (all of it, none, a part) "
	      "was decided once it was there; each sync equals cp -a");
	tw_checks_end();
}

/* ------------------------------------------------------------ dry run */

static void scenario_dry(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "nsrc"), *dst = t_path(v->tmp, "ndst");
	char written[4096], deleted[8192], msg[4096];
	struct tw_run r, n;
	struct tw_snap *snap;

	make_tree(src, 12);
	tw_runl(&r, BFO_CLI, "cp", "-a", src, dst, (char *)NULL);
	T_ASSERT(r.status == 0, "first copy: %s", r.err);
	tw_run_free(&r);
	change(src, "nsrc", written, sizeof(written), deleted, sizeof(deleted));
	snap = tw_snapshot(dst);
	tw_runl(&n, BFO_CLI, "cp", "-a", "--delete", "-n", src, dst, (char *)NULL);
	TW_CHECK(n.status == 0 && strstr(n.err, "dry run"), "[-n] exit %d: %s", n.status, n.err);
	TW_CHECK(tw_snap_diff(snap, dst, false, msg, sizeof(msg)) == 0, "[-n] the copy changed: %s", msg);
	TW_CHECK(tw_leftovers(dst, true, msg, sizeof(msg)) == 0, "[-n] leftovers: %s", msg);
	tw_runl(&r, BFO_CLI, "cp", "-a", "--delete", "-v", src, dst, (char *)NULL);
	TW_CHECK(r.status == 0, "[after -n] exit %d: %s", r.status, r.err);
	{
		char *a = sorted_lines(n.out, NULL, false), *b = sorted_lines(r.out, NULL, false);

		TW_CHECK(!strcmp(a, b), "[-n] said:\n%s\nthe run did:\n%s", a, b);
		TW_CHECK(strstr(a, "deleting nsrc/bulk/d4\n") && strstr(a, "nsrc/bulk/new2\n"),
			 "[-n] said nothing of the change:\n%s", a);
		free(a);
		free(b);
	}
	tw_run_free(&r);
	tw_run_free(&n);
	tw_snap_free(snap);
	t_sh("rm -rf '%s' '%s'", src, dst);
	free(src);
	free(dst);
	t_log("dry run: changed nothing, said what the run then did");
	tw_checks_end();
}

/* ------------------------------------------------------------ filters */

static void scenario_filters(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "fsrc"), *dst = t_path(v->tmp, "fdst"), *ref = t_path(v->tmp, "fref");
	static const char *const rules[] = {
		"--include", "keep.log", "--exclude", "*.log", "--exclude", "/fsrc/bulk/d1/",
		"--exclude", "f0?", "--exclude", "**/d5/**", "--exclude", "a/b/c/d/", NULL,
	};
	char msg[4096];
	struct tw_run r;
	char *argv[40];
	int n;

	make_tree(src, 13);
	t_write_random(tw_fmt("%s/bulk/x.log", src), 100, 1);
	t_write_random(tw_fmt("%s/bulk/keep.log", src), 100, 2);
	t_write_random(tw_fmt("%s/a/y.log", src), 100, 3);
	for (int k = 0; k < 2; k++) {
		const char *d = k ? ref : dst;

		tw_mkdirs(d);
		/* in the way of --delete, excluded: it stays */
		tw_mkdirs(tw_fmt("%s/fsrc/bulk", d));
		t_write_random(tw_fmt("%s/fsrc/bulk/stale.log", d), 10, 4);
		t_write_random(tw_fmt("%s/fsrc/bulk/stale", d), 10, 5);
		n = 0;
		argv[n++] = k ? "rsync" : BFO_CLI;
		if (!k)
			argv[n++] = "cp";
		argv[n++] = k ? "-aHX" : "-a";
		argv[n++] = "--delete";
		for (int i = 0; rules[i]; i++)
			argv[n++] = (char *)rules[i];
		argv[n++] = src;
		argv[n++] = (char *)d;
		argv[n] = NULL;
		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		TW_CHECK(r.status == 0, "[%s with filters] exit %d: %s", argv[0], r.status, r.err);
		tw_run_free(&r);
	}
	/* rsync sets no atime, and its -H links after the directories' times */
	int nd = tw_tree_diff(ref, dst, TW_MODE | TW_OWNER | TW_XATTRS | TW_LINKS, NULL, msg, sizeof(msg));

	TW_CHECK(nd == 0, "[filters] %d differences from rsync -a --delete with the same rules: %s", nd, msg);
	TW_CHECK(tw_exists(tw_fmt("%s/fsrc/bulk/stale.log", dst)) && !tw_exists(tw_fmt("%s/fsrc/bulk/stale", dst)) &&
		 !tw_exists(tw_fmt("%s/fsrc/bulk/x.log", dst)) && tw_exists(tw_fmt("%s/fsrc/bulk/keep.log", dst)) &&
		 !tw_exists(tw_fmt("%s/fsrc/bulk/d1", dst)) && !tw_exists(tw_fmt("%s/fsrc/bulk/d5/f10", dst)),
		 "[filters] the rules were not applied as rsync applies them");
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	t_log("filters: the copy equals rsync -a --delete with the same rules");
	tw_checks_end();
}

/* ------------------------------------------------------------ delete safety */

struct swap {
	const char *dst;            /* the copy's root */
	const char *victim;         /* outside it */
	int swaps;
};

/* At the first deletion below gone/, gone goes aside and a symbolic link
 * to the victim takes its name. */
static void swap_dir(void *arg, const char *path)
{
	struct swap *s = arg;

	if (s->swaps || !strstr(path, "gone/"))
		return;
	const char *g = tw_fmt("%s/sw/gone", s->dst);

	if (rename(g, tw_fmt("%s/sw/gone.moved", s->dst)) == 0 && symlink(s->victim, g) == 0)
		s->swaps++;
}

static void scenario_delete_safety(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "sw"), *dst = t_path(v->tmp, "swdst"), *victim = t_path(v->tmp, "victim");
	char msg[4096];
	struct tw_run r;

	/* a directory of the copy swapped for a link while its entries go */
	tw_mkdirs(tw_fmt("%s/keep", src));
	t_write_random(tw_fmt("%s/keep/k", src), 100, 1);
	tw_mkdirs(tw_fmt("%s/sw/gone", dst));
	tw_mkdirs(victim);
	for (int i = 0; i < 5; i++) {
		t_write_random(tw_fmt("%s/sw/gone/g%d", dst, i), 100, 10 + (uint64_t)i);
		t_write_random(tw_fmt("%s/g%d", victim, i), 100, 20 + (uint64_t)i);   /* the same names */
	}
	struct tw_snap *vs = tw_snapshot(victim);
	struct swap s = { dst, victim, 0 };
	struct bfo_copier *c;
	const char *srcs[] = { src };

	bfo_test_hooks.before_delete = swap_dir;
	bfo_test_hooks.arg = &s;
	T_OK(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE | BFO_COPY_UPDATE | BFO_COPY_INTO |
			       BFO_COPY_DELETE, NULL));
	int ret = bfo_copier_run(c, srcs, 1, dst);

	bfo_test_hooks.before_delete = NULL;
	bfo_copier_destroy(c);
	TW_CHECK(s.swaps == 1, "the swap never came (%d): nothing was tested", s.swaps);
	TW_CHECK(ret >= 0, "the run failed: %s", bfo_strerror(ret));
	TW_CHECK(tw_snap_diff(vs, victim, false, msg, sizeof(msg)) == 0,
		 "--delete through a directory swapped for a link changed what is outside: %s", msg);
	TW_CHECK(tw_exists(tw_fmt("%s/sw/keep/k", dst)), "the copy was not made");
	tw_snap_free(vs);

	/* a source directory that cannot be read: nothing is deleted */
	if (root_user) {
		char *u = t_path(v->tmp, "uid65534");

		tw_mkdirs(tw_fmt("%s/src/open", u));
		tw_mkdirs(tw_fmt("%s/src/closed", u));
		t_write_random(tw_fmt("%s/src/open/a", u), 10, 1);
		t_write_random(tw_fmt("%s/src/closed/b", u), 10, 2);
		tw_mkdirs(tw_fmt("%s/dst", u));
		T_ASSERT(t_sh("chown -R 65534:65534 '%s' && chmod 0755 '%s'", u, u) == 0, "chown");
		char *argv[] = { BFO_CLI, "cp", "-a", (char *)tw_fmt("%s/src", u), (char *)tw_fmt("%s/dst", u),
				 NULL };

		tw_run(&r, NULL, 0, 65534, 65534, argv);
		T_ASSERT(r.status == 0, "first copy as uid 65534: %s", r.err);
		tw_run_free(&r);
		T_ASSERT(chmod(tw_fmt("%s/src/closed", u), 0) == 0, "chmod");
		char *argv2[] = { BFO_CLI, "cp", "-a", "--delete", (char *)tw_fmt("%s/src", u),
				  (char *)tw_fmt("%s/dst", u), NULL };

		tw_run(&r, NULL, 0, 65534, 65534, argv2);
		TW_CHECK(r.status == 1 && strstr(r.err, "nothing deleted"),
			 "[an unreadable source directory] exit %d: %s", r.status, r.err);
		TW_CHECK(tw_exists(tw_fmt("%s/dst/src/closed/b", u)),
			 "[an unreadable source directory] its copy's files were deleted");
		tw_run_free(&r);
		chmod(tw_fmt("%s/src/closed", u), 0755);
		free(u);
	} else {
		t_log("delete safety: the unreadable source needs root (to become uid 65534)");
	}

	/* a receiver whose answers cannot reach the sender (its stdout
	 * closed by the remote shell): its run fails before the list came
	 * whole, and nothing of DST is deleted, not even what the list
	 * never reached (it once emptied DST: the index's entries were
	 * never marked seen) */
	{
		char *bsrc = t_path(v->tmp, "bsrc"), *bdst = t_path(v->tmp, "bdst");
		char *brsh = t_path(v->tmp, "rsh-noanswer"), bmsg[4096];
		static const char sh[] = "#!/bin/sh\nshift\nexec sh -c \"$*\" >&-\n";

		t_write_bytes(brsh, sh, sizeof(sh) - 1);
		chmod(brsh, 0755);
		make_tree(bsrc, 21);
		tw_mkdirs(bdst);
		tw_runl(&r, BFO_CLI, "cp", "-a", bsrc, bdst, (char *)NULL);
		T_ASSERT(r.status == 0, "first copy: %s", r.err);
		tw_run_free(&r);
		t_sh("rm -rf '%s'/*/*", bsrc);   /* the source's subtrees gone: all would be deleted */
		struct tw_snap *bs = tw_snapshot(bdst);
		char *argv[] = { BFO_CLI, "cp", "-a", "--delete", "--rsh", brsh, "--remote-bfo", BFO_CLI,
				 bsrc, (char *)tw_fmt("h:%s", bdst), NULL };

		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		TW_CHECK(r.status != 0, "[answers that cannot be written] exit 0: %s", r.err);
		TW_CHECK(tw_snap_diff(bs, bdst, false, bmsg, sizeof(bmsg)) == 0,
			 "[answers that cannot be written] DST changed: %s (%s)", bmsg, r.err);
		TW_CHECK(strstr(r.err, "nothing deleted"), "[answers that cannot be written] not said: %s",
			 r.err);
		tw_run_free(&r);
		tw_snap_free(bs);
		t_sh("rm -rf '%s' '%s'", bsrc, bdst);
		free(bsrc);
		free(bdst);
		free(brsh);
	}
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, victim);
	free(src);
	free(dst);
	free(victim);
	t_log("delete safety: a swap for a link deleted nothing outside; an unreadable source deleted nothing");
	tw_checks_end();
}

/* ------------------------------------------------------------ remote */

/* bfo cp ARGS... through the remote shell that runs the far side here. */
static void cp_rsh(const struct env *v, struct tw_run *r, const char *const *args)
{
	char *argv[40];
	int n = 0;

	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	argv[n++] = "--rsh";
	argv[n++] = (char *)v->rsh;
	argv[n++] = "--remote-bfo";
	argv[n++] = BFO_CLI;
	for (; *args && n < 39; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

/* "X B on the wire" of a summary line, in bytes, or -1. */
static double wire_of(const char *err)
{
	const char *p = strstr(err, " on the wire");
	double x;
	char unit[4];

	while (p && p > err && p[-1] != ';')
		p--;
	if (!p || sscanf(p, " %lf %3s", &x, unit) != 2)
		return -1;
	return !strcmp(unit, "MB") ? x * 1e6 : !strcmp(unit, "kB") ? x * 1e3 : x;
}

static void scenario_remote(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "rsrc"), *push = t_path(v->tmp, "push"), *pull = t_path(v->tmp, "pull");
	char *ref = t_path(v->tmp, "rref"), written[4096], deleted[8192], msg[4096];
	char *hpush = t_pathf("h:%s", push), *hsrc = t_pathf("h:%s", src);
	struct tw_run r;

	make_tree(src, 14);
	tw_mkdirs(push);
	for (int k = 0; k < 2; k++) {
		const char *a[] = { "-a", k ? hsrc : src, k ? pull : hpush, NULL };

		cp_rsh(v, &r, a);
		T_ASSERT(r.status == 0, "[%s] first copy: %s", k ? "pull" : "push", r.err);
		tw_run_free(&r);
	}
	change(src, "rsrc", written, sizeof(written), deleted, sizeof(deleted));
	tw_mkdirs(ref);
	tw_runl(&r, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: %s", r.err);
	tw_run_free(&r);
	for (int k = 0; k < 2; k++) {
		const char *what = k ? "pull" : "push", *top = k ? pull : push;
		const char *a[] = { "-a", "--delete", "-v", k ? hsrc : src, k ? pull : hpush, NULL };
		struct tw_snap *snap;

		cp_rsh(v, &r, a);
		TW_CHECK(r.status == 0, "[%s --delete] exit %d: %s", what, r.status, r.err);
		{
			char *got = files_of(r.out, v->tmp), *want = files_of(written, v->tmp);
			char *gotd = sorted_lines(r.out, "deleting ", true), *wantd = sorted_lines(deleted, NULL, false);

			TW_CHECK(!strcmp(got, want), "[%s --delete -v] written:\n%s\nexpected:\n%s", what, got, want);
			TW_CHECK(!strcmp(gotd, wantd), "[%s --delete -v] deleted:\n%s\nexpected:\n%s", what, gotd,
				 wantd);
			free(got);
			free(want);
			free(gotd);
			free(wantd);
		}
		tw_run_free(&r);
		tw_expect_copy(tw_fmt("%s/rsrc", ref), tw_fmt("%s/rsrc", top), cpa_flags() | TW_TOP,
			       tw_fmt("%s sync after a change (--delete)", what));
		/* nothing changed: no file, no file data on the wire, nothing touched */
		snap = tw_snapshot(top);
		const char *b[] = { "-a", "--delete", "--stats", k ? hsrc : src, k ? pull : hpush, NULL };

		cp_rsh(v, &r, b);
		double wire = wire_of(r.err);

		TW_CHECK(r.status == 0 && strstr(r.err, " 0 files sent (0 B)") &&
			 summary_of(r.err, " deleted") == 0,
			 "[%s, no change] exit %d: %s", what, r.status, r.err);
		/* the list alone: about 50 bytes an entry, where the tree is 35 MB */
		TW_CHECK(wire > 0 && wire < 100 * 500, "[%s, no change] %.0f bytes on the wire: %s", what, wire,
			 r.err);
		TW_CHECK(tw_snap_diff(snap, top, false, msg, sizeof(msg)) == 0, "[%s, no change] the copy changed: %s",
			 what, msg);
		t_log("%s, no change: %.0f bytes on the wire", what, wire);
		tw_run_free(&r);
		tw_snap_free(snap);
	}
	/* -z: the same tree; on text, fewer bytes */
	{
		char *txt = t_path(v->tmp, "text"), *zd = t_path(v->tmp, "zdst"), *pd = t_path(v->tmp, "pdst");
		double wz, wp;

		tw_mkdirs(txt);
		for (int i = 0; i < 40; i++) {
			FILE *f = fopen(tw_fmt("%s/t%02d.txt", txt, i), "w");

			T_ASSERT(f, "text");
			for (int l = 0; l < 400; l++)
				fprintf(f, "line %d of file %d: the quick brown fox jumps over the lazy dog\n", l, i);
			fclose(f);
		}
		char *hz = t_pathf("h:%s", zd), *hp = t_pathf("h:%s", pd);
		const char *az[] = { "-a", "-z", "--stats", txt, hz, NULL };

		cp_rsh(v, &r, az);
		wz = wire_of(r.err);
		TW_CHECK(r.status == 0, "[-z] exit %d: %s", r.status, r.err);
		tw_run_free(&r);
		const char *ap[] = { "-a", "--stats", txt, hp, NULL };

		cp_rsh(v, &r, ap);
		wp = wire_of(r.err);
		tw_run_free(&r);
		tw_expect_copy(txt, tw_fmt("%s/text", zd), cpa_flags() | TW_TOP, "-z");
		TW_CHECK(wz > 0 && wp > 0 && wz * 5 < wp, "[-z] %.0f bytes on the wire, %.0f without", wz, wp);
		t_log("-z on text: %.0f bytes on the wire, %.0f without", wz, wp);
		t_sh("rm -rf '%s' '%s' '%s'", txt, zd, pd);
		free(hz);
		free(hp);
		free(txt);
		free(zd);
		free(pd);
	}
	t_sh("rm -rf '%s' '%s' '%s' '%s'", src, push, pull, ref);
	free(src);
	free(push);
	free(pull);
	free(ref);
	free(hpush);
	free(hsrc);
	t_log("remote: push and pull syncs equal cp -a; a no-change rerun sent no file data");
	tw_checks_end();
}

/* ------------------------------------------------------------ kill */

static const char *old_root, *new_root, *dst_root;
static int old_or_new_bad;

/* A regular file of the copy is its old version or its new one, whole. */
static int old_or_new_visit(const char *p, const struct stat *st, int type, struct FTW *f)
{
	const char *rel = p + strlen(dst_root);
	uint8_t *a = NULL, *b = NULL;
	uint64_t la = 0, lb = 0;
	bool is_new, is_old;

	(void)f;
	if (type != FTW_F || !S_ISREG(st->st_mode) || strstr(p, "/.bfo-journal"))
		return 0;
	uint8_t *got;
	uint64_t lg;

	T_ASSERT(t_read_plain(p, &got, &lg) == 0, "read %s", p);
	/* (an empty file's buffers may be NULL: memcmp is not given them) */
	is_new = t_read_plain(tw_fmt("%s%s", new_root, rel), &a, &la) == 0 && la == lg &&
		 (!lg || !memcmp(a, got, lg));
	is_old = t_read_plain(tw_fmt("%s%s", old_root, rel), &b, &lb) == 0 && lb == lg &&
		 (!lg || !memcmp(b, got, lg));
	if (!is_new && !is_old) {
		TW_CHECK(0, "%s is neither its old nor its new version", tw_esc(rel));
		old_or_new_bad++;
	}
	free(a);
	free(b);
	free(got);
	return 0;
}

/* argv in a process group of its own, stdin /dev/null, stdout and stderr
 * to out.  The child takes the default actions of SIGINT and SIGTERM
 * before either can reach it (this test's handlers are not for it). */
static pid_t spawn_signalled(char *const argv[], const char *out)
{
	sigset_t block, old;
	pid_t pid;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	T_ASSERT(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int i = open("/dev/null", O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		alarm(0);
		setpgid(0, 0);
		if (i < 0 || o < 0)
			_exit(126);
		dup2(i, 0);
		dup2(o, 1);
		dup2(o, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* bfo cp -a --delete SRC DST, or to h:DST through the remote shell. */
static void kill_argv(char **argv, const struct env *v, bool remote, const char *src, const char *dst,
		      const char *hdst)
{
	int n = 0;

	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	argv[n++] = "-a";
	argv[n++] = "--delete";
	if (remote) {
		argv[n++] = "--rsh";
		argv[n++] = (char *)v->rsh;
		argv[n++] = "--remote-bfo";
		argv[n++] = BFO_CLI;
	}
	argv[n++] = (char *)src;
	argv[n++] = (char *)(remote ? hdst : dst);
	argv[n] = NULL;
}

static void scenario_kill(void *arg)
{
	struct env *v = arg;
	char *src = t_path(v->tmp, "ksrc"), *top = t_path(v->tmp, "ktop"), *old = t_path(v->tmp, "kold");
	char *ref = t_path(v->tmp, "kref"), written[4096], deleted[8192];
	uint64_t seed = 99;
	struct tw_run r;

	make_tree(src, 15);
	/* more to write: long enough to be killed inside */
	for (int i = 0; i < 200; i++)
		t_write_random(tw_fmt("%s/bulk/d0/big%03d", src, i), 65536, 500 + (uint64_t)i);
	tw_mkdirs(top);
	tw_runl(&r, BFO_CLI, "cp", "-a", src, top, (char *)NULL);
	T_ASSERT(r.status == 0, "first copy: %s", r.err);
	tw_run_free(&r);
	t_sh("cp -a '%s' '%s'", top, old);
	change(src, "ksrc", written, sizeof(written), deleted, sizeof(deleted));
	/* and every big file rewritten: most of the sync is their bytes */
	for (int i = 0; i < 200; i++)
		t_write_random(tw_fmt("%s/bulk/d0/big%03d", src, i), 65536, 900 + (uint64_t)i);
	tw_mkdirs(ref);
	tw_runl(&r, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: %s", r.err);
	tw_run_free(&r);
	/* T, the whole sync's time (local, remote): the signals come within
	 * it, where the kills' fixed range may miss a short run */
	uint64_t full_ms[2];

	for (int m = 0; m < 2; m++) {
		char *argv[12], *htop = t_pathf("h:%s", top);
		uint64_t t0;

		t_sh("rm -rf '%s' && cp -a '%s' '%s'", top, old, top);
		kill_argv(argv, v, m, src, top, htop);
		t0 = mono_ns();
		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		full_ms[m] = (mono_ns() - t0) / 1000000u;
		T_ASSERT(r.status == 0, "the whole sync (%s): exit %d: %s", m ? "remote" : "local", r.status,
			 r.err);
		tw_run_free(&r);
		free(htop);
	}
	t_log("T: %llu ms local, %llu ms remote", (unsigned long long)full_ms[0],
	      (unsigned long long)full_ms[1]);
	/* rounds 0-5 SIGKILL, 6-9 SIGINT, 10-13 SIGTERM; odd ones remote */
	for (int k = 0; k < 14; k++) {
		bool remote = k % 2;
		int sig = k < 6 ? SIGKILL : k < 10 ? SIGINT : SIGTERM;
		char *argv[12], *htop = t_pathf("h:%s", top), *out = t_path(v->tmp, "kout");

		T_ASSERT(t_sh("rm -rf '%s' && cp -a '%s' '%s'", top, old, top) == 0,
			 "[kill %d] the destination could not be reset (something still writes in it?)", k);
		kill_argv(argv, v, remote, src, top, htop);
		pid_t pid = sig == SIGKILL ? tw_spawn(argv, NULL, NULL) : spawn_signalled(argv, out);

		tw_sleep_ns((sig == SIGKILL ? t_rand_range(&seed, 5, 400) :
			     t_rand_range(&seed, 0, full_ms[remote])) * 1000000ull);
		/* SIGKILL: the whole group, the remote shell's far side too,
		 * gone; SIGINT: the group, as ^C; SIGTERM: bfo only, as kill */
		uint64_t t0 = mono_ns();

		kill(sig == SIGTERM ? pid : -pid, sig);
		int st = tw_wait(pid);
		int gone = 0;

		while (gone < BOUND_S * 100 && kill(-pid, 0) == 0) {
			tw_sleep_ns(10000000);
			gone++;
		}
		if (sig != SIGKILL) {
			char tmsg[1024];
			uint8_t *err = NULL;
			uint64_t len = 0;
			double ms = (double)(mono_ns() - t0) / 1e6;

			t_read_plain(out, &err, &len);
			TW_CHECK(st == 0 || st == 128 + sig, "[%s %d] exit %d, expected 0 or %d: %.*s",
				 strsignal(sig), k, st, 128 + sig, (int)MIN(len, 4000u), err ? (char *)err : "");
			TW_CHECK(kill(-pid, 0) != 0, "[%s %d] it or a process it started still running %d s "
				 "after the signal", strsignal(sig), k, BOUND_S);
			/* not a crash: nothing half made before recovery either */
			TW_CHECK(tw_leftovers(top, false, tmsg, sizeof(tmsg)) == 0,
				 "[%s %d] temporaries left: %s", strsignal(sig), k, tmsg);
			t_log("%s %d (%s): exit %d, %.0f ms from the signal until all its processes ended",
			      strsignal(sig), k, remote ? "remote" : "local", st, ms);
			free(err);
		}

		tw_runl(&r, BFO_CLI, "recover", top, (char *)NULL);
		TW_CHECK(r.status == 0, "[kill %d] bfo recover: %s", k, r.err);
		if (access(tw_fmt("%s/ksrc", top), F_OK) != 0) {
			/* seen once in ~1,500 loaded rounds, cause unknown:
			 * what ran, what recover said and what DST holds */
			t_log("[kill %d] %s/ksrc is gone (%s); recover said: %s", k, top, strerror(errno),
			      r.err ? r.err : "");
			if (sig != SIGKILL)
				t_sh("echo '--- its output:'; cat '%s'", out);
			t_sh("ls -laR '%s' | head -50", top);
		}
		free(out);
		tw_run_free(&r);
		old_root = tw_fmt("%s/ksrc", old);
		old_root = strdup(old_root);
		new_root = src;
		dst_root = tw_fmt("%s/ksrc", top);
		dst_root = strdup(dst_root);
		old_or_new_bad = 0;
		T_ASSERT(nftw(dst_root, old_or_new_visit, 32, FTW_PHYS) == 0, "walk of %s: %s", dst_root,
			 strerror(errno));
		char lmsg[1024];

		TW_CHECK(tw_leftovers(top, true, lmsg, sizeof(lmsg)) == 0, "[kill %d] leftovers: %s", k, lmsg);
		t_log("kill %d (%s, exit %d): %d files neither old nor new", k, remote ? "remote" : "local", st,
		      old_or_new_bad);
		free((char *)old_root);
		free((char *)dst_root);
		/* the same command again finishes the sync */
		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
		TW_CHECK(r.status == 0, "[kill %d, then again] exit %d: %s", k, r.status, r.err);
		tw_run_free(&r);
		tw_expect_copy(tw_fmt("%s/ksrc", ref), tw_fmt("%s/ksrc", top), cpa_flags() | TW_TOP,
			       tw_fmt("killed sync %d, run again", k));
		free(htop);
	}
	t_sh("rm -rf '%s' '%s' '%s' '%s'", src, top, old, ref);
	free(src);
	free(top);
	free(old);
	free(ref);
	t_log("kills, SIGINT, SIGTERM: every file old or new, whole; the same command then finished the sync");
	tw_checks_end();
}

int main(void)
{
	static struct env v;

	t_init("t_sync", 900);
	root_user = t_is_root();
	umask(022);
	v.tmp = t_tmpdir();
	v.rsh = tw_local_rsh(v.tmp);
	if (!t_have_prog("rsync"))
		t_log("rsync is not installed: the filters are not compared with it");
	t_subtest("local", 300, scenario_local, &v);
	t_subtest("list ahead", 300, scenario_ahead, &v);
	t_subtest("dry run", 300, scenario_dry, &v);
	if (t_have_prog("rsync"))
		t_subtest("filters", 300, scenario_filters, &v);
	t_subtest("delete safety", 120, scenario_delete_safety, &v);
	t_subtest("remote", 300, scenario_remote, &v);
	t_subtest("kill", 600, scenario_kill, &v);
	t_done();
	return 0;
}

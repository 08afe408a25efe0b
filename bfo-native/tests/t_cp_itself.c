/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cp_itself: a copy into itself, and a journal in a source (issue 55
 * item 1).
 *
 *  - `bfo cp -a ba ba/inside`, `ba/ ba/inside`, `ba/ ba`, `ba ba/x` (x an
 *    existing directory) and `a/ba a` (the copy would be ba itself) are
 *    refused as cp refuses the same copies (cp exits 1 for each, checked):
 *    exit 2, one line naming the source as given and DST ("cannot copy a
 *    directory, 'ba', into itself, 'ba/inside'"), and nothing changed below
 *    the parent (a snapshot: names, inodes, times, bytes).  The API's
 *    bfo_copier_check() names the source and bfo_copier_run() returns
 *    -ELOOP with nothing written.
 *  - with a rule that keeps DST out of the walk, the copy goes ahead:
 *    `bfo cp -a --exclude /inside ba/ ba/inside` equals
 *    `rsync -a --exclude /inside ba/ REF`.
 *  - a source holding .bfo-journal directories (at its top, as a writer's
 *    lock file, and two levels down) is copied without them, by bfo cp and
 *    by bfo send | bfo recv: the copy equals `rsync -a --exclude
 *    .bfo-journal`'s (modes, mtimes with ns, bytes, targets, links, the
 *    top's metadata) and holds no .bfo-journal; `bfo cp --delete` leaves a
 *    .bfo-journal in DST where it is, as rsync leaves what a rule excludes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

static const char *tmp;

/* Every entry's times set in the past, the ns kept apart: rsync 3.5.0
 * leaves a directory's and a link's mtime when it is of the current
 * second, which would make rsync's copy the odd one. */
static void past(const char *dir)
{
	T_EQ(t_sh("find %s -exec touch -h -d @1577934245.123456789 {} +", dir), 0);
}

static void make_tree(const char *dir)
{
	tw_mkdirs(tw_fmt("%s/x/y", dir));
	for (int i = 0; i < 40; i++)
		t_write_random(tw_fmt("%s/%s/f%02d", dir, i % 3 ? "x" : i % 2 ? "x/y" : ".", i),
			       (uint64_t)i * 1731, (uint64_t)i + 7);
	T_ASSERT(symlink("x/f01", tw_fmt("%s/ln", dir)) == 0, "symlink: %s", strerror(errno));
	past(dir);
}

/* A journal as a writer leaves it (its lock file), at dir/rel. */
static void make_journal(const char *dir, const char *rel)
{
	tw_mkdirs(tw_fmt("%s/%s/.bfo-journal", dir, rel));
	t_write_random(tw_fmt("%s/%s/.bfo-journal/w-23914-a088b09c.lock", dir, rel), 0, 1);
	t_write_random(tw_fmt("%s/%s/.bfo-journal/m-1", dir, rel), 300, 2);
}

/* In dir (the working directory), cmd (bfo cp's arguments after cp) is
 * refused as cp refuses the same copy, and nothing below dir changes. */
static void refused(const char *dir, const char *src, const char *dst)
{
	struct tw_snap *s;
	struct tw_run r;
	char msg[1024], *want;
	int st;

	/* (in a copy of dir: cp refuses after it began) */
	st = t_sh("cp -a %s %s.cp && cd %s.cp && cp -a %s %s 2>/dev/null", dir, dir, dir, src, dst);
	T_ASSERT(st == 1, "cp -a %s %s in %s: exit %d, expected cp to refuse", src, dst, dir, st);
	T_EQ(t_sh("rm -rf %s.cp", dir), 0);
	s = tw_snapshot(dir);
	T_ASSERT(chdir(dir) == 0, "chdir %s", dir);
	tw_runl(&r, BFO_CLI, "cp", "-a", src, dst, (char *)NULL);
	T_ASSERT(chdir(tmp) == 0, "chdir %s", tmp);
	want = t_pathf("bfo: cp: cannot copy a directory, '%s', into itself, '%s'\n", src, dst);
	T_ASSERT(r.status == 2, "bfo cp -a %s %s: exit %d, stderr %s", src, dst, r.status, r.err);
	T_ASSERT(!strcmp(r.err, want), "bfo cp -a %s %s: stderr '%s', expected '%s'", src, dst, r.err,
		 want);
	T_ASSERT(tw_snap_count(s) > 40, "snapshot of %s: %zu entries", dir, tw_snap_count(s));
	T_ASSERT(tw_snap_diff(s, dir, false, msg, sizeof(msg)) == 0, "bfo cp -a %s %s changed %s: %s",
		 src, dst, dir, msg);
	t_log("bfo cp -a %s %s: refused, %zu entries unchanged", src, dst, tw_snap_count(s));
	tw_run_free(&r);
	tw_snap_free(s);
	free(want);
}

static void into_itself(void *arg)
{
	const char *top = t_keep(t_pathf("%s/itself", tmp));
	const char *dir = t_keep(t_pathf("%s/a", top));

	tw_mkdirs(dir);
	make_tree(t_keep(t_pathf("%s/ba", dir)));
	refused(dir, "ba", "ba/inside");
	refused(dir, "ba/", "ba/inside");
	refused(dir, "ba/", "ba");
	refused(dir, "ba", "ba/x");
	refused(top, "a/ba", "a");

	/* the API: the source named, nothing written */
	struct bfo_copier *c;
	const char *srcs[] = { t_keep(t_pathf("%s/a/x", top)), t_keep(t_pathf("%s/ba", dir)) };
	const char *dst = t_keep(t_pathf("%s/ba/x/y/new", dir));
	unsigned which = 9;

	tw_mkdirs(srcs[0]);
	T_OK(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE | BFO_COPY_INTO | BFO_COPY_UPDATE, NULL));
	T_EQ(bfo_copier_check(c, srcs, 2, dst, &which), -ELOOP);
	T_EQ(which, 1);
	T_EQ(bfo_copier_run(c, srcs, 2, dst), -ELOOP);
	T_ASSERT(!tw_exists(dst), "bfo_copier_run refused, yet %s was made", dst);
	T_EQ(bfo_copier_check(c, srcs, 1, dst, &which), 0);
	bfo_copier_destroy(c);
}

static void excluded_ok(void *arg)
{
	const char *dir = t_keep(t_pathf("%s/excl", tmp)), *ref = t_keep(t_pathf("%s/excl-ref", tmp));
	char msg[1024];
	int n;

	make_tree(dir);
	n = t_sh("cd %s && %s cp -a --exclude /inside ./ inside", dir, BFO_CLI);
	T_EQ(n, 0);
	T_EQ(t_sh("cd %s && rsync -a --exclude /inside ./ %s", dir, ref), 0);
	n = tw_tree_diff(ref, tw_fmt("%s/inside", dir), TW_MODE | TW_MTIME | TW_LINKS, NULL, msg,
			 sizeof(msg));
	T_ASSERT(n == 0, "SRC/ into SRC/inside, excluded: differs from rsync's: %s", msg);
	T_ASSERT(!tw_exists(tw_fmt("%s/inside/inside", dir)), "the copy went into itself");
}

/* dst (a copy of src) equals rsync -a --exclude .bfo-journal's and holds no
 * journal. */
static void no_journal(const char *what, const char *ref, const char *dst)
{
	char msg[1024];
	int n = tw_tree_diff(ref, dst, TW_MODE | TW_OWNER | TW_MTIME | TW_XATTRS | TW_LINKS | TW_TOP,
			     NULL, msg, sizeof(msg));

	T_ASSERT(n == 0, "%s: differs from rsync -a --exclude .bfo-journal: %s", what, msg);
	T_EQ(tw_leftovers(dst, true, msg, sizeof(msg)), 0);
	T_ASSERT(!tw_exists(tw_fmt("%s/x/y/.bfo-journal", dst)), "%s: a journal was copied", what);
	t_log("%s: equal to rsync's, no .bfo-journal", what);
}

static void journals(void *arg)
{
	const char *src = t_keep(t_pathf("%s/jsrc", tmp)), *ref = t_keep(t_pathf("%s/jref", tmp));
	const char *out = t_keep(t_pathf("%s/jout", tmp)), *out2 = t_keep(t_pathf("%s/jout2", tmp));

	make_tree(src);
	make_journal(src, ".");
	make_journal(src, "x/y");
	past(src);
	tw_mkdirs(ref);
	T_EQ(t_sh("rsync -a --exclude .bfo-journal %s %s", src, ref), 0);
	T_ASSERT(!tw_exists(tw_fmt("%s/jsrc/.bfo-journal", ref)), "rsync copied the journal");

	T_EQ(t_sh("%s cp -a %s %s", BFO_CLI, src, out), 0);
	no_journal("bfo cp -a", tw_fmt("%s/jsrc", ref), tw_fmt("%s/jsrc", out));
	T_EQ(t_sh("%s send -a %s | %s recv -a %s", BFO_CLI, src, BFO_CLI, out2), 0);
	no_journal("bfo send | bfo recv", tw_fmt("%s/jsrc", ref), tw_fmt("%s/jsrc", out2));
	/* a rerun (the sync's listing) copies none either */
	T_EQ(t_sh("%s cp -a %s %s", BFO_CLI, src, out), 0);
	no_journal("bfo cp -a again", tw_fmt("%s/jsrc", ref), tw_fmt("%s/jsrc", out));

	/* --delete leaves one in DST (as rsync leaves what a rule excludes) */
	make_journal(out, "jsrc/x");
	T_EQ(t_sh("%s cp -a --delete %s %s", BFO_CLI, src, out), 0);
	T_ASSERT(tw_exists(tw_fmt("%s/jsrc/x/.bfo-journal/m-1", out)), "--delete removed a journal");
}

int main(void)
{
	t_init("t_cp_itself", 300);
	umask(022);
	if (!t_have_prog("rsync"))
		t_skip("no rsync to compare with");
	tmp = t_tmpdir();
	t_subtest("into itself", 60, into_itself, NULL);
	t_subtest("into itself, excluded", 60, excluded_ok, NULL);
	t_subtest("journals in a source", 60, journals, NULL);
	t_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cp: `bfo cp` (BFO_CLI) against GNU cp on the same source.
 *
 * The source tree has every file type: regular files of 0 bytes to 3 MiB
 * (sizes around page boundaries too) plus one of 17 MiB, above the read
 * engine's large_file (16 MiB), so it travels in pieces; directories,
 * empty ones included, with modes 0750, setgid and sticky; symbolic links
 * relative, absolute, dangling and to a directory; hard links within the
 * tree (three names of one file, and a second name of the 17 MiB file); a
 * FIFO, a socket's node, a character and a block device (root); setuid/setgid files; odd
 * names (spaces, a newline, a tab, non-UTF-8 bytes, a backslash, a leading
 * dash); user.* xattrs on files and directories (the top one too),
 * trusted.* on a symlink (root); mtimes with nanoseconds, atimes in the
 * future (so that no relatime update interferes); several owners (root).
 *
 *  - `bfo cp -a SRC/ DST` equals `cp -a SRC REF` entry by entry (type, mode,
 *    owner, mtime/atime ns, bytes, targets, rdev, xattrs, hard-link groups
 *    and counts, the top directory's own metadata), exit 0, nothing on
 *    stderr, no .bfo-tmp.* or .bfo-journal left; the same with
 *    --durability none, batch and each, with --write-engine uring, and onto a loop XFS
 *    (auto, which is batched, and the stem engine by name).
 *  - destination rules: DST an existing directory -> DST/basename(SRC);
 *    one file SRC -> the file DST; one file into a directory; several
 *    SOURCEs into a directory (compared with cp doing the same); several
 *    SOURCEs onto a non-directory -> exit 2.
 *  - sources named SRC/., SRC/./, SRC/sub/.., SRC/, SRC and `.` (from inside
 *    SRC) into an existing directory, and SRC/., SRC/ and SRC onto a new
 *    name: rsync's rule (SRC/, SRC/. and SRC/.. copy the contents into DST
 *    and give DST SRC's metadata; SRC makes DST/SRC), compared with what
 *    cp -a makes of the same copy.
 *  - reruns: the same command twice (SRC and SRC/ onto new and existing
 *    DSTs, a file onto a name and into DST/, several sources) lands where
 *    rsync -aHX --atimes puts it, equal to it; the second run copies no file
 *    (--stats) and changes nothing (a snapshot: inodes, ctimes); after a
 *    change, a new file and a chmod the third copies those three and equals
 *    cp -a; --replace copies every file.
 *  - exit codes: 2 for usage errors; 1 and a message naming it for a
 *    missing source; 1 and a message naming it for a file that uid 65534
 *    cannot read (the copy made as uid 65534 otherwise equals `cp -a` made
 *    as uid 65534, set-id bits included).
 *  - `bfo cp -r` (no -a) equals `cp -r`: modes less the umask, no set-id
 *    bits kept unless cp keeps them, owned by the copier, current times,
 *    no xattrs, hard links not kept.
 *  - cancel: bfo_copier_cancel() called from the first progress callback
 *    (after the first batch) makes bfo_copier_run() return -ECANCELED;
 *    SIGINT makes `bfo cp` exit 130 once the first batch began; in both
 *    cases every file of the source is absent or complete in the copy,
 *    nothing else appeared, no temporary or journal is left, and the files
 *    that were in the destination before are untouched (bfo cp: or
 *    replaced whole by their new version, as they differ); bad copier flags
 *    are -EINVAL; the error callback names a missing source.
 *  - capabilities (root): security.capability of a file of root's and of
 *    one of uid 1234 is in the copy, as in cp -a's (set after the chown,
 *    which clears it);
 *  - a source file that changes while it is copied (64 MiB, in pieces,
 *    truncated and re-extended by another process the whole time): exit 1
 *    and a message naming it, and the copy is absent or a complete,
 *    consistent state of the file (never half-copied); no temporaries.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_wutil.h"

#define BIG TW_GEN_BIG

static bool root_user;

/* ------------------------------------------------------------ runs */

static int bfo_cp(struct tw_run *r, uid_t uid, const char *const *args)
{
	char *argv[32];
	int n = 0;

	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	for (; *args && n < 31; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	tw_run(r, NULL, 0, uid, uid, argv);
	return r->status;
}

struct env {
	const char *tmp, *src, *ref, *xfs;
};

static unsigned cpa_flags(void)
{
	return root_user ? TW_CP_A | TW_TOP : (TW_CP_A & ~TW_OWNER) | TW_TOP;
}

static void scenario_archive(void *arg)
{
	const struct env *v = arg;
	struct tw_run r;
	static const char *variants[][4] = {
		{ NULL }, { "--durability", "none", NULL }, { "--durability", "batch", NULL },
		{ "--durability", "each", NULL }, { "--write-engine", "uring", NULL },
	};

	for (size_t k = 0; k < sizeof(variants) / sizeof(variants[0]); k++) {
		char *dst = t_pathf("%s/archive%zu", v->tmp, k);
		const char *args[12];
		int n = 0;
		char what[64];

		args[n++] = "-a";
		for (int i = 0; variants[k][i]; i++)
			args[n++] = variants[k][i];
		args[n++] = tw_fmt("%s/", v->src);   /* the contents: DST is the copy */
		args[n++] = dst;
		args[n] = NULL;
		snprintf(what, sizeof(what), "cp -a%s%s", variants[k][0] ? " " : "",
			 variants[k][0] ? variants[k][0] : "");
		if (variants[k][0] && variants[k][1])
			snprintf(what + strlen(what), sizeof(what) - strlen(what), " %s", variants[k][1]);
		bfo_cp(&r, (uid_t)-1, args);
		TW_CHECK(r.status == 0 && r.err_len == 0, "[%s] exit %d, stderr: %s", what, r.status, r.err);
		tw_run_free(&r);
		tw_expect_copy(v->ref, dst, cpa_flags(), what);
		t_sh("rm -rf '%s'", dst);
		t_log("%s: compared with cp -a", what);
		free(dst);
	}
	/* onto XFS: auto (batched), and the stem engine by name */
	for (int k = 0; v->xfs && k < 2; k++) {
		const char *engine = k ? "stem" : "batched";
		char *dst = t_pathf("%s/archive-xfs", v->xfs);
		const char *args[] = { "-a", "--stats", "--write-engine", k ? "stem" : "auto",
				       tw_fmt("%s/", v->src), dst, NULL };
		char what[64];

		snprintf(what, sizeof(what), "cp -a onto XFS (%s)", engine);
		bfo_cp(&r, (uid_t)-1, args);
		TW_CHECK(r.status == 0, "[%s] exit %d, stderr: %s", what, r.status, r.err);
		TW_CHECK(strstr(r.err, tw_fmt("write engine %s", engine)) != NULL, "[%s] not the %s engine: %s",
			 what, engine, r.err);
		tw_run_free(&r);
		tw_expect_copy(v->ref, dst, cpa_flags(), what);
		t_sh("rm -rf '%s'", dst);
		t_log("%s: compared with cp -a", what);
		free(dst);
	}
	tw_checks_end();
}

static void scenario_rules(void *arg)
{
	const struct env *v = arg;
	struct tw_run r, c;
	char *d1 = t_path(v->tmp, "rules-into"), *r1 = t_path(v->tmp, "rules-into-ref");
	char msg[4096], why[256];

	/* DST an existing directory: DST/basename(SRC) */
	tw_mkdirs(d1);
	tw_mkdirs(r1);
	const char *a1[] = { "-a", v->src, d1, NULL };

	bfo_cp(&r, (uid_t)-1, a1);
	TW_CHECK(r.status == 0, "[into a directory] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", v->src, r1, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(r1, d1, (cpa_flags() & ~TW_TOP), "into an existing directory");
	const char *base = strrchr(v->src, '/') + 1;

	tw_expect_copy(tw_fmt("%s/%s", r1, base), tw_fmt("%s/%s", d1, base), cpa_flags(),
		    "into an existing directory, the copy itself");

	/* one file SRC -> the file DST */
	char *f = t_pathf("%s/a/big.bin", v->src), *df = t_pathf("%s/single-copy", v->tmp);
	const char *a2[] = { "-a", f, df, NULL };
	uint8_t *want;
	uint64_t wl;
	struct stat s1, s2;

	bfo_cp(&r, (uid_t)-1, a2);
	TW_CHECK(r.status == 0, "[one file] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	T_ASSERT(t_read_plain(f, &want, &wl) == 0, "read");
	TW_CHECK(tw_file_check(AT_FDCWD, df, want, wl, why, sizeof(why)) == 0, "[one file] %s", why);
	TW_CHECK(stat(f, &s1) == 0 && stat(df, &s2) == 0 && s1.st_mode == s2.st_mode &&
		 s1.st_mtim.tv_sec == s2.st_mtim.tv_sec && s1.st_mtim.tv_nsec == s2.st_mtim.tv_nsec &&
		 s1.st_uid == s2.st_uid, "[one file] metadata differs");
	TW_CHECK(!tw_exists(tw_fmt("%s/.bfo-journal", v->tmp)), "[one file] .bfo-journal left in DST's "
		 "directory");
	free(want);

	/* one file into a directory */
	const char *a3[] = { "-a", f, d1, NULL };

	bfo_cp(&r, (uid_t)-1, a3);
	TW_CHECK(r.status == 0, "[one file into a directory] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	TW_CHECK(stat(tw_fmt("%s/big.bin", d1), &s2) == 0 && s2.st_size == BIG,
		 "[one file into a directory] DST/big.bin missing");

	/* several SOURCEs into a directory */
	char *d2 = t_path(v->tmp, "rules-many"), *r2 = t_path(v->tmp, "rules-many-ref");
	char *sa = t_pathf("%s/a", v->src), *sf = t_pathf("%s/f000", v->src);
	char *sl = t_pathf("%s/abs", v->src), *sd = t_pathf("%s/empty1", v->src);
	char *sp = t_pathf("%s/fifo", v->src);

	tw_mkdirs(d2);
	tw_mkdirs(r2);
	const char *a4[] = { "-a", sa, sf, sl, sd, sp, d2, NULL };

	bfo_cp(&r, (uid_t)-1, a4);
	TW_CHECK(r.status == 0, "[several sources] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", sa, sf, sl, sd, sp, r2, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(r2, d2, cpa_flags() & ~TW_TOP, "several sources into a directory");

	/* several SOURCEs onto a non-directory */
	const char *a5[] = { "-a", sf, sl, df, NULL };

	bfo_cp(&r, (uid_t)-1, a5);
	TW_CHECK(r.status == 2 && strcasestr(r.err, "not a directory"),
		 "[several sources onto a file] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	(void)msg;
	free(d1);
	free(r1);
	free(d2);
	free(r2);
	free(f);
	free(df);
	free(sa);
	free(sf);
	free(sl);
	free(sd);
	free(sp);
	t_log("cp destination rules: ok");
	tw_checks_end();
}

static void scenario_exit(void *arg)
{
	const struct env *v = arg;
	struct tw_run r;
	/* Each usage error names what is wrong (and the accepted values). */
	static const struct { const char *args[5], *says; } usage[] = {
		{ { NULL }, "no SRC and DST given\nsee 'bfo cp --help'" },
		{ { "onlyone", NULL }, "no DST given" },
		{ { "--bogus", "a", "b", NULL }, "unknown option '--bogus'\nsee 'bfo cp --help'" },
		{ { "--durability", "sometimes", "a", "b", NULL },
		  "--durability: invalid value 'sometimes' (batch, none, each)" },
		{ { "--write-engine", "magic", "a", "b", NULL },
		  "--write-engine: invalid value 'magic' (auto, stem, batched, uring)" },
	};

	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		bfo_cp(&r, (uid_t)-1, usage[i].args);
		TW_CHECK(r.status == 2 && strstr(r.err, usage[i].says), "usage error %zu (%s ...): exit %d, stderr: %s",
			 i, usage[i].args[0] ? usage[i].args[0] : "no arguments", r.status, r.err);
		tw_run_free(&r);
	}
	char *missing = t_path(v->tmp, "no-such-source"), *dst = t_path(v->tmp, "missing-dst");
	const char *a1[] = { "-a", missing, dst, NULL };

	bfo_cp(&r, (uid_t)-1, a1);
	TW_CHECK(r.status == 1 && strstr(r.err, "no-such-source"), "missing source: exit %d, stderr: %s",
		 r.status, r.err);
	tw_run_free(&r);

	if (!root_user) {
		t_log("exit codes: the unreadable-source case needs root (to become uid 65534)");
		free(missing);
		free(dst);
		tw_checks_end();
		return;
	}
	/* a file uid 65534 cannot read */
	char *su = t_path(v->tmp, "unreadable-src"), *pu = t_path(v->tmp, "nobody");

	tw_mkdirs(tw_fmt("%s/sub", su));
	t_write_random(tw_fmt("%s/ok1", su), 3000, 1);
	t_write_random(tw_fmt("%s/sub/ok2", su), 70000, 2);
	t_write_random(tw_fmt("%s/secret", su), 500, 3);
	t_write_random(tw_fmt("%s/suid", su), 600, 4);
	chmod(tw_fmt("%s/secret", su), 0600);
	chmod(tw_fmt("%s/suid", su), 04755);
	tw_gen_xattr(tw_fmt("%s/ok1", su), "user.x", "y");
	tw_mkdirs(pu);
	if (chown(pu, 65534, 65534) < 0)
		t_fail("chown: %s", strerror(errno));
	char *du = t_path(pu, "bfo"), *ru = t_path(pu, "cp");
	const char *a2[] = { "-a", tw_fmt("%s/", su), du, NULL };
	char *argv[] = { "cp", "-a", su, ru, NULL };
	struct tw_run c;

	bfo_cp(&r, 65534, a2);
	tw_run(&c, NULL, 0, 65534, 65534, argv);
	TW_CHECK(r.status == 1 && strstr(r.err, "secret"), "unreadable source as uid 65534: exit %d, "
		 "stderr: %s", r.status, r.err);
	TW_CHECK(c.status == 1, "cp -a as uid 65534: exit %d", c.status);
	TW_CHECK(!tw_exists(tw_fmt("%s/secret", du)), "the unreadable file exists in the copy");
	static const char *ign[] = { "secret", NULL };
	char msg[4096];
	int nd = tw_tree_diff(ru, du, TW_MODE | TW_OWNER | TW_MTIME | TW_XATTRS | TW_TOP, ign, msg, sizeof(msg));

	TW_CHECK(nd == 0, "as uid 65534, the rest differs from cp -a as uid 65534: %s", msg);
	tw_run_free(&r);
	tw_run_free(&c);
	free(missing);
	free(dst);
	free(su);
	free(pu);
	free(du);
	free(ru);
	t_log("exit codes: usage 2, missing source 1, unreadable source 1 (as uid 65534)");
	tw_checks_end();
}

static void scenario_recursive(void *arg)
{
	const struct env *v = arg;
	struct tw_run r, c;
	char *dst = t_path(v->tmp, "recursive"), *ref = t_path(v->tmp, "recursive-ref");
	const char *a[] = { "-r", tw_fmt("%s/", v->src), dst, NULL };
	struct stat s1, s2;

	bfo_cp(&r, (uid_t)-1, a);
	TW_CHECK(r.status == 0, "[cp -r] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-r", v->src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -r: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, TW_MODE | TW_OWNER | TW_XATTRS | TW_TOP, "cp -r");
	/* times are the copy's own; hard links are not kept */
	TW_CHECK(lstat(tw_fmt("%s/hl_a", v->src), &s1) == 0 && lstat(tw_fmt("%s/hl_a", dst), &s2) == 0 &&
		 s2.st_mtim.tv_sec != s1.st_mtim.tv_sec && s2.st_nlink == 1,
		 "[cp -r] hl_a kept its mtime or its links (%lu)", (unsigned long)s2.st_nlink);
	free(dst);
	free(ref);
	t_log("cp -r: compared with cp -r");
	tw_checks_end();
}

/* Sources named with `.` and `..` components and trailing slashes, onto
 * existing and new destinations: rsync's rule (SRC/ and SRC/. are the
 * contents, SRC a directory lands in DST/SRC, DST made when missing), the
 * copy compared with what cp -a makes of the same (cp_name into ref, made
 * first when below). */
static void scenario_dots(void *arg)
{
	const struct env *v = arg;
	char *s = t_path(v->tmp, "dots-src");
	static const struct {
		const char *name;   /* the source, below v->tmp; "." from inside dots-src */
		const char *cp_name;/* cp's name for the same copy */
		bool dst_exists;
		bool below;         /* the copy is DST/dots-src, not DST itself */
	} cases[] = {
		{ "dots-src/.", "dots-src/.", true, false }, { "dots-src/./", "dots-src/./", true, false },
		{ "dots-src/sub/..", "dots-src/sub/..", true, false },
		{ "dots-src/", "dots-src/.", true, false }, { "dots-src", "dots-src", true, true },
		{ ".", ".", true, false }, { "dots-src/.", "dots-src/.", false, false },
		{ "dots-src/", "dots-src/.", false, false }, { "dots-src", "dots-src", false, true },
	};
	struct tw_run r, c;

	tw_gen_mkdir(s, 0750);
	tw_gen_mkdir(tw_fmt("%s/sub", s), 0705);
	t_write_random(tw_fmt("%s/sub/f", s), 5000, 77);
	t_write_random(tw_fmt("%s/g", s), 0, 78);
	if (mkfifo(tw_fmt("%s/fifo", s), 0640) < 0 || mknod(tw_fmt("%s/sub/sock", s), S_IFSOCK | 0755, 0) < 0)
		t_fail("setup: %s", strerror(errno));
	tw_gen_times(tw_fmt("%s/sub/f", s), 20);
	tw_gen_times(tw_fmt("%s/g", s), 21);
	tw_gen_times(tw_fmt("%s/fifo", s), 22);
	tw_gen_times(tw_fmt("%s/sub/sock", s), 23);
	tw_gen_times(tw_fmt("%s/sub", s), 24);
	tw_gen_times(s, 25);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *dst = t_pathf("%s/dots-bfo%zu", v->tmp, k), *ref = t_pathf("%s/dots-cp%zu", v->tmp, k);
		bool inside = !strcmp(cases[k].name, ".");
		char *src = inside ? strdup(".") : t_path(v->tmp, cases[k].name);
		char *csrc = inside ? strdup(".") : t_path(v->tmp, cases[k].cp_name);
		const char *a[] = { "-a", src, dst, NULL };
		char what[128];

		snprintf(what, sizeof(what), "cp -a %s %s DST", cases[k].name,
			 cases[k].dst_exists ? "into an existing" : "onto a new");
		if (cases[k].dst_exists)
			tw_mkdirs(dst);
		if (cases[k].dst_exists || cases[k].below)
			tw_mkdirs(ref);
		if (inside && chdir(s) < 0)
			t_fail("chdir: %s", strerror(errno));
		bfo_cp(&r, (uid_t)-1, a);
		TW_CHECK(r.status == 0 && r.err_len == 0, "[%s] exit %d, stderr: %s", what, r.status, r.err);
		tw_run_free(&r);
		tw_runl(&c, "cp", "-a", csrc, ref, (char *)NULL);
		T_ASSERT(c.status == 0, "%s: %s", what, c.err);
		tw_run_free(&c);
		if (inside && chdir(v->tmp) < 0)
			t_fail("chdir: %s", strerror(errno));
		if (cases[k].below) {
			/* DST's own times are those of its new entry */
			tw_expect_copy(ref, dst, cpa_flags() & ~TW_TOP, what);
			tw_expect_copy(tw_fmt("%s/dots-src", ref), tw_fmt("%s/dots-src", dst), cpa_flags(),
				    what);
		} else {
			tw_expect_copy(ref, dst, cpa_flags(), what);
		}
		t_sh("rm -rf '%s' '%s'", dst, ref);
		free(dst);
		free(ref);
		free(src);
		free(csrc);
	}
	free(s);
	t_log("sources with . and .. and trailing slashes (rsync's rule): compared with cp -a");
	tw_checks_end();
}

/* Regular files below path (or path itself), each inode once. */
static int inodes(const char *path)
{
	char *cmd = t_pathf("find '%s' -type f -printf '%%D:%%i\\n' | sort -u | wc -l", path);
	FILE *p = popen(cmd, "r");
	int n = -1;

	T_ASSERT(p && fscanf(p, "%d", &n) == 1, "%s", cmd);
	pclose(p);
	free(cmd);
	return n;
}

/* The "N files" and "N skipped" of a --stats line, or -1. */
static long stat_of(const char *err, const char *what)
{
	const char *p = strstr(err, what);

	while (p && p > err && p[-1] == ' ')
		p--;
	while (p && p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p ? strtol(p, NULL, 10) : -1;
}

/*
 * rsync's destination rule, and reruns: each command is run twice, the
 * copy compared with rsync's of the same command line (rsync -aHX --atimes
 * keeps what cp -a keeps, atimes to the second only), and the second run copies nothing (--stats: 0
 * files, every regular file skipped) and touches nothing (a snapshot of the
 * copy: inodes, ctimes, mtimes unchanged).  Then one changed file, one
 * new, one with only its mode changed: the third run copies those three
 * and the copy equals cp -a's again; --replace copies everything.
 */
static void scenario_rerun(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "rr-src"), *f = t_pathf("%s/a/big.bin", v->tmp);
	static const struct {
		const char *what;
		const char *srcs[3];     /* below v->tmp */
		const char *dst;         /* below the run's directory */
		const char *copy;        /* the directory to compare, below the run's */
		bool top;                /* the copy's top directory is compared too */
	} cases[] = {
		{ "SRC onto a new DST", { "rr-src" }, "new", "new/rr-src", true },
		{ "SRC into an existing DST", { "rr-src" }, "old", "old/rr-src", true },
		{ "SRC/ onto a new DST", { "rr-src/" }, "new", "new", true },
		{ "SRC/. onto a new DST", { "rr-src/." }, "new", "new", true },
		{ "FILE onto a new name", { "rr-src/suid" }, "name", ".", false },
		{ "FILE into a new DST/", { "rr-src/suid" }, "new/", "new", false },
		{ "several onto a new DST", { "rr-src/a/b/c/d", "rr-src/suid" }, "new", "new", false },
	};
	struct tw_run r, c;
	char msg[4096];
	int files;

	t_sh("cp -a '%s' '%s'", v->src, src);
	(void)f;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *bdir = t_pathf("%s/rr-bfo%zu", v->tmp, k), *rdir = t_pathf("%s/rr-rsync%zu", v->tmp, k);
		const char *a[10], *what = cases[k].what;
		char *ra[12];
		int n = 0, m = 0;

		tw_mkdirs(bdir);
		tw_mkdirs(rdir);
		if (!strcmp(cases[k].dst, "old")) {
			tw_mkdirs(tw_fmt("%s/old", bdir));
			tw_mkdirs(tw_fmt("%s/old", rdir));
		}
		a[n++] = "-a";
		a[n++] = "--stats";
		ra[m++] = "rsync";
		ra[m++] = "-aHX";
		ra[m++] = "--atimes";
		for (int i = 0; i < 3 && cases[k].srcs[i]; i++) {
			a[n++] = t_path(v->tmp, cases[k].srcs[i]);
			ra[m++] = t_path(v->tmp, cases[k].srcs[i]);
		}
		a[n++] = t_path(bdir, cases[k].dst);
		ra[m++] = t_path(rdir, cases[k].dst);
		a[n] = NULL;
		ra[m] = NULL;
		tw_run(&c, NULL, 0, (uid_t)-1, (gid_t)-1, ra);
		T_ASSERT(c.status == 0, "[%s] rsync: exit %d: %s", what, c.status, c.err);
		tw_run_free(&c);
		files = inodes(tw_fmt("%s/%s", rdir, cases[k].copy));
		bfo_cp(&r, (uid_t)-1, a);
		TW_CHECK(r.status == 0, "[%s] exit %d: %s", what, r.status, r.err);
		tw_run_free(&r);
		/* (rsync sets atimes to the second, and none on directories) */
		tw_expect_copy(tw_fmt("%s/%s", rdir, cases[k].copy), tw_fmt("%s/%s", bdir, cases[k].copy),
			       (cases[k].top ? cpa_flags() : cpa_flags() & ~TW_TOP) & ~TW_ATIME, what);
		/* again: nothing copied, nothing touched */
		struct tw_snap *snap = tw_snapshot(bdir);

		bfo_cp(&r, (uid_t)-1, a);
		TW_CHECK(r.status == 0 && stat_of(r.err, " files,") == 0 && stat_of(r.err, " skipped") == files,
			 "[%s, again] exit %d, expected 0 files and %d skipped: %s", what, r.status, files, r.err);
		TW_CHECK(tw_snap_diff(snap, bdir, false, msg, sizeof(msg)) == 0, "[%s, again] the copy changed: %s",
			 what, msg);
		tw_run_free(&r);
		tw_snap_free(snap);
		t_sh("rm -rf '%s' '%s'", bdir, rdir);
		for (int i = 2; i < n; i++)
			free((char *)a[i]);
		for (int i = 3; i < m; i++)
			free(ra[i]);
		free(bdir);
		free(rdir);
	}

	/* changes: new bytes, a new file, a mode alone; then --replace */
	char *dst = t_path(v->tmp, "rr-dst"), *ref = t_path(v->tmp, "rr-ref");

	tw_runl(&r, BFO_CLI, "cp", "-a", src, dst, (char *)NULL);
	T_ASSERT(r.status == 0, "first copy: %s", r.err);
	tw_run_free(&r);
	files = inodes(src);
	t_write_random(tw_fmt("%s/a/b/f002", src), 4096, 98);
	t_write_random(tw_fmt("%s/a/new.bin", src), 10000, 99);
	T_ASSERT(chmod(tw_fmt("%s/f000", src), 0644) == 0, "chmod");
	tw_runl(&r, BFO_CLI, "cp", "-a", "--stats", src, dst, (char *)NULL);
	TW_CHECK(r.status == 0 && stat_of(r.err, " files,") == 3 && stat_of(r.err, " skipped") == files - 2,
		 "[changed, new, chmod] exit %d, expected 3 files and %d skipped: %s", r.status, files - 2,
		 r.err);
	tw_run_free(&r);
	/* (cp -a: rsync -H links after it set the directories' times, so a
	 * directory holding a new link keeps the time of that link) */
	tw_mkdirs(ref);
	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(tw_fmt("%s/rr-src", ref), tw_fmt("%s/rr-src", dst), cpa_flags() & ~TW_ATIME,
		       "after changes");
	tw_runl(&r, BFO_CLI, "cp", "-a", "--stats", "--replace", src, dst, (char *)NULL);
	TW_CHECK(r.status == 0 && stat_of(r.err, " files,") == files + 1,
		 "[--replace] exit %d, expected %d files: %s", r.status, files + 1, r.err);
	tw_run_free(&r);
	tw_expect_copy(tw_fmt("%s/rr-src", ref), tw_fmt("%s/rr-src", dst), cpa_flags() & ~TW_ATIME,
		       "--replace");
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	free(f);
	t_log("rsync's destination rule (compared with rsync -aHX --atimes); reruns copy nothing; "
	      "changes copied (compared with cp -a)");
	tw_checks_end();
}

/* Sources without any regular file: an empty directory, a tree of
 * directories, links and a fifo. */
static void scenario_noregular(void *arg)
{
	const struct env *v = arg;
	char *s1 = t_path(v->tmp, "empty-src"), *s2 = t_path(v->tmp, "noreg-src");
	struct tw_run r, c;

	tw_gen_mkdir(s1, 0750);
	tw_gen_times(s1, 3);
	tw_mkdirs(tw_fmt("%s/d1/d2", s2));
	if (symlink("d1", tw_fmt("%s/link", s2)) < 0 || mkfifo(tw_fmt("%s/d1/fifo", s2), 0600) < 0)
		t_fail("setup: %s", strerror(errno));
	tw_gen_times(tw_fmt("%s/d1/d2", s2), 4);
	tw_gen_times(tw_fmt("%s/d1/fifo", s2), 5);
	tw_gen_times(tw_fmt("%s/link", s2), 6);
	tw_gen_times(tw_fmt("%s/d1", s2), 7);
	tw_gen_times(s2, 8);
	for (int k = 0; k < 2; k++) {
		const char *src = k ? s2 : s1;
		char *dst = t_pathf("%s-bfo", src), *ref = t_pathf("%s-cp", src);
		const char *a[] = { "-a", tw_fmt("%s/", src), dst, NULL };

		bfo_cp(&r, (uid_t)-1, a);
		TW_CHECK(r.status == 0 && r.err_len == 0, "[%s] exit %d, stderr: %s",
			 k ? "a tree without regular files" : "an empty directory", r.status, r.err);
		tw_run_free(&r);
		tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
		T_ASSERT(c.status == 0, "cp -a: %s", c.err);
		tw_run_free(&c);
		tw_expect_copy(ref, dst, cpa_flags(), k ? "a tree without regular files" : "an empty directory");
		free(dst);
		free(ref);
	}
	free(s1);
	free(s2);
	t_log("sources without regular files: compared with cp -a");
	tw_checks_end();
}

/* File capabilities survive a copy that gives the file another owner: the
 * kernel clears security.capability on every chown, so the attribute must
 * be set after it (cp -a does the same).  A file of root's, which needs no
 * chown, and one of uid 1234 and gid 4321, which does. */
static void scenario_caps(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "caps-src"), *dst = t_path(v->tmp, "caps-bfo");
	char *ref = t_path(v->tmp, "caps-cp");
	/* struct vfs_cap_data, revision 2: cap_net_raw (13) permitted */
	const uint32_t cap[5] = { 0x02000000u, 1u << 13, 0, 0, 0 };
	static const char *const names[] = { "mine", "theirs" };
	struct tw_run r, c;

	if (!root_user) {
		t_log("not root: no file capabilities to copy");
		tw_checks_end();
		return;
	}
	tw_mkdirs(src);
	for (int i = 0; i < 2; i++) {
		char *p = t_path(src, names[i]);

		t_write_random(p, 1000 + (uint64_t)i, 70 + (uint64_t)i);
		if ((i && chown(p, 1234, 4321) < 0) || setxattr(p, "security.capability", cap, sizeof(cap), 0) < 0)
			t_fail("%s: %s", p, strerror(errno));
		tw_gen_times(p, 20 + i);    /* atimes ahead: no relatime update */
		free(p);
	}
	tw_gen_times(src, 22);
	const char *a[] = { "-a", tw_fmt("%s/", src), dst, NULL };

	bfo_cp(&r, (uid_t)-1, a);
	TW_CHECK(r.status == 0, "exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, cpa_flags(), "capabilities");
	for (int i = 0; i < 2; i++) {
		uint8_t got[64], want[64];
		ssize_t g = getxattr(tw_fmt("%s/%s", dst, names[i]), "security.capability", got, sizeof(got));
		ssize_t w = getxattr(tw_fmt("%s/%s", ref, names[i]), "security.capability", want, sizeof(want));

		TW_CHECK(w == (ssize_t)sizeof(cap), "cp -a did not keep %s's capability either (%zd)", names[i], w);
		TW_CHECK(w >= 0 && g == w && !memcmp(got, want, (size_t)w), "%s: security.capability %s in the copy",
			 names[i], g < 0 ? strerror(errno) : "differs");
	}
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	t_log("capabilities: kept on a file of root's and on one chowned to uid 1234, as cp -a keeps them");
	tw_checks_end();
}

/* Hard links to a file large enough to travel in several pieces. */
static void scenario_biglinks(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "biglinks"), *dst = t_path(v->tmp, "biglinks-bfo");
	char *ref = t_path(v->tmp, "biglinks-cp");
	struct tw_run r, c;

	tw_mkdirs(tw_fmt("%s/x", src));
	tw_mkdirs(tw_fmt("%s/y", src));
	t_write_random(tw_fmt("%s/x/big", src), (40u << 20) + 5, 77);
	tw_gen_times(tw_fmt("%s/x/big", src), 1);
	if (link(tw_fmt("%s/x/big", src), tw_fmt("%s/y/second", src)) < 0 ||
	    link(tw_fmt("%s/x/big", src), tw_fmt("%s/third", src)) < 0)
		t_fail("link: %s", strerror(errno));
	tw_gen_times(tw_fmt("%s/x", src), 2);
	tw_gen_times(tw_fmt("%s/y", src), 3);
	tw_gen_times(src, 4);
	const char *a[] = { "-a", tw_fmt("%s/", src), dst, NULL };

	bfo_cp(&r, (uid_t)-1, a);
	TW_CHECK(r.status == 0 && r.err_len == 0, "[hard links to a 40 MiB file] exit %d, stderr: %s",
		 r.status, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, cpa_flags(), "hard links to a 40 MiB file");
	free(src);
	free(dst);
	free(ref);
	t_log("hard links to a file in pieces: compared with cp -a");
	tw_checks_end();
}

/* ------------------------------------------------------------ cancel */

static struct bfo_copier *cancel_me;
static int progress_calls;

static void cancel_on_progress(void *arg, const struct bfo_copy_stats *st)
{
	(void)arg;
	(void)st;
	if (progress_calls++ == 0)
		bfo_copier_cancel(cancel_me);
}

static char err_path[PATH_MAX];
static int err_status, err_calls;

static void on_error(void *arg, const char *path, int status)
{
	(void)arg;
	if (!err_calls++)
		snprintf(err_path, sizeof(err_path), "%s", path);
	err_status = status;
}

static void scenario_cancel(void *arg)
{
	const struct env *v = arg;
	char *indir = t_path(v->tmp, "cancel-in");
	struct tw_input *in;
	struct bfo_copier *c;
	struct bfo_copy_stats st;
	int present;

	tw_mkdirs(indir);
	in = tw_input_make(indir, 3000, 0, true, 3);
	TW_CHECK(bfo_copier_create(&c, NULL, NULL, 1u << 9, NULL) == -EINVAL, "unknown copier flag");

	/* the API: cancelled from the first progress report */
	char *d1 = t_path(v->tmp, "cancel-api");

	tw_mkdirs(d1);
	tw_input_pre_create(in, d1, "src/");
	struct tw_snap *pre = tw_snapshot(d1);
	struct bfo_copy_callbacks cb = { .progress = cancel_on_progress, .error = on_error };
	const char *srcs[] = { tw_input_src(in) };

	tw_settle();
	T_OK(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE, &cb));
	cancel_me = c;
	int ret = bfo_copier_run(c, srcs, 1, d1);

	bfo_copier_stats(c, &st);
	TW_CHECK(ret == -ECANCELED, "bfo_copier_run cancelled from its progress callback returned %d (%s)",
		 ret, bfo_strerror(ret));
	tw_input_check(in, d1, "src/", pre, "cancelled through the API", &present);
	t_log("cancel (API): -ECANCELED after %llu files; %d complete in the copy, nothing torn",
	      (unsigned long long)st.files, present);
	tw_snap_free(pre);

	/* bfo cp and SIGINT once the first batch began */
	char *d3 = t_path(v->tmp, "cancel-cli");

	tw_mkdirs(d3);
	tw_input_pre_create(in, d3, "src/");
	pre = tw_snapshot(d3);
	tw_settle();
	char *argv[] = { BFO_CLI, "cp", "-a", (char *)tw_input_src(in), d3, NULL };
	pid_t pid = tw_spawn(argv, NULL, NULL);
	bool began = false;

	for (int i = 0; i < 200000 && !began; i++) {
		began = tw_manifests(d3, NULL, 0) > 0;
		if (!began)
			tw_sleep_ns(20000);
	}
	kill(pid, SIGINT);
	int status = tw_wait(pid);

	TW_CHECK(!began || status == 130, "bfo cp interrupted by SIGINT inside a batch: exit %d, expected 130",
		 status);
	/* bfo cp replaces the pre-existing files that differ: each is then
	 * its old or its new version, whole */
	tw_input_replaceable(in, true);
	tw_input_check(in, d3, "src/", pre, "bfo cp interrupted by SIGINT", &present);
	t_log("cancel (SIGINT): exit %d, %d complete in the copy, nothing torn", status, present);
	tw_snap_free(pre);
	bfo_copier_destroy(c);
	tw_input_free(in);
	free(indir);
	free(d1);
	free(d3);
	tw_checks_end();
}

/* A missing source among good ones: reported, the others copied. */
static void scenario_missing_among(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "among-src"), *dst = t_path(v->tmp, "among-bfo");
	char *ref = t_path(v->tmp, "among-cp"), *missing = t_path(v->tmp, "no-such-dir");
	struct tw_run r, c;

	tw_mkdirs(tw_fmt("%s/sub", src));
	t_write_random(tw_fmt("%s/sub/f", src), 5000, 1);
	t_write_random(tw_fmt("%s/g", src), 100, 2);
	/* Atimes after the mtimes: relatime then leaves them alone, so
	 * neither copy's reading changes what the other one copies. */
	{
		const char *names[] = { "sub/f", "g", "sub", "" };
		struct timespec ts[2] = { { time(NULL) + 3600, 0 }, { 0, UTIME_OMIT } };

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			T_ASSERT(utimensat(AT_FDCWD, tw_fmt("%s/%s", src, names[i]), ts, 0) == 0,
				 "utimensat %s", names[i]);
	}
	tw_mkdirs(dst);
	tw_mkdirs(ref);
	const char *a[] = { "-a", missing, src, dst, NULL };

	bfo_cp(&r, (uid_t)-1, a);
	TW_CHECK(r.status == 1 && strstr(r.err, "no-such-dir"),
		 "bfo cp -a MISSING DIR DST (DST a directory): exit %d%s, stderr: %s", r.status,
		 r.status == 128 + SIGSEGV ? " (SIGSEGV)" : "", r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", missing, src, ref, (char *)NULL);
	TW_CHECK(c.status == 1, "cp -a: exit %d", c.status);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, cpa_flags() & ~TW_TOP, "a missing source among others");

	/* the API: the error callback names it */
	struct bfo_copy_callbacks cb = { .error = on_error };
	struct bfo_copier *cp;
	const char *srcs[] = { missing, src };
	char *d2 = t_path(v->tmp, "among-api");

	tw_mkdirs(d2);
	T_OK(bfo_copier_create(&cp, NULL, NULL, BFO_COPY_ARCHIVE, &cb));
	err_calls = 0;
	int ret = bfo_copier_run(cp, srcs, 2, d2);

	TW_CHECK(ret == 1 && err_calls == 1 && strstr(err_path, "no-such-dir") && err_status == -ENOENT,
		 "a missing source among two: returned %d, %d error callbacks (%s: %s)", ret, err_calls, err_path,
		 bfo_strerror(err_status));
	bfo_copier_destroy(cp);
	free(src);
	free(dst);
	free(ref);
	free(missing);
	free(d2);
	t_log("a missing source among others: checked");
	tw_checks_end();
}

/* ------------------------------------------------------------ changing */

struct change {
	const char *path;
	const uint8_t *data;
	uint64_t half, full;
	int changes;
};

/* Truncate grow.bin to half and extend it back: its bytes end as before,
 * its size and ctime moved while the copy held what it read. */
static void change_file(void *arg, const char *path)
{
	struct change *c = arg;
	int fd;

	if (!strstr(path, "grow.bin") || (fd = open(c->path, O_WRONLY)) < 0)
		return;
	if (ftruncate(fd, (off_t)c->half) == 0 &&
	    pwrite(fd, c->data + c->half, c->full - c->half, (off_t)c->half) == (ssize_t)(c->full - c->half))
		c->changes++;
	close(fd);
}

static void scenario_changing(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "changing"), *dst = t_path(v->tmp, "changing-copy");
	uint64_t full = 64u << 20, half = full / 2;
	uint8_t *data = malloc(full);

	tw_mkdirs(src);
	for (int i = 0; i < 20; i++)
		t_write_random(tw_fmt("%s/small%02d", src, i), 1000 + (uint64_t)i * 100, (uint64_t)i);
	t_fill_random(data, full, 99);
	t_write_bytes(tw_fmt("%s/grow.bin", src), data, full);

	/* The change comes between the read of grow.bin's bytes and their
	 * check (libbfo's after_data hook), every time it is read: a change
	 * the copy must see, whatever the scheduler does.  A process changing
	 * the file on its own may not get the CPU while the copy reads it
	 * (then a steady file is copied, rightly, and nothing is tested). */
	struct change ch = { .path = tw_fmt("%s/grow.bin", src), .data = data, .half = half,
			     .full = full };
	struct bfo_copy_callbacks cb = { .error = on_error };
	struct bfo_copier *cp;
	const char *srcs[] = { src };

	ch.path = strdup(ch.path);
	bfo_test_hooks.after_data = change_file;
	bfo_test_hooks.arg = &ch;
	T_OK(bfo_copier_create(&cp, NULL, NULL, BFO_COPY_ARCHIVE, &cb));
	err_calls = 0;
	int ret = bfo_copier_run(cp, srcs, 1, dst);

	bfo_test_hooks.after_data = NULL;
	bfo_copier_destroy(cp);
	TW_CHECK(ch.changes > 0, "the copy never read grow.bin's bytes through the engine");
	TW_CHECK(ret == 1 && err_calls == 1 && strstr(err_path, "grow.bin"),
		 "a source changing during the copy: returned %d, %d error callbacks (%s: %s)", ret,
		 err_calls, err_path, bfo_strerror(err_status));

	int dfd = open(dst, O_RDONLY | O_DIRECTORY);
	char why[256], msg[2048];

	T_ASSERT(dfd >= 0, "no copy at all");
	if (tw_exists_at(dfd, "grow.bin")) {
		bool whole = tw_file_check(dfd, "grow.bin", data, full, why, sizeof(why)) == 0;
		bool halfok = tw_file_check(dfd, "grow.bin", data, half, why, sizeof(why)) == 0;

		TW_CHECK(whole || halfok, "the changing file was copied half: %s", why);
		t_log("changing: the copy holds a consistent %s state", whole ? "full" : "truncated");
	} else {
		t_log("changing: the changing file is absent from the copy (reported: %s: %s)",
		      err_path, bfo_strerror(err_status));
	}
	for (int i = 0; i < 20; i++) {
		uint8_t buf[3000];

		t_fill_random(buf, 1000 + (uint64_t)i * 100, (uint64_t)i);
		TW_CHECK(tw_file_check(dfd, tw_fmt("small%02d", i), buf, 1000 + (uint64_t)i * 100, why,
				       sizeof(why)) == 0, "small%02d: %s", i, why);
	}
	close(dfd);
	TW_CHECK(tw_leftovers(dst, true, msg, sizeof(msg)) == 0, "leftovers: %s", msg);
	free((char *)ch.path);
	free(data);
	free(src);
	free(dst);
	tw_checks_end();
}

int main(void)
{
	t_init("t_cp", 900);
	root_user = t_is_root();
	umask(022);

	static struct env v;
	const char *tmp = t_tmpdir();
	char why[2048];

	v.tmp = tmp;
	v.src = t_path(tmp, "src");
	v.ref = t_path(tmp, "ref");
	if (root_user) {
		v.xfs = t_loop_fs("xfs", 400, NULL, NULL, why, sizeof(why));
		if (!v.xfs)
			t_log("no XFS loop file system (%s): the stem engine is not used", why);
	} else {
		t_log("not root: owners, devices and trusted xattrs are not part of the tree");
	}
	int n = tw_gen_tree(v.src, 12345);
	struct tw_run c;

	tw_runl(&c, "cp", "-a", v.src, v.ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a %s %s: %s", v.src, v.ref, c.err);
	tw_run_free(&c);
	t_log("source tree of %d entries (one file of %u bytes) on %s", n, BIG, tw_fstype(tmp));

	t_subtest("archive", 300, scenario_archive, &v);
	t_subtest("rules", 120, scenario_rules, &v);
	t_subtest("dot sources", 60, scenario_dots, &v);
	t_subtest("exit codes", 120, scenario_exit, &v);
	t_subtest("recursive", 120, scenario_recursive, &v);
	t_subtest("rerun", 300, scenario_rerun, &v);
	t_subtest("no regular files", 60, scenario_noregular, &v);
	t_subtest("hard links in pieces", 120, scenario_biglinks, &v);
	t_subtest("capabilities", 60, scenario_caps, &v);
	t_subtest("cancel", 120, scenario_cancel, &v);
	t_subtest("missing among sources", 60, scenario_missing_among, &v);
	t_subtest("changing source", 120, scenario_changing, &v);
	t_done();
	return 0;
}

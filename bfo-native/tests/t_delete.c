/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_delete: what `bfo cp --delete` must never lose (issue 52), each case
 * against rsync run the same way where rsync is installed.
 *
 *  - several sources: `s1/. s2/. D`, `A/. B D`, `dir/. FILE D`,
 *    `x/d y/d D`, each run three times with --delete (-v on the last):
 *    every entry of every source is in D, nothing is deleted, nothing
 *    said deleted; a name two sources give is the first one's (a
 *    directory's over a file's), as rsync has it; -n says nothing is
 *    deleted either; through a remote shell (push and pull) the same.
 *  - one deletion is counted and said once, with two sources.
 *  - a directory of D where SRC has a file (or a symbolic link), holding
 *    an excluded file: kept with the excluded file, what --delete may
 *    delete below it deleted, the rest of the copy done, exit 1 and a
 *    message naming it (rsync: "cannot delete non-empty directory", 23);
 *    without the excluded file it is replaced, and -v names everything
 *    below it that went.
 *  - `--exclude='**' + '/c'` keeps a top-level c (rsync's "**" + "/"
 *    matches no directory too).
 *  - a kill between the two unlinks that end a batch (strace: the second
 *    unlinkat) loses nothing: bfo recover keeps the new file.
 *  - --max-delete=N deletes N, says how many it did not, exits 25; =0
 *    deletes nothing; through a remote shell the same.
 *  - a user's files in DST/.bfo-journal named like bfo's own (a lock of
 *    a gone pid, an empty record) stay.
 *  - after SIGTERM the message names SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_wutil.h"

struct env {
	const char *tmp, *rsh;
};

/* bfo cp with argv (NULL-terminated after "cp"), its outputs in r. */
static void bfo_cp(struct tw_run *r, const char *const *args)
{
	char *argv[32];
	int n = 0;

	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

static bool has_line(const char *text, const char *prefix)
{
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, prefix, strlen(prefix)))
			return true;
	return false;
}

static const char *file_text(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[k > 0 ? k : 0] = '\0';
	return buf;
}

/* ------------------------------------------------------------ several sources */

struct form {
	const char *name;
	const char *srcs[3];        /* below the case's directory */
};

static void several_form(const struct env *v, const struct form *fm, bool remote, bool pull)
{
	char *dir = t_mkdtemp_in(v->tmp), msg[4096];
	const char *args[16];
	struct tw_run r;
	int n;

	/* sources: s1 and s2 share "f" (different bytes) and "z" (a file in
	 * one, a directory in the other) */
	T_ASSERT(t_sh("cd '%s' && mkdir -p s1 s2/z A/sub B x/d y/d && echo 1 > s1/one && "
		      "echo 2 > s2/two && echo first > s1/f && echo second-longer > s2/f && "
		      "echo file > s1/z && echo in > s2/z/in && echo a > A/a && echo b > B/b && "
		      "echo xa > x/d/xa && echo ya > y/d/ya && echo F > FILE && echo clash > A/FILE",
		      dir) == 0, "sources");
	for (int round = 0; round < 3; round++) {
		n = 0;
		args[n++] = "-a";
		args[n++] = "--delete";
		if (round == 2)
			args[n++] = "-v";
		if (remote) {
			args[n++] = "-e";
			args[n++] = v->rsh;
			args[n++] = "--remote-bfo";
			args[n++] = BFO_CLI;
		}
		for (int i = 0; fm->srcs[i]; i++)
			args[n++] = pull ? tw_fmt("h:%s/%s", dir, fm->srcs[i]) : tw_fmt("%s/%s", dir, fm->srcs[i]);
		args[n++] = remote && !pull ? tw_fmt("h:%s/D", dir) : tw_fmt("%s/D", dir);
		args[n] = NULL;
		bfo_cp(&r, args);
		TW_CHECK(r.status == 0, "[%s%s round %d] exit %d: %s", fm->name, remote ? (pull ? ", pull" :
			 ", push") : "", round, r.status, r.err);
		TW_CHECK(!strstr(r.out, "deleting "), "[%s%s round %d] said it deleted: %s", fm->name,
			 remote ? (pull ? ", pull" : ", push") : "", round, r.out);
		tw_run_free(&r);
	}
	/* -n says nothing would be deleted either */
	n = 0;
	args[n++] = "-a";
	args[n++] = "--delete";
	args[n++] = "-n";
	args[n++] = "-v";
	for (int i = 0; fm->srcs[i]; i++)
		args[n++] = tw_fmt("%s/%s", dir, fm->srcs[i]);
	args[n++] = tw_fmt("%s/D", dir);
	args[n] = NULL;
	bfo_cp(&r, args);
	TW_CHECK(r.status == 0 && !strstr(r.out, "deleting "), "[%s -n] exit %d, said: %s", fm->name,
		 r.status, r.out);
	tw_run_free(&r);
	/* what rsync makes of the same sources */
	if (t_have_prog("rsync")) {
		char cmd[1024] = "";

		for (int i = 0; fm->srcs[i]; i++)
			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " '%s/%s'", dir, fm->srcs[i]);
		T_ASSERT(t_sh("rsync -a --delete %s '%s/R' && rsync -a --delete %s '%s/R'", cmd, dir, cmd,
			      dir) == 0, "rsync");
		int nd = tw_tree_diff(tw_fmt("%s/R", dir), tw_fmt("%s/D", dir), TW_MODE, NULL, msg, sizeof(msg));

		TW_CHECK(nd == 0, "[%s%s] %d differences from rsync: %s", fm->name, remote ? (pull ? ", pull" :
			 ", push") : "", nd, msg);
	}
	t_sh("rm -rf '%s'", dir);
	free(dir);
}

static void scenario_several(void *arg)
{
	const struct env *v = arg;
	static const struct form forms[] = {
		{ "s1/. s2/.", { "s1/.", "s2/.", NULL } },
		{ "A/. B", { "A/.", "B", NULL } },
		{ "A/. FILE", { "A/.", "FILE", NULL } },
		{ "x/d y/d", { "x/d", "y/d", NULL } },
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		several_form(v, &forms[i], false, false);
		several_form(v, &forms[i], true, false);
		several_form(v, &forms[i], true, true);
	}
	tw_checks_end();
}

/* One deletion, two sources: said and counted once. */
static void scenario_count_once(void *arg)
{
	const struct env *v = arg;
	char *dir = t_mkdtemp_in(v->tmp);
	struct tw_run r;

	T_ASSERT(t_sh("cd '%s' && mkdir s1 s2 && echo 1 > s1/one && echo 2 > s2/two && "
		      "echo gone > s1/gone", dir) == 0, "sources");
	const char *a1[] = { "-a", tw_fmt("%s/s1/.", dir), tw_fmt("%s/s2/.", dir), tw_fmt("%s/D", dir), NULL };

	bfo_cp(&r, a1);
	tw_run_free(&r);
	T_ASSERT(unlink(tw_fmt("%s/s1/gone", dir)) == 0, "unlink");
	const char *a2[] = { "-a", "--delete", "-v", tw_fmt("%s/s1/.", dir), tw_fmt("%s/s2/.", dir),
			     tw_fmt("%s/D", dir), NULL };

	bfo_cp(&r, a2);
	TW_CHECK(r.status == 0, "exit %d: %s", r.status, r.err);
	const char *first = strstr(r.out, "deleting gone");

	TW_CHECK(first && !strstr(first + 1, "deleting gone"), "said: %s", r.out);
	TW_CHECK(strstr(r.err, " 1 deleted"), "the summary does not count one deletion: %s", r.err);
	TW_CHECK(tw_exists(tw_fmt("%s/D/one", dir)) && tw_exists(tw_fmt("%s/D/two", dir)) &&
		 !tw_exists(tw_fmt("%s/D/gone", dir)), "D is not one, two");
	tw_run_free(&r);
	t_sh("rm -rf '%s'", dir);
	free(dir);
	tw_checks_end();
}

/* ------------------------------------------------------------ type changes */

static void type_change(const struct env *v, bool link, bool excluded, bool remote)
{
	char *dir = t_mkdtemp_in(v->tmp), msg[4096];
	const char *what = tw_fmt("%s%s%s", link ? "symlink" : "file", excluded ? ", excluded inside" : "",
				  remote ? ", remote" : "");
	struct tw_run r;

	T_ASSERT(t_sh("cd '%s' && mkdir -p src D/y/sub && %s && echo other > D/y/other && "
		      "echo o3 > D/y/sub/o3 && %s && echo s > src/kept && cp -a D R",
		      dir, link ? "ln -s elsewhere src/y" : "echo new > src/y",
		      excluded ? "echo precious > D/y/keep.conf" : "true") == 0, "trees");
	const char *args[] = { "-a", "--delete", "-v", "--exclude", "*.conf", "-e", v->rsh,
			       "--remote-bfo", BFO_CLI, tw_fmt("%s/src/.", dir),
			       remote ? tw_fmt("h:%s/D", dir) : tw_fmt("%s/D", dir), NULL };

	bfo_cp(&r, args);
	if (excluded) {
		TW_CHECK(r.status == 1, "[%s] exit %d, not 1: %s", what, r.status, r.err);
		TW_CHECK(strstr(r.err, "y: cannot delete non-empty directory"), "[%s] said: %s", what, r.err);
		TW_CHECK(!strcmp(file_text(tw_fmt("%s/D/y/keep.conf", dir)), "precious\n"),
			 "[%s] the excluded file is gone", what);
		TW_CHECK(!tw_exists(tw_fmt("%s/D/y/other", dir)) && !tw_exists(tw_fmt("%s/D/y/sub", dir)),
			 "[%s] what --delete may delete below it stays", what);
	} else {
		TW_CHECK(r.status == 0, "[%s] exit %d: %s", what, r.status, r.err);
		TW_CHECK(has_line(r.out, "deleting y/other") && has_line(r.out, "deleting y/sub/o3") &&
			 has_line(r.out, "deleting y/sub"), "[%s] -v does not name what went: %s", what, r.out);
		struct stat st;

		TW_CHECK(lstat(tw_fmt("%s/D/y", dir), &st) == 0 && (link ? S_ISLNK(st.st_mode) : S_ISREG(st.st_mode)),
			 "[%s] y was not replaced", what);
	}
	TW_CHECK(!strcmp(file_text(tw_fmt("%s/D/kept", dir)), "s\n"), "[%s] the rest was not copied", what);
	if (t_have_prog("rsync")) {
		int st = t_sh("rsync -a --delete --exclude='*.conf' '%s/src/.' '%s/R' >/dev/null 2>&1", dir, dir);
		int nd = tw_tree_diff(tw_fmt("%s/R", dir), tw_fmt("%s/D", dir), TW_MODE, NULL, msg, sizeof(msg));

		TW_CHECK(nd == 0, "[%s] %d differences from rsync: %s", what, nd, msg);
		TW_CHECK((st != 0) == excluded, "[%s] rsync exit %d", what, st);
	}
	int nd = tw_leftovers(tw_fmt("%s/D", dir), true, msg, sizeof(msg));

	TW_CHECK(nd == 0, "[%s] leftovers: %s", what, msg);
	tw_run_free(&r);
	t_sh("rm -rf '%s'", dir);
	free(dir);
}

static void scenario_type_change(void *arg)
{
	for (int k = 0; k < 8; k++)
		type_change(arg, k & 1, k & 2, k & 4);
	tw_checks_end();
}

/* ------------------------------------------------------------ ** at the top */

static void scenario_star2_top(void *arg)
{
	const struct env *v = arg;
	char *dir = t_mkdtemp_in(v->tmp);
	struct tw_run r;

	T_ASSERT(t_sh("cd '%s' && mkdir src D && echo s > src/f && echo precious > D/c && "
		      "mkdir D/sub && echo precious > D/sub/c", dir) == 0, "trees");
	const char *args[] = { "-a", "--delete", "-v", "--exclude", "**/c", tw_fmt("%s/src/.", dir),
			       tw_fmt("%s/D", dir), NULL };

	bfo_cp(&r, args);
	TW_CHECK(r.status == 0, "exit %d: %s", r.status, r.err);
	TW_CHECK(!strstr(r.out, "deleting c") && !strcmp(file_text(tw_fmt("%s/D/c", dir)), "precious\n") &&
		 !strcmp(file_text(tw_fmt("%s/D/sub/c", dir)), "precious\n"),
		 "'**/c' did not keep c: %s", r.out);
	tw_run_free(&r);
	t_sh("rm -rf '%s'", dir);
	free(dir);
	tw_checks_end();
}

/* ------------------------------------------------------------ the journal's end */

static void scenario_journal_end(void *arg)
{
	const struct env *v = arg;
	char *dir = t_mkdtemp_in(v->tmp);
	struct tw_run r;

	if (!t_have_prog("strace"))
		t_skip("strace is not installed: no kill at a syscall");
	T_ASSERT(t_sh("cd '%s' && mkdir src && echo old > src/f && '%s' cp -a src/. dst && "
		      "echo 'new, longer' > src/f", dir, BFO_CLI) == 0, "first copy");
	/* the batch's end: rename, syncfs, unlink, unlink; killed at the second */
	tw_runl(&r, "strace", "-f", "-qq", "-o", "/dev/null", "-e",
		"inject=unlinkat:signal=KILL:when=2", BFO_CLI, "cp", "-a", "--delete",
		tw_fmt("%s/src/.", dir), tw_fmt("%s/dst", dir), NULL);
	TW_CHECK(r.status == 128 + SIGKILL, "not killed at the second unlinkat: exit %d", r.status);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "recover", tw_fmt("%s/dst", dir), NULL);
	TW_CHECK(r.status == 0, "recover exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	TW_CHECK(!strcmp(file_text(tw_fmt("%s/dst/f", dir)), "new, longer\n"),
		 "the file the batch published is gone or torn: '%s'", file_text(tw_fmt("%s/dst/f", dir)));
	t_sh("rm -rf '%s'", dir);
	free(dir);
	tw_checks_end();
}

/* ------------------------------------------------------------ --max-delete */

static void max_delete(const struct env *v, bool remote)
{
	char *dir = t_mkdtemp_in(v->tmp);
	struct tw_run r;
	int left;

	T_ASSERT(t_sh("cd '%s' && mkdir src && for i in 1 2 3 4 5 6; do echo $i > src/f$i; done && "
		      "'%s' cp -a src/. D && rm src/f1 src/f2 src/f3 src/f4", dir, BFO_CLI) == 0, "trees");
	for (int limit = 0; limit <= 2; limit += 2) {
		const char *dst = remote ? tw_fmt("h:%s/D", dir) : tw_fmt("%s/D", dir);
		const char *args[] = { "-a", "--delete", tw_fmt("--max-delete=%d", limit), "-e", v->rsh,
				       "--remote-bfo", BFO_CLI, tw_fmt("%s/src/.", dir), dst, NULL };

		bfo_cp(&r, args);
		TW_CHECK(r.status == 25, "[--max-delete=%d%s] exit %d, not 25: %s", limit,
			 remote ? ", remote" : "", r.status, r.err);
		TW_CHECK(strstr(r.err, tw_fmt("--max-delete's limit: %d not deleted", 4 - limit)),
			 "[--max-delete=%d%s] said: %s", limit, remote ? ", remote" : "", r.err);
		tw_run_free(&r);
		left = 0;
		for (int i = 1; i <= 4; i++)
			left += tw_exists(tw_fmt("%s/D/f%d", dir, i));
		TW_CHECK(left == 4 - limit, "[--max-delete=%d%s] %d of 4 left", limit, remote ? ", remote" : "",
			 left);
	}
	const char *args[] = { "-a", "--delete", "--max-delete=2", "-e", v->rsh, "--remote-bfo", BFO_CLI,
			       tw_fmt("%s/src/.", dir), remote ? tw_fmt("h:%s/D", dir) : tw_fmt("%s/D", dir),
			       NULL };

	bfo_cp(&r, args);
	TW_CHECK(r.status == 0, "[within the limit%s] exit %d: %s", remote ? ", remote" : "", r.status, r.err);
	tw_run_free(&r);
	t_sh("rm -rf '%s'", dir);
	free(dir);
}

static void scenario_max_delete(void *arg)
{
	max_delete(arg, false);
	max_delete(arg, true);
	tw_checks_end();
}

/* ------------------------------------------------------------ a user's journal files */

static void scenario_journal_files(void *arg)
{
	const struct env *v = arg;
	char *dir = t_mkdtemp_in(v->tmp);
	struct tw_run r;

	T_ASSERT(t_sh("cd '%s' && mkdir -p src D/.bfo-journal && chmod 700 D/.bfo-journal && "
		      "echo s > src/f && echo mine > D/.bfo-journal/w-99999999-abc.lock && "
		      ": > D/.bfo-journal/w-99999998-abd.lockx && echo notes > D/.bfo-journal/probe-99999997-1-a",
		      dir) == 0, "trees");
	const char *args[] = { "-a", tw_fmt("%s/src/.", dir), tw_fmt("%s/D", dir), NULL };

	bfo_cp(&r, args);
	TW_CHECK(r.status == 0, "exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "recover", tw_fmt("%s/D", dir), NULL);
	tw_run_free(&r);
	TW_CHECK(tw_exists(tw_fmt("%s/D/.bfo-journal/w-99999999-abc.lock", dir)) &&
		 tw_exists(tw_fmt("%s/D/.bfo-journal/w-99999998-abd.lockx", dir)) &&
		 tw_exists(tw_fmt("%s/D/.bfo-journal/probe-99999997-1-a", dir)),
		 "a user's file in the journal was removed");
	t_sh("rm -rf '%s'", dir);
	free(dir);
	tw_checks_end();
}

/* ------------------------------------------------------------ SIGTERM */

static void scenario_sigterm(void *arg)
{
	const struct env *v = arg;
	char *dir = t_mkdtemp_in(v->tmp), *out = t_path(dir, "out");
	char *argv[] = { BFO_CLI, "cp", "-a", "--delete", NULL, NULL, NULL };
	pid_t pid;
	int st;

	T_ASSERT(t_sh("cd '%s' && mkdir src && for i in $(seq 1 2000); do echo $i > src/f$i; done && "
		      "'%s' cp -a src/. D && touch src/*", dir, BFO_CLI) == 0, "trees");
	argv[4] = (char *)tw_fmt("%s/src/.", dir);
	argv[5] = strdup(tw_fmt("%s/D", dir));
	pid = tw_spawn(argv, NULL, out);
	T_ASSERT(tw_wait_catching(pid, BFO_CLI, SIGTERM), "bfo cp ended before it caught SIGTERM");
	kill(pid, SIGTERM);
	st = tw_wait(pid);
	if (st == 0)
		t_log("sigterm: the copy was done before the signal (nothing to check on this run)");
	else
		TW_CHECK(st == 128 + SIGTERM && strstr(file_text(out), "stopped by SIGTERM"),
			 "exit %d, said: %s", st, file_text(out));
	free(argv[5]);
	t_sh("rm -rf '%s'", dir);
	free(out);
	free(dir);
	tw_checks_end();
}

int main(void)
{
	static struct env v;

	t_init("t_delete", 1200);
	umask(022);
	v.tmp = t_tmpdir();
	v.rsh = tw_local_rsh(v.tmp);
	if (!t_have_prog("rsync"))
		t_log("rsync is not installed: the results are not compared with rsync's");
	t_subtest("several sources", 600, scenario_several, &v);
	t_subtest("counted once", 120, scenario_count_once, &v);
	t_subtest("type change", 300, scenario_type_change, &v);
	t_subtest("** at the top", 60, scenario_star2_top, &v);
	t_subtest("journal end", 60, scenario_journal_end, &v);
	t_subtest("max delete", 120, scenario_max_delete, &v);
	t_subtest("journal files", 60, scenario_journal_files, &v);
	t_subtest("sigterm", 120, scenario_sigterm, &v);
	t_done();
	return 0;
}

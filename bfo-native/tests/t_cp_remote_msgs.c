/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cp_remote_msgs: what `bfo cp HOST:` says when the far side cannot run,
 * and its one summary (issue 55 item 5), through a remote shell that runs
 * the far side here (tw_local_rsh), both ways (push SRC h:DST, pull h:SRC
 * DST):
 *  - --remote-bfo /nonexistent/bfo: exit 2, exactly one line of bfo's on
 *    stderr (the shell's own "not found" aside), naming --remote-bfo, not
 *    "did not answer" nor "stream is empty"; DST not made.
 *  - a host the remote shell cannot reach (a shell that says so as ssh
 *    does and exits 255): exit 2, one line of bfo's, "could not reach".
 *  - -v: exactly one summary line, in the sender's terms both ways
 *    ("N files sent (X)", out the stream's bytes, in the answers', as
 *    the push says it); N and X are the tree's files and bytes, and the
 *    copy equals rsync -a's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

static const char *tmp, *rsh, *src;

static void cp_run(struct tw_run *r, const char *shell, const char *bfo, const char *a,
		   const char *b, bool verbose)
{
	char *argv[] = { BFO_CLI, "cp", "-a", "--rsh", (char *)shell, "--remote-bfo", (char *)bfo,
			 (char *)a, (char *)b, verbose ? "-v" : NULL, NULL };

	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

/* Lines of err that start with prefix. */
static int lines_with(const char *err, const char *prefix)
{
	int n = 0;

	for (const char *l = err; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !strncmp(l, prefix, strlen(prefix));
	return n;
}

static void one_reason(const char *shell, const char *bfo, const char *want, const char *what)
{
	for (int k = 0; k < 2; k++) {
		const char *dst = t_keep(t_pathf("%s/never-%s-%d", tmp, what, k));
		struct tw_run r;

		if (k)
			cp_run(&r, shell, bfo, tw_fmt("h:%s", src), dst, false);
		else
			cp_run(&r, shell, bfo, src, tw_fmt("h:%s", dst), false);
		t_log("%s, %s: exit %d: %s", what, k ? "pull" : "push", r.status, r.err);
		TW_CHECK(r.status == 2, "[%s, %s] exit %d (expected 2): %s", what, k ? "pull" : "push",
			 r.status, r.err);
		TW_CHECK(lines_with(r.err, "bfo: ") == 1 && strstr(r.err, want),
			 "[%s, %s] expected one line of bfo's, saying %s: %s", what, k ? "pull" : "push",
			 want, r.err);
		TW_CHECK(!strstr(r.err, "did not answer") && !strstr(r.err, "stream is empty"),
			 "[%s, %s] a broken stream was said: %s", what, k ? "pull" : "push", r.err);
		TW_CHECK(!tw_exists(dst), "[%s, %s] %s was made", what, k ? "pull" : "push", dst);
		tw_run_free(&r);
	}
}

static void no_bfo(void *arg)
{
	one_reason(rsh, "/nonexistent/bfo", "--remote-bfo", "no bfo there");
	tw_checks_end();
}

static void unreachable(void *arg)
{
	static const char sh[] = "#!/bin/sh\necho \"ssh: Could not resolve hostname $1: Name or "
				 "service not known\" >&2\nexit 255\n";
	const char *p = t_keep(t_path(tmp, "rsh-unreachable"));

	t_write_bytes(p, sh, sizeof(sh) - 1);
	T_ASSERT(chmod(p, 0755) == 0, "chmod %s", p);
	one_reason(p, BFO_CLI, "could not reach", "unreachable");
	tw_checks_end();
}

/* "N files sent (X ...)": N, and X in bytes. */
static bool sent(const char *err, long *n, double *bytes)
{
	const char *p = strstr(err, " files sent (");
	char unit[4];

	if (!p)
		return false;
	while (p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (sscanf(p, "%ld files sent (%lf %3[kMB]", n, bytes, unit) != 3)
		return false;
	*bytes *= !strcmp(unit, "MB") ? 1e6 : !strcmp(unit, "kB") ? 1e3 : 1;
	return true;
}

static void summary(void *arg)
{
	const char *ref = t_keep(t_pathf("%s/ref", tmp));
	char msg[1024];

	tw_mkdirs(ref);
	T_EQ(t_sh("rsync -a %s %s", src, ref), 0);
	for (int k = 0; k < 2; k++) {
		const char *dst = t_keep(t_pathf("%s/%s", tmp, k ? "pulled" : "pushed"));
		struct tw_run r;
		long n = -1;
		double bytes = -1;

		tw_mkdirs(dst);
		if (k)
			cp_run(&r, rsh, BFO_CLI, tw_fmt("h:%s", src), dst, true);
		else
			cp_run(&r, rsh, BFO_CLI, src, tw_fmt("h:%s", dst), true);
		t_log("%s -v: %s", k ? "pull" : "push", r.err);
		TW_CHECK(r.status == 0, "[%s] exit %d: %s", k ? "pull" : "push", r.status, r.err);
		TW_CHECK(lines_with(r.err, "bfo cp: ") == 1 && lines_with(r.err, "bfo recv") == 0 &&
			 lines_with(r.err, "bfo send") == 0, "[%s] not one summary: %s",
			 k ? "pull" : "push", r.err);
		TW_CHECK(sent(r.err, &n, &bytes) && n == 12 && bytes >= 12 * 30000 * 0.99 &&
			 bytes <= 12 * 30000 * 1.01, "[%s] the summary does not say 12 files sent, "
			 "360.0 kB: %s", k ? "pull" : "push", r.err);
		/* out: the stream (the data), in: the answers */
		double out = -1, in = -1;
		char u1[4], u2[4];
		const char *w = strstr(r.err, "on the wire (");

		TW_CHECK(w && sscanf(w, "on the wire (%lf %3[kMB] out, %lf %3[kMB] in)", &out, u1, &in,
				     u2) == 4 && strcmp(u1, "B") && !strcmp(u2, "B"),
			 "[%s] not in the sender's terms (the data out, the answers in): %s",
			 k ? "pull" : "push", r.err);
		int nd = tw_tree_diff(tw_fmt("%s/src", ref), tw_fmt("%s/src", dst),
				      TW_MODE | TW_MTIME | TW_LINKS | TW_TOP, NULL, msg, sizeof(msg));

		TW_CHECK(nd == 0, "[%s] differs from rsync -a's copy: %s", k ? "pull" : "push", msg);
		tw_run_free(&r);
	}
	tw_checks_end();
}

int main(void)
{
	t_init("t_cp_remote_msgs", 300);
	umask(022);
	if (!t_have_prog("rsync"))
		t_skip("no rsync to compare with");
	tmp = t_tmpdir();
	rsh = t_keep(tw_local_rsh(tmp));
	src = t_keep(t_path(tmp, "src"));
	tw_mkdirs(tw_fmt("%s/d", src));
	for (int i = 0; i < 12; i++)
		t_write_random(tw_fmt("%s/%s%02d", src, i % 2 ? "d/f" : "f", i), 30000, (uint64_t)i + 3);
	/* in the past: rsync 3.5.0 leaves a directory's mtime of this second */
	T_EQ(t_sh("find %s -exec touch -h -d @1577934245.123456789 {} +", src), 0);
	t_subtest("no bfo there", 60, no_bfo, NULL);
	t_subtest("unreachable host", 60, unreachable, NULL);
	t_subtest("one summary", 60, summary, NULL);
	t_done();
}

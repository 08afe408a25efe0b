/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_owner_ns: copies made in a user namespace that does not map the
 * owners of what it copies, against GNU cp -a doing the same there.
 *
 * root makes a tree whose entries belong to uid/gid 1000 (a file, a set-id
 * program, a file of group 1000 only, a setgid directory with a file of
 * root's, a symbolic link) beside a file of root's; then, in a user
 * namespace that maps root alone (as `unshare -r` and rootless containers
 * do), where a chown to 1000 or to the overflow id 65534 fails with
 * EINVAL:
 *  - the writer: every entry is written (status 0); those whose owner
 *    cannot be given say so (owner_status -EINVAL) and are the caller's,
 *    their mode & 0700 (no set-id bit, nothing for a group), their times
 *    kept; a mapped owner is given and the whole mode with it;
 *  - `bfo cp -a SRC/. DST`, run twice (the second with --update), and
 *    `bfo send -a SRC/ | bfo recv -a DST`: the receiving side exits 1 with
 *    one "ownership not preserved" line naming each such entry and nothing
 *    else on stderr, and the tree equals `cp -a`'s made in the same
 *    namespace (types, bytes, modes, owners, ns times, the top directory),
 *    but for the symbolic link's times: cp -a leaves them the current ones
 *    when the link's owner cannot be given (rsync leaves every such
 *    entry's), bfo keeps them as for every other entry.
 *
 * Skipped (77) when not root (the tree needs foreign owners) or where user
 * namespaces cannot be made.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bfo.h"
#include "t_helpers.h"
#include "t_wutil.h"

#define THEIRS 1000u

static const char *tmp, *src;

static const char *const lost_names[] = { "a", "s", "g", "dd", "l" };
#define NLOST (sizeof(lost_names) / sizeof(lost_names[0]))

static void set_times(const char *path, long sec)
{
	/* atimes ahead of now: no relatime update moves them while copied */
	struct timespec ts[2] = { { time(NULL) + 86400, 123456789 }, { sec, 987654321 } };

	T_ASSERT(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) == 0, "utimensat %s: %s", path,
		 strerror(errno));
}

static void make_file(const char *name, const char *text, uid_t uid, gid_t gid, mode_t mode)
{
	char *p = t_path(src, name);

	t_write_bytes(p, text, strlen(text));
	T_ASSERT(chown(p, uid, gid) == 0 && chmod(p, mode) == 0, "%s: %s", p, strerror(errno));
	set_times(p, 1700000000 + (long)strlen(name));
	free(p);
}

static void make_tree(void)
{
	char *dd = t_path(src, "dd"), *l = t_path(src, "l");

	T_ASSERT(mkdir(src, 0755) == 0 && mkdir(dd, 0755) == 0, "mkdir: %s", strerror(errno));
	make_file("a", "theirs\n", THEIRS, THEIRS, 0644);
	make_file("s", "#!/bin/sh\necho set-id\n", THEIRS, THEIRS, 04755);
	make_file("g", "group only\n", 0, THEIRS, 0640);
	make_file("r", "root's\n", 0, 0, 0644);
	make_file("dd/f", "inside\n", 0, 0, 0644);
	T_ASSERT(symlink("a", l) == 0 && lchown(l, THEIRS, THEIRS) == 0, "symlink: %s", strerror(errno));
	set_times(l, 1700000100);
	T_ASSERT(chown(dd, THEIRS, THEIRS) == 0 && chmod(dd, 02775) == 0, "dd: %s", strerror(errno));
	set_times(dd, 1700000200);
	set_times(src, 1700000300);
	free(dd);
	free(l);
}

static void write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	T_ASSERT(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text), "%s: %s", path,
		 strerror(errno));
	close(fd);
}

/* This process into a user namespace of root alone (unshare -r). */
static void enter_ns(void)
{
	if (unshare(CLONE_NEWUSER) < 0)
		t_skip("no user namespace can be made here: %s", strerror(errno));
	write_proc("/proc/self/setgroups", "deny");
	write_proc("/proc/self/uid_map", "0 0 1");
	write_proc("/proc/self/gid_map", "0 0 1");
}

static void expect_stat(const char *path, mode_t mode, uid_t uid, gid_t gid, long mtime)
{
	struct stat st;

	T_ASSERT(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	if (!S_ISLNK(st.st_mode))
		T_ASSERT((st.st_mode & 07777) == mode, "%s: mode %o, expected %o", path,
			 st.st_mode & 07777, mode);
	T_ASSERT(st.st_uid == uid && st.st_gid == gid, "%s: owner %u:%u, expected %u:%u", path,
		 st.st_uid, st.st_gid, uid, gid);
	if (mtime)
		T_ASSERT(st.st_mtim.tv_sec == mtime && st.st_mtim.tv_nsec == 987654321,
			 "%s: mtime %ld.%09ld", path, (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static void scenario_writer(void *arg)
{
	char *root = t_path(tmp, "w");
	struct bfo_write_opts o = { .size = sizeof(o) };
	struct bfo_writer *w;
	unsigned fl = BFO_WENTRY_OWNER | BFO_WENTRY_TIMES;
	struct bfo_wentry e[] = {
		{ .path = "mine", .data = "m", .length = 1, .type = BFO_WTYPE_FILE, .mode = 04755 },
		{ .path = "theirs", .data = "t", .length = 1, .type = BFO_WTYPE_FILE, .mode = 04755,
		  .uid = THEIRS, .gid = THEIRS },
		{ .path = "grp", .data = "g", .length = 1, .type = BFO_WTYPE_FILE, .mode = 0640,
		  .gid = THEIRS },
		{ .path = "d", .type = BFO_WTYPE_DIR, .mode = 02775, .uid = THEIRS, .gid = THEIRS },
		{ .path = "d/link", .data = "../theirs", .type = BFO_WTYPE_SYMLINK, .uid = THEIRS,
		  .gid = THEIRS },
	};
	const int want[] = { 0, -EINVAL, -EINVAL, -EINVAL, -EINVAL };
	unsigned n = sizeof(e) / sizeof(e[0]);

	(void)arg;
	enter_ns();
	for (unsigned i = 0; i < n; i++) {
		e[i].flags = fl;
		e[i].mtime_sec = 1700000000 + i;
		e[i].mtime_nsec = 987654321;
		e[i].owner_status = 12345;      /* an out field: set by the writer */
	}
	T_OK(bfo_writer_open(&w, root, &o));
	T_EQ(bfo_writer_write(w, e, n), 0);
	for (unsigned i = 0; i < n; i++) {
		T_ASSERT(e[i].status == 0, "%s: status %d", e[i].path, e[i].status);
		T_ASSERT(e[i].owner_status == want[i], "%s: owner_status %d, expected %d", e[i].path,
			 e[i].owner_status, want[i]);
	}
	T_OK(bfo_writer_close(w));
	expect_stat(tw_fmt("%s/mine", root), 04755, 0, 0, 1700000000);
	expect_stat(tw_fmt("%s/theirs", root), 0700, 0, 0, 1700000001);
	expect_stat(tw_fmt("%s/grp", root), 0600, 0, 0, 1700000002);
	expect_stat(tw_fmt("%s/d", root), 0700, 0, 0, 1700000003);
	expect_stat(tw_fmt("%s/d/link", root), 0, 0, 0, 0);
	t_log("writer: unmapped owners kept as cp -a keeps them (owner_status -EINVAL), root's given: ok");
	free(root);
}

/* err holds one "ownership not preserved" line for each of lost_names
 * below dst, and nothing else. */
static void expect_lost_lines(const char *err, const char *cmd, const char *dst)
{
	size_t lines = 0;

	for (const char *p = err; *p; p++)
		lines += *p == '\n';
	T_ASSERT(lines == NLOST, "%zu lines on stderr, expected %zu:\n%s", lines, NLOST, err);
	for (size_t i = 0; i < NLOST; i++) {
		const char *want = tw_fmt("bfo: %s: %s/%s: ownership not preserved: %s\n", cmd, dst,
					  lost_names[i], bfo_strerror(-EINVAL));

		T_ASSERT(strstr(err, want), "no line '%s' on stderr:\n%s", want, err);
	}
}

/* dst equals cp -a's copy; but for the link's times, which cp -a leaves
 * the current ones when it cannot give the link its owner (and rsync
 * every entry's): bfo keeps them, as for every other entry. */
static void expect_like_cp(const char *dst, const char *ref)
{
	static const char *const link_times[] = { "l", NULL };
	char msg[4096], target[16];
	ssize_t k = readlink(tw_fmt("%s/l", dst), target, sizeof(target));

	T_ASSERT(tw_tree_diff(dst, ref, TW_CP_A | TW_TOP, link_times, msg, sizeof(msg)) == 0,
		 "%s differs from cp -a's copy: %s", dst, msg);
	T_ASSERT(tw_tree_diff(dst, ref, TW_CP_A & ~(TW_MTIME | TW_ATIME), NULL, msg, sizeof(msg)) == 0,
		 "%s differs from cp -a's copy: %s", dst, msg);
	T_ASSERT(k == 1 && target[0] == 'a', "%s/l: not the link to a", dst);
	expect_stat(tw_fmt("%s/l", dst), 0, 0, 0, 1700000100);
}

/* The reference: cp -a in the namespace (it says what it did not keep). */
static void make_ref(const char *ref)
{
	struct tw_run c;

	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 1 && strstr(c.err, "failed to preserve ownership"),
		 "cp -a: %d %s", c.status, c.err);
	tw_run_free(&c);
}

static void scenario_cp(void *arg)
{
	const char *ref = arg;
	char *dst = t_path(tmp, "cp");
	const char *from = tw_fmt("%s/.", src);
	struct tw_run r;

	enter_ns();
	make_ref(ref);
	tw_runl(&r, BFO_CLI, "cp", "-a", from, dst, (char *)NULL);
	T_ASSERT(r.status == 1, "bfo cp -a: exit %d: %s", r.status, r.err);
	expect_lost_lines(r.err, "cp", dst);
	expect_like_cp(dst, ref);
	tw_run_free(&r);
	/* again: the owners still cannot be given, and it says so again */
	tw_runl(&r, BFO_CLI, "cp", "-a", "--update", from, dst, (char *)NULL);
	T_ASSERT(r.status == 1, "bfo cp -a --update: exit %d: %s", r.status, r.err);
	expect_lost_lines(r.err, "cp", dst);
	expect_like_cp(dst, ref);
	tw_run_free(&r);
	t_log("bfo cp -a, twice: exit 1, each unmapped owner named, the tree of cp -a: ok");
	free(dst);
}

static void scenario_sendrecv(void *arg)
{
	char *dst = t_path(tmp, "recv");
	char *cmd = t_pathf("'%s' send -a '%s/' | '%s' recv -a '%s'; s=(\"${PIPESTATUS[@]}\"); "
			    "exit $((s[0] * 16 + s[1]))", BFO_CLI, src, BFO_CLI, dst);
	char *argv[] = { "bash", "-c", cmd, NULL };
	const char *ref = arg;
	struct tw_run r;

	enter_ns();
	make_ref(ref);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 1, "send | recv: exit %d (send %d, recv %d): %s", r.status,
		 r.status / 16, r.status % 16, r.err);
	expect_lost_lines(r.err, "recv", dst);
	expect_like_cp(dst, ref);
	tw_run_free(&r);
	t_log("bfo send | bfo recv: exit 1, each unmapped owner named, the tree of cp -a: ok");
	free(cmd);
	free(dst);
}

int main(void)
{
	t_init("t_owner_ns", 600);
	if (!t_is_root())
		t_skip("the source tree needs owners other than the caller's: run as root");
	umask(022);
	tmp = t_tmpdir();
	src = t_path(tmp, "src");
	make_tree();
	/* each in a sub-test's own process: the namespace is the child's */
	static char *ref_cp, *ref_recv;     /* (kept: the sub-tests are forked) */

	ref_cp = t_path(tmp, "ref-cp");
	ref_recv = t_path(tmp, "ref-recv");
	t_subtest("writer", 120, scenario_writer, NULL);
	t_subtest("cp", 120, scenario_cp, ref_cp);
	t_subtest("sendrecv", 120, scenario_sendrecv, ref_recv);
	t_done();
	return 0;
}

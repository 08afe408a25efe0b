/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Root runs bfo into a directory U that an unprivileged user ("nobody",
 * uid 65534) owns and can write; that user must gain nothing (the threat
 * model in bfo-native/README.md, "Security").  Issue 16's cases:
 *  - forged: nobody plants U/.bfo-journal with a well-formed manifest that
 *    asks for U/shell (a copy of id) to be mode 04755, owner root; root
 *    then runs `bfo recover U`, `bfo cp f U/restored` and `bfo write U`:
 *    each refuses the journal, says so, and U/shell stays nobody's.
 *  - planted: a genuine root manifest of a batch that crashed (no
 *    identities, or the identity of a file nobody then replaced) lists
 *    U/shell (04755, root) and U/lnk (0666); nobody puts a copy of id at
 *    shell and a symlink to a root-owned victim at lnk: recovery makes
 *    nothing setuid, chmods no victim, chowns nothing of nobody's.
 *  - journal: .bfo-journal as a symlink, a regular file, another user's
 *    directory, a root directory writable by others, and a manifest with
 *    two links are all refused (nothing written, nothing followed).
 *  - swap: while root copies pub777 into U (`bfo cp -a`'s copier, in this
 *    process), nobody moves U/pub777 aside and puts a symlink to a
 *    root-owned victim directory there, at the moment the writer has opened
 *    the directory it made and is about to make its files (test hook
 *    dir_opened): the victim keeps its mode and owner, nothing is made in
 *    it, and the copy reports what it could not do.
 *  - live: `bfo recover DST` run again and again while `bfo cp -a` writes
 *    to DST: the copy loses nothing, its tree equals cp -a's.
 * Needs root (to drop to nobody and to chown); exits 77 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"
#include "test_hooks.h"
#include "write.h"

#define NOBODY 65534

static const char *base;        /* a directory everyone can traverse */

/* Run fn(arg) in a child as nobody; its exit status (0: fn returned). */
static int as_nobody(void (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int st;

	T_ASSERT(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(99);
		fn(arg);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* U: a fresh directory owned by nobody, mode 0755. */
static char *make_u(const char *name)
{
	char *u = t_path(base, name);

	T_ASSERT(mkdir(u, 0755) == 0 && chown(u, NOBODY, NOBODY) == 0, "mkdir %s: %s", u,
		 strerror(errno));
	return u;
}

/* A root-owned victim file, mode 0600: it must never change. */
static char *make_victim(const char *name)
{
	char *v = t_path(base, name);

	t_write_bytes(v, "secret", 6);
	T_ASSERT(chmod(v, 0600) == 0, "chmod victim");
	return v;
}

static void expect_victim(const char *v, const char *what)
{
	struct stat st;

	T_ASSERT(lstat(v, &st) == 0, "lstat %s", v);
	TW_CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 && st.st_uid == 0,
		 "[%s] the root-owned victim changed: mode %o owner %u", what, st.st_mode & 07777,
		 st.st_uid);
}

/* U/shell is still nobody's, and not set-id. */
static void expect_shell_harmless(const char *u, const char *what)
{
	struct stat st;

	if (lstat(tw_fmt("%s/shell", u), &st) < 0) {
		T_ASSERT(errno == ENOENT, "lstat shell");
		return;                 /* removed: harmless */
	}
	TW_CHECK(!(st.st_mode & 06000), "[%s] U/shell became set-id: mode %o owner %u", what,
		 st.st_mode & 07777, st.st_uid);
	TW_CHECK(st.st_uid == NOBODY, "[%s] U/shell was chowned to %u", what, st.st_uid);
}

/* ---------------------------------------------------- nobody's actions */

struct plant {
	const char *u;
	const char *victim;
	bool journal;               /* plant .bfo-journal with a forged manifest */
	bool shell, lnk;            /* put U/shell (a copy of id), U/lnk -> victim */
};

static const struct mentry forged[] = {
	{ .kind = M_OTHER, .wtype = BFO_WTYPE_FILE, .wflags = BFO_WENTRY_OWNER, .mode = 04755,
	  .uid = 0, .gid = 0, .stem_off = UINT64_MAX, .path = "shell" },
	{ .kind = M_OTHER, .wtype = BFO_WTYPE_FIFO, .wflags = 0, .mode = 0666,
	  .stem_off = UINT64_MAX, .path = "lnk" },
};

static void plant(void *arg)
{
	struct plant *p = arg;

	if (p->journal) {
		int ufd = open(p->u, O_RDONLY | O_DIRECTORY), jfd, mfd;

		if (ufd < 0 || mkdirat(ufd, BFO_JOURNAL_DIR, 0700) < 0)
			_exit(10);
		jfd = openat(ufd, BFO_JOURNAL_DIR, O_RDONLY | O_DIRECTORY);
		if (jfd < 0 || journal_manifest_write(jfd, "b-1-1-1.m", forged, 2, NULL, 0, &mfd))
			_exit(11);
		close(mfd);             /* and its lock with it */
	}
	if (p->shell) {
		unlink(tw_fmt("%s/shell", p->u));
		if (t_sh("cp /usr/bin/id '%s/shell'", p->u))
			_exit(12);
	}
	if (p->lnk) {
		unlink(tw_fmt("%s/lnk", p->u));
		if (symlink(p->victim, tw_fmt("%s/lnk", p->u)) < 0)
			_exit(13);
	}
}

/* ------------------------------------------------------------ forged */

static void run_root(struct tw_run *r, const char *in, const char *cmd, const char *a, const char *b)
{
	char *argv[] = { (char *)BFO_CLI, (char *)cmd, (char *)a, (char *)b, NULL };

	tw_run(r, in, in ? strlen(in) : 0, (uid_t)-1, (gid_t)-1, argv);
}

static void scenario_forged(void *arg)
{
	char *victim = make_victim("victim-forged");
	const char *cmds[] = { "recover", "cp", "write" };

	for (unsigned k = 0; k < 3; k++) {
		char *u = make_u(tw_fmt("forged-%s", cmds[k]));
		struct plant p = { .u = u, .victim = victim, .journal = true, .shell = true, .lnk = true };
		struct tw_run r;

		T_EQ(as_nobody(plant, &p), 0);
		if (k == 0)
			run_root(&r, NULL, "recover", u, NULL);
		else if (k == 1)
			run_root(&r, NULL, "cp", victim, tw_fmt("%s/restored", u));
		else
			run_root(&r, "f 644 0 2 x\nhi", "write", u, NULL);
		TW_CHECK(r.status == 2 && strstr(r.err, ".bfo-journal"),
			 "[forged %s] exit %d, expected 2 and an error naming .bfo-journal: %s", cmds[k],
			 r.status, r.err);
		expect_shell_harmless(u, cmds[k]);
		expect_victim(victim, cmds[k]);
		TW_CHECK(access(tw_fmt("%s/restored", u), F_OK) < 0 && access(tw_fmt("%s/x", u), F_OK) < 0,
			 "[forged %s] something was written beside a journal it refused", cmds[k]);
		tw_run_free(&r);
		free(u);
	}
	free(victim);
	tw_checks_end();
}

/* ------------------------------------------------------------ planted */

/*
 * Root's own batch that crashed after its manifest: the manifest (and,
 * with ids, the identity of the U/shell it made) as the writer leaves it.
 */
static void root_crashed_batch(const char *u, bool ids)
{
	int ufd = open(u, O_RDONLY | O_DIRECTORY), jfd, mfd;

	T_ASSERT(ufd >= 0, "open U");
	jfd = journal_dir_open(ufd, true);
	T_ASSERT(jfd >= 0, "journal_dir_open: %s", strerror(-jfd));
	T_OK(journal_manifest_write(jfd, "b-1-2-1.m", forged, 2, NULL, 0, &mfd));
	int ifd = journal_ids_create(jfd, "b-1-2-1.m");

	T_ASSERT(ifd >= 0, "ids");
	journal_wait_past(mfd);
	if (ids) {
		/* the batch made U/shell: recorded, as the writer does */
		_Atomic uint64_t off = 0;
		struct fid id;
		int fd = openat(ufd, "shell", O_WRONLY | O_CREAT | O_EXCL, 0600);

		T_ASSERT(fd >= 0, "create shell");
		T_OK(fid_of_fd(fd, &id));
		T_OK(journal_id_append(ifd, &off, 0, &id));
		close(fd);
	}
	close(ifd);
	close(mfd);                     /* the writer died: its lock is gone */
	close(jfd);
	close(ufd);
	tw_settle();
}

static void scenario_planted(void *arg)
{
	char *victim = make_victim("victim-planted");

	for (int ids = 0; ids < 2; ids++) {
		char *u = make_u(tw_fmt("planted-%d", ids));
		struct plant p = { .u = u, .victim = victim, .shell = true, .lnk = true };
		struct tw_run r;

		root_crashed_batch(u, ids);
		T_EQ(as_nobody(plant, &p), 0);     /* replaces root's shell, if any */
		run_root(&r, NULL, "recover", u, NULL);
		TW_CHECK(r.status == 0, "[planted %d] bfo recover: exit %d: %s", ids, r.status, r.err);
		expect_shell_harmless(u, ids ? "planted, identity recorded" : "planted, no identity");
		expect_victim(victim, "planted");
		struct stat st;

		TW_CHECK(lstat(tw_fmt("%s/lnk", u), &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid == NOBODY,
			 "[planted %d] nobody's symlink was touched", ids);
		if (ids)
			TW_CHECK(lstat(tw_fmt("%s/shell", u), &st) == 0 && st.st_uid == NOBODY &&
				 (st.st_mode & 07777) == 0755,
				 "[planted, identity recorded] nobody's own U/shell (not the batch's) was "
				 "changed or removed");
		tw_run_free(&r);
		free(u);
	}
	free(victim);
	tw_checks_end();
}

/* ------------------------------------------------------------ journal */

static void scenario_journal(void *arg)
{
	char *victim_dir = t_path(base, "victim-jdir");
	struct bfo_write_opts o = { .size = sizeof(o) };
	struct bfo_writer *w;

	T_ASSERT(mkdir(victim_dir, 0700) == 0, "mkdir victim dir");
	for (int k = 0; k < 4; k++) {
		char *d = t_path(base, tw_fmt("jtrust-%d", k));
		const char *j = tw_fmt("%s/.bfo-journal", d);
		int want;

		T_ASSERT(mkdir(d, 0755) == 0, "mkdir");
		switch (k) {
		case 0: T_ASSERT(symlink(victim_dir, j) == 0, "symlink"); want = -ELOOP; break;
		case 1: t_write_bytes(j, "x", 1); want = -ENOTDIR; break;
		case 2: T_ASSERT(mkdir(j, 0700) == 0 && chown(j, NOBODY, NOBODY) == 0, "chown");
			want = -EPERM; break;
		default: T_ASSERT(mkdir(j, 0700) == 0 && chmod(j, 0777) == 0, "chmod");
			want = -EPERM; break;
		}
		int ret = bfo_writer_open(&w, d, &o);

		TW_CHECK(ret == want, "[journal %d] bfo_writer_open: %d (%s), expected %d", k, ret,
			 bfo_strerror(ret), want);
		if (ret == 0)
			bfo_writer_close(w);
		TW_CHECK(bfo_journal_recover(d, NULL) == want, "[journal %d] recover did not refuse", k);
		free(d);
	}
	struct stat st;

	T_ASSERT(stat(victim_dir, &st) == 0, "stat");
	TW_CHECK(st.st_nlink == 2 && (st.st_mode & 07777) == 0700, "the symlinked journal's target "
		 "was written to (%lu links, mode %o)", (unsigned long)st.st_nlink, st.st_mode & 07777);

	/* A manifest with a second link (a hard link made before) is not ours alone. */
	char *d = t_path(base, "jtrust-link");
	struct bfo_recover_stats rs;

	T_ASSERT(mkdir(d, 0755) == 0, "mkdir");
	root_crashed_batch(d, false);
	T_ASSERT(link(tw_fmt("%s/.bfo-journal/b-1-2-1.m", d), tw_fmt("%s/second", d)) == 0, "link");
	T_EQ(bfo_journal_recover(d, &rs), 0);
	TW_CHECK(rs.untrusted == 1 && rs.batches == 0, "a twice-linked manifest was acted on "
		 "(untrusted %llu, batches %llu)", (unsigned long long)rs.untrusted,
		 (unsigned long long)rs.batches);
	free(d);
	free(victim_dir);
	tw_checks_end();
}

/* ------------------------------------------------------------ swap */

struct swap {
	const char *u, *victim;
};

/* U/pub777 aside, a symlink to the victim in its place (as nobody). */
static void swap_now(void *arg)
{
	struct swap *s = arg;

	if (rename(tw_fmt("%s/pub777", s->u), tw_fmt("%s/aside", s->u)) < 0 ||
	    symlink(s->victim, tw_fmt("%s/pub777", s->u)) < 0)
		_exit(20);
}

struct swapping {
	struct swap s;
	int swapped;            /* the swapper's exit status, -1 before it ran */
};

/* The copy's worker has opened U/pub777 (which the copy made) and is about
 * to make its files there: the swap, now, once. */
static void swap_at_dir(void *arg, const char *dir)
{
	struct swapping *w = arg;

	if (w->swapped < 0 && !strcmp(dir, "pub777"))
		w->swapped = as_nobody(swap_now, &w->s);
}

static void scenario_swap(void *arg)
{
	char *src = t_path(base, "pub777");
	char *victim = t_path(base, "victim-swap");
	char *u = make_u("swap");
	struct swapping w = { .s = { .u = u, .victim = victim }, .swapped = -1 };
	struct bfo_copier *c;
	struct bfo_copy_stats cs;
	const char *srcs[] = { src };
	struct stat vs;

	T_ASSERT(mkdir(victim, 0700) == 0 && mkdir(src, 0777) == 0 && chmod(src, 0777) == 0, "mkdir");
	for (int i = 0; i < 3000; i++)
		t_write_random(tw_fmt("%s/f%04d", src, i), 512, (uint64_t)i);
	/* bfo cp -a pub777 U, in this process: the swap comes at a known
	 * point, the writer holding the directory it made, with its files and
	 * its metadata still to come (a swapper polling for the directory
	 * missed the copy on a busy machine) */
	bfo_test_hooks.dir_opened = swap_at_dir;
	bfo_test_hooks.arg = &w;
	T_OK(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE, NULL));
	int failed = bfo_copier_run(c, srcs, 1, u);

	bfo_copier_stats(c, &cs);
	bfo_copier_destroy(c);
	bfo_test_hooks.dir_opened = NULL;
	bfo_test_hooks.arg = NULL;
	t_log("swap: swapper %d, the copy: %d entries failed, %llu files copied", w.swapped, failed,
	      (unsigned long long)cs.files);
	TW_CHECK(w.swapped == 0, "the swap did not happen (swapper %d): nothing was tested", w.swapped);
	/* what follows the swap through U/pub777 (the directory's metadata)
	 * is refused: not followed */
	TW_CHECK(failed > 0, "the copy saw nothing wrong after U/pub777 became a symlink (%d)", failed);
	T_ASSERT(stat(victim, &vs) == 0, "stat victim");
	TW_CHECK((vs.st_mode & 07777) == 0700 && vs.st_uid == 0,
		 "the victim directory behind the swapped-in symlink became mode %o owner %u",
		 vs.st_mode & 07777, vs.st_uid);
	TW_CHECK(vs.st_nlink == 2, "something was made inside the victim directory");
	free(u);
	free(src);
	free(victim);
	tw_checks_end();
}

/* ------------------------------------------------------------ live */

static void scenario_live(void *arg)
{
	char *src = t_path(base, "live-src"), *dst = t_path(base, "live-dst");
	char *ref = t_path(base, "live-ref"), msg[2048];
	int recovers = 0;

	T_ASSERT(mkdir(src, 0755) == 0, "mkdir");
	for (int d = 0; d < 20; d++) {
		T_ASSERT(mkdir(tw_fmt("%s/d%02d", src, d), 0750) == 0, "mkdir");
		for (int i = 0; i < 200; i++)
			t_write_random(tw_fmt("%s/d%02d/f%03d", src, d, i), 3000, (uint64_t)(d * 1000 + i));
	}
	T_EQ(t_sh("cp -a '%s' '%s'", src, ref), 0);
	char *srcc = t_pathf("%s/", src);     /* its contents: DST is the copy */
	char *argv[] = { (char *)BFO_CLI, "cp", "-a", srcc, dst, NULL };
	char *out = t_path(base, "live-out");
	pid_t pid = tw_spawn(argv, NULL, out);

	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		struct tw_run r;

		if (w == pid) {
			TW_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				 "bfo cp -a with bfo recover beside it: exit %d (see %s)",
				 WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
			break;
		}
		if (access(dst, F_OK) < 0)
			continue;       /* the copy has not made it yet */
		run_root(&r, NULL, "recover", dst, NULL);
		TW_CHECK(r.status == 0, "bfo recover beside a live writer: %d %s", r.status, r.err);
		TW_CHECK(!strstr(r.out, "files complete") || strstr(r.out, ": 0 unfinished"),
			 "bfo recover acted on a live writer's batch: %s", r.out);
		tw_run_free(&r);
		recovers++;
	}
	t_log("live: %d recoveries ran beside the copy", recovers);
	TW_CHECK(recovers > 0, "the copy ended before any recovery ran: nothing was tested");
	TW_CHECK(tw_tree_diff(ref, dst, TW_CP_A & ~TW_ATIME, NULL, msg, sizeof(msg)) == 0,
		 "the copy differs from cp -a's (atime aside: cp -a read the source first): %s", msg);
	TW_CHECK(tw_leftovers(dst, true, msg, sizeof(msg)) == 0, "leftovers: %s", msg);
	free(src);
	free(srcc);
	free(dst);
	free(ref);
	free(out);
	tw_checks_end();
}

int main(void)
{
	t_init("t_hostile", 600);
	if (!t_is_root())
		t_skip("needs root: it drops to uid %d to play the other user, and chowns", NOBODY);
	if (access("/usr/bin/id", X_OK) < 0)
		t_skip("no /usr/bin/id to plant");
	umask(022);
	T_ASSERT(chmod(t_tmpdir(), 0755) == 0, "chmod the test directory");
	base = t_mkdtemp_in(t_tmpdir());
	T_ASSERT(chmod(base, 0755) == 0, "chmod base");
	t_subtest("forged", 120, scenario_forged, NULL);
	t_subtest("planted", 120, scenario_planted, NULL);
	t_subtest("journal", 120, scenario_journal, NULL);
	t_subtest("swap", 300, scenario_swap, NULL);
	t_subtest("live", 300, scenario_live, NULL);
	t_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_nospace: a copy onto a full file system stops as rsync and cp stop
 * (issue 55 item 2), for `bfo cp`, `bfo send | bfo recv`, `bfo cp h:` (the
 * far bfo recv, through a remote shell that runs it here) and `bfo write`.
 *
 * On an 8 MB loop ext4, a file fills all but about 1 MB; a source of about
 * 4 MB (400 files and a few directories) cannot fit.  Each command:
 *  - exits 11 (CLI_EXIT_NOSPACE), with at most 3 lines on stderr, one of
 *    them naming the mount point (rsync printed 3 lines, bfo printed one
 *    per file before);
 *  - leaves every file of the copy whole and equal to its source (byte for
 *    byte), no temporary (.bfo-tmp.*) behind, and copied some but not all;
 *  - after the filler is removed, the same command (bfo write: with
 *    --replace) exits 0 and the copy
 *    equals its source as cp -a would make it (modes, mtimes with ns,
 *    bytes, link targets, the top directory's metadata; bfo write: but its
 *    top directory's).  (rsync 3.5.0 is no reference here: it leaves the
 *    mtimes of a directory and a link made in the second it copies them.)
 * Each sub-test fails when it compared no file.
 * Needs root and loop devices (77 with the reason otherwise); what it
 * mounts it unmounts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

#define NFILES 400

static const char *src, *mnt;

/* A source of about 4 MB: files of 1 to 19 kB in 8 directories, a link. */
static void make_source(const char *dir)
{
	uint64_t seed = 55;

	tw_mkdirs(dir);
	for (int d = 0; d < 8; d++)
		tw_mkdirs(tw_fmt("%s/d%d", dir, d));
	for (int i = 0; i < NFILES; i++)
		t_write_random(tw_fmt("%s/d%d/f%03d", dir, i % 8, i),
			       t_rand_range(&seed, 1000, 19000), (uint64_t)i + 1);
	T_ASSERT(symlink("d0/f000", tw_fmt("%s/link", dir)) == 0, "symlink: %s", strerror(errno));
}

/* Every regular file below copy (a copy of source) is equal to its source;
 * returns how many there are. */
static int whole(const char *copy, const char *source, const char *rel)
{
	char *dir = t_pathf("%s/%s", copy, rel);
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	T_ASSERT(d, "opendir %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		char *r = t_pathf("%s%s%s", rel, *rel ? "/" : "", de->d_name);
		char *a = t_pathf("%s/%s", copy, r), *b = t_pathf("%s/%s", source, r);
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".bfo-journal")) {
			free(r), free(a), free(b);
			continue;
		}
		T_ASSERT(lstat(a, &st) == 0, "lstat %s: %s", a, strerror(errno));
		if (S_ISDIR(st.st_mode)) {
			n += whole(copy, source, r);
		} else if (S_ISREG(st.st_mode)) {
			T_ASSERT(t_sh("cmp -s '%s' '%s'", a, b) == 0, "%s is not whole: differs from %s", a, b);
			n++;
		}
		free(r), free(a), free(b);
	}
	closedir(d);
	free(dir);
	return n;
}

/* Stderr of a failed run: at most 3 lines, one naming the mount point. */
static void one_line(const char *what, const char *err)
{
	int lines = 0;

	for (const char *p = err; *p; p++)
		lines += *p == '\n';
	t_log("%s: %s", what, err);
	T_ASSERT(lines >= 1 && lines <= 3, "%s: %d lines on stderr:\n%s", what, lines, err);
	T_ASSERT(strstr(err, mnt) && strstr(err, "left"), "%s: the mount point %s and what is left "
		 "are not named: %s", what, mnt, err);
}

/* cmd (a shell command writing to out below mnt, its stderr to a file):
 * stopped by the full file system, then run again with room. */
static void full_then_room(const char *what, const char *cmd, const char *again, const char *out,
			   const char *copy, unsigned top)
{
	char msg[2048], *errf = t_pathf("%s/err", t_tmpdir()), *err;
	uint8_t *buf;
	uint64_t len;
	int st, n;

	t_sh("rm -rf '%s'", out);        /* (what a failed sub-test left) */
	tw_mkdirs(out);
	tw_fill_fs(mnt, "filler", 1 << 20);
	st = t_sh("%s 2>%s", cmd, errf);
	T_OK(t_read_plain(errf, &buf, &len));
	err = strndup((char *)buf, len);        /* (t_read_plain's bytes end with no NUL) */
	free(buf);
	T_ASSERT(err, "out of memory");
	T_EQ(st, 11);
	one_line(what, err);
	free(err);
	n = whole(copy, src, "");
	t_log("%s: %d of %d files copied before the file system was full, each whole", what, n, NFILES);
	T_ASSERT(n > 0 && n < NFILES, "%s: %d files copied: not a partial copy", what, n);
	T_EQ(tw_leftovers(out, false, msg, sizeof(msg)), 0);

	T_ASSERT(unlink(tw_fmt("%s/filler", mnt)) == 0, "unlink filler: %s", strerror(errno));
	st = t_sh("%s 2>%s", again, errf);
	T_OK(t_read_plain(errf, &buf, &len));
	T_ASSERT(st == 0, "%s with room: exit %d: %.*s", what, st, (int)len, (char *)buf);
	free(buf);
	n = tw_tree_diff(src, copy, TW_MODE | TW_MTIME | TW_LINKS | top, NULL, msg, sizeof(msg));
	T_ASSERT(n == 0, "%s: the finished copy differs from its source: %s", what, msg);
	T_EQ(tw_leftovers(out, true, msg, sizeof(msg)), 0);
	t_sh("rm -rf '%s'", out);
	free(errf);
}

static void cp_full(void *arg)
{
	const char *out = tw_fmt("%s/cp", mnt);

	const char *cmd = tw_fmt("%s cp -a %s %s", BFO_CLI, src, out);

	full_then_room("bfo cp", cmd, cmd, out,
		       tw_fmt("%s/src", out), TW_TOP);
}

static void recv_full(void *arg)
{
	const char *out = tw_fmt("%s/recv", mnt);

	const char *cmd = tw_fmt("%s send -a %s | %s recv -a %s", BFO_CLI, src, BFO_CLI, out);

	/* (the pipe's status is recv's) */
	full_then_room("bfo send | bfo recv", cmd, cmd, out, tw_fmt("%s/src", out), TW_TOP);
}

static void remote_full(void *arg)
{
	const char *rsh = t_keep(tw_local_rsh(t_tmpdir()));
	const char *out = tw_fmt("%s/remote", mnt);
	const char *cmd = tw_fmt("%s cp -a --rsh %s --remote-bfo %s %s h:%s", BFO_CLI, rsh, BFO_CLI,
				 src, out);

	/* the far bfo recv meets the full file system: its one line, its
	 * status, and no broken pipe of this side's */
	full_then_room("bfo cp h:", cmd, cmd, out, tw_fmt("%s/src", out), TW_TOP);
}

static void write_full(void *arg)
{
	const char *out = tw_fmt("%s/write", mnt);

	/* (bfo write refuses existing files but with --replace) */
	const char *tar = tw_fmt("tar --format=pax -C %s -cf - .", src);

	full_then_room("tar | bfo write --tar", tw_fmt("%s | %s write --tar %s", tar, BFO_CLI, out),
		       tw_fmt("%s | %s write --tar --replace %s", tar, BFO_CLI, out), out, out, 0);
}

int main(void)
{
	t_init("t_nospace", 600);
	if (!t_is_root())
		t_skip("not root: no loop file system to fill");
	const char *tmp = t_tmpdir();

	src = t_keep(t_path(tmp, "src"));
	mnt = t_loop_fs_or_skip("ext4", 8, NULL, NULL);
	make_source(src);
	t_subtest("bfo cp onto a full file system", 120, cp_full, NULL);
	t_subtest("bfo recv onto a full file system", 120, recv_full, NULL);
	t_subtest("bfo cp h: onto a full file system", 120, remote_full, NULL);
	t_subtest("bfo write onto a full file system", 120, write_full, NULL);
	t_done();
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo write on hostile and truncated streams (issue 16, cases 4-6): every
 * number of the simple format bounded (a LENGTH of -1 overflowed a
 * malloc), a record the stream ends inside leaves nothing (a symlink
 * record left an empty file), an invalid MODE is refused (99999 made a
 * file of mode 0000), and the same for tar members.  Each refused stream
 * must exit 2, name its problem on stderr and leave DIR with no entry at
 * all (not even .bfo-journal).  Valid streams still give what plain
 * syscalls and GNU tar give.  Inputs the fuzzers (fuzz/) found are here
 * too, with their files in fuzz/corpus/.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

/* The names in dir (none: ""), or NULL when it cannot be read. */
static const char *names_in(const char *dir)
{
	static char buf[1024];
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return NULL;
	buf[0] = '\0';
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && n < sizeof(buf) - 300)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s ", de->d_name);
	closedir(d);
	return buf;
}

static void run_write(struct tw_run *r, const char *dir, bool tar, const void *in, size_t len)
{
	char *argv[] = { BFO_CLI, "write", tar ? "--tar" : (char *)dir, tar ? (char *)dir : NULL,
			 NULL };

	tw_run(r, in, len, (uid_t)-1, (gid_t)-1, argv);
}

/* The stream is refused: exit 2, problem (a word of it) named, DIR empty. */
static void refused(const char *what, bool tar, const void *in, size_t len, const char *problem)
{
	char *dir = t_mkdtemp_in(t_tmpdir());
	struct tw_run r;
	const char *left;

	run_write(&r, dir, tar, in, len);
	TW_CHECK(r.status == 2, "%s: exit %d, expected 2; stderr: %s", what, r.status, r.err);
	TW_CHECK(strstr(r.err, "bfo: write: ") && strstr(r.err, problem),
		 "%s: stderr does not name the problem ('%s'): %s", what, problem, r.err);
	left = names_in(dir);
	TW_CHECK(left && !*left, "%s: DIR holds: %s", what, left ? left : "(unreadable)");
	tw_run_free(&r);
	free(dir);
}

static void refused_s(const char *what, const char *in, const char *problem)
{
	refused(what, false, in, strlen(in), problem);
}

/* A record line followed by n bytes of 'A' (data the header lies about). */
static void refused_pad(const char *what, const char *line, size_t n, const char *problem)
{
	size_t l = strlen(line);
	char *in = malloc(l + n);

	memcpy(in, line, l);
	memset(in + l, 'A', n);
	refused(what, false, in, l + n, problem);
	free(in);
}

static void numbers(void)
{
	/* Case 4: the length parsed to UINT64_MAX, malloc(size + 1) got 0. */
	refused_pad("LENGTH -1", "l 777 0 -1 s\n", 200000, "LENGTH '-1'");
	refused_pad("LENGTH 2^64-1", "l 777 0 18446744073709551615 s\n", 200000, "LENGTH");
	refused_pad("LENGTH 2^64", "l 777 0 18446744073709551616 s\n", 200000, "LENGTH");
	refused_pad("LENGTH PATH_MAX", "l 777 0 4096 s\n", 4096, "LENGTH '4096'");
	refused_pad("LENGTH 0", "l 777 0 0 s\n", 0, "LENGTH '0'");
	refused_pad("LENGTH +5", "l 777 0 +5 s\n", 5, "LENGTH");
	refused_pad("SIZE -1", "f 644 0 -1 x\n", 200000, "SIZE '-1'");
	refused_pad("SIZE 2^63", "f 644 0 9223372036854775808 x\n", 1000, "SIZE");
	refused_pad("SIZE 2^64-1", "f 644 0 18446744073709551615 x\n", 1000, "SIZE");
	refused_pad("SIZE 1e3", "f 644 0 1e3 x\n", 1000, "SIZE '1e3'");
	refused_pad("SIZE empty", "f 644 0  x\n", 1000, "not a record");
	/* Case 6: an invalid octal mode or one above 07777. */
	refused_s("MODE 99999", "f 99999 0 4 x\nabcd", "MODE '99999'");
	refused_s("MODE 10000", "f 10000 0 4 x\nabcd", "MODE '10000'");
	refused_s("MODE 8", "f 8 0 4 x\nabcd", "MODE '8'");
	refused_s("MODE -644", "f -644 0 4 x\nabcd", "MODE '-644'");
	refused_s("MODE 64a", "d 64a 0 dir\n", "MODE '64a'");
	refused_s("MODE 2^64 octal", "l 2000000000000000000000 0 1 s\nx", "MODE");
	refused_s("MTIME 1e9", "f 644 1e9 4 x\nabcd", "MTIME '1e9'");
	refused_s("MTIME 2^63", "f 644 9223372036854775808 4 x\nabcd", "MTIME");
	refused_s("MTIME 10 decimals", "f 644 1.0000000001 4 x\nabcd", "MTIME");
	refused_s("MTIME dot", "d 755 5. dir\n", "MTIME '5.'");
	refused_s("MTIME --1", "d 755 --1 dir\n", "MTIME '--1'");
	refused_s("type", "x 644 0 4 x\nabcd", "not a record");
	refused_s("no path", "d 755 0\n", "not a record");
	refused("NUL in the line", false, "f 644 0 1 a\0b\nb", 14, "NUL");
	refused("NUL in a target", false, "l 777 0 3 s\nx\0y", 15, "NUL");

	/* A PATH the writer cannot take, and a line without end. */
	size_t n = 32768;
	char *line = malloc(n + 32);

	memcpy(line, "d 755 0 ", 8);
	memset(line + 8, 'p', n);
	strcpy(line + 8 + n, "\n");
	refused_s("PATH of 32768 bytes", line, "longer than");
	free(line);
	refused_pad("endless line", "f 644 0 1 ", 1 << 20, "longer than");
	t_log("numbers: every malformed number refused, DIR left empty");
}

static void truncated(void)
{
	/* Case 5: the symlink record left an empty regular file. */
	refused_s("target cut short", "l 777 0 200 s\nshort", "ends inside");
	refused_s("data cut short", "f 644 0 200 f\nshort", "ends inside");
	refused_s("no data", "f 644 0 1 f\n", "ends inside");
	/* A file of several pieces: the first ones reached the writer. */
	refused_pad("large file cut short", "f 644 0 40000000 big\n", 17u << 20, "ends inside");
	t_log("truncated: nothing left of a record the stream ends inside");
}

/* Good records before a bad one are written whole. */
static void before_bad(void)
{
	char *dir = t_mkdtemp_in(t_tmpdir());
	struct tw_run r;
	uint8_t *buf;
	uint64_t len;

	run_write(&r, dir, false, "f 644 0 5 ok\nhellol 777 0 200 s\nshort", 38);
	TW_CHECK(r.status == 2, "good then cut: exit %d; stderr: %s", r.status, r.err);
	TW_CHECK(!strcmp(names_in(dir), "ok "), "good then cut: DIR holds %s", names_in(dir));
	TW_CHECK(t_read_plain(tw_fmt("%s/ok", dir), &buf, &len) == 0 && len == 5 &&
		 !memcmp(buf, "hello", 5), "good then cut: ok is not 'hello'");
	free(buf);
	tw_run_free(&r);
	free(dir);
}

/* Valid streams: the tree plain syscalls make. */
static void valid(void)
{
	char *dir = t_mkdtemp_in(t_tmpdir()), *ref = t_mkdtemp_in(t_tmpdir());
	static char in[64 << 10];
	struct tw_run r;
	char msg[1024];
	int n;

	n = snprintf(in, sizeof(in),
		     "d 0750 1600000000.5 d\n"
		     "f 4755 1.000000001 3 d/setuid\nabc"
		     "f 0 -1 0 d/zero\n"
		     "f 644 -100.25 2 d/old\nhi"
		     "l 777 1700000000 6 d/l\nsetuid"
		     "d 1777 0 d/sticky\n"
		     "f 640 0 1 d/with space \nx"
		     "f 600 - 0 d/last");
	run_write(&r, dir, false, in, (size_t)n);
	TW_CHECK(r.status == 0, "valid stream: exit %d; stderr: %s", r.status, r.err);
	tw_run_free(&r);

	t_sh("mkdir -p '%s/d/sticky' && cd '%s/d' && printf abc > setuid && : > zero && printf hi > old"
	     " && ln -s setuid l && printf x > 'with space ' && : > last"
	     " && chmod 4755 setuid && chmod 0 zero && chmod 644 old && chmod 640 'with space '"
	     " && chmod 600 last && chmod 1777 sticky && chmod 750 .", ref, ref);
	t_sh("cd '%s/d' && touch -h -d @1.000000001 setuid && touch -d @-100.25 old"
	     " && touch -h -d @-1 zero && touch -h -d @1700000000 l && touch -d @0 sticky"
	     " 'with space ' && touch -d @1600000000.5 .", ref);
	/* 'last' has the time of writing: its mtime is not compared. */
	n = tw_tree_diff(ref, dir, TW_MODE, NULL, msg, sizeof(msg));
	TW_CHECK(n == 0, "valid stream: %d differences from plain syscalls: %s", n, msg);
	unlink(tw_fmt("%s/d/last", ref));
	unlink(tw_fmt("%s/d/last", dir));
	n = tw_tree_diff(ref, dir, TW_MODE | TW_MTIME, NULL, msg, sizeof(msg));
	TW_CHECK(n == 0, "valid stream: %d differences in mtimes: %s", n, msg);
	free(dir);
	free(ref);
	t_log("valid: modes 0 to 7777, nanoseconds, negative and absent times as plain syscalls");
}

/* ------------------------------------------------------------ tar */

static char *slurp(const char *path, size_t *len)
{
	uint8_t *buf;
	uint64_t l;

	T_ASSERT(t_read_plain(path, &buf, &l) == 0, "read %s", path);
	*len = (size_t)l;
	return (char *)buf;
}

static void tar_cases(void)
{
	char *tmp = t_mkdtemp_in(t_tmpdir()), *src = t_path(tmp, "src");
	char msg[1024];
	size_t len;
	char *ar;
	int n;

	if (!t_have_prog("tar")) {
		t_log("tar: skipped (no GNU tar)");
		free(src);
		free(tmp);
		return;
	}
	tw_mkdirs(tw_fmt("%s/d", src));
	t_write_random(tw_fmt("%s/a", src), 100000, 1);
	t_write_random(tw_fmt("%s/d/b", src), 3000000, 2);
	T_ASSERT(symlink("a", tw_fmt("%s/l", src)) == 0, "symlink");
	T_ASSERT(t_sh("tar -C '%s' -cf '%s/t.tar' a d l", src, tmp) == 0, "tar -c");
	ar = slurp(tw_fmt("%s/t.tar", tmp), &len);

	/* Whole: the tree GNU tar extracts. */
	char *dir = t_mkdtemp_in(tmp), *ref = t_mkdtemp_in(tmp);
	struct tw_run r;

	T_ASSERT(t_sh("tar -C '%s' -xf '%s/t.tar'", ref, tmp) == 0, "tar -x");
	run_write(&r, dir, true, ar, len);
	TW_CHECK(r.status == 0, "tar: exit %d; stderr: %s", r.status, r.err);
	n = tw_tree_diff(ref, dir, TW_MODE | TW_MTIME, NULL, msg, sizeof(msg));
	TW_CHECK(n == 0, "tar: %d differences from GNU tar: %s", n, msg);
	tw_run_free(&r);
	free(dir);

	/* Cut inside a (the first member): nothing at all. */
	refused("tar cut in the first file", true, ar, 50000, "ends inside this file");
	/* Cut inside d/b: a and d complete, no b. */
	dir = t_mkdtemp_in(tmp);
	run_write(&r, dir, true, ar, 1500000);
	TW_CHECK(r.status == 2 && strstr(r.err, "d/b: the archive ends inside"),
		 "tar cut in d/b: exit %d; stderr: %s", r.status, r.err);
	TW_CHECK(!strcmp(names_in(dir), "a d ") || !strcmp(names_in(dir), "d a "),
		 "tar cut in d/b: DIR holds %s", names_in(dir));
	TW_CHECK(!strcmp(names_in(tw_fmt("%s/d", dir)), ""), "tar cut in d/b: d holds %s",
		 names_in(tw_fmt("%s/d", dir)));
	uint8_t *ra, *da = NULL;
	uint64_t rl, dl;

	T_ASSERT(t_read_plain(tw_fmt("%s/a", ref), &ra, &rl) == 0, "read a");
	TW_CHECK(t_read_plain(tw_fmt("%s/a", dir), &da, &dl) == 0 && dl == rl && !memcmp(ra, da, rl),
		 "tar cut in d/b: a is not whole");
	free(ra);
	free(da);
	tw_run_free(&r);
	free(ar);
	free(dir);
	free(ref);
	free(src);
	free(tmp);
	t_log("tar: whole as GNU tar; cut short: the members before complete, the cut one absent");
}

/* Members only a crafted pax archive holds (python3's tarfile writes them). */
static void tar_pax(void)
{
	char *tmp = t_mkdtemp_in(t_tmpdir());
	static const char *const cases[][3] = {
		{ "long target", "t = tarfile.TarInfo('s'); t.type = tarfile.SYMTYPE; "
		  "t.linkname = 'x' * 4096; a.addfile(t)", "longer than 4095" },
		{ "long path", "t = tarfile.TarInfo('p' * 32768); a.addfile(t)", "PATH longer" },
		{ "uid 2^32", "t = tarfile.TarInfo('u'); t.uid = 1 << 32; a.addfile(t)", "uid" },
		{ "empty target", "t = tarfile.TarInfo('s'); t.type = tarfile.SYMTYPE; a.addfile(t)",
		  "target is empty" },
		{ "long hard link", "t = tarfile.TarInfo('h'); t.type = tarfile.LNKTYPE; "
		  "t.linkname = 'x' * 32768; a.addfile(t)", "longer than 32767" },
	};

	if (!t_have_prog("python3")) {
		t_log("tar pax: skipped (no python3)");
		free(tmp);
		return;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = tw_fmt("%s/c%zu.tar", tmp, i);
		size_t len;
		char *ar;

		/* The uid case only matters (and is only checked) as root. */
		if (strstr(cases[i][0], "uid") && !t_is_root())
			continue;
		T_ASSERT(t_sh("python3 -c \"import tarfile; a = tarfile.open('%s', 'w', "
			      "format=tarfile.PAX_FORMAT); %s; a.close()\"", path, cases[i][1]) == 0,
			 "python3 tarfile: %s", cases[i][0]);
		ar = slurp(path, &len);
		refused(cases[i][0], true, ar, len, cases[i][2]);
		free(ar);
	}
	free(tmp);
	t_log("tar pax: long targets and paths, uid 2^32 (as root) refused, DIR left empty");
}

int main(void)
{
	t_init("t_stream_bad", 300);
	numbers();
	truncated();
	before_bad();
	valid();
	tar_cases();
	tar_pax();
	tw_checks_end();
	t_done();
	return 0;
}

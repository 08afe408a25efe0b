/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cli: the `bfo` command (BFO_CLI), run with fork/exec.
 *  - `bfo read --checksum DIR` prints the same lines as `xxh128sum` over the
 *    same files (sorted), exit 0, with every engine and with small knobs
 *    (a large file hashed in pieces);
 *  - the walk reads regular files and symlinks to regular files, skips a
 *    FIFO, a symlink to a directory and a dangling symlink (exit 0);
 *  - a missing path among good ones: exit 1, stderr names it;
 *  - usage errors (unknown option, no PATH, --engine bogus, plan --checksum,
 *    which plan would ignore): exit 2, stderr naming what is wrong;
 *  - paths on stdin, NUL-separated (-0) and newline-separated;
 *  - --json: the last stdout line is a JSON object with files, files_ok,
 *    bytes, engine and seconds that agree with the files read;
 *  - `bfo plan DIR`: exit 0; --no-follow with a symlink named: exit 1;
 *  - names with a backslash or a newline are escaped the coreutils way
 *    (as md5sum does), with the same hash as xxh128sum.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

/* ------------------------------------------------------------ lines */

struct lines {
	char **v;
	size_t n;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct lines split_sorted(const char *text)
{
	struct lines l = { 0 };
	const char *p = text;

	while (*p) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		l.v = realloc(l.v, (l.n + 1) * sizeof(*l.v));
		l.v[l.n++] = strndup(p, n);
		p += n + (e ? 1 : 0);
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_str);
	return l;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static void expect_same_lines(const char *got, const char *want, const char *msg)
{
	struct lines a = split_sorted(got), b = split_sorted(want);

	if (a.n != b.n)
		t_fail("[%s] %zu lines, xxh128sum prints %zu\n--- bfo:\n%s\n--- xxh128sum:\n%s", msg, a.n,
		       b.n, got, want);
	for (size_t i = 0; i < a.n; i++)
		if (strcmp(a.v[i], b.v[i]))
			t_fail("[%s] line '%s', xxh128sum has '%s'", msg, a.v[i], b.v[i]);
	lines_free(&a);
	lines_free(&b);
}

/* ------------------------------------------------------------ JSON */

struct json {
	const char *p;
	char keys[32][32];
	const char *vals[32];
	int nkeys;
};

static void ws(struct json *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n')
		j->p++;
}

static bool value(struct json *j, int depth);

static bool string(struct json *j, char *out, size_t outlen)
{
	size_t n = 0;

	if (*j->p != '"')
		return false;
	j->p++;
	while (*j->p && *j->p != '"') {
		if ((unsigned char)*j->p < 0x20)
			return false;
		if (*j->p == '\\') {
			j->p++;
			if (!strchr("\"\\/bfnrtu", *j->p) || !*j->p)
				return false;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)j->p[i]))
						return false;
				j->p += 4;
			}
		}
		if (out && n + 1 < outlen)
			out[n++] = *j->p;
		j->p++;
	}
	if (*j->p != '"')
		return false;
	j->p++;
	if (out)
		out[n] = '\0';
	return true;
}

static bool number(struct json *j)
{
	const char *s = j->p;

	if (*j->p == '-')
		j->p++;
	if (!isdigit((unsigned char)*j->p))
		return false;
	if (*j->p == '0' && isdigit((unsigned char)j->p[1]))
		return false;
	while (isdigit((unsigned char)*j->p))
		j->p++;
	if (*j->p == '.') {
		j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	return j->p > s;
}

static bool object(struct json *j, int depth)
{
	j->p++;
	ws(j);
	if (*j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		char key[32];

		ws(j);
		if (!string(j, key, sizeof(key)))
			return false;
		ws(j);
		if (*j->p++ != ':')
			return false;
		ws(j);
		if (depth == 0 && j->nkeys < 32) {
			snprintf(j->keys[j->nkeys], sizeof(j->keys[0]), "%s", key);
			j->vals[j->nkeys++] = j->p;
		}
		if (!value(j, depth + 1))
			return false;
		ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == '}') {
			j->p++;
			return true;
		}
		return false;
	}
}

static bool value(struct json *j, int depth)
{
	ws(j);
	if (depth > 16)
		return false;
	switch (*j->p) {
	case '{':
		return object(j, depth);
	case '[':
		j->p++;
		ws(j);
		if (*j->p == ']') {
			j->p++;
			return true;
		}
		for (;;) {
			if (!value(j, depth + 1))
				return false;
			ws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p == ']') {
				j->p++;
				return true;
			}
			return false;
		}
	case '"':
		return string(j, NULL, 0);
	case 't':
		return !strncmp(j->p, "true", 4) ? (j->p += 4, true) : false;
	case 'f':
		return !strncmp(j->p, "false", 5) ? (j->p += 5, true) : false;
	case 'n':
		return !strncmp(j->p, "null", 4) ? (j->p += 4, true) : false;
	default:
		return number(j);
	}
}

static const char *json_get(struct json *j, const char *key)
{
	for (int i = 0; i < j->nkeys; i++)
		if (!strcmp(j->keys[i], key))
			return j->vals[i];
	return NULL;
}

/* ------------------------------------------------------------ the test */

static const char *bfo = BFO_CLI;
static char *files[256];
static int nfiles;
static uint64_t total_bytes;

static void add_expected(char *p)
{
	struct stat st;

	T_ASSERT(nfiles < 256, "too many");
	T_ASSERT(stat(p, &st) == 0, "stat %s", p);
	files[nfiles++] = p;
	total_bytes += (uint64_t)st.st_size;
}

static char *xxh128sum_of(char **paths, int n)
{
	char **argv = calloc((size_t)n + 2, sizeof(*argv));
	struct tw_run r;

	argv[0] = "xxh128sum";
	for (int i = 0; i < n; i++)
		argv[i + 1] = paths[i];
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	free(argv);
	if (r.status)
		t_fail("xxh128sum exit %d: %s", r.status, r.err);
	free(r.err);
	return r.out;
}

static void check_read(char *const *argv, const char *want, const char *msg)
{
	struct tw_run r;

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	if (r.status != 0)
		t_fail("[%s] exit %d, stderr: %s", msg, r.status, r.err);
	expect_same_lines(r.out, want, msg);
	tw_run_free(&r);
	t_log("%s: ok", msg);
}

/* The tree every scenario reads: below base, its files in files[] and
 * their xxh128sum lines in want. */
static const char *base;
static char *dir, *want;

/* The tree: files of many sizes in three levels, odd names, an empty
 * file, one read in pieces; a FIFO, links to a directory and to nothing
 * (skipped) and a link to a file (read). */
static void make_tree(void)
{
	base = t_tmpdir();
	dir = t_path(base, "tree");
	uint64_t seed = 23;
	char tmp[4096];

	if (mkdir(dir, 0755) < 0)
		t_fail("mkdir");
	snprintf(tmp, sizeof(tmp), "%s/sub", dir);
	mkdir(tmp, 0755);
	snprintf(tmp, sizeof(tmp), "%s/sub/deeper", dir);
	mkdir(tmp, 0755);
	for (int i = 0; i < 30; i++) {
		char *p = t_pathf("%s/a%02d", dir, i);

		t_write_random(p, t_rand_range(&seed, 0, 100000), (uint64_t)i);
		add_expected(p);
	}
	for (int i = 0; i < 20; i++) {
		char *p = t_pathf("%s/sub/b%02d", dir, i);

		t_write_random(p, t_rand_range(&seed, 1, 300000), 100 + (uint64_t)i);
		add_expected(p);
	}
	for (int i = 0; i < 10; i++) {
		char *p = t_pathf("%s/sub/deeper/c%02d", dir, i);

		t_write_random(p, t_rand_range(&seed, 1, 5000), 200 + (uint64_t)i);
		add_expected(p);
	}
	char *p = t_pathf("%s/name with  spaces", dir);

	t_write_random(p, 1234, 300);
	add_expected(p);
	p = t_pathf("%s/utf8-\xc3\xa9t\xc3\xa9", dir);
	t_write_random(p, 999, 301);
	add_expected(p);
	p = t_pathf("%s/not-utf8-\xff\xfe", dir);
	t_write_random(p, 4096, 302);
	add_expected(p);
	p = t_pathf("%s/empty", dir);
	t_write_bytes(p, "", 0);
	add_expected(p);
	p = t_pathf("%s/big", dir);         /* above the default large_file: pieces */
	t_write_random(p, (17u << 20) + 5, 303);
	add_expected(p);
	/* things the walk skips, and a link it reads */
	snprintf(tmp, sizeof(tmp), "%s/fifo", dir);
	if (mkfifo(tmp, 0644) < 0)
		t_fail("mkfifo");
	snprintf(tmp, sizeof(tmp), "%s/dirlink", dir);
	if (symlink("sub", tmp) < 0)
		t_fail("symlink");
	snprintf(tmp, sizeof(tmp), "%s/dangling", dir);
	if (symlink("nowhere", tmp) < 0)
		t_fail("symlink");
	p = t_pathf("%s/filelink", dir);
	if (symlink("a01", p) < 0)
		t_fail("symlink");
	add_expected(p);

	want = xxh128sum_of(files, nfiles);
}

/* The walk, every engine, small knobs; files named around a walk; a
 * trailing slash. */
static void scenario_walk(void)
{
	{
		char *argv[] = { (char *)bfo, "read", "--checksum", dir, NULL };

		check_read(argv, want, "read --checksum DIR");
	}
	static const char *engines[] = { "auto", "uring", "portable", "raw" };

	for (int e = 0; e < 4; e++) {
		char *argv[] = { (char *)bfo, "read", "--checksum", "--engine", (char *)engines[e], dir, NULL };
		char msg[64];

		snprintf(msg, sizeof(msg), "read --checksum --engine %s DIR", engines[e]);
		check_read(argv, want, msg);
	}
	{
		char *argv[] = { (char *)bfo, "read", "--checksum", "--large-file", "64K", "--window-files", "8",
				 "--arena", "4M", "--queue-depth", "2", "--threads", "2", dir, NULL };

		check_read(argv, want, "read --checksum with small knobs");
	}

	/* files named around a walk, the queue smaller than the walk's
	 * buffer: single paths and the walk's packed ones, each once, in turn */
	{
		char *argv[] = { (char *)bfo, "read", "--checksum", "--window-files", "8",
				 files[0], dir, files[1], dir, NULL };
		char **all = calloc((size_t)(2 * nfiles + 2), sizeof(*all));
		char *w;
		int k = 0;

		all[k++] = files[0];
		for (int i = 0; i < nfiles; i++)
			all[k++] = files[i];
		all[k++] = files[1];
		for (int i = 0; i < nfiles; i++)
			all[k++] = files[i];
		w = xxh128sum_of(all, k);
		check_read(argv, w, "read --checksum FILE DIR FILE DIR, 16 paths queued at most");
		free(w);
		free(all);
	}

	{
		char *slash = t_pathf("%s/", dir);
		char *argv[] = { (char *)bfo, "read", "--checksum", slash, NULL };

		check_read(argv, want, "read --checksum DIR/ (trailing slash)");
		free(slash);
	}
}

/* A missing path among good ones: exit 1, named. */
static void scenario_missing(void)
{
	char *missing = t_path(dir, "no-such-file");
	char *argv[] = { (char *)bfo, "read", "--checksum", files[0], missing, files[1], NULL };
	char *good[2] = { files[0], files[1] };
	char *w = xxh128sum_of(good, 2);
	struct tw_run r;

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 1, "missing path: exit %d, expected 1 (stderr: %s)", r.status, r.err);
	T_ASSERT(strstr(r.err, missing) != NULL, "stderr does not name %s: '%s'", missing, r.err);
	expect_same_lines(r.out, w, "missing path among good ones");
	tw_run_free(&r);
	free(w);
	free(missing);
	t_log("a missing path: exit 1, named on stderr: ok");
}

/* Usage errors: exit 2. */
static void scenario_usage(void)
{
	char *a1[] = { (char *)bfo, "read", "--bogus-option", dir, NULL };
	char *a2[] = { (char *)bfo, "read", NULL };
	char *a3[] = { (char *)bfo, "read", "--engine", "bogus", dir, NULL };
	char *a4[] = { (char *)bfo, "frobnicate", dir, NULL };
	char *a5[] = { (char *)bfo, "read", "--checksum", NULL };
	char *a6[] = { (char *)bfo, "plan", "--checksum", dir, NULL };
	struct { char **argv; const char *what, *says; } u[] = {
		{ a1, "unknown option", "--bogus-option" }, { a2, "no PATH", "PATH" },
		{ a3, "--engine bogus", "bogus" }, { a4, "unknown command", "frobnicate" },
		{ a5, "--checksum without PATH", "PATH" },
		/* plan reads no data: an option it would ignore is refused */
		{ a6, "plan --checksum", "--checksum is bfo read's: bfo plan reads no data" },
	};

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		struct tw_run r;

		tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, u[i].argv);
		T_ASSERT(r.status == 2, "%s: exit %d, expected 2", u[i].what, r.status);
		T_ASSERT(r.err_len > 0 && strstr(r.err, u[i].says), "%s: stderr does not say %s: %s",
			 u[i].what, u[i].says, r.err);
		T_ASSERT(r.out_len == 0, "%s: stdout: %s", u[i].what, r.out);
		tw_run_free(&r);
	}
	t_log("usage errors exit 2: ok");
}

/* Paths on stdin, -0 and newline-separated. */
static void scenario_stdin(void)
{
	char in[8192];
	size_t n = 0;
	char *sel[4] = { files[2], files[40], files[nfiles - 6], files[nfiles - 1] };
	char *w = xxh128sum_of(sel, 4);
	char *argv0[] = { (char *)bfo, "read", "-0", "--checksum", "-", NULL };
	char *argvn[] = { (char *)bfo, "read", "--checksum", "-", NULL };
	char tmp[4096];
	struct tw_run r;

	for (int i = 0; i < 4; i++) {
		size_t l = strlen(sel[i]) + 1;

		memcpy(in + n, sel[i], l);
		n += l;
	}
	tw_run(&r, in, n, (uid_t)-1, (gid_t)-1, argv0);
	T_ASSERT(r.status == 0, "-0 stdin: exit %d: %s", r.status, r.err);
	expect_same_lines(r.out, w, "read -0 --checksum -");
	tw_run_free(&r);
	for (size_t i = 0; i < n; i++)
		if (in[i] == '\0')
			in[i] = '\n';
	tw_run(&r, in, n, (uid_t)-1, (gid_t)-1, argvn);
	T_ASSERT(r.status == 0, "newline stdin: exit %d: %s", r.status, r.err);
	expect_same_lines(r.out, w, "read --checksum - (newline-separated)");
	tw_run_free(&r);
	/* the brief's own example: relative names from printf 'a\0b\0' */
	snprintf(tmp, sizeof(tmp), "cd '%s' && printf 'a00\\0sub/b01\\0' | '%s' read --no-progress -0 --checksum - "
		 "> '%s/stdin.out' && xxh128sum a00 sub/b01 2>/dev/null | sort > '%s/stdin.want'", dir, bfo, base, base);
	T_ASSERT(t_sh("%s", tmp) == 0, "printf | bfo read -0 --checksum - failed");
	/* completion order is not argument order: compare sorted */
	snprintf(tmp, sizeof(tmp), "sort '%s/stdin.out' | cmp -s - '%s/stdin.want'", base, base);
	T_ASSERT(t_sh("%s", tmp) == 0, "printf | bfo read -0: output differs from xxh128sum");
	free(w);
	t_log("paths on stdin (-0 and newline-separated): ok");
}

/* --json: a JSON object that agrees with the files read. */
static void scenario_json(void)
{
	char *argv[] = { (char *)bfo, "read", "--json", dir, NULL };
	struct tw_run r;

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 0, "--json: exit %d: %s", r.status, r.err);
	T_ASSERT(r.out_len > 0 && r.out[r.out_len - 1] == '\n', "--json: output does not end a line");
	r.out[r.out_len - 1] = '\0';

	char *last = strrchr(r.out, '\n');

	last = last ? last + 1 : r.out;

	struct json j = { .p = last };

	ws(&j);
	T_ASSERT(*j.p == '{' && value(&j, 0), "--json: last line is not a JSON object: %s", last);
	ws(&j);
	T_ASSERT(*j.p == '\0', "--json: trailing text after the object: %s", j.p);
	const char *keys[] = { "files", "files_ok", "bytes", "engine", "seconds" };

	for (size_t i = 0; i < 5; i++)
		T_ASSERT(json_get(&j, keys[i]), "--json: no key '%s' in %s", keys[i], last);
	T_EQ(strtoull(json_get(&j, "files"), NULL, 10), nfiles);
	T_EQ(strtoull(json_get(&j, "files_ok"), NULL, 10), nfiles);
	T_EQ(strtoull(json_get(&j, "bytes"), NULL, 10), total_bytes);
	const char *e = json_get(&j, "engine");

	T_ASSERT(!strncmp(e, "\"raw\"", 5) || !strncmp(e, "\"uring\"", 7) ||
		 !strncmp(e, "\"portable\"", 10), "--json: engine %.20s", e);
	t_log("--json: ok (%s)", last);
	tw_run_free(&r);
}

/* Plan, --no-follow. */
static void scenario_plan_nofollow(void)
{
	char *a1[] = { (char *)bfo, "plan", dir, NULL };
	char *link = t_path(dir, "filelink");
	char *a2[] = { (char *)bfo, "read", "--no-follow", "--checksum", link, files[0], NULL };
	char *a3[] = { (char *)bfo, "read", "--no-follow", "--checksum", dir, NULL };
	struct tw_run r;

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a1);
	T_ASSERT(r.status == 0, "plan DIR: exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a2);
	T_ASSERT(r.status == 1, "--no-follow with a symlink named: exit %d, expected 1", r.status);
	T_ASSERT(strstr(r.err, link) != NULL, "--no-follow: stderr does not name the link: %s", r.err);
	char *w = xxh128sum_of(files, 1);

	expect_same_lines(r.out, w, "--no-follow: the regular file is still read");
	free(w);
	tw_run_free(&r);
	/* in a walk, --no-follow skips the link */
	w = xxh128sum_of(files, nfiles - 1);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a3);
	T_ASSERT(r.status == 0, "--no-follow DIR: exit %d: %s", r.status, r.err);
	expect_same_lines(r.out, w, "read --no-follow --checksum DIR (links skipped)");
	tw_run_free(&r);
	free(w);
	free(link);
	t_log("plan, --no-follow: ok");
}

/* --metadata-only, --stats, --stop-on-error, a FIFO named. */
static void scenario_more_options(void)
{
	char *fifo = t_path(dir, "fifo"), *missing = t_path(dir, "missing-too");
	char *a1[] = { (char *)bfo, "read", "--metadata-only", "--checksum", dir, NULL };
	char *a2[] = { (char *)bfo, "read", "--stats", dir, NULL };
	char *a3[] = { (char *)bfo, "read", "--checksum", fifo, files[0], NULL };
	char *a4[] = { (char *)bfo, "read", "--stop-on-error", "--checksum", missing, dir, NULL };
	struct tw_run r;

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a1);
	T_ASSERT(r.status == 0 && r.out_len == 0, "--metadata-only --checksum: exit %d, %zu bytes out",
		 r.status, r.out_len);
	tw_run_free(&r);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a2);
	T_ASSERT(r.status == 0 && r.err_len > 0 && r.out_len == 0, "--stats: exit %d, %zu bytes err",
		 r.status, r.err_len);
	tw_run_free(&r);
	t_watchdog(60, "bfo read of a FIFO (must not block)");
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a3);
	T_ASSERT(r.status == 1 && strstr(r.err, fifo), "FIFO named: exit %d, stderr %s", r.status, r.err);
	char *w = xxh128sum_of(files, 1);

	expect_same_lines(r.out, w, "a FIFO named with a file");
	free(w);
	tw_run_free(&r);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, a4);
	T_ASSERT(r.status == 1 && strstr(r.err, missing), "--stop-on-error: exit %d, stderr %s",
		 r.status, r.err);
	tw_run_free(&r);
	t_watchdog(0, NULL);
	free(fifo);
	free(missing);
	t_log("--metadata-only, --stats, a FIFO named, --stop-on-error: ok");
}

/* SIGINT while reading paths from a pipe that stays open: exit 130. */
static void scenario_sigint(void)
{
	int pin[2], st;
	pid_t pid;
	char line[4200];

	T_ASSERT(pipe2(pin, O_CLOEXEC) == 0, "pipe");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(pin[0], 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl(bfo, bfo, "read", "--checksum", "-", (char *)NULL);
		_exit(127);
	}
	snprintf(line, sizeof(line), "%s\n", files[0]);
	T_ASSERT(write(pin[1], line, strlen(line)) > 0, "write");
	/* bfo has read the path from the pipe (none left in it), which
	 * it does once its SIGINT handler is in place: however slow its
	 * start on a busy machine, the signal reaches that handler */
	t_watchdog(120, "bfo read - reading its first path");
	for (int left = 1; left > 0;) {
		struct timespec ts = { 0, 1000 * 1000 };

		T_ASSERT(ioctl(pin[0], FIONREAD, &left) == 0, "FIONREAD: %s", strerror(errno));
		if (left > 0)
			nanosleep(&ts, NULL);
	}
	close(pin[0]);
	t_watchdog(30, "bfo read - after SIGINT (must exit)");
	kill(pid, SIGINT);
	while (waitpid(pid, &st, 0) < 0)
		T_ASSERT(errno == EINTR, "waitpid");
	close(pin[1]);
	t_watchdog(0, NULL);
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 130, "after SIGINT: status 0x%x, expected exit 130", st);
	t_log("SIGINT: exit 130: ok");
}

/* Names with a backslash or a newline: escaped like md5sum does. */
static void scenario_escapes(void)
{
	char *d2 = t_path(base, "esc");
	char *names[2];
	struct tw_run r, m;

	mkdir(d2, 0755);
	names[0] = t_pathf("%s/back\\slash", d2);
	names[1] = t_pathf("%s/new\nline", d2);
	t_write_random(names[0], 100, 400);
	t_write_random(names[1], 200, 401);

	char *argv[] = { (char *)bfo, "read", "--checksum", names[0], names[1], NULL };
	char *md5[] = { "md5sum", names[0], names[1], NULL };
	char *raw = xxh128sum_of(names, 2);

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 0, "escaped names: exit %d: %s", r.status, r.err);
	tw_run(&m, NULL, 0, (uid_t)-1, (gid_t)-1, md5);
	T_ASSERT(m.status == 0, "md5sum: %s", m.err);

	struct lines b = split_sorted(r.out), c = split_sorted(m.out);

	T_ASSERT(b.n == 2 && c.n == 2, "escaped names: %zu lines, md5sum %zu", b.n, c.n);
	for (int i = 0; i < 2; i++) {
		/* same escaping of the name (and the leading backslash) */
		const char *bn = strstr(b.v[i], "  ");
		bool found = false;

		T_ASSERT(bn, "no name in '%s'", b.v[i]);
		for (int k = 0; k < 2; k++) {
			const char *cn = strstr(c.v[k], "  ");

			if (cn && !strcmp(bn, cn))
				found = (b.v[i][0] == '\\') == (c.v[k][0] == '\\');
		}
		T_ASSERT(found, "escaping: bfo prints '%s', md5sum prints\n%s", b.v[i], m.out);
		/* same hash as xxh128sum */
		char hex[33];

		memcpy(hex, b.v[i] + (b.v[i][0] == '\\'), 32);
		hex[32] = '\0';
		T_ASSERT(strstr(raw, hex) != NULL, "hash %s not printed by xxh128sum: %s", hex, raw);
	}
	lines_free(&b);
	lines_free(&c);
	tw_run_free(&r);
	tw_run_free(&m);
	free(raw);
	free(names[0]);
	free(names[1]);
	free(d2);
	t_log("names with a backslash or a newline, escaped like md5sum: ok");
}

int main(void)
{
	t_init("t_cli", 300);
	if (access(bfo, X_OK) != 0)
		t_fail("the bfo command %s is missing", bfo);
	if (!t_have_prog("xxh128sum"))
		t_skip("xxh128sum not installed (apt-get install xxhash)");

	make_tree();
	scenario_walk();
	scenario_missing();
	scenario_usage();
	scenario_stdin();
	scenario_json();
	scenario_plan_nofollow();
	scenario_more_options();
	scenario_sigint();
	scenario_escapes();

	free(want);
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	free(dir);
	t_log("PASS");
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_stats: `--stats` and `--json` name what ran, per engine and per path,
 * against what the files are (stat): on a tree of many small files, empty
 * files and a few files above --large-file (read in pieces),
 *  - bfo read --engine uring: uring counts every file up to --large-file,
 *    portable the large ones, all "in pieces"; the text names both counts
 *    and, apart, the engine that read most bytes (issue 34: "engine
 *    portable" when nearly every file went through uring);
 *  - --engine portable: every file portable, the large ones in pieces;
 *  - --engine raw where the device can be read raw (as root, a readable
 *    block device): raw files split into inode tables and FIEMAP, the two
 *    adding up;
 *  - --metadata-only: every file "no data read";
 *  - in every case the paths of files_by_path add up to files, and the JSON
 *    and the text agree;
 *  - bfo cp --stats and bfo send --stats: the read side's line, uring and
 *    pieces as stat says (the copy compared with the source by cmp).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

static const char *bfo = BFO_CLI;

#define LARGE (64u << 10)       /* --large-file for bfo read */

struct expect {
	uint64_t files, small, large, empty, bytes_small, bytes_large;
};

/* The number after "key": inside the object "obj":{...} (NULL: top level). */
static uint64_t jnum(const char *json, const char *obj, const char *key)
{
	char k[128];
	const char *p = json, *end = NULL;

	if (obj) {
		snprintf(k, sizeof(k), "\"%s\":{", obj);
		p = strstr(json, k);
		T_ASSERT(p, "no object %s in %s", obj, json);
		end = strchr(p, '}');
	}
	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(p, k);
	if (!p || (end && p > end))
		return 0;       /* an engine that ran no file is left out */
	return strtoull(p + strlen(k), NULL, 10);
}

static char *last_line(char *out)
{
	size_t n = strlen(out);

	while (n && out[n - 1] == '\n')
		out[--n] = '\0';
	char *l = strrchr(out, '\n');

	return l ? l + 1 : out;
}

/* The path counts of a --json line add up to its files. */
static void check_sums(const char *j, const char *what)
{
	uint64_t sum = jnum(j, "files_by_path", "raw_itable") + jnum(j, "files_by_path", "raw_fiemap") +
		       jnum(j, "files_by_path", "uring") + jnum(j, "files_by_path", "portable") +
		       jnum(j, "files_by_path", "pieces") + jnum(j, "files_by_path", "none");

	T_ASSERT(sum == jnum(j, NULL, "files"), "[%s] files_by_path adds up to %" PRIu64 ", files %" PRIu64
		 ": %s", what, sum, jnum(j, NULL, "files"), j);
}

static void run_read(struct tw_run *r, const char *dir, const char *engine, const char *extra)
{
	char *argv[] = { (char *)bfo, "read", "--stats", "--json", "--large-file", "64K", "--engine",
			 (char *)engine, (char *)extra, (char *)dir, NULL };

	if (!extra) {
		argv[8] = (char *)dir;
		argv[9] = NULL;
	}
	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
}

/* The files a "files by engine:" line counts, engine by engine. */
static uint64_t engine_sum(const char *line)
{
	static const char *const names[] = { " raw ", " uring ", " portable ", " no data read " };
	const char *end;
	uint64_t sum = 0;

	T_ASSERT(line && (end = strchr(line, '\n')), "no files by engine line");
	for (int i = 0; i < 4; i++) {
		const char *p = strstr(line, names[i]);

		if (p && p < end)
			sum += strtoull(p + strlen(names[i]), NULL, 10);
	}
	return sum;
}

static void expect_line(const char *err, const char *want, const char *what)
{
	T_ASSERT(strstr(err, want), "[%s] --stats does not say '%s':\n%s", what, want, err);
}

/* What stat says of the tree dir: the expectations. */
static void expect_of(char *dir, struct expect *x)
{
	struct tw_run f;
	char *argv[] = { "find", dir, "-type", "f", "-printf", "%s\n", NULL };

	tw_run(&f, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(f.status == 0, "find: %s", f.err);
	for (char *p = f.out; *p; p = strchr(p, '\n') + 1) {
		uint64_t s = strtoull(p, NULL, 10);

		x->files++;
		x->empty += s == 0;
		if (s > LARGE) {
			x->large++;
			x->bytes_large += s;
		} else {
			x->small++;
			x->bytes_small += s;
		}
	}
	tw_run_free(&f);
	T_ASSERT(x->large == 4 && x->bytes_large > x->bytes_small, "the tree is not as meant");
}

/* uring: the small files through io_uring, the large in pieces. */
static void check_uring(char *dir, const struct expect *x)
{
	struct tw_run r;
	char want[512];

	run_read(&r, dir, "uring", NULL);
	if (r.status == 2 && strstr(r.err, "io_uring"))
		t_skip("io_uring refused here: %s", r.err);
	T_ASSERT(r.status == 0, "read --engine uring: exit %d: %s", r.status, r.err);
	{
		const char *j = last_line(r.out);

		T_EQ(jnum(j, NULL, "files"), x->files);
		T_EQ(jnum(j, "files_by_path", "uring"), x->small);
		T_EQ(jnum(j, "files_by_path", "pieces"), x->large);
		T_EQ(jnum(j, "files_by_path", "portable"), 0);
		T_EQ(jnum(j, NULL, "files_pieces"), x->large);
		check_sums(j, "uring");
		snprintf(want, sizeof(want), "files by engine: uring %" PRIu64 ", portable %" PRIu64
			 " (%" PRIu64 " large files in pieces, 0 whole); most bytes: portable", x->small, x->large,
			 x->large);
		expect_line(r.err, want, "uring");
		t_log("uring: %s", want);
	}
	tw_run_free(&r);
}

/* portable: every file on the pool, the large in pieces. */
static void check_portable(char *dir, const struct expect *x)
{
	struct tw_run r;
	char want[512];

	run_read(&r, dir, "portable", NULL);
	T_ASSERT(r.status == 0, "read --engine portable: exit %d: %s", r.status, r.err);
	{
		const char *j = last_line(r.out);

		T_EQ(jnum(j, "files_by_path", "portable"), x->small);
		T_EQ(jnum(j, "files_by_path", "pieces"), x->large);
		T_EQ(jnum(j, "files_by_engine", "portable"), x->files);
		check_sums(j, "portable");
		snprintf(want, sizeof(want), "files by engine: portable %" PRIu64 " (%" PRIu64
			 " large files in pieces, %" PRIu64 " whole); most bytes: portable", x->files, x->large, x->small);
		expect_line(r.err, want, "portable");
		t_log("portable: %s", want);
	}
	tw_run_free(&r);
}

/* Metadata only: no data read for any. */
static void check_metadata_only(char *dir, const struct expect *x)
{
	struct tw_run r;
	char want[512];

	run_read(&r, dir, "auto", "--metadata-only");
	T_ASSERT(r.status == 0, "read --metadata-only: exit %d: %s", r.status, r.err);
	{
		const char *j = last_line(r.out);

		T_EQ(jnum(j, "files_by_path", "none"), x->files);
		check_sums(j, "metadata-only");
		snprintf(want, sizeof(want), "files by engine: no data read %" PRIu64 "\n", x->files);
		expect_line(r.err, want, "metadata-only");
	}
	tw_run_free(&r);
}

/* raw, where this machine lets it read the device: a copy of the tree
 * on a loop ext4 as root. */
static void check_raw(char *dir, const struct expect *x)
{
	struct tw_run r;

	char why[256] = "not root";
	const char *mnt = geteuid() == 0 ? t_loop_fs("ext4", 128, "", "", why, sizeof(why)) : NULL;
	char *rawdir = mnt ? t_path(mnt, "tree") : strdup(dir);

	if (mnt)
		T_ASSERT(t_sh("cp -a '%s' '%s' && sync", dir, rawdir) == 0, "cp -a to the loop ext4");
	else
		t_log("no loop ext4 (%s): raw tried on %s", why, dir);
	run_read(&r, rawdir, "raw", NULL);
	T_ASSERT(r.status == 0, "read --engine raw: exit %d: %s", r.status, r.err);
	if (jnum(last_line(r.out), "files_by_engine", "raw")) {
		const char *j = last_line(r.out);
		uint64_t raw = jnum(j, "files_by_engine", "raw"), it = jnum(j, NULL, "files_raw_itable");

		T_EQ(jnum(j, "files_by_path", "raw_itable"), it);
		T_EQ(jnum(j, "files_by_path", "raw_fiemap"), raw - it);
		/* no file changes: none leaves the raw path */
		T_EQ(raw, x->small);
		T_EQ(jnum(j, "files_by_path", "pieces"), x->large);
		T_ASSERT(it <= raw, "raw %" PRIu64 ", from the inode tables %" PRIu64, raw, it);
		check_sums(j, "raw");
		expect_line(r.err, it ? " with metadata from the inode tables, " : " (through statx and FIEMAP)", "raw");
		t_log("raw: %" PRIu64 " files, %" PRIu64 " with metadata from the inode tables", raw, it);
	} else {
		T_ASSERT(!mnt, "raw read nothing on a loop ext4 as root: %s", r.err);
		check_sums(last_line(r.out), "raw refused");
		t_log("raw: not here (%.200s)", strstr(r.err, "raw no") ? strstr(r.err, "raw no") : r.err);
	}
	tw_run_free(&r);
	free(rawdir);
}

/* bfo cp --stats and bfo send --stats: the read side's line.  Their
 * large_file is the default (16 MiB): one file above it. */
static void check_copiers(char *dir, char *cpdir, const struct expect *x)
{
	struct tw_run r;
	char want[512];

	char *big = t_pathf("%s/b/big", dir);
	char *dirc = t_pathf("%s/", dir);   /* its contents: cpdir is the copy (rsync's rule) */
	char *argv[] = { (char *)bfo, "cp", "-a", "--stats", "--no-progress", dirc, cpdir, NULL };
	char *diff[] = { "diff", "-r", dir, cpdir, NULL };
	struct tw_run d;

	t_write_random(big, (17u << 20) + 1, 999);
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	T_ASSERT(r.status == 0, "cp -a --stats: exit %d: %s", r.status, r.err);
	/* auto: raw or uring for the small files, as the machine allows */
	snprintf(want, sizeof(want), "portable 1 (1 large file in pieces, 0 whole); most bytes: ");
	expect_line(r.err, "\n  read: files by engine: ", "cp");
	expect_line(r.err, want, "cp");
	T_EQ(engine_sum(strstr(r.err, "  read: files by engine: ")), x->files + 1);
	tw_run(&d, NULL, 0, (uid_t)-1, (gid_t)-1, diff);
	T_ASSERT(d.status == 0, "the copy differs from the source: %s", d.out);
	tw_run_free(&d);
	tw_run_free(&r);
	t_log("cp: %s", want);

	char *sargv[] = { "sh", "-c", "\"$0\" send --stats \"$1\" > /dev/null", (char *)bfo, dir, NULL };

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, sargv);
	T_ASSERT(r.status == 0, "send --stats: exit %d: %s", r.status, r.err);
	expect_line(r.err, want, "send");
	T_EQ(engine_sum(strstr(r.err, "  read: files by engine: ")), x->files + 1);
	tw_run_free(&r);
	free(big);
	free(dirc);
}

int main(void)
{
	const char *base;
	char *dir, *cpdir;
	struct expect x = { 0 };
	uint64_t seed = 34;

	t_init("t_stats", 300);
	if (access(bfo, X_OK) != 0)
		t_fail("the bfo command %s is missing", bfo);
	base = t_tmpdir();
	dir = t_path(base, "tree");
	cpdir = t_path(base, "copy");
	t_sh("mkdir -p '%s/a' '%s/b'", dir, dir);
	for (int i = 0; i < 600; i++) {
		char *p = t_pathf("%s/%s/f%03d", dir, i % 2 ? "a" : "b", i);
		uint64_t size = i % 50 == 0 ? 0 : t_rand_range(&seed, 1, 8192);

		t_write_random(p, size, (uint64_t)i);
		free(p);
	}
	/* Few files, most bytes: the large ones (issue 34's shape). */
	for (int i = 0; i < 4; i++) {
		char *p = t_pathf("%s/a/large%d", dir, i);

		t_write_random(p, (uint64_t)(2u << 20) + (uint64_t)i, 900 + (uint64_t)i);
		free(p);
	}
	expect_of(dir, &x);
	check_uring(dir, &x);
	check_portable(dir, &x);
	check_metadata_only(dir, &x);
	check_raw(dir, &x);
	check_copiers(dir, cpdir, &x);
	free(dir);
	free(cpdir);
	t_log("PASS");
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_sendrecv: `bfo send | bfo recv` (BFO_CLI) against GNU cp on the same
 * source, and the receiver against hostile, broken and huge streams.
 *
 *  - pipes: `bfo send -a SRC/ | bfo recv -a DST` equals `cp -a SRC REF`
 *    (tw_gen_tree: every file type, odd names, hard links, a file in
 *    pieces, xattrs, owners as root); SRC into an existing directory,
 *    SRC/., several sources into a directory and onto a new name (made, as
 *    rsync makes it; onto a file: exit 2), one file, --durability none and
 *    each; without -a it equals `cp -r`; bfo cp through a remote shell that
 *    runs the far side locally (--rsh) both ways, names quoted for it.
 *  - links: hard links whose names travel in different frames, and the
 *    second name of a file in pieces, equal cp -a.
 *  - update: a second run with --update (recv, and a local bfo cp) skips
 *    every unchanged file and replaces the changed ones; --checksum
 *    catches a change that kept size and mtime; a directory of the copy
 *    swapped for a symbolic link to a twin outside makes way for the
 *    directory (as rsync), nothing written in the twin.
 *  - hostile: streams made here, each frame's hash correct, break one rule
 *    each (paths with "..", absolute, empty components; sources named ".."
 *    or "a/b"; a hard link or a file through a symbolic link the stream
 *    made; sizes and counts beyond the limits; bad modes, times, types;
 *    data on a directory; a path below a source that is a file; records
 *    of a source never named; an end frame that miscounts): a clear error,
 *    exit 1 or 2, nothing outside DST touched, no file torn, no leftovers.
 *    A wrong version, a non-stream and an empty stream exit 2.
 *  - hostile lists (version 2, to bfo recv --server --delete): records
 *    whose names leave their source or are absolute, a name prefix longer
 *    than the name before, a hard link or a list of a source never named,
 *    a record cut short, a list not asked for, answers asked of a receiver
 *    without a back channel: refused with their reasons, nothing outside
 *    touched, nothing deleted; a well-formed list is answered (START,
 *    HELLO, a want per record, RESULT) and --delete removes only the
 *    receiver's own entry the list did not name.
 *  - corrupt and truncated: one data byte flipped fails that file alone
 *    (absent, named); a records byte flipped fails its frame; the stream
 *    cut at 40 points: every file complete or absent, no leftovers.
 *  - kill: the sender or the receiver killed (SIGKILL) at several points;
 *    after `bfo recover` every file complete or absent; the same command
 *    with --update then finishes the copy (equal to cp -a).
 *  - interrupt: SIGINT ends a receiver waiting for its stream, before it
 *    began and between frames: exit 130, no leftovers.
 *  - million (root): a stream of 1,000,000 entries written by a receiver
 *    whose peak RSS stays below 256 MiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t_wutil.h"
#include "wire.h"

static bool root_user;

struct env {
	const char *tmp, *src, *ref, *rsh;
	const char *big;            /* a loop ext4 with inodes for a million (root), or NULL */
};

static unsigned cpa_flags(void)
{
	return root_user ? TW_CP_A | TW_TOP : (TW_CP_A & ~TW_OWNER) | TW_TOP;
}

/* `bfo send SARGS | bfo recv RARGS` through bash: both exit statuses. */
static void pipe_run(struct tw_run *r, const char *sargs, const char *rargs, int *ssend,
		     int *srecv)
{
	char *cmd = t_pathf("'%s' send %s | '%s' recv %s; s=(\"${PIPESTATUS[@]}\"); "
			    "exit $((s[0] * 16 + s[1]))", BFO_CLI, sargs, BFO_CLI, rargs);
	char *argv[] = { "bash", "-c", cmd, NULL };

	tw_run(r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	*ssend = r->status / 16;
	*srecv = r->status % 16;
	free(cmd);
}

/* ------------------------------------------------------------ pipes */

static void scenario_pipes(void *arg)
{
	const struct env *v = arg;
	static const char *variants[] = { "", "--durability none", "--durability each" };
	struct tw_run r, c;
	int s1, s2;

	for (size_t k = 0; k < sizeof(variants) / sizeof(variants[0]); k++) {
		char *dst = t_pathf("%s/pipe%zu", v->tmp, k);

		pipe_run(&r, tw_fmt("-a '%s/'", v->src), tw_fmt("-a %s '%s'", variants[k], dst), &s1,
			 &s2);
		TW_CHECK(s1 == 0 && s2 == 0 && r.err_len == 0, "[send -a | recv -a %s] exit %d/%d: %s",
			 variants[k], s1, s2, r.err);
		tw_run_free(&r);
		tw_expect_copy(v->ref, dst, cpa_flags(), tw_fmt("send | recv %s", variants[k]));
		t_sh("rm -rf '%s'", dst);
		free(dst);
	}
	/* into an existing directory: DST/basename(SRC) */
	char *into = t_path(v->tmp, "into");

	tw_mkdirs(into);
	pipe_run(&r, tw_fmt("-a '%s'", v->src), tw_fmt("-a '%s'", into), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[into a directory] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	tw_expect_copy(v->ref, tw_fmt("%s/src", into), cpa_flags(), "into a directory");
	/* SRC/. into an existing directory: the contents, and SRC's metadata */
	char *dot = t_path(v->tmp, "dot"), *dotref = t_path(v->tmp, "dotref");

	tw_mkdirs(dot);
	tw_mkdirs(dotref);
	pipe_run(&r, tw_fmt("-a '%s/.'", v->src), tw_fmt("-a '%s'", dot), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[SRC/.] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", tw_fmt("%s/.", v->src), dotref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a SRC/.: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(dotref, dot, cpa_flags(), "SRC/.");
	/* several sources into a directory, as cp does it */
	char *many = t_path(v->tmp, "many"), *manyref = t_path(v->tmp, "manyref");

	tw_mkdirs(many);
	tw_mkdirs(manyref);
	pipe_run(&r, tw_fmt("-a '%s/a' '%s/suid' '%s/fifo'", v->src, v->src, v->src),
		 tw_fmt("-a '%s'", many), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[several sources] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", tw_fmt("%s/a", v->src), tw_fmt("%s/suid", v->src),
		tw_fmt("%s/fifo", v->src), manyref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a several: %s", c.err);
	tw_run_free(&c);
	/* (the directory's own times are its own: it took new names) */
	tw_expect_copy(manyref, many, cpa_flags() & ~TW_TOP, "several sources");
	/* several sources onto a file: exit 2 */
	t_write_random(tw_fmt("%s/nodir", v->tmp), 10, 1);
	pipe_run(&r, tw_fmt("-a '%s/a' '%s/suid'", v->src, v->src),
		 tw_fmt("-a '%s/nodir'", v->tmp), &s1, &s2);
	TW_CHECK(s2 == 2 && strstr(r.err, "Not a directory"),
		 "[several onto a file] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	/* several sources onto a new name: made, as rsync makes it */
	pipe_run(&r, tw_fmt("-a '%s/a' '%s/suid' '%s/fifo'", v->src, v->src, v->src),
		 tw_fmt("-a '%s/newdir'", v->tmp), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[several onto a new name] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	tw_expect_copy(manyref, tw_fmt("%s/newdir", v->tmp), cpa_flags() & ~TW_TOP,
		       "several sources onto a new name");
	/* one file onto a new name */
	pipe_run(&r, tw_fmt("-a '%s/a/big.bin'", v->src), tw_fmt("-a '%s/onefile'", v->tmp), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[one file] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	{
		char why[256];
		uint8_t *want;
		uint64_t len;

		T_ASSERT(t_read_plain(tw_fmt("%s/a/big.bin", v->src), &want, &len) == 0, "read big");
		TW_CHECK(tw_file_check(AT_FDCWD, tw_fmt("%s/onefile", v->tmp), want, len, why,
				       sizeof(why)) == 0, "[one file] %s", why);
		free(want);
	}
	/* without -a: as cp -r */
	char *rec = t_path(v->tmp, "rec"), *recref = t_path(v->tmp, "recref");

	pipe_run(&r, tw_fmt("'%s/'", v->src), tw_fmt("'%s'", rec), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[no -a] exit %d/%d: %s", s1, s2, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-r", v->src, recref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -r: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(recref, rec, TW_MODE | TW_OWNER | TW_XATTRS | TW_TOP, "send | recv without -a");
	t_sh("rm -rf '%s' '%s' '%s' '%s' '%s' '%s' '%s' '%s/onefile' '%s/nodir' '%s/newdir'", into, dot,
	     dotref, many, manyref, rec, recref, v->tmp, v->tmp, v->tmp);
	free(into);
	free(dot);
	free(dotref);
	free(many);
	free(manyref);
	free(rec);
	free(recref);
	t_log("send | recv: compared with cp -a and cp -r");
	tw_checks_end();
}

/* Hard links whose names land in different frames: a file in pieces with
 * a second name, and 40 files of 1 MiB (several 16 MiB batches) with a
 * second name each in another directory. */
static void scenario_links(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "lsrc"), *dst = t_path(v->tmp, "ldst"), *ref = t_path(v->tmp, "lref");
	struct tw_run r, c;
	int s1, s2;

	tw_mkdirs(tw_fmt("%s/a", src));
	tw_mkdirs(tw_fmt("%s/z", src));
	t_write_random(tw_fmt("%s/a/big", src), TW_GEN_BIG, 5);
	T_ASSERT(link(tw_fmt("%s/a/big", src), tw_fmt("%s/z/big2", src)) == 0, "link");
	for (int i = 0; i < 40; i++) {
		t_write_random(tw_fmt("%s/a/m%02d", src, i), 1 << 20, 100 + (uint64_t)i);
		T_ASSERT(link(tw_fmt("%s/a/m%02d", src, i), tw_fmt("%s/z/n%02d", src, 39 - i)) == 0, "link");
	}
	/* atimes in the future: reading the source does not move them */
	tw_gen_times(tw_fmt("%s/a/big", src), 1);
	for (int i = 0; i < 40; i++)
		tw_gen_times(tw_fmt("%s/a/m%02d", src, i), 2 + i);
	tw_gen_times(tw_fmt("%s/a", src), 50);
	tw_gen_times(tw_fmt("%s/z", src), 51);
	tw_gen_times(src, 52);
	pipe_run(&r, tw_fmt("-a '%s/'", src), tw_fmt("-a --stats '%s'", dst), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0 && strstr(r.err, " batches"), "[links] exit %d/%d: %s", s1, s2, r.err);
	TW_CHECK(!strstr(r.err, " 1 batches"), "[links] one batch only, no link crossed: %s", r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, cpa_flags(), "hard links across frames");
	t_sh("rm -rf '%s' '%s' '%s'", src, dst, ref);
	free(src);
	free(dst);
	free(ref);
	t_log("hard links across frames and of a file in pieces: compared with cp -a");
	tw_checks_end();
}

/* bfo cp to and from HOST: through a remote shell that runs the far side
 * here (t_ssh does it through a real sshd). */
static void scenario_rsh(void *arg)
{
	const struct env *v = arg;
	char *odd = t_pathf("%s/it's a $dir", v->tmp), *back = t_pathf("%s/back", v->tmp);
	struct tw_run r;

	tw_runl(&r, BFO_CLI, "cp", "-a", "--rsh", v->rsh, "--remote-bfo", BFO_CLI, tw_fmt("%s/", v->src),
		tw_fmt("somehost:%s", odd), (char *)NULL);
	TW_CHECK(r.status == 0 && r.err_len == 0, "[cp -a SRC HOST:DST] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_expect_copy(v->ref, odd, cpa_flags(), "cp -a SRC HOST:DST");
	tw_runl(&r, BFO_CLI, "cp", "-a", "-e", v->rsh, "--remote-bfo", BFO_CLI,
		tw_fmt("somehost:%s/", odd), back, (char *)NULL);
	TW_CHECK(r.status == 0 && r.err_len == 0, "[cp -a HOST:SRC DST] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	tw_expect_copy(v->ref, back, cpa_flags(), "cp -a HOST:SRC DST");
	/* both remote, and a remote shell that is not there */
	tw_runl(&r, BFO_CLI, "cp", "h:a", "h:b", (char *)NULL);
	TW_CHECK(r.status == 2 && strstr(r.err, "both be remote"), "[HOST:SRC HOST:DST] exit %d: %s",
		 r.status, r.err);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "cp", "-e", "/no/such/rsh", v->src, "h:x", (char *)NULL);
	TW_CHECK(r.status == 2 && strstr(r.err, "cannot run"), "[missing rsh] exit %d: %s", r.status,
		 r.err);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "cp", "-e", v->rsh, "--remote-bfo", "/no/such/bfo", v->src,
		tw_fmt("h:%s/nothere", v->tmp), (char *)NULL);
	TW_CHECK(r.status == 2 && strstr(r.err, "--remote-bfo") &&
		 !tw_exists(tw_fmt("%s/nothere", v->tmp)), "[missing remote bfo] exit %d: %s", r.status,
		 r.err);
	tw_run_free(&r);
	tw_runl(&r, "rm", "-rf", odd, back, (char *)NULL);
	tw_run_free(&r);
	free(odd);
	free(back);
	t_log("bfo cp through a remote shell: both ways compared with cp -a");
	tw_checks_end();
}

/* ------------------------------------------------------------ update */

/* The "N skipped" of a --stats line, or -1. */
static long skipped_of(const char *err)
{
	const char *p = strstr(err, " skipped");

	while (p && p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return p ? strtol(p, NULL, 10) : -1;
}

static void scenario_update(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "usrc"), *top = t_path(v->tmp, "udst"), *ref = t_path(v->tmp, "uref");
	char *dst = t_path(top, "usrc");
	struct tw_run r, c;
	int s1, s2, files;

	/* Into an existing directory, as cp: the same command again lands on
	 * the same copy (onto a new name, a second run would copy into it). */
	tw_mkdirs(top);
	t_sh("cp -a '%s' '%s'", v->src, src);
	pipe_run(&r, tw_fmt("-a '%s'", src), tw_fmt("-a '%s'", top), &s1, &s2);
	T_ASSERT(s1 == 0 && s2 == 0, "first copy: %d/%d %s", s1, s2, r.err);
	tw_run_free(&r);
	/* and a local bfo cp of it, updated below the same way */
	char *ltop = t_path(v->tmp, "ludst"), *ldst = t_path(ltop, "usrc");

	tw_mkdirs(ltop);
	tw_runl(&r, BFO_CLI, "cp", "-a", src, ltop, (char *)NULL);
	T_ASSERT(r.status == 0, "first local copy: %s", r.err);
	tw_run_free(&r);
	files = tw_count_regular(src);
	/* a new file, a changed one (new bytes, new mtime) */
	t_write_random(tw_fmt("%s/a/new.bin", src), 10000, 99);
	t_write_random(tw_fmt("%s/a/b/f002", src), 4096, 98);
	pipe_run(&r, tw_fmt("-a '%s'", src), tw_fmt("-a --update --stats '%s'", top), &s1, &s2);
	TW_CHECK(s1 == 0 && s2 == 0, "[--update] exit %d/%d: %s", s1, s2, r.err);
	/* every regular file but the changed one (the new one was not
	 * counted); the two other names of hl_a go as hard links */
	long sk = skipped_of(r.err);

	TW_CHECK(sk == files - 1 - 2, "[--update] skipped %ld of %d files: %s", sk, files, r.err);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "cp", "-a", "--update", "--stats", src, ltop, (char *)NULL);
	sk = skipped_of(r.err);
	TW_CHECK(r.status == 0 && sk == files - 1 - 2, "[cp --update] exit %d, skipped %ld of %d: %s",
		 r.status, sk, files, r.err);
	tw_run_free(&r);
	tw_runl(&c, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	tw_expect_copy(ref, dst, cpa_flags() & ~TW_ATIME, "--update");
	tw_expect_copy(ref, ldst, cpa_flags() & ~TW_ATIME, "cp --update");
	/* same size, same mtime, other bytes: only --checksum sees it */
	t_sh("cp -p '%s/a/b/f002' '%s/keep' && head -c 4096 /dev/urandom > '%s/a/b/f002' && "
	     "touch -r '%s/keep' '%s/a/b/f002' && rm '%s/keep'", src, v->tmp, src, v->tmp, src, v->tmp);
	pipe_run(&r, tw_fmt("-a '%s'", src), tw_fmt("-a --update '%s'", top), &s1, &s2);
	TW_CHECK(s2 == 0, "[--update, size and mtime kept] exit %d", s2);
	tw_run_free(&r);
	char msg[4096];

	TW_CHECK(tw_tree_diff(src, dst, 0, NULL, msg, sizeof(msg)) == 1,
		 "[--update] a change that kept size and mtime is not left alone");
	tw_runl(&r, BFO_CLI, "cp", "-a", "--update", src, ltop, (char *)NULL);
	TW_CHECK(r.status == 0 && tw_tree_diff(src, ldst, 0, NULL, msg, sizeof(msg)) == 1,
		 "[cp --update] a change that kept size and mtime is not left alone: %s", msg);
	tw_run_free(&r);
	pipe_run(&r, tw_fmt("-a '%s'", src), tw_fmt("-a --update --checksum '%s'", top), &s1, &s2);
	TW_CHECK(s2 == 0, "[--update --checksum] exit %d: %s", s2, r.err);
	tw_run_free(&r);
	tw_runl(&r, BFO_CLI, "cp", "-a", "--update", "--checksum", src, ltop, (char *)NULL);
	TW_CHECK(r.status == 0, "[cp --update --checksum] exit %d: %s", r.status, r.err);
	tw_run_free(&r);
	t_sh("rm -rf '%s' && cp -a '%s' '%s'", ref, src, ref);
	tw_expect_copy(ref, dst, cpa_flags() & ~TW_ATIME, "--update --checksum");
	tw_expect_copy(ref, ldst, cpa_flags() & ~TW_ATIME, "cp --update --checksum");
	/* a directory of the copy swapped for a symbolic link to a twin
	 * outside: --update must not take the twin's files for the copy's,
	 * nor write into them; as rsync, the link makes way for the
	 * directory (the link itself replaced, never followed) */
	{
		char *twin = t_path(v->tmp, "twin"), *before = t_path(v->tmp, "twin.before");

		t_sh("mv '%s/a/b/c' '%s' && ln -s '%s' '%s/a/b/c' && cp -a '%s' '%s'", ldst, twin, twin,
		     ldst, twin, before);
		tw_runl(&r, BFO_CLI, "cp", "-a", "--update", "--stats", src, ltop, (char *)NULL);
		TW_CHECK(r.status == 0, "[cp --update, a symlinked directory] exit %d: %s", r.status, r.err);
		/* (its files' link counts move: the copy's names of them, hard
		 * links of its group, were replaced; nothing was written in it) */
		TW_CHECK(tw_tree_diff(before, twin, TW_MODE | TW_MTIME | TW_OWNER, NULL, msg, sizeof(msg)) == 0,
			 "[cp --update, a symlinked directory] the twin changed: %s", msg);
		tw_expect_copy(ref, ldst, cpa_flags() & ~TW_ATIME, "cp --update, a symlinked directory");
		tw_run_free(&r);
		t_sh("rm -rf '%s' '%s'", twin, before);
		free(twin);
		free(before);
	}
	t_sh("rm -rf '%s' '%s' '%s' '%s'", src, top, ref, ltop);
	free(ltop);
	free(ldst);
	free(src);
	free(top);
	free(dst);
	free(ref);
	t_log("--update: unchanged files skipped, changed replaced; --checksum sees content");
	tw_checks_end();
}

/* ------------------------------------------------------------ streams made here */

struct sbuf {
	uint8_t *p;
	size_t len, cap;
};

static uint8_t *sb_grow(struct sbuf *b, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		T_ASSERT(b->p, "out of memory");
	}
	b->len += n;
	return b->p + b->len - n;
}

static void sb_start(struct sbuf *b, uint32_t version)
{
	uint8_t *p = sb_grow(b, WIRE_START_LEN);

	wire_start_put(p, WIRE_F_ARCHIVE);
	p[8] = (uint8_t)version;
}

/* A frame of kind with meta[0..mlen) and data[0..dlen), its hash right. */
static void sb_frame(struct sbuf *b, uint32_t kind, uint32_t count, const void *meta, size_t mlen,
		     const void *data, size_t dlen)
{
	uint8_t *h = sb_grow(b, WIRE_HEAD_LEN);
	size_t at = b->len - WIRE_HEAD_LEN;

	wire_head_put(h, kind, count, mlen, dlen);
	if (mlen)
		memcpy(sb_grow(b, mlen), meta, mlen);
	wire_put64(sb_grow(b, 8), wire_meta_hash(b->p + at, b->p + at + WIRE_HEAD_LEN, mlen));
	if (dlen)
		memcpy(sb_grow(b, dlen), data, dlen);
}

static void sb_sources(struct sbuf *b, int n, const char *const *names, const bool *dirs)
{
	uint8_t meta[4096];
	size_t at = 0;

	for (int i = 0; i < n; i++) {
		struct wire_source s = { dirs[i], names[i], (uint32_t)strlen(names[i]) };

		at += wire_source_put(meta + at, &s);
	}
	sb_frame(b, WIRE_SOURCES, (uint32_t)n, meta, at, NULL, 0);
}

/* An entry for sb_batch: a file (data), a dir, a symlink or hard link. */
static struct wire_entry ent(uint32_t type, const char *path, const char *data_or_target)
{
	struct wire_entry e = { .type = type, .mode = type == BFO_WTYPE_DIR ? 0755 : 0644,
				.mtime_sec = 1000000000, .atime_sec = 1000000000,
				.path = path, .path_len = (uint32_t)strlen(path) };

	if (type == BFO_WTYPE_FILE && data_or_target) {
		e.data = (const uint8_t *)data_or_target;
		e.length = e.size = strlen(data_or_target);
		e.hash = wire_hash(e.data, e.length);
	} else if (data_or_target) {
		e.target = data_or_target;
		e.target_len = (uint32_t)strlen(data_or_target);
	}
	return e;
}

static void sb_batch(struct sbuf *b, const struct wire_entry *e, int n)
{
	size_t mlen = 0, dlen = 0, m = 0, d = 0;
	uint8_t *meta, *data;

	for (int i = 0; i < n; i++) {
		mlen += wire_entry_len(&e[i]);
		dlen += e[i].length;
	}
	meta = malloc(mlen + 1);
	data = malloc(dlen + 1);
	T_ASSERT(meta && data, "out of memory");
	for (int i = 0; i < n; i++) {
		m += wire_entry_put(meta + m, &e[i]);
		if (e[i].length)
			memcpy(data + d, e[i].data, e[i].length);
		d += e[i].length;
	}
	sb_frame(b, WIRE_BATCH, (uint32_t)n, meta, mlen, data, dlen);
	free(meta);
	free(data);
}

static void sb_end(struct sbuf *b, uint64_t entries)
{
	uint8_t meta[WIRE_END_LEN];
	struct wire_end e = { .entries = entries };

	wire_end_put(meta, &e);
	sb_frame(b, WIRE_END, 0, meta, sizeof(meta), NULL, 0);
}

/* One source directory "d", then entries, then the end. */
static void sb_tree(struct sbuf *b, const struct wire_entry *e, int n)
{
	static const char *names[] = { "d" };
	static const bool dirs[] = { true };

	sb_start(b, WIRE_VERSION);
	sb_sources(b, 1, names, dirs);
	sb_batch(b, e, n);
	sb_end(b, (uint64_t)n);
}

static int recv_stream(struct tw_run *r, const struct sbuf *b, const char *dst)
{
	char *argv[] = { BFO_CLI, "recv", "-a", (char *)dst, NULL };

	tw_run(r, b->p, b->len, (uid_t)-1, (gid_t)-1, argv);
	return r->status;
}

/* ------------------------------------------------------------ hostile */

struct hostile {
	const char *what;
	int exit;                   /* expected status */
	const char *says;           /* in stderr */
};

static void hostile_check(const struct env *v, const struct sbuf *b, const struct hostile *h,
			  const char *dst, const struct tw_snap *outside, const char *out)
{
	struct tw_run r;
	char msg[4096];

	recv_stream(&r, b, dst);
	TW_CHECK(r.status == h->exit && strstr(r.err, h->says),
		 "[%s] exit %d (want %d), stderr: %s", h->what, r.status, h->exit, r.err);
	tw_run_free(&r);
	TW_CHECK(tw_snap_diff(outside, out, false, msg, sizeof(msg)) == 0, "[%s] outside changed: %s",
		 h->what, msg);
	TW_CHECK(!tw_exists(dst) || tw_leftovers(dst, true, msg, sizeof(msg)) == 0,
		 "[%s] leftovers: %s", h->what, msg);
	(void)v;
}

/* Not a stream, a newer version, nothing at all. */
static void hostile_not_streams(const struct env *v, struct sbuf *b, const char *dst,
				const struct tw_snap *snap, const char *out)
{
	struct hostile h[] = { { "text", 2, "not a bfo stream" },
			       { "version 2", 2, "newer" },
			       { "empty", 2, "empty" } };

	memcpy(sb_grow(b, 40), "this is not what bfo send writes at all\n", 40);
	hostile_check(v, b, &h[0], dst, snap, out);
	b->len = 0;
	sb_start(b, WIRE_VERSION + 1);
	hostile_check(v, b, &h[1], dst, snap, out);
	b->len = 0;
	hostile_check(v, b, &h[2], dst, snap, out);
}

/* Paths and links that would leave DST, and records breaking a rule each. */
static void hostile_records(const struct env *v, struct sbuf *b, const char *dst,
				const struct tw_snap *snap, const char *out)
{
	char target[PATH_MAX];

	snprintf(target, sizeof(target), "%s", out);
	struct {
		struct hostile h;
		struct wire_entry e[3];
		int n;
	} cases[] = {
		{ { "path ..", 1, "not a relative path" }, { ent(0, "../x", "evil") }, 1 },
		{ { "path a/../../x", 1, "not a relative path" }, { ent(0, "a/../../x", "evil") }, 1 },
		{ { "absolute path", 1, "not a relative path" },
		  { ent(0, tw_fmt("%s/abs", out), "evil") }, 1 },
		{ { "empty component", 1, "not a relative path" }, { ent(0, "a//b", "evil") }, 1 },
		{ { "hard link ..", 1, "hard link target" },
		  { ent(BFO_WTYPE_HARDLINK, "h", "../../victim") }, 1 },
		{ { "file through a symlink the stream made", 1, "Too many levels" },
		  { ent(BFO_WTYPE_SYMLINK, "lnk", target), ent(0, "lnk/victim", "evil") }, 2 },
		{ { "hard link through a symlink the stream made", 1, "Too many levels" },
		  { ent(BFO_WTYPE_SYMLINK, "lnk", target), ent(BFO_WTYPE_HARDLINK, "h", "lnk/victim") },
		  2 },
		{ { "dir through a symlink the stream made", 1, "Too many levels" },
		  { ent(BFO_WTYPE_SYMLINK, "lnk", target), ent(BFO_WTYPE_DIR, "lnk/sub", NULL) }, 2 },
		{ { "record of an unnamed source", 1, "did not name" }, { ent(0, "x", "y") }, 1 },
		{ { "bad mode", 1, "bad mode" }, { ent(0, "x", "y") }, 1 },
		{ { "nanoseconds", 1, "bad mode or time" }, { ent(0, "x", "y") }, 1 },
		{ { "unknown type", 1, "unknown type" }, { ent(0, "x", "y") }, 1 },
		{ { "data on a directory", 1, "not a file" }, { ent(BFO_WTYPE_DIR, "x", NULL) }, 1 },
		{ { "size beyond off_t", 1, "bad size" }, { ent(0, "x", "y") }, 1 },
		{ { "file ends before its size", 1, "ends before its size" }, { ent(0, "x", "y") }, 1 },
		{ { "end frame miscounts", 1, "lost records" }, { ent(0, "x", "y") }, 1 },
		{ { "symlink target with NUL", 1, "holds a NUL" }, { ent(BFO_WTYPE_SYMLINK, "s", "ab") },
		  1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct wire_entry *e = cases[i].e;
		const char *w = cases[i].h.what;

		b->len = 0;
		if (!strcmp(w, "record of an unnamed source"))
			e[0].src = 1;
		else if (!strcmp(w, "bad mode"))
			e[0].mode = 0177777;
		else if (!strcmp(w, "nanoseconds"))
			e[0].mtime_nsec = 1000000000u;
		else if (!strcmp(w, "unknown type"))
			e[0].type = 9;
		else if (!strcmp(w, "data on a directory"))
			e[0].size = e[0].length = 0, e[0].hash = 1;
		else if (!strcmp(w, "size beyond off_t"))
			e[0].size = UINT64_MAX;
		else if (!strcmp(w, "file ends before its size"))
			e[0].size = 2;
		else if (!strcmp(w, "symlink target with NUL"))
			e[0].target = "a\0b";
		if (!strcmp(w, "end frame miscounts")) {
			static const char *names[] = { "d" };
			static const bool dirs[] = { true };

			sb_start(b, WIRE_VERSION);
			sb_sources(b, 1, names, dirs);
			sb_batch(b, e, cases[i].n);
			sb_end(b, 5);
		} else {
			sb_tree(b, e, cases[i].n);
		}
		hostile_check(v, b, &cases[i].h, dst, snap, out);
		/* nothing of a refused record was written */
		/* (the source "d" lands in DST/d: rsync's rule) */
		TW_CHECK(!tw_exists(tw_fmt("%s/d/x", dst)) || !strcmp(w, "end frame miscounts"),
			 "[%s] the refused record was written", w);
		t_sh("rm -rf '%s'", dst);
	}
}

/* Sources: a name that is not one file name; a path below a file source. */
static void hostile_sources(const struct env *v, struct sbuf *b, const char *dst,
				const struct tw_snap *snap, const char *out)
{
	static const char *bad[] = { "..", "a/b", "." };
	static const bool dirs[] = { true };
	struct hostile h = { "source name", 2, "not one file name" };

	for (size_t i = 0; i < 3; i++) {
		b->len = 0;
		sb_start(b, WIRE_VERSION);
		sb_sources(b, 1, &bad[i], dirs);
		sb_end(b, 0);
		hostile_check(v, b, &h, dst, snap, out);
	}
	static const char *fname[] = { "f" };
	static const bool notdir[] = { false };
	struct wire_entry e = ent(0, "below", "x");
	struct hostile h2 = { "path below a file source", 1, "not a directory" };

	b->len = 0;
	sb_start(b, WIRE_VERSION);
	sb_sources(b, 1, fname, notdir);
	sb_batch(b, &e, 1);
	sb_end(b, 1);
	hostile_check(v, b, &h2, dst, snap, out);
	t_sh("rm -rf '%s'", dst);
}

/* Frames beyond the limits: refused from the head, before allocating. */
static void hostile_limits(const struct env *v, struct sbuf *b, const char *dst,
				const struct tw_snap *snap, const char *out)
{
	struct hostile h = { "huge frame", 1, "limits" };
	uint8_t *p;
	static const char *names[] = { "d" };
	static const bool dirs[] = { true };

	b->len = 0;
	sb_start(b, WIRE_VERSION);
	sb_sources(b, 1, names, dirs);
	p = sb_grow(b, WIRE_HEAD_LEN);
	wire_head_put(p, WIRE_BATCH, 1, 1ull << 40, 0);
	hostile_check(v, b, &h, dst, snap, out);
	b->len -= WIRE_HEAD_LEN;
	p = sb_grow(b, WIRE_HEAD_LEN);
	wire_head_put(p, WIRE_BATCH, WIRE_ENTRIES_MAX + 1, WIRE_META_MAX, 0);
	h.what = "too many records";
	h.says = "too many records";
	hostile_check(v, b, &h, dst, snap, out);
	t_sh("rm -rf '%s'", dst);
}

/* Files in pieces: more begun than the receiver holds at once; and a piece
 * whose hash is wrong in the middle of a file. */
static void hostile_pieces(const struct env *v, struct sbuf *b, const char *dst,
				const struct tw_snap *snap, const char *out)
{
	struct hostile h = { "too many files in pieces", 1, "too many files in pieces" };
	enum { N = WIRE_PIECED_MAX + 1 };
	struct wire_entry *e = calloc(N, sizeof(*e));
	char (*names)[16] = calloc(N, sizeof(*names));

	T_ASSERT(e && names, "out of memory");
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "p%04d", i);
		e[i] = ent(0, names[i], "a");
		e[i].size = 2;              /* one of two bytes: more to come */
		e[i].flags = WIRE_E_MORE;
	}
	b->len = 0;
	sb_tree(b, e, N);
	hostile_check(v, b, &h, dst, snap, out);
	TW_CHECK(!tw_exists(tw_fmt("%s/d/p0000", dst)), "[%s] a file in pieces was left", h.what);
	t_sh("rm -rf '%s'", dst);

	struct wire_entry p[4] = { ent(0, "p", "AAAA"), ent(0, "p", "BBBB"), ent(0, "p", "CCCC"),
				   ent(0, "ok", "fine") };

	for (int i = 0; i < 3; i++) {
		p[i].size = 12;
		p[i].offset = 4 * (uint64_t)i;
		p[i].flags = i < 2 ? WIRE_E_MORE : 0;
	}
	p[1].hash ^= 1;
	struct hostile h2 = { "a piece with a bad hash", 1, "Bad message" };

	b->len = 0;
	sb_tree(b, p, 4);
	hostile_check(v, b, &h2, dst, snap, out);
	TW_CHECK(!tw_exists(tw_fmt("%s/d/p", dst)) &&
		 t_sh("test \"$(cat '%s/d/ok')\" = fine", dst) == 0,
		 "[%s] the file is not absent, or the other one not complete", h2.what);
	t_sh("rm -rf '%s'", dst);
	free(e);
	free(names);
}

static void scenario_hostile(void *arg)
{
	const struct env *v = arg;
	char *out = t_path(v->tmp, "outside"), *dst = t_path(v->tmp, "hdst");
	struct tw_snap *snap;
	struct sbuf b = { 0 };

	tw_mkdirs(tw_fmt("%s/sub", out));
	t_write_bytes(tw_fmt("%s/victim", out), "secret", 6);
	chmod(tw_fmt("%s/victim", out), 0600);
	snap = tw_snapshot(out);
	hostile_not_streams(v, &b, dst, snap, out);
	hostile_records(v, &b, dst, snap, out);
	hostile_sources(v, &b, dst, snap, out);
	hostile_limits(v, &b, dst, snap, out);
	hostile_pieces(v, &b, dst, snap, out);

	TW_CHECK(t_sh("test \"$(cat '%s/victim')\" = secret", out) == 0, "the victim changed");
	tw_snap_free(snap);
	free(b.p);
	t_sh("rm -rf '%s' '%s'", out, dst);
	free(out);
	free(dst);
	t_log("hostile streams: refused with their reason, nothing outside DST touched");
	tw_checks_end();
}

/* ------------------------------------------------------------ hostile lists */

/* A LIST frame of source src: records e[0..n), as a sender encodes them. */
static void sb_list(struct sbuf *b, uint16_t src, const struct wire_lent *e, int n, const char *raw,
		    size_t rawlen)
{
	uint8_t *meta = malloc(4 + (size_t)n * WIRE_LENT_MAX + rawlen);
	size_t m = 4;

	T_ASSERT(meta, "memory");
	meta[0] = (uint8_t)src;
	meta[1] = (uint8_t)(src >> 8);
	meta[2] = meta[3] = 0;
	for (int i = 0; i < n; i++)
		m += wire_lent_put(meta + m, &e[i], i ? &e[i - 1] : NULL, false);
	if (raw) {
		memcpy(meta + m, raw, rawlen);
		m += rawlen;
	}
	sb_frame(b, WIRE_LIST, (uint32_t)n + (raw ? 1 : 0), meta, m, NULL, 0);
	free(meta);
}

static struct wire_lent lent(uint32_t type, const char *path)
{
	return (struct wire_lent){ .type = type, .mode = type == BFO_WTYPE_DIR ? 0755 : 0644,
				   .mtime_sec = 1000000000, .path = path, .path_len = (uint32_t)strlen(path) };
}

/* bfo recv --server -a --delete DST fed b: stdout (the answers) captured. */
static int recv_server(struct tw_run *r, const struct sbuf *b, const char *dst)
{
	char *argv[] = { BFO_CLI, "recv", "--server", "-a", "--delete", (char *)dst, NULL };

	tw_run(r, b->p, b->len, (uid_t)-1, (gid_t)-1, argv);
	return r->status;
}

/*
 * The file list from a hostile sender (version 2): records whose names
 * leave their source, a prefix longer than the name before, a hard link to
 * a source never named, a list of a source never named, a list the
 * receiver did not ask for, a stream that waits for answers given to a
 * receiver without a back channel: each refused with its reason, nothing
 * outside DST touched, nothing of DST deleted.  A well-formed list is
 * answered (one want per record) and --delete removes only what the
 * receiver's own index has and the list did not name.
 */
static void scenario_hostile_list(void *arg)
{
	const struct env *v = arg;
	char *out = t_path(v->tmp, "loutside"), *dst = t_path(v->tmp, "ldst");
	static const char *names[] = { "d" };
	static const bool dirs[] = { true };
	struct tw_snap *snap, *dsnap;
	struct sbuf b = { 0 };
	struct tw_run r;
	char msg[4096];

	tw_mkdirs(out);
	t_write_bytes(tw_fmt("%s/victim", out), "secret", 6);
	snap = tw_snapshot(out);
	/* DST has a copy to compare with: the receiver asks for the list */
	tw_mkdirs(tw_fmt("%s/d/keep", dst));
	t_write_bytes(tw_fmt("%s/d/keep/k", dst), "k", 1);
	t_write_bytes(tw_fmt("%s/d/old", dst), "o", 1);
	dsnap = tw_snapshot(dst);
	{
		static const struct { const char *what, *says; int how; } cases[] = {
			{ "a name with ..", "not a relative path", 0 },
			{ "an absolute name", "not a relative path", 1 },
			{ "a prefix longer than the name before", "longer than the limits", 2 },
			{ "a hard link to a source never named", "did not name", 3 },
			{ "a list of a source never named", "did not name", 4 },
			{ "a record cut short", "past its frame", 5 },
		};

		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			struct wire_lent e[2] = { lent(BFO_WTYPE_DIR, ""), lent(BFO_WTYPE_FILE, "keep/k") };

			b.len = 0;
			sb_start(&b, WIRE_VERSION);
			b.p[12] |= WIRE_F_LIST;
			sb_sources(&b, 1, names, dirs);
			if (cases[k].how == 0)
				e[1].path = "keep/../../../loutside/victim";
			else if (cases[k].how == 1)
				e[1].path = "/etc/passwd";
			else if (cases[k].how == 3) {
				e[1].type = BFO_WTYPE_HARDLINK;
				e[1].target = "x";
				e[1].target_len = 1;
				e[1].link_src = 7;
			}
			e[1].path_len = (uint32_t)strlen(e[1].path);
			if (cases[k].how == 2) {
				/* a second record sharing 40 bytes with a name of 0 */
				static const char raw[] = { 0, 40, 1, 'x', 0 };

				sb_list(&b, 0, e, 1, raw, sizeof(raw));
			} else if (cases[k].how == 5) {
				static const char raw[] = { 0, 0, 9, 'a' };

				sb_list(&b, 0, e, 1, raw, sizeof(raw));
			} else {
				sb_list(&b, cases[k].how == 4 ? 3 : 0, e, 2, NULL, 0);
			}
			sb_end(&b, 0);
			recv_server(&r, &b, dst);
			TW_CHECK((r.status == 1 || r.status == 2) && strstr(r.err, cases[k].says),
				 "[list: %s] exit %d, stderr: %s", cases[k].what, r.status, r.err);
			TW_CHECK(tw_snap_diff(dsnap, dst, false, msg, sizeof(msg)) == 0,
				 "[list: %s] DST changed (nothing may be deleted): %s", cases[k].what, msg);
			tw_run_free(&r);
		}
	}
	/* a well-formed list: answered, only the receiver's own unnamed entry goes */
	{
		struct wire_lent e[3] = { lent(BFO_WTYPE_DIR, ""), lent(BFO_WTYPE_DIR, "keep"),
					  lent(BFO_WTYPE_FILE, "keep/k") };

		e[2].size = 1;
		b.len = 0;
		sb_start(&b, WIRE_VERSION);
		b.p[12] |= WIRE_F_LIST;
		sb_sources(&b, 1, names, dirs);
		sb_list(&b, 0, e, 3, NULL, 0);
		sb_end(&b, 0);
		recv_server(&r, &b, dst);
		TW_CHECK(r.status == 0, "[a well-formed list] exit %d: %s", r.status, r.err);
		/* the answers: START, HELLO (list), WANT (3 records), RESULT */
		{
			static const uint32_t kinds[] = { WIRE_HELLO, WIRE_WANT, WIRE_RESULT };
			const uint8_t *p = (const uint8_t *)r.out, *end = p + r.out_len;
			uint32_t version, flags;
			const char *why;
			int nf = 0;

			TW_CHECK(r.out_len >= WIRE_START_LEN && !wire_start_parse_v(p, &version, &flags, &why) &&
				 version == WIRE_VERSION, "[a well-formed list] the answers do not start with START");
			for (p += WIRE_START_LEN; end - p >= WIRE_HEAD_LEN && nf < 3; nf++) {
				struct wire_frame f;

				TW_CHECK(!wire_head_parse(p, &f, &why) && f.kind == kinds[nf] &&
					 (f.kind != WIRE_WANT || f.count == 3),
					 "[a well-formed list] answer %d is not the one expected", nf);
				p += WIRE_HEAD_LEN + f.meta_len + WIRE_HASH_LEN;
			}
			TW_CHECK(nf == 3 && p == end, "[a well-formed list] %d answers, %td bytes left", nf, end - p);
		}
		TW_CHECK(!tw_exists(tw_fmt("%s/d/old", dst)) && tw_exists(tw_fmt("%s/d/keep/k", dst)),
			 "[a well-formed list] --delete did not remove exactly the unnamed entry");
		tw_run_free(&r);
	}
	/* a list the receiver did not ask for (no copy there: it wants everything) */
	{
		struct wire_lent e[1] = { lent(BFO_WTYPE_DIR, "") };
		char *fresh = t_path(v->tmp, "lfresh");

		b.len = 0;
		sb_start(&b, WIRE_VERSION);
		b.p[12] |= WIRE_F_LIST;
		sb_sources(&b, 1, names, dirs);
		sb_list(&b, 0, e, 1, NULL, 0);
		sb_end(&b, 0);
		recv_server(&r, &b, fresh);
		TW_CHECK(r.status == 1 && strstr(r.err, "did not ask"), "[a list not asked for] exit %d: %s",
			 r.status, r.err);
		tw_run_free(&r);
		/* a sender waiting for answers, a receiver without a back channel */
		recv_stream(&r, &b, fresh);
		TW_CHECK((r.status == 1 || r.status == 2) && strstr(r.err, "--server"),
			 "[answers with no back channel] exit %d: %s", r.status, r.err);
		tw_run_free(&r);
		t_sh("rm -rf '%s'", fresh);
		free(fresh);
	}
	TW_CHECK(tw_snap_diff(snap, out, false, msg, sizeof(msg)) == 0, "outside changed: %s", msg);
	tw_snap_free(snap);
	tw_snap_free(dsnap);
	t_sh("rm -rf '%s' '%s'", out, dst);
	free(b.p);
	free(out);
	free(dst);
	t_log("hostile lists: refused with their reasons, nothing outside touched, nothing deleted; "
	      "a well-formed one answered, --delete took only the unnamed entry");
	tw_checks_end();
}

/* ------------------------------------------------------------ broken */

/* The offset of a byte in the middle of the first frame with data: of
 * its data, or (records) of its records. */
static size_t data_byte(const uint8_t *s, size_t len, bool records)
{
	size_t at = WIRE_START_LEN;

	while (at + WIRE_HEAD_LEN <= len) {
		struct wire_frame f;
		const char *why;

		T_ASSERT(wire_head_parse(s + at, &f, &why) == 0, "frame at %zu: %s", at, why);
		if (f.data_len && records)
			return at + WIRE_HEAD_LEN + f.meta_len / 2;
		at += WIRE_HEAD_LEN + f.meta_len + WIRE_HASH_LEN;
		if (f.data_len)
			return at + f.data_len / 2;
		at += f.data_len;
	}
	t_fail("no frame with data in the stream");
	return 0;
}

static void scenario_broken(void *arg)
{
	const struct env *v = arg;
	char *dst = t_path(v->tmp, "bdst"), *file = t_path(v->tmp, "stream");
	struct tw_run r;
	uint8_t *s;
	uint64_t len, seed = 7;
	char msg[4096];

	t_sh("'%s' send -a '%s/' > '%s'", BFO_CLI, v->src, file);
	T_ASSERT(t_read_plain(file, &s, &len) == 0 && len > 1000, "stream of the tree");
	struct sbuf b = { s, len, len };

	/* cut at 40 points: every file complete or absent */
	for (int i = 0; i < 40; i++) {
		size_t cut = i == 0 ? WIRE_START_LEN + 3 : (size_t)t_rand_range(&seed, WIRE_START_LEN, len - 1);
		struct sbuf c = { s, cut, cut };

		recv_stream(&r, &c, dst);
		TW_CHECK(r.status == 1 || r.status == 2, "[cut at %zu] exit %d: %s", cut, r.status, r.err);
		TW_CHECK(strstr(r.err, "ends") != NULL, "[cut at %zu] no reason: %s", cut, r.err);
		tw_run_free(&r);
		TW_CHECK(tw_complete_or_absent(v->src, dst) == 0, "[cut at %zu] torn files", cut);
		TW_CHECK(!tw_exists(dst) || tw_leftovers(dst, true, msg, sizeof(msg)) == 0,
			 "[cut at %zu] leftovers: %s", cut, msg);
		t_sh("rm -rf '%s'", dst);
	}
	/* one data byte flipped: that file fails, named; the rest complete */
	{
		struct sbuf c = { malloc(len), len, len };

		memcpy(c.p, s, len);
		c.p[data_byte(s, len, false)] ^= 0x40;
		recv_stream(&r, &c, dst);
		TW_CHECK(r.status == 1 && strstr(r.err, "Bad message"), "[data flipped] exit %d: %s",
			 r.status, r.err);
		tw_run_free(&r);
		TW_CHECK(tw_complete_or_absent(v->src, dst) == 0, "[data flipped] torn files");
		/* one file missing (with its other names, if it has some) */
		int nd = tw_tree_diff(v->ref, dst, 0, NULL, msg, sizeof(msg));

		TW_CHECK(nd >= 1 && nd <= 3 && strstr(msg, "missing in the copy"),
			 "[data flipped] not one file missing: %s", msg);
		t_sh("rm -rf '%s'", dst);
		/* a records byte flipped: the frame's hash fails */
		memcpy(c.p, s, len);
		c.p[data_byte(s, len, true)] ^= 1;
		recv_stream(&r, &c, dst);
		TW_CHECK(r.status == 1 && strstr(r.err, "hash"), "[records flipped] exit %d: %s",
			 r.status, r.err);
		tw_run_free(&r);
		free(c.p);
		t_sh("rm -rf '%s'", dst);
	}
	(void)b;
	free(s);
	t_sh("rm -rf '%s' '%s'", dst, file);
	free(dst);
	free(file);
	t_log("broken streams: cut at 40 points and flipped bytes leave files complete or absent");
	tw_checks_end();
}

/* ------------------------------------------------------------ kill */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* send SRC | recv -a [extra] DST as two processes; returns their pids. */
static void spawn_pair(const char *src, const char *dst, const char *extra, pid_t *ps, pid_t *pr)
{
	int p[2];

	T_ASSERT(pipe(p) == 0, "pipe");
	*ps = fork();
	T_ASSERT(*ps >= 0, "fork");
	if (*ps == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		execl(BFO_CLI, BFO_CLI, "send", "-a", src, (char *)NULL);
		_exit(127);
	}
	*pr = fork();
	T_ASSERT(*pr >= 0, "fork");
	if (*pr == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 2);
		if (*extra)
			execl(BFO_CLI, BFO_CLI, "recv", "-a", extra, dst, (char *)NULL);
		else
			execl(BFO_CLI, BFO_CLI, "recv", "-a", dst, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	close(p[1]);
}

static void scenario_kill(void *arg)
{
	const struct env *v = arg;
	char *src = t_path(v->tmp, "ksrc"), *top = t_path(v->tmp, "kdst"), *dst = t_path(top, "ksrc");
	uint64_t seed = 42, t0, full;
	struct tw_run r;
	pid_t ps, pr;
	char msg[4096];

	/* the generated tree and 400 files of 64 KiB: long enough to kill */
	t_sh("cp -a '%s' '%s'", v->src, src);
	tw_mkdirs(tw_fmt("%s/bulk", src));
	for (int i = 0; i < 400; i++)
		t_write_random(tw_fmt("%s/bulk/%03d", src, i), 65536, 1000 + (uint64_t)i);
	t0 = now_ns();
	spawn_pair(src, top, "", &ps, &pr);
	T_ASSERT(tw_wait(ps) == 0 && tw_wait(pr) == 0, "a whole send | recv");
	full = now_ns() - t0;
	for (int k = 0; k < 6; k++) {
		t_sh("rm -rf '%s' && mkdir '%s'", top, top);
		bool kill_sender = k % 2 == 0;
		uint64_t at = t_rand_range(&seed, full / 20, full * 9 / 10);

		spawn_pair(src, top, "", &ps, &pr);
		tw_sleep_ns(at);
		kill(kill_sender ? ps : pr, SIGKILL);
		int ss = tw_wait(ps), sr = tw_wait(pr);

		if (kill_sender)
			TW_CHECK(sr == 1 || sr == 2 || sr == 0, "[sender killed] receiver exit %d", sr);
		(void)ss;
		if (!kill_sender) {
			tw_runl(&r, BFO_CLI, "recover", top, (char *)NULL);
			TW_CHECK(r.status == 0, "[receiver killed] recover exit %d: %s",
				 r.status, r.err);
			tw_run_free(&r);
		}
		TW_CHECK(tw_complete_or_absent(src, dst) == 0, "[%s killed after %.0f%%] torn files",
			 kill_sender ? "sender" : "receiver", 100.0 * (double)at / (double)full);
		if (tw_exists(dst))
			TW_CHECK(tw_leftovers(dst, true, msg, sizeof(msg)) == 0, "[%s killed] leftovers: %s",
				 kill_sender ? "sender" : "receiver", msg);
		/* the same copy with --update finishes it */
		spawn_pair(src, top, "--update", &ps, &pr);
		TW_CHECK(tw_wait(ps) == 0 && tw_wait(pr) == 0, "[%s killed] the --update run failed",
			 kill_sender ? "sender" : "receiver");
		char *ref = t_path(v->tmp, "kref");

		t_sh("rm -rf '%s' && cp -a '%s' '%s'", ref, src, ref);
		tw_expect_copy(ref, dst, cpa_flags() & ~TW_ATIME, kill_sender ?
			    "sender killed, then --update" : "receiver killed, then --update");
		t_sh("rm -rf '%s'", ref);
		free(ref);
	}
	t_sh("rm -rf '%s' '%s'", src, top);
	free(src);
	free(top);
	free(dst);
	t_log("kills: every file complete or absent; --update then finishes the copy");
	tw_checks_end();
}

/* ------------------------------------------------------------ interrupt */

/* bfo recv DST with stdin a pipe whose write end is returned. */
static pid_t spawn_recv(const char *dst, int *wfd)
{
	int p[2];
	pid_t pid;

	T_ASSERT(pipe(p) == 0, "pipe");
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		execl(BFO_CLI, BFO_CLI, "recv", "-a", dst, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

/* SIGINT ends a receiver waiting for a stream that does not come, before
 * its start and between frames: exit 130, nothing left behind. */
static void scenario_interrupt(void *arg)
{
	const struct env *v = arg;
	char *dst = t_path(v->tmp, "idst");
	struct sbuf b = { 0 };
	static const char *names[] = { "d" };
	static const bool dirs[] = { true };
	struct wire_entry e = ent(0, "f", "data");

	sb_start(&b, WIRE_VERSION);
	sb_sources(&b, 1, names, dirs);
	sb_batch(&b, &e, 1);
	for (int k = 0; k < 2; k++) {
		int wfd;
		pid_t pid = spawn_recv(dst, &wfd);

		if (k == 1)
			T_ASSERT(write(wfd, b.p, b.len) == (ssize_t)b.len, "write the stream");
		/* its handler in place (it then waits for the stream), however
		 * slowly it started on a busy machine */
		t_watchdog(120, "bfo recv catching SIGINT");
		T_ASSERT(tw_wait_catching(pid, BFO_CLI, SIGINT), "bfo recv ended before it caught SIGINT");
		kill(pid, SIGINT);
		int st = tw_wait(pid);

		TW_CHECK(st == 130, "[SIGINT %s] exit %d", k ? "between frames" : "before the stream", st);
		close(wfd);
		if (tw_exists(dst)) {
			char msg[1024];

			TW_CHECK(tw_leftovers(dst, true, msg, sizeof(msg)) == 0, "[SIGINT] leftovers: %s", msg);
		}
		t_sh("rm -rf '%s'", dst);
	}
	free(b.p);
	free(dst);
	t_log("SIGINT: a waiting receiver exits 130");
	tw_checks_end();
}

/* ------------------------------------------------------------ million */

static void scenario_million(void *arg)
{
	const struct env *v = arg;
	const char *mnt = v->big;
	char *file = t_path(v->tmp, "million.stream");
	struct sbuf b = { 0 };
	struct rusage ru;
	static const char *names[] = { "m" };
	static const bool dirs[] = { true };
	/* 1,000 dirs + 999,000 files; a tenth under ASan, whose shadow memory
	 * and quarantine make RSS say nothing about the receiver's bound */
	enum { DIRS = T_ASAN ? 100 : 1000, PER = 999 };
	struct wire_entry *e = calloc(PER + 1, sizeof(*e));
	char (*paths)[24] = calloc(PER + 1, sizeof(*paths));

	if (!mnt) {
		t_log("no loop file system for a million files: skipped");
		free(e);
		free(paths);
		free(file);
		return;
	}
	sb_start(&b, WIRE_VERSION);
	sb_sources(&b, 1, names, dirs);
	for (int d = 0; d < DIRS; d++) {
		snprintf(paths[0], sizeof(paths[0]), "%04d", d);
		e[0] = ent(BFO_WTYPE_DIR, paths[0], NULL);
		for (int i = 1; i <= PER; i++) {
			snprintf(paths[i], sizeof(paths[i]), "%04d/%03d", d, i);
			e[i] = ent(0, paths[i], "");
		}
		sb_batch(&b, e, PER + 1);
	}
	sb_end(&b, (uint64_t)DIRS * (PER + 1));
	t_write_bytes(file, b.p, b.len);
	free(b.p);
	char *argv[] = { BFO_CLI, "recv", "-a", (char *)tw_fmt("%s/dst", mnt), NULL };
	pid_t pid = tw_spawn(argv, file, NULL);
	/* its pace is the disk's and the machine's (1,200 files/s seen beside
	 * stress-ng and a CI run): a hang is a stall, not a slow run */
	int st = tw_wait_progress(pid, mnt, 120, "million: recv made no progress for 120 s");

	getrusage(RUSAGE_CHILDREN, &ru);
	TW_CHECK(st == 0, "[a million entries] recv exit %d", st);
	TW_CHECK(T_ASAN || ru.ru_maxrss < 256 * 1024, "[a million entries] peak RSS %ld KiB",
		 ru.ru_maxrss);
	struct tw_run r;

	t_watchdog(600, "million: find | wc -l");
	tw_runl(&r, "sh", "-c", "find \"$1\" | wc -l", "sh", tw_fmt("%s/dst", mnt), (char *)NULL);
	/* DST, DST/m (rsync's rule: the source m is copied to DST/m), the rest */
	TW_CHECK(atol(r.out) == 2 + (long)DIRS * (PER + 1), "[a million entries] %s entries", r.out);
	tw_run_free(&r);
	t_log("a million entries: recv peak RSS %ld KiB", ru.ru_maxrss);
	unlink(file);
	free(file);
	free(e);
	free(paths);
	tw_checks_end();
}

int main(void)
{
	static struct env v;
	struct tw_run c;

	t_init("t_sendrecv", 1200);
	root_user = t_is_root();
	umask(022);
	v.tmp = t_tmpdir();
	v.src = t_path(v.tmp, "src");
	v.ref = t_path(v.tmp, "ref");
	v.rsh = tw_local_rsh(v.tmp);
	int n = tw_gen_tree(v.src, 4242);

	tw_runl(&c, "cp", "-a", v.src, v.ref, (char *)NULL);
	T_ASSERT(c.status == 0, "cp -a: %s", c.err);
	tw_run_free(&c);
	t_log("source tree of %d entries on %s", n, tw_fstype(v.tmp));
	/* made here, by the process that cleans up (not in a sub-test) */
	if (root_user) {
		char why[2048];

		v.big = t_loop_fs("ext4", 1500, "-N 1100000", NULL, why, sizeof(why));
		if (!v.big)
			t_log("no loop ext4 (%s): the million entries are not written", why);
	}
	t_subtest("pipes", 300, scenario_pipes, &v);
	t_subtest("links", 120, scenario_links, &v);
	t_subtest("remote shell", 120, scenario_rsh, &v);
	t_subtest("update", 120, scenario_update, &v);
	t_subtest("hostile", 120, scenario_hostile, &v);
	t_subtest("hostile list", 120, scenario_hostile_list, &v);
	t_subtest("broken", 300, scenario_broken, &v);
	t_subtest("kill", 300, scenario_kill, &v);
	t_subtest("interrupt", 60, scenario_interrupt, &v);
	t_subtest("million", 600, scenario_million, &v);
	t_done();
	return 0;
}

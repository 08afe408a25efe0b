/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_recover: recovery of unfinished batches made by hand, at precise
 * points.  A child process writes a batch through the library and is
 * parked at an exact call of the writer (this program is linked with
 * -Wl,--wrap for pwrite, fchmod, futimens, renameat and syncfs: the wrapper
 * parks the child when the call concerns a chosen file, optionally after
 * writing part of it), then SIGKILLed.  The state before recovery is
 * checked first (the torn file is really there, the manifest exists), then
 * recovery (bfo_journal_recover, `bfo recover`, or a new writer):
 *  - torn: killed while writing file 20 of 30 (3,000 of its 10,000 bytes
 *    written): files 0-19 complete are kept with their mode and times, the
 *    torn one is removed, 21-29 stay absent; a file that existed before the
 *    batch at one of its paths (-EEXIST) is untouched; stats and the
 *    return value say 1 batch, 19 complete, 1 removed; recovery twice is a
 *    no-op; `bfo recover` prints the same numbers.
 *  - meta: killed after a file's bytes but before its chmod (setuid file,
 *    still 0600) or its utimes: recovery finishes mode and times.
 *  - synced: killed at the batch's syncfs (everything written, manifest
 *    still there): every entry (files, a symlink, a fifo, a hard link, a
 *    directory) is kept as is.
 *  - locked: while the parked writer lives (it holds the manifest's
 *    flock) recovery and a new writer leave its batch alone: no batch
 *    recovered, the torn file and the manifest stay; after the kill they
 *    are recovered.
 *  - torn manifest: a truncated manifest, a garbage one and an empty one
 *    are removed without touching any file (even the torn data file).
 *  - replace: REPLACE batches killed while writing a temporary, and
 *    between the renames: every file is wholly old or wholly new, no
 *    temporary is left.
 *  - pieces: killed between two calls of a file in pieces (no batch
 *    running) and while writing its second piece: no temporary is left,
 *    the file is absent.
 *  - stem (loop XFS): killed while the clones are made (file 8 of 20 has
 *    its cloned blocks but not its tail): recovery finishes files 8-19
 *    from the intact stem (stats.finished), keeps 0-7, leaves the files
 *    that were not in the stem absent; with a corrupted stem, the file
 *    whose bytes are damaged is not finished (absent) and the others are.
 *  - same tick: a file made just before a batch, at one of its paths, in
 *    the same tick of the file system's coarse clock as the batch's
 *    manifest (same birth time; up to 40 tries to get there, checked on
 *    each try that did), is untouched by recovery.
 *  - probe: killed inside bfo_writer_open while it probes for block
 *    sharing: recovery (and the next writer) leave no .bfo-journal.
 *  - ctime (ext4 with 128-byte inodes: no birth time, 1 s timestamps): a
 *    file created in the same second just before the batch, at one of the
 *    batch's paths, is untouched by recovery.
 * Tests that create files right before a batch let the clock move on
 * first (tw_settle) unless the point is the same tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t_wutil.h"

/* ------------------------------------------------------------ the stopper */

enum stop_kind { S_NONE, S_PWRITE, S_PWRITE_PATH, S_FCHMOD, S_FUTIMENS, S_RENAMEAT, S_PUBLISH, S_SYNCFS };

static struct {
	enum stop_kind kind;
	const uint8_t *lo, *hi;     /* S_PWRITE: the buffer of the chosen file */
	char suffix[256];           /* S_FCHMOD/S_FUTIMENS: "/dir/name" of the file;
				       S_PWRITE_PATH: a part of the file's path */
	int nth;                    /* S_RENAMEAT: park at this call (1 = first) */
	size_t partial;             /* S_PWRITE: bytes written before parking */
	int notify;                 /* pipe to the parent */
} stop = { .notify = -1 };

ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t off);
int __real_fchmod(int fd, mode_t mode);
int __real_futimens(int fd, const struct timespec ts[2]);
int __real_renameat(int od, const char *o, int nd, const char *n);
int __real_renameat2(int od, const char *o, int nd, const char *n, unsigned flags);
int __real_syncfs(int fd);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off);
int __wrap_fchmod(int fd, mode_t mode);
int __wrap_futimens(int fd, const struct timespec ts[2]);
int __wrap_renameat(int od, const char *o, int nd, const char *n);
int __wrap_renameat2(int od, const char *o, int nd, const char *n, unsigned flags);
int __wrap_syncfs(int fd);

static _Noreturn void park(void)
{
	char c = 'P';

	if (write(stop.notify, &c, 1) != 1)
		_exit(99);
	for (;;)
		pause();
}

static bool fd_is(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t k;
	size_t sl = strlen(stop.suffix);

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, path, sizeof(path) - 1);
	if (k < 0)
		return false;
	path[k] = '\0';
	return (size_t)k >= sl && !strcmp(path + k - sl, stop.suffix);
}

static bool fd_path_has(int fd, const char *part)
{
	char link[64], path[PATH_MAX];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, path, sizeof(path) - 1);
	if (k < 0)
		return false;
	path[k] = '\0';
	return strstr(path, part) != NULL;
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (stop.kind == S_PWRITE_PATH && fd_path_has(fd, stop.suffix))
		park();
	if (stop.kind == S_PWRITE && (const uint8_t *)buf >= stop.lo && (const uint8_t *)buf < stop.hi) {
		if (stop.partial)
			__real_pwrite(fd, buf, MIN(stop.partial, n), off);
		park();
	}
	return __real_pwrite(fd, buf, n, off);
}

int __wrap_fchmod(int fd, mode_t mode)
{
	if (stop.kind == S_FCHMOD && fd_is(fd))
		park();
	return __real_fchmod(fd, mode);
}

int __wrap_futimens(int fd, const struct timespec ts[2])
{
	if (stop.kind == S_FUTIMENS && fd_is(fd))
		park();
	return __real_futimens(fd, ts);
}

int __wrap_renameat(int od, const char *o, int nd, const char *n)
{
	if (stop.kind == S_RENAMEAT && --stop.nth == 0)
		park();
	return __real_renameat(od, o, nd, n);
}

/* S_PUBLISH: a manifest written in full and locked, about to get its name */
int __wrap_renameat2(int od, const char *o, int nd, const char *n, unsigned flags)
{
	if (stop.kind == S_PUBLISH && strstr(o, ".m.new"))
		park();
	return __real_renameat2(od, o, nd, n, flags);
}

int __wrap_syncfs(int fd)
{
	if (stop.kind == S_SYNCFS)
		park();
	return __real_syncfs(fd);
}

/* ------------------------------------------------------------ children */

static pid_t child;

/* Run fn(arg) in a child; return once it parked (or fail if it ends). */
static void start_parked(void (*fn)(void *), void *arg)
{
	int p[2];
	char c = 0;

	if (pipe2(p, O_CLOEXEC) < 0)
		t_fail("pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	child = fork();
	if (child < 0)
		t_fail("fork: %s", strerror(errno));
	if (child == 0) {
		close(p[0]);
		stop.notify = p[1];
		alarm(60);
		fn(arg);
		c = 'D';
		if (write(p[1], &c, 1) < 0)
			_exit(98);
		_exit(0);
	}
	close(p[1]);
	struct pollfd pf = { p[0], POLLIN, 0 };

	if (poll(&pf, 1, 60000) <= 0 || read(p[0], &c, 1) != 1 || c != 'P') {
		kill(child, SIGKILL);
		tw_wait(child);
		t_fail("the writer did not stop where asked (%s)", c == 'D' ? "it finished" : "it died or hung");
	}
	close(p[0]);
	stop.kind = S_NONE;         /* the parent's own calls pass */
}

static void kill_parked(void)
{
	kill(child, SIGKILL);
	int st = tw_wait(child);

	T_ASSERT(st == 128 + SIGKILL, "the parked writer ended with %d", st);
	child = 0;
}

/* ------------------------------------------------------------ batches */

#define NF 30
#define FSZ 10000

struct batch {
	const char *root;
	uint32_t engine, flags, durability;
	struct bfo_wentry e[64];
	unsigned n;
	uint8_t *data[64];
	char *paths[64];
	bool pieces_then_park;      /* pieces scenario */
};

static void batch_add_file(struct batch *b, const char *path, uint64_t size, uint64_t seed, uint32_t mode)
{
	unsigned i = b->n++;

	b->paths[i] = strdup(path);
	b->data[i] = malloc(size ? size : 1);
	t_fill_random(b->data[i], size, seed);
	b->e[i] = (struct bfo_wentry){ .path = b->paths[i], .type = BFO_WTYPE_FILE, .mode = mode,
				       .data = b->data[i], .length = size, .flags = BFO_WENTRY_TIMES,
				       .mtime_sec = 1600000000 + i, .mtime_nsec = 1000u * i + 7,
				       .atime_sec = 1600000000 + i, .atime_nsec = 3 };
}

static void batch_free(struct batch *b)
{
	for (unsigned i = 0; i < b->n; i++) {
		free(b->paths[i]);
		free(b->data[i]);
	}
	b->n = 0;
}

static void write_batch(void *arg)
{
	struct batch *b = arg;
	struct bfo_write_opts o = { .size = sizeof(o), .engine = b->engine, .flags = b->flags,
				    .durability = b->durability, .threads = 1 };
	struct bfo_writer *w;

	if (bfo_writer_open(&w, b->root, &o))
		_exit(97);
	bfo_writer_write(w, b->e, b->n);
	bfo_writer_close(w);
}

/* The file i of b is complete with its metadata (or, with absent, absent). */
static void expect_file(const struct batch *b, unsigned i, bool present, const char *what)
{
	int rfd = open(b->root, O_RDONLY | O_DIRECTORY);
	char why[256];
	struct stat st;

	if (!present) {
		TW_CHECK(!tw_exists_at(rfd, b->e[i].path), "[%s] %s exists, expected absent", what, b->e[i].path);
		close(rfd);
		return;
	}
	int r = tw_file_check(rfd, b->e[i].path, b->data[i], b->e[i].length, why, sizeof(why));

	TW_CHECK(r == 0, "[%s] %s: %s", what, b->e[i].path, r < 0 ? strerror(-r) : why);
	if (r == 0 && fstatat(rfd, b->e[i].path, &st, AT_SYMLINK_NOFOLLOW) == 0)
		TW_CHECK((st.st_mode & 07777) == b->e[i].mode && st.st_mtim.tv_sec == b->e[i].mtime_sec &&
			 (uint32_t)st.st_mtim.tv_nsec == b->e[i].mtime_nsec,
			 "[%s] %s: metadata not finished: mode %o (want %o), mtime %lld.%09ld (want %lld.%09u)",
			 what, b->e[i].path, st.st_mode & 07777, b->e[i].mode, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (long long)b->e[i].mtime_sec, b->e[i].mtime_nsec);
	close(rfd);
}

static void no_leftovers(const char *root, const char *what)
{
	char msg[2048];
	int n = tw_leftovers(root, true, msg, sizeof(msg));

	TW_CHECK(n == 0, "[%s] left after recovery: %s", what, msg);
}

/* 30 files in a/, f005 existing before the batch. */
static void make_torn_batch(struct batch *b, const char *root)
{
	memset(b, 0, sizeof(*b));
	b->root = root;
	b->engine = BFO_WENGINE_BATCHED;
	tw_mkdirs(tw_fmt("%s/a", root));
	t_write_bytes(tw_fmt("%s/a/f005", root), "before the batch", 16);
	for (unsigned i = 0; i < NF; i++)
		batch_add_file(b, tw_fmt("a/f%03u", i), FSZ, 100 + i, i == 10 ? 04755 : 0644);
	tw_settle();
}

static void scenario_torn(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/torn", dir), m[PATH_MAX];
	struct batch b;
	struct bfo_recover_stats rs;
	struct tw_run r;

	make_torn_batch(&b, root);
	struct tw_snap *pre = tw_snapshot(root);

	stop.kind = S_PWRITE;
	stop.lo = b.data[20];
	stop.hi = b.data[20] + FSZ;
	stop.partial = 3000;
	start_parked(write_batch, &b);
	kill_parked();
	/* the state recovery starts from */
	struct stat st;

	T_ASSERT(stat(tw_fmt("%s/a/f020", root), &st) == 0 && st.st_size == 3000,
		 "precondition: a/f020 is not torn as arranged");
	T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1, "precondition: no manifest");
	for (unsigned i = 0; i < 20; i++)
		if (i != 5)
			T_ASSERT(stat(tw_fmt("%s/a/f%03u", root, i), &st) == 0 && st.st_size == FSZ,
				 "precondition: a/f%03u incomplete", i);

	/* bfo recover (the command) */
	char *argv[] = { BFO_CLI, "recover", root, NULL };

	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	TW_CHECK(r.status == 0, "bfo recover: exit %d: %s", r.status, r.err);
	TW_CHECK(strstr(r.out, "1 unfinished batch;") && strstr(r.out, " 19 files complete") &&
		 strstr(r.out, " 1 torn or temporary files removed"),
		 "bfo recover says: %s (expected 1 batch, 19 complete, 1 removed)", r.out);
	tw_run_free(&r);
	for (unsigned i = 0; i < NF; i++)
		if (i != 5)
			expect_file(&b, i, i < 20, "torn");
	int nd = tw_snap_diff(pre, root, true, m, sizeof(m));

	TW_CHECK(nd == 0, "[torn] the file that existed before the batch changed: %s", m);
	no_leftovers(root, "torn");
	int ret = bfo_journal_recover(root, &rs);

	TW_CHECK(ret == 0 && rs.batches == 0, "recovery a second time: %d", ret);
	tw_snap_free(pre);
	batch_free(&b);
	t_sh("rm -rf '%s'", root);

	/* the same through the library, and stats */
	make_torn_batch(&b, root);
	stop.kind = S_PWRITE;
	stop.lo = b.data[20];
	stop.hi = b.data[20] + FSZ;
	stop.partial = 3000;
	start_parked(write_batch, &b);
	kill_parked();
	ret = bfo_journal_recover(root, &rs);
	TW_CHECK(ret == 1 && rs.batches == 1 && rs.complete == 19 && rs.removed == 1 && rs.finished == 0,
		 "bfo_journal_recover: %d, stats %llu batches %llu complete %llu removed %llu finished", ret,
		 (unsigned long long)rs.batches, (unsigned long long)rs.complete,
		 (unsigned long long)rs.removed, (unsigned long long)rs.finished);
	for (unsigned i = 0; i < NF; i++)
		if (i != 5)
			expect_file(&b, i, i < 20, "torn (library)");
	no_leftovers(root, "torn (library)");
	batch_free(&b);
	t_sh("rm -rf '%s'", root);
	free(root);
	t_log("torn: complete files kept with metadata, the torn one removed, the pre-existing one untouched");
	tw_checks_end();
}

static void scenario_meta(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/meta", dir);
	struct batch b;
	struct stat st;

	for (int k = 0; k < 2; k++) {
		make_torn_batch(&b, root);
		unsigned at = k == 0 ? 10 : 15;

		stop.kind = k == 0 ? S_FCHMOD : S_FUTIMENS;
		snprintf(stop.suffix, sizeof(stop.suffix), "/a/f%03u", at);
		start_parked(write_batch, &b);
		kill_parked();
		T_ASSERT(stat(tw_fmt("%s/a/f%03u", root, at), &st) == 0 && st.st_size == FSZ &&
			 st.st_mtim.tv_sec != b.e[at].mtime_sec,
			 "precondition: a/f%03u is not complete-without-metadata", at);
		if (k == 0)
			T_ASSERT((st.st_mode & 07777) == 0600, "precondition: a/f010 has mode %o, not 0600 yet",
				 st.st_mode & 07777);
		T_ASSERT(bfo_journal_recover(root, NULL) == 1, "no batch recovered");
		for (unsigned i = 0; i < NF; i++)
			if (i != 5)
				expect_file(&b, i, i <= at, k == 0 ? "before chmod" : "before utimes");
		no_leftovers(root, "meta");
		batch_free(&b);
		t_sh("rm -rf '%s'", root);
	}
	free(root);
	t_log("meta: recovery finished mode (setuid) and times of complete files");
	tw_checks_end();
}

static void synced_batch(void *arg)
{
	struct batch *b = arg;
	unsigned n = b->n;

	b->e[n++] = (struct bfo_wentry){ .path = "s/link", .type = BFO_WTYPE_SYMLINK, .data = "f000",
					 .flags = BFO_WENTRY_TIMES, .mtime_sec = 5, .atime_sec = 5 };
	b->e[n++] = (struct bfo_wentry){ .path = "s/fifo", .type = BFO_WTYPE_FIFO, .mode = 0640,
					 .flags = BFO_WENTRY_TIMES, .mtime_sec = 6, .atime_sec = 6 };
	b->e[n++] = (struct bfo_wentry){ .path = "s/hard", .type = BFO_WTYPE_HARDLINK, .data = "s/f001" };
	b->e[n++] = (struct bfo_wentry){ .path = "s/dir", .type = BFO_WTYPE_DIR, .mode = 0750 };
	b->n = n;
	write_batch(b);
}

static void scenario_synced(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/synced", dir);
	struct batch b = { .root = root, .engine = BFO_WENGINE_BATCHED };
	struct bfo_recover_stats rs;

	for (unsigned i = 0; i < 10; i++)
		batch_add_file(&b, tw_fmt("s/f%03u", i), 1000 * i, 300 + i, 0640);
	stop.kind = S_SYNCFS;
	start_parked(synced_batch, &b);
	kill_parked();
	T_ASSERT(tw_manifests(root, NULL, 0) == 1, "precondition: no manifest at the sync");
	ino_t ino[10];
	struct stat st;

	for (unsigned i = 0; i < 10; i++) {
		T_ASSERT(stat(tw_fmt("%s/s/f%03u", root, i), &st) == 0, "precondition: s/f%03u missing", i);
		ino[i] = st.st_ino;
	}
	int ret = bfo_journal_recover(root, &rs);

	TW_CHECK(ret == 1 && rs.complete >= 10 && rs.removed == 0, "recovery of a synced batch: %d, %llu "
		 "complete, %llu removed", ret, (unsigned long long)rs.complete, (unsigned long long)rs.removed);
	for (unsigned i = 0; i < 10; i++)
		TW_CHECK(stat(tw_fmt("%s/s/f%03u", root, i), &st) == 0 && st.st_ino == ino[i],
			 "synced: s/f%03u was replaced", i);
	for (unsigned i = 0; i < 10; i++)
		expect_file(&b, i, true, "synced");
	char t[16];

	TW_CHECK(readlink(tw_fmt("%s/s/link", root), t, sizeof(t)) == 4 &&
		 lstat(tw_fmt("%s/s/fifo", root), &st) == 0 && S_ISFIFO(st.st_mode) &&
		 stat(tw_fmt("%s/s/hard", root), &st) == 0 && st.st_nlink == 2, "synced: special entries");
	no_leftovers(root, "synced");
	batch_free(&b);
	free(root);
	t_log("synced: a batch killed at its durability point is kept whole");
	tw_checks_end();
}

static void scenario_locked(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/locked", dir), m[PATH_MAX], msg[2048];
	struct batch b;
	struct bfo_recover_stats rs;
	struct stat st;

	make_torn_batch(&b, root);
	stop.kind = S_PWRITE;
	stop.lo = b.data[20];
	stop.hi = b.data[20] + FSZ;
	stop.partial = 3000;
	start_parked(write_batch, &b);
	/* alive and parked: it holds the manifest's lock */
	T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1, "precondition: no manifest");
	struct tw_snap *s = tw_snapshot(root);
	int ret = bfo_journal_recover(root, &rs);

	TW_CHECK(ret == 0 && rs.batches == 0, "recovery took a live writer's batch: %d", ret);
	struct bfo_writer *w;

	T_OK(bfo_writer_open(&w, root, NULL));
	T_OK(bfo_writer_close(w));
	int nd = tw_snap_diff(s, root, true, msg, sizeof(msg));
	struct tw_snap *s2 = tw_snapshot(root);

	TW_CHECK(nd == 0 && tw_snap_count(s2) == tw_snap_count(s),
		 "recovery or a new writer touched a live writer's batch: %s", msg);
	tw_snap_free(s2);
	TW_CHECK(stat(tw_fmt("%s/a/f020", root), &st) == 0 && st.st_size == 3000 && tw_exists(m),
		 "the live batch's file or manifest is gone");
	kill_parked();
	ret = bfo_journal_recover(root, &rs);
	TW_CHECK(ret == 1 && rs.removed == 1, "after the writer died: %d, %llu complete, %llu removed", ret,
		 (unsigned long long)rs.complete, (unsigned long long)rs.removed);
	for (unsigned i = 0; i < NF; i++)
		if (i != 5)
			expect_file(&b, i, i < 20, "locked, then recovered");
	no_leftovers(root, "locked");
	tw_snap_free(s);
	batch_free(&b);
	free(root);
	t_log("locked: a live writer's batch is left alone, recovered after it died");
	tw_checks_end();
}

static void scenario_badmanifest(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/badmanifest", dir), m[PATH_MAX], msg[2048];
	struct batch b;
	struct stat st;
	uint8_t junk[700];

	make_torn_batch(&b, root);
	stop.kind = S_PWRITE;
	stop.lo = b.data[20];
	stop.hi = b.data[20] + FSZ;
	stop.partial = 3000;
	start_parked(write_batch, &b);
	kill_parked();
	T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1 && stat(m, &st) == 0, "precondition: no manifest");
	if (truncate(m, st.st_size / 2) < 0)
		t_fail("truncate: %s", strerror(errno));
	t_fill_random(junk, sizeof(junk), 5);
	t_write_bytes(tw_fmt("%s/.bfo-journal/garbage.m", root), junk, sizeof(junk));
	t_write_bytes(tw_fmt("%s/.bfo-journal/empty.m", root), "", 0);
	memcpy(junk, "BFOJRNL1", 8);
	t_write_bytes(tw_fmt("%s/.bfo-journal/magic.m", root), junk, sizeof(junk));
	struct tw_snap *s = tw_snapshot(root);
	int ret = bfo_journal_recover(root, NULL);

	TW_CHECK(ret >= 0, "recovery failed: %d", ret);
	tw_snap_diff(s, root, false, msg, sizeof(msg));

	/* the journal's own entries go; nothing else may change */
	for (char *p = msg, *q; p && *p; p = q) {
		q = strstr(p, "; ");
		if (q)
			*q = '\0', q += 2;
		if (strncmp(p, ".bfo-journal", 12))
			TW_CHECK(0, "a bad manifest made recovery touch a file: %s", p);
	}
	TW_CHECK(stat(tw_fmt("%s/a/f020", root), &st) == 0 && st.st_size == 3000,
		 "the file listed in a torn manifest was touched");
	TW_CHECK(!tw_exists(tw_fmt("%s/.bfo-journal", root)), "bad manifests were not removed");
	tw_snap_free(s);
	batch_free(&b);
	free(root);
	t_log("bad manifests: removed, no file touched");
	tw_checks_end();
}

static void scenario_replace(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/replace", dir);

	for (int k = 0; k < 2; k++) {
		struct batch b = { .root = root, .engine = BFO_WENGINE_BATCHED, .flags = BFO_WRITE_REPLACE };
		uint8_t old[10][5000];

		tw_mkdirs(tw_fmt("%s/r", root));
		for (unsigned i = 0; i < 10; i++) {
			t_fill_random(old[i], sizeof(old[i]), 900 + i);
			t_write_bytes(tw_fmt("%s/r/f%u", root, i), old[i], sizeof(old[i]));
			batch_add_file(&b, tw_fmt("r/f%u", i), 7000, 950 + i, 0644);
		}
		tw_settle();
		if (k == 0) {
			stop.kind = S_PWRITE;
			stop.lo = b.data[5];
			stop.hi = b.data[5] + 7000;
			stop.partial = 2000;
		} else {
			stop.kind = S_RENAMEAT;
			stop.nth = 4;
		}
		start_parked(write_batch, &b);
		kill_parked();
		char l[1024];

		T_ASSERT(tw_list_prefix(tw_fmt("%s/r", root), ".bfo-tmp.", l, sizeof(l)) > 0,
			 "precondition: no temporaries");
		T_ASSERT(bfo_journal_recover(root, NULL) == 1, "no batch recovered");
		int rfd = open(root, O_RDONLY | O_DIRECTORY), nnew = 0;

		for (unsigned i = 0; i < 10; i++) {
			char why[256];
			bool is_old = tw_file_check(rfd, b.e[i].path, old[i], sizeof(old[i]), why, sizeof(why)) == 0;
			bool is_new = tw_file_check(rfd, b.e[i].path, b.data[i], 7000, why, sizeof(why)) == 0;

			TW_CHECK(is_old || is_new, "[replace, %s] r/f%u is neither old nor new",
				 k ? "between renames" : "in a temporary", i);
			nnew += is_new;
			if (k == 1)
				TW_CHECK(is_new == (i < 3), "[replace, between renames] r/f%u is %s", i,
					 is_new ? "new" : "old");
		}
		close(rfd);
		if (k == 0)
			TW_CHECK(nnew == 0, "[replace, in a temporary] %d files replaced before the sync", nnew);
		no_leftovers(root, k ? "replace, between renames" : "replace, in a temporary");
		batch_free(&b);
		t_sh("rm -rf '%s'", root);
	}
	free(root);
	t_log("replace: old or new, never torn, no temporary left");
	tw_checks_end();
}

static void pieces_child(void *arg)
{
	struct batch *b = arg;
	struct bfo_write_opts o = { .size = sizeof(o), .engine = BFO_WENGINE_BATCHED, .threads = 1 };
	struct bfo_writer *w;
	struct bfo_wentry e = { .path = "p/big", .type = BFO_WTYPE_FILE, .mode = 0644, .data = b->data[0],
				.length = 1 << 20, .flags = BFO_WENTRY_MORE };

	if (bfo_writer_open(&w, b->root, &o))
		_exit(97);
	bfo_writer_write(w, &e, 1);
	if (b->pieces_then_park)
		park();                 /* between two calls: no batch running */
	/* the next batch's manifest born strictly after the temporary (within
	 * one clock tick recovery could not tell them apart: "same tick") */
	tw_settle();
	e.data = b->data[0] + (1 << 20);
	e.offset = 1 << 20;
	bfo_writer_write(w, &e, 1);  /* stopped in here by the pwrite wrapper */
	bfo_writer_close(w);
}

static void scenario_pieces(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/pieces", dir);

	for (int k = 0; k < 2; k++) {
		struct batch b = { .root = root, .n = 1, .pieces_then_park = k == 0 };
		char l[1024];

		b.data[0] = malloc(3 << 20);
		t_fill_random(b.data[0], 3 << 20, 8);
		if (k == 1) {
			stop.kind = S_PWRITE;
			stop.lo = b.data[0] + (1 << 20);
			stop.hi = b.data[0] + (2 << 20);
			stop.partial = 4096;
		} else {
			stop.kind = S_NONE;
		}
		start_parked(pieces_child, &b);
		kill_parked();
		T_ASSERT(tw_list_prefix(tw_fmt("%s/p", root), ".bfo-tmp.", l, sizeof(l)) == 1,
			 "precondition: no temporary");
		T_ASSERT(tw_manifests(root, NULL, 0) == (k == 1), "precondition: manifests");
		bfo_journal_recover(root, NULL);
		TW_CHECK(!tw_exists(tw_fmt("%s/p/big", root)), "the unfinished file exists");
		int n = tw_list_prefix(tw_fmt("%s/p", root), ".bfo-tmp.", l, sizeof(l));

		TW_CHECK(n == 0, "[pieces, %s] the temporary %s is left after recovery%s",
			 k ? "killed in the second piece's batch" : "killed between two calls", l,
			 k ? " (the batch's manifest lists it, but it was born before that manifest, so "
			     "recovery does not take it for the batch's)" :
			     " (no manifest lists a file in pieces between its batches)");
		free(b.data[0]);
		t_sh("rm -rf '%s'", root);
	}
	free(root);
	t_log("pieces: checked");
	tw_checks_end();
}

/* Killed while bfo_writer_open probes for block sharing, which it does
 * when the stem engine is asked for (its probe files live in the journal
 * directory). */
static void open_only(void *arg)
{
	struct bfo_write_opts o = { .size = sizeof(o), .engine = BFO_WENGINE_STEM };
	struct bfo_writer *w;

	bfo_writer_open(&w, arg, &o);
	_exit(96);                   /* not reached: parked in the probe */
}

static void scenario_probe(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/probe", dir), msg[1024];

	tw_mkdirs(root);
	stop.kind = S_PWRITE_PATH;
	snprintf(stop.suffix, sizeof(stop.suffix), "/.bfo-journal/probe-");
	start_parked(open_only, root);
	kill_parked();
	T_ASSERT(tw_list_prefix(tw_fmt("%s/.bfo-journal", root), "probe-", msg, sizeof(msg)) > 0,
		 "precondition: no probe file");
	int r = bfo_journal_recover(root, NULL);

	TW_CHECK(r == 0, "recover: %d", r);
	int n = tw_leftovers(root, true, msg, sizeof(msg));

	TW_CHECK(n == 0, "killed inside bfo_writer_open (while probing for block sharing): after "
		 "recovery %s is left", msg);
	struct bfo_writer *w;

	T_OK(bfo_writer_open(&w, root, NULL));
	T_OK(bfo_writer_close(w));
	n = tw_leftovers(root, true, msg, sizeof(msg));
	TW_CHECK(n == 0, "... and after a new writer opened and closed: %s", msg);
	free(root);
	t_log("probe: checked");
	tw_checks_end();
}

/* ------------------------------------------------------------ publishing */

/* A manifest is written under another name and locked before it gets its
 * own: a recovery beside the writer (`bfo recover` while `bfo cp` runs)
 * never finds one unlocked and half written, takes it for torn and removes
 * it from under the batch.  Once the writer is gone, the unpublished record
 * is a leftover: its batch wrote no data. */
static void scenario_publishing(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/publishing", dir), m[PATH_MAX], msg[1024];
	char *jdir = t_pathf("%s/.bfo-journal", root);
	struct batch b;
	struct bfo_recover_stats rs;

	make_torn_batch(&b, root);
	stop.kind = S_PUBLISH;
	start_parked(write_batch, &b);
	T_ASSERT(tw_list_prefix(jdir, "b-", msg, sizeof(msg)) == 1 && tw_manifests(root, m, sizeof(m)) == 0,
		 "precondition: one unpublished manifest (%s)", msg);
	int ret = bfo_journal_recover(root, &rs);

	TW_CHECK(ret == 0 && rs.batches == 0, "recovery took a manifest being written: %d", ret);
	TW_CHECK(tw_list_prefix(jdir, "b-", msg, sizeof(msg)) == 1,
		 "recovery removed a live writer's manifest being written");
	kill_parked();
	ret = bfo_journal_recover(root, &rs);
	TW_CHECK(ret == 0 && rs.batches == 0, "a manifest never published counted as a batch: %d", ret);
	for (unsigned i = 0; i < NF; i++)
		if (i != 5)     /* there before the batch */
			expect_file(&b, i, false, "publishing: killed before the manifest had its name");
	no_leftovers(root, "publishing");
	batch_free(&b);
	free(jdir);
	free(root);
	t_log("publishing: a manifest being written is left alone, removed after its writer died");
	tw_checks_end();
}

/* ------------------------------------------------------------ stem */

static void scenario_stem(void *arg)
{
	const char *xfs = arg;
	char *root = t_pathf("%s/stem", xfs), m[PATH_MAX];

	for (int k = 0; k < 2; k++) {
		struct batch b = { .root = root, .engine = BFO_WENGINE_STEM };
		struct bfo_recover_stats rs;
		const uint64_t sz = 3 * 4096 + 100;

		for (unsigned i = 0; i < 20; i++)
			batch_add_file(&b, tw_fmt("s/f%03u", i), sz, 400 + i, 0640);
		for (unsigned i = 20; i < 25; i++)
			batch_add_file(&b, tw_fmt("s/f%03u", i), 1000, 400 + i, 0600);
		stop.kind = S_PWRITE;
		stop.lo = b.data[8];
		stop.hi = b.data[8] + sz;
		stop.partial = 0;
		start_parked(write_batch, &b);
		kill_parked();
		struct stat st;
		char l[1024];

		T_ASSERT(stat(tw_fmt("%s/s/f008", root), &st) == 0 && st.st_size == 3 * 4096,
			 "precondition: s/f008 does not hold just its cloned blocks (size %lld)",
			 (long long)st.st_size);
		T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1, "precondition: no manifest");
		/* the manifest, its identity records, the stem (and the killed
		 * writer's lock file, w-...) */
		T_ASSERT(tw_list_prefix(tw_fmt("%s/.bfo-journal", root), "b-", l, sizeof(l)) == 3 &&
			 strstr(l, ".stem"), "precondition: no stem (%s)", l);
		if (k == 1) {
			/* damage file 12's bytes in the stem (each file: 4 blocks) */
			char stemname[256] = "";

			for (char *p = l, *save = NULL, *t; (t = strtok_r(p, "\n", &save)); p = NULL)
				if (strstr(t, ".stem"))
					snprintf(stemname, sizeof(stemname), "%s", t);
			int fd = open(tw_fmt("%s/.bfo-journal/%s", root, stemname), O_WRONLY);

			T_ASSERT(fd >= 0, "open the stem %s: %s", stemname, strerror(errno));
			T_ASSERT(pwrite(fd, "XXXX", 4, 12 * 4 * 4096 + 50) == 4, "damage the stem");
			close(fd);
		}
		int ret = bfo_journal_recover(root, &rs);

		TW_CHECK(ret == 1, "stem recovery: %d", ret);
		TW_CHECK(rs.complete == 8 && rs.finished == (k ? 11u : 12u),
			 "[stem%s] stats: %llu complete (want 8), %llu finished from the stem (want %u), "
			 "%llu removed", k ? ", damaged" : "", (unsigned long long)rs.complete,
			 (unsigned long long)rs.finished, k ? 11u : 12u, (unsigned long long)rs.removed);
		for (unsigned i = 0; i < 25; i++)
			expect_file(&b, i, i < 20 && !(k == 1 && i == 12), k ? "stem, damaged" : "stem");
		no_leftovers(root, "stem");
		batch_free(&b);
		t_sh("rm -rf '%s'", root);
	}
	free(root);
	t_log("stem: files finished from an intact stem, not from damaged bytes");
	tw_checks_end();
}

/* ------------------------------------------------------------ same tick */

/*
 * A file made just before a batch, in the same tick of the coarse clock as
 * the batch's manifest, has the same birth time as the manifest.  The
 * batch cannot create that path (-EEXIST), so recovery must not treat the
 * file as the batch's.  Whether a try hits the same tick depends on timing:
 * up to 40 tries, and the checks run on every try that did (statx of both).
 */
static void scenario_same_tick(void *arg)
{
	const char *dir = arg;
	char *root = t_pathf("%s/sametick", dir), m[PATH_MAX];
	int hits = 0, tries = 0;

	for (; tries < 40 && hits < 3; tries++) {
		struct batch b = { .root = root, .engine = BFO_WENGINE_BATCHED };
		struct statx px, mx, after;
		uint8_t *before = NULL, *now = NULL;
		uint64_t bl = 0, nl = 0;

		for (unsigned i = 0; i < 4; i++)
			batch_add_file(&b, tw_fmt("t/f%u", i), 3000, 700 + i, 0644);
		stop.kind = S_PWRITE;
		stop.lo = b.data[3];
		stop.hi = b.data[3] + 3000;
		stop.partial = 100;
		/* no stat of anything here: a query would make the next
		 * timestamps fine-grained (multigrain) */
		tw_mkdirs(tw_fmt("%s/t", root));
		t_write_bytes(tw_fmt("%s/t/f1", root), "made just before the batch", 26);
		start_parked(write_batch, &b);
		kill_parked();
		T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1, "precondition: no manifest");
		T_ASSERT(statx(AT_FDCWD, tw_fmt("%s/t/f1", root), 0, STATX_BTIME | STATX_INO, &px) == 0 &&
			 statx(AT_FDCWD, m, 0, STATX_BTIME, &mx) == 0, "statx");
		T_ASSERT(t_read_plain(tw_fmt("%s/t/f1", root), &before, &bl) == 0, "read");
		if (!(px.stx_mask & STATX_BTIME)) {
			free(before);
			batch_free(&b);
			t_sh("rm -rf '%s'", root);
			t_log("same tick: no birth time on %s: nothing to test", tw_fstype(dir));
			break;
		}
		bool same = px.stx_btime.tv_sec == mx.stx_btime.tv_sec &&
			    px.stx_btime.tv_nsec == mx.stx_btime.tv_nsec;

		bfo_journal_recover(root, NULL);
		if (same) {
			hits++;
			bool kept = statx(AT_FDCWD, tw_fmt("%s/t/f1", root), 0, STATX_INO, &after) == 0 &&
				    after.stx_ino == px.stx_ino && t_read_plain(tw_fmt("%s/t/f1", root), &now, &nl) == 0 &&
				    nl == bl && !memcmp(now, before, bl);

			TW_CHECK(kept, "a file made before the batch, with the same birth time as its manifest "
				 "(%lld.%09u: the same clock tick), was %s by recovery",
				 (long long)px.stx_btime.tv_sec, px.stx_btime.tv_nsec,
				 tw_exists(tw_fmt("%s/t/f1", root)) ? "changed" : "removed");
		}
		free(before);
		free(now);
		batch_free(&b);
		t_sh("rm -rf '%s'", root);
	}
	t_log("same tick: %d of %d tries had the file and the manifest born in the same tick", hits, tries);
	free(root);
	tw_checks_end();
}

/* ------------------------------------------------------------ ctime */

static void scenario_ctime(void *arg)
{
	const char *mnt = arg;
	char *root = t_pathf("%s/ctime", mnt), m[PATH_MAX];
	struct batch b = { .root = root, .engine = BFO_WENGINE_BATCHED };
	struct timespec now;
	struct stat pre_st, man_st;

	tw_mkdirs(tw_fmt("%s/p", root));
	for (unsigned i = 0; i < 10; i++) {
		batch_add_file(&b, tw_fmt("p/f%u", i), 5000, 600 + i, 0644);
		b.e[i].mtime_nsec = b.e[i].atime_nsec = 0;     /* 1 s timestamps here */
	}
	/* just after a second starts: the file, then at once the batch */
	clock_gettime(CLOCK_REALTIME, &now);
	tw_sleep_ns(1000000000u - (uint64_t)now.tv_nsec + 20000000u);
	t_write_bytes(tw_fmt("%s/p/f3", root), "here before the batch", 21);
	T_ASSERT(stat(tw_fmt("%s/p/f3", root), &pre_st) == 0, "stat");
	struct tw_snap *s = tw_snapshot(root);

	stop.kind = S_PWRITE;
	stop.lo = b.data[7];
	stop.hi = b.data[7] + 5000;
	stop.partial = 1000;
	start_parked(write_batch, &b);
	kill_parked();
	T_ASSERT(tw_manifests(root, m, sizeof(m)) == 1 && stat(m, &man_st) == 0, "precondition: no manifest");
	t_log("ctime: the file before the batch has ctime %lld.%09ld, the manifest %lld.%09ld%s",
	      (long long)pre_st.st_ctim.tv_sec, pre_st.st_ctim.tv_nsec, (long long)man_st.st_ctim.tv_sec,
	      man_st.st_ctim.tv_nsec, pre_st.st_ctim.tv_sec == man_st.st_ctim.tv_sec ? " (same second)" : "");
	bfo_journal_recover(root, NULL);
	char msg[2048];
	int nd = tw_snap_diff(s, root, true, msg, sizeof(msg));

	TW_CHECK(nd == 0, "on a file system without birth time and with 1 s timestamps, recovery changed a "
		 "file that existed before the batch (created in the same second): %s", msg);
	for (unsigned i = 0; i < 10; i++)
		if (i != 3)
			expect_file(&b, i, i < 7, "ctime");
	no_leftovers(root, "ctime");
	tw_snap_free(s);
	batch_free(&b);
	free(root);
	tw_checks_end();
}

int main(void)
{
	t_init("t_recover", 600);
	umask(022);
	const char *tmp = t_tmpdir();
	char why[2048];

	t_log("test directory %s is %s", tmp, tw_fstype(tmp));
	t_subtest("torn", 120, scenario_torn, (void *)tmp);
	t_subtest("meta", 120, scenario_meta, (void *)tmp);
	t_subtest("synced", 120, scenario_synced, (void *)tmp);
	t_subtest("locked", 120, scenario_locked, (void *)tmp);
	t_subtest("publishing", 120, scenario_publishing, (void *)tmp);
	t_subtest("bad manifests", 120, scenario_badmanifest, (void *)tmp);
	t_subtest("replace", 120, scenario_replace, (void *)tmp);
	t_subtest("pieces", 120, scenario_pieces, (void *)tmp);
	t_subtest("same tick", 120, scenario_same_tick, (void *)tmp);
	t_subtest("probe", 60, scenario_probe, (void *)tmp);
	if (t_is_root()) {
		const char *xfs = t_loop_fs("xfs", 320, NULL, NULL, why, sizeof(why));

		if (xfs)
			t_subtest("stem", 120, scenario_stem, (void *)xfs);
		else
			t_log("stem SKIPPED: %s", why);
		const char *old = t_loop_fs("ext4", 32, "-I 128", NULL, why, sizeof(why));

		if (old)
			t_subtest("ctime", 120, scenario_ctime, (void *)old);
		else
			t_log("ctime SKIPPED: %s", why);
	} else {
		t_log("not root: the stem (XFS) and ctime (ext4 -I 128) parts need loop devices");
	}
	t_done();
	return 0;
}

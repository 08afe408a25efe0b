/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_rawino: the raw engine's metadata from ext4's inode tables (raw_ext4ino.c,
 * raw_dirhint.c) on a loop-mounted ext4, as root.  Every file must equal read()
 * and stat(), and the statistics must show which files took the device's
 * inodes (files_rawmeta), so a path that silently fell back cannot pass:
 *  - served: files of many sizes, sparse, unwritten and preallocated-past-
 *    EOF extents, empty, rewritten after the caches were dropped (dirty):
 *    all from raw inodes; files never synced (delayed allocation): their
 *    inodes change when the window's sync writes them, so the VFS (or raw,
 *    when another process's sync() wrote them back first: their bytes are
 *    checked either way);
 *  - owner: files of another owner than their directory take the VFS path,
 *    those of the directory's owner do not;
 *  - mounts: a file mounted over a file in the directory: the directory
 *    takes the VFS path (the listing names the covered file); a symbolic
 *    link to a file is read through the VFS;
 *  - metadata only: metadata equals stat() from raw inodes too;
 *  - race: a writer renames new versions over the files, deletes and
 *    recreates them (freed inode numbers are reused by other names) and
 *    touches them, in a burst each time a window has listed the directory
 *    (after_hint) of every other window, while that window reads the
 *    inodes and data: every file delivered holds exactly one version's
 *    bytes under its own name; of 40 windows, those read with the writer
 *    quiet (the batches wait for its burst to end) take raw inodes;
 *  - reuse: a name whose inode number went to another file between the
 *    listing and the inode reads is delivered with its own bytes;
 *  - cached: a batch lists a directory once for all its windows: a later
 *    window too sparse to list it on its own still takes raw inodes, and
 *    the reuse above done after the first window's listing, to names of
 *    the second window, still gives every name its own bytes;
 *  - shared: listings the tree walk made (bfo_walk_share) serve windows
 *    too small to list the directory themselves (none without them), and
 *    the reuse above done after the walk's listing still gives every name
 *    its own bytes;
 *  - xattrs: files with an extended attribute in the inode or in a block of
 *    its own are never delivered with BFO_FILE_NO_XATTRS, every file
 *    without one that took a raw inode is; `bfo cp -a` of them from raw
 *    inodes (its --stats says so) keeps every attribute, as cp -a does.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_helpers.h"

#define NSERVED 200
#define NOWNER  48      /* windows of 128 files or more use raw inodes */
#define NLINKS  130
#define NRACE   128
#define NPAD    130
#define NC1     512     /* the first window of a batch (slow start) */
#define NC2     130     /* the second: too few to list the directory alone */

static void free_all(char **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
}

static void quiet(void)
{
	/* raw_dirhint.c lists no directory changed in the last 20 ms */
	usleep(60 * 1000);
}

static void mkdir_or_fail(const char *p, uid_t uid)
{
	if (mkdir(p, 0755) < 0 || chown(p, uid, uid) < 0)
		t_fail("mkdir %s: %s", p, strerror(errno));
}

/* A metadata-only result equals stat() of the path. */
static void expect_meta(const struct t_result *r, const char *path, const char *msg)
{
	struct stat st;

	T_ASSERT(stat(path, &st) == 0, "stat %s", path);
	T_ASSERT(r->status == 0, "[%s] %s: status %d", msg, path, r->status);
	T_EQ(r->size, st.st_size);
	T_EQ(r->ino, st.st_ino);
	T_EQ(r->mode, st.st_mode);
	T_EQ(r->uid, st.st_uid);
	T_EQ(r->gid, st.st_gid);
	T_EQ(r->nlink, st.st_nlink);
	T_EQ(r->mtime_sec, st.st_mtim.tv_sec);
	T_EQ(r->mtime_nsec, st.st_mtim.tv_nsec);
	T_EQ(r->ctime_sec, st.st_ctim.tv_sec);
	T_EQ(r->ctime_nsec, st.st_ctim.tv_nsec);
}

static struct bfo_stats read_all(char **paths, size_t n, unsigned flags, const char *msg)
{
	struct bfo_opts o;
	struct bfo_stats st;
	struct t_result *r = t_results_new(n);

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	o.flags |= flags;
	t_batch(&o, paths, n, r, &st);
	for (size_t i = 0; i < n; i++) {
		if (flags & BFO_READ_METADATA_ONLY)
			expect_meta(&r[i], paths[i], msg);
		else
			t_expect_plain(r, paths, i, msg);
	}
	t_results_free(r, n);
	return st;
}

/* ------------------------------------------------------------ served */

static void served(const char *mnt)
{
	static const uint64_t sizes[] = { 1, 100, 3500, 4095, 4096, 4097, 12288, 65536, 200000, 1 << 20 };
	char *dir = t_path(mnt, "served"), *p[NSERVED + 16];
	size_t n = 0;
	char name[64];

	mkdir_or_fail(dir, 0);
	for (int i = 0; i < NSERVED; i++) {
		snprintf(name, sizeof(name), "f%03d", i);
		p[n] = t_path(dir, name);
		t_write_random(p[n++], sizes[i % 10] + (uint64_t)i, (uint64_t)i + 1);
	}
	p[n] = t_path(dir, "empty");
	t_write_bytes(p[n++], "", 0);
	p[n] = t_path(dir, "sparse");      /* data, a hole, data */
	t_write_random(p[n], 5000, 91);
	int fd = open(p[n++], O_WRONLY | O_CLOEXEC);

	if (fd < 0 || pwrite(fd, "tail", 4, 1 << 20) != 4)
		t_fail("sparse: %s", strerror(errno));
	close(fd);
	p[n] = t_path(dir, "unwritten");   /* a written block inside an unwritten extent */
	fd = open(p[n++], O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || fallocate(fd, 0, 0, 256 << 10) < 0 || pwrite(fd, "written", 7, 100 << 10) != 7)
		t_fail("unwritten: %s", strerror(errno));
	close(fd);
	p[n] = t_path(dir, "prealloc");    /* preallocated past EOF */
	t_write_random(p[n], 10000, 92);
	fd = open(p[n++], O_WRONLY | O_CLOEXEC);
	if (fd < 0 || fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) < 0)
		t_fail("prealloc: %s", strerror(errno));
	close(fd);
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	/* after the drop: rewritten (dirty pages) and new, never synced */
	for (int i = 0; i < NSERVED; i += 20)
		t_write_random(p[i], sizes[i % 10] + (uint64_t)i, (uint64_t)i + 1000);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "unsynced%d", i);
		p[n] = t_path(dir, name);
		t_write_random(p[n++], 3000 + 7000 * (uint64_t)i, 900 + (uint64_t)i);
	}
	quiet();
	struct bfo_stats st = read_all(p, n, 0, "served");

	/* Every other file from raw inodes.  The five never synced: while
	 * they are dirty, their inodes on the device change when the
	 * window's sync writes them out (delayed allocation), so they must
	 * be read through the VFS, not counted; once another process's
	 * sync() wrote them back first (stress-ng's I/O workers call it),
	 * their inodes are final and serve them.  Either way their bytes and
	 * metadata equal read() and stat() (read_all): a stale inode served
	 * (a size without its extents) would not. */
	T_ASSERT(st.files_rawmeta >= n - 5 && st.files_rawmeta <= n,
		 "served: %llu of %zu files from raw inodes, expected all but the 5 never synced "
		 "(or those too, written back by someone else)", (unsigned long long)st.files_rawmeta, n);
	T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] > 0, "no file read raw");
	/* unchanged files, from a cold cache: still all of them */
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	st = read_all(p, n, 0, "served, cold");
	T_EQ(st.files_rawmeta, n);
	/* metadata only */
	st = read_all(p, n, BFO_READ_METADATA_ONLY, "served, metadata only");
	T_EQ(st.files_rawmeta, n);
	/* a directory too large to keep its listing: listed for the window */
	bfo_test_hooks.dircache_bytes = 1;
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	st = read_all(p, n, 0, "served, listing not kept");
	T_EQ(st.files_rawmeta, n);
	bfo_test_hooks.dircache_bytes = 0;
	t_log("served: %zu files, %llu from raw inodes, bytes and metadata equal read() and stat()", n,
	      (unsigned long long)st.files_rawmeta);
	free_all(p, n);
	free(dir);
}

/* ------------------------------------------------------------ owner */

static void owner(const char *mnt)
{
	char *root_dir = t_path(mnt, "owned-root"), *nobody_dir = t_path(mnt, "owned-nobody");
	char *p[3 * NOWNER], name[64];
	size_t n = 0;

	mkdir_or_fail(root_dir, 0);
	mkdir_or_fail(nobody_dir, 65534);
	for (int i = 0; i < NOWNER; i++) {
		snprintf(name, sizeof(name), "root%02d", i);          /* root's, in root's directory */
		p[n] = t_path(root_dir, name);
		t_write_random(p[n++], 4096, (uint64_t)i + 300);
		snprintf(name, sizeof(name), "nobody%02d", i);        /* nobody's, in root's directory */
		p[n] = t_path(root_dir, name);
		t_write_random(p[n], 4096, (uint64_t)i + 400);
		if (chown(p[n++], 65534, 65534) < 0)
			t_fail("chown: %s", strerror(errno));
		snprintf(name, sizeof(name), "own%02d", i);           /* nobody's, in nobody's directory */
		p[n] = t_path(nobody_dir, name);
		t_write_random(p[n], 4096, (uint64_t)i + 500);
		if (chown(p[n++], 65534, 65534) < 0)
			t_fail("chown: %s", strerror(errno));
	}
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	struct bfo_stats st = read_all(p, n, 0, "owner");

	T_EQ(st.files_rawmeta, 2 * NOWNER);
	t_log("owner: %d files of another owner than their directory read through the VFS", NOWNER);
	free_all(p, n);
	free(root_dir);
	free(nobody_dir);
}

/* ------------------------------------------------------------ mounts */

static void mounts(const char *mnt)
{
	char *dir = t_path(mnt, "mounts"), *p[NLINKS + 1], name[64];
	char *over = t_path(t_tmpdir(), "mounted-over");
	size_t n = 0;

	mkdir_or_fail(dir, 0);
	for (int i = 0; i < NLINKS; i++) {
		snprintf(name, sizeof(name), "m%02d", i);
		p[n] = t_path(dir, name);
		t_write_random(p[n++], 5000, (uint64_t)i + 600);
	}
	p[n] = t_path(dir, "link");
	if (symlink("m01", p[n++]) < 0)
		t_fail("symlink: %s", strerror(errno));
	t_write_random(over, 7777, 700);
	if (mount(over, p[0], NULL, MS_BIND, NULL) < 0)
		t_skip("mount --bind of a file: %s", strerror(errno));
	t_cleanup_mount(p[0]);
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	struct bfo_stats st = read_all(p, n, 0, "mounts, a file mounted over m00");

	T_EQ(st.files_rawmeta, 0);
	if (umount(p[0]) < 0)
		t_fail("umount: %s", strerror(errno));
	quiet();
	st = read_all(p, n, 0, "mounts, unmounted");
	T_EQ(st.files_rawmeta, NLINKS);
	t_log("mounts: a directory with a file mounted in it, and a symbolic link, through the VFS");
	free_all(p, n);
	free(dir);
	free(over);
}

/* ------------------------------------------------------------ race */

struct race {
	char *dir;
	char *paths[NRACE];
	atomic_bool stop;
	atomic_uint versions;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned go;                /* bursts asked for by after_hint, not yet begun */
	bool busy;                  /* a burst under way */
	unsigned hinted;            /* windows whose directories were listed */
};

/* After a window's directories were listed, before its inodes are read:
 * the writer's next burst, now, while the batch reads them; every other
 * window is read with the writer quiet (the batches wait for its burst to
 * end), so that some files come from raw inodes whatever the timing. */
static void race_hint(void *arg, uint32_t nfiles)
{
	struct race *r = arg;

	(void)nfiles;
	pthread_mutex_lock(&r->lock);
	r->hinted++;
	r->go += r->hinted % 2;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Version v of file i: a header naming both, then bytes from them; its
 * size from them too. */
static size_t version_bytes(unsigned i, unsigned v, uint8_t *buf, size_t cap)
{
	size_t len = 1000 + (size_t)(i * 7919u + v * 104729u) % 20000;
	int h = snprintf((char *)buf, cap, "file %u version %u\n", i, v);

	T_ASSERT(len <= cap, "buffer");
	t_fill_random(buf + h, len - (size_t)h, (uint64_t)i << 32 | v);
	return len;
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	uint64_t seed = 42;
	uint8_t buf[32 << 10];
	char tmp[4096];
	unsigned v = 1;

	snprintf(tmp, sizeof(tmp), "%s/.tmp", r->dir);
	for (;;) {
		/* Quiet until a window has listed the directory (it lists none
		 * changed in the last 20 ms): then a burst, while that window
		 * reads the inodes and data of the names it listed. */
		pthread_mutex_lock(&r->lock);
		while (!r->go && !atomic_load(&r->stop))
			pthread_cond_wait(&r->cond, &r->lock);
		r->go = 0;
		r->busy = true;
		pthread_mutex_unlock(&r->lock);
		if (atomic_load(&r->stop))
			break;
		for (int k = 0; k < 8; k++) {
			unsigned i = (unsigned)t_rand_range(&seed, 0, NRACE - 1), op = (unsigned)t_rand(&seed) % 3;
			size_t len = version_bytes(i, ++v, buf, sizeof(buf));

			if (op == 2) {
				/* a new inode time and nothing else */
				utimensat(AT_FDCWD, r->paths[i], NULL, 0);
				continue;
			}
			if (op == 1)
				unlink(r->paths[i]);   /* its inode number is free for the next file */
			t_write_bytes(tmp, buf, len);
			if (rename(tmp, r->paths[i]) < 0)
				t_fail("rename: %s", strerror(errno));
		}
		atomic_fetch_add(&r->versions, 8);
		pthread_mutex_lock(&r->lock);
		r->busy = false;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

/* A delivered file holds one version of itself: header, bytes, size. */
static void check_version(const struct t_result *res, unsigned i, const char *path)
{
	static uint8_t want[32 << 10];
	unsigned fi, v;

	if (res->status == -ENOENT || res->status == -ESTALE)
		return;
	T_ASSERT(res->status == 0, "%s: status %d", path, res->status);
	T_ASSERT(res->data && sscanf((const char *)res->data, "file %u version %u", &fi, &v) == 2,
		 "%s: no header", path);
	T_ASSERT(fi == i, "%s: holds the bytes of file %u", path, fi);
	size_t len = version_bytes(i, v, want, sizeof(want));

	T_EQ(res->len, len);
	T_EQ(res->size, len);
	T_ASSERT(memcmp(res->data, want, len) == 0, "%s: version %u torn", path, v);
}

static void race(const char *mnt)
{
	struct race r = { .dir = t_path(mnt, "race") };
	uint8_t buf[32 << 10];
	uint64_t rawmeta = 0;
	pthread_t th;
	int batches = 0;

	mkdir_or_fail(r.dir, 0);
	for (unsigned i = 0; i < NRACE; i++) {
		char name[32];

		snprintf(name, sizeof(name), "r%02u", i);
		r.paths[i] = t_path(r.dir, name);
		t_write_bytes(r.paths[i], buf, version_bytes(i, 0, buf, sizeof(buf)));
	}
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	bfo_test_hooks.after_hint = race_hint;
	bfo_test_hooks.arg = &r;
	if (pthread_create(&th, NULL, race_writer, &r))
		t_fail("pthread_create");
	t_watchdog(240, "race: batches beside the writer");
	/* Batches until 40 windows were hinted (each with a burst beside it):
	 * a batch soon after a burst lists no directory (changed in the last
	 * 20 ms) and takes the VFS, and the next ones do again. */
	while (batches < 40 || r.hinted < 40) {
		struct bfo_opts o;
		struct bfo_stats st;
		struct t_result *res = t_results_new(NRACE);

		bfo_opts_init(&o);
		o.engine = BFO_ENGINE_RAW;
		t_batch(&o, r.paths, NRACE, res, &st);
		for (unsigned i = 0; i < NRACE; i++)
			check_version(&res[i], i, r.paths[i]);
		t_results_free(res, NRACE);
		rawmeta += st.files_rawmeta;
		batches++;
		/* the next batch begins with the writer quiet */
		pthread_mutex_lock(&r.lock);
		while (r.go || r.busy)
			pthread_cond_wait(&r.cond, &r.lock);
		pthread_mutex_unlock(&r.lock);
	}
	pthread_mutex_lock(&r.lock);
	atomic_store(&r.stop, true);
	pthread_cond_broadcast(&r.cond);
	pthread_mutex_unlock(&r.lock);
	pthread_join(th, NULL);
	bfo_test_hooks.after_hint = NULL;
	bfo_test_hooks.arg = NULL;
	T_ASSERT(rawmeta > 0, "%d batches, %u windows hinted, none read from raw inodes", batches, r.hinted);
	sync();              /* the last versions on the device: none changes when synced */
	quiet();
	struct bfo_stats st = read_all(r.paths, NRACE, 0, "race, after the writer");

	T_EQ(st.files_rawmeta, NRACE);
	t_log("race: %d batches beside %u changes, %llu files from raw inodes, each one version whole",
	      batches, atomic_load(&r.versions), (unsigned long long)rawmeta);
	free_all(r.paths, NRACE);
	free(r.dir);
}

/* ------------------------------------------------------------ reuse */

/*
 * Between the listing and the inode reads (the after_hint hook): a new
 * version is renamed over "a" (its inode is freed), then files are made
 * until one gets that inode number, and it is renamed over "b".  The
 * listing said "a" is that number: "a" must be delivered with its new
 * bytes (or -ESTALE), never b's.
 */
struct reuse {
	char *a, *b, *tmp, *dir;
	ino_t old_ino;
	bool reused;
	int hooks;
};

static void reuse_hook(void *arg, uint32_t nfiles)
{
	struct reuse *r = arg;
	uint8_t buf[32 << 10];
	char name[4096];

	if (r->hooks++)
		return;
	t_write_bytes(r->tmp, buf, version_bytes(0, 1, buf, sizeof(buf)));
	if (rename(r->tmp, r->a) < 0)
		t_fail("rename: %s", strerror(errno));
	for (int k = 0; k < 2000 && !r->reused; k++) {
		struct stat st;

		snprintf(name, sizeof(name), "%s/n%04d", r->dir, k);
		t_write_bytes(name, buf, version_bytes(1, 7, buf, sizeof(buf)));
		if (stat(name, &st) == 0 && st.st_ino == r->old_ino) {
			if (rename(name, r->b) < 0)
				t_fail("rename: %s", strerror(errno));
			r->reused = true;
		}
	}
}

/* Arm reuse_hook on a (whose inode number goes to b's new version) and b,
 * files of r->dir. */
static void reuse_arm(struct reuse *r, char *a, char *b)
{
	struct stat st;

	r->a = a;
	r->b = b;
	r->tmp = t_path(r->dir, ".tmp");
	T_ASSERT(stat(r->a, &st) == 0, "stat %s", r->a);
	r->old_ino = st.st_ino;
	bfo_test_hooks.arg = r;
	bfo_test_hooks.after_hint = reuse_hook;
}

/* After the batch: a (res[ia]) holds its new version, never b's bytes; b
 * (res[ib]) a version of itself.  Skips when the hook got no reuse. */
static void reuse_check(const struct reuse *r, const struct t_result *res, size_t ia, size_t ib)
{
	bfo_test_hooks.after_hint = NULL;
	T_ASSERT(r->hooks > 0, "the hook did not run");
	if (!r->reused)
		t_skip("no new file got the freed inode number");
	check_version(&res[ia], 0, r->a);
	T_ASSERT(res[ia].status != 0 || strncmp((const char *)res[ia].data, "file 0 version 1", 16) == 0,
		 "%s: not its new version", r->a);
	check_version(&res[ib], 1, r->b);
}

static void reuse(const char *mnt)
{
	struct reuse r = { .dir = t_path(mnt, "reuse") };
	uint8_t buf[32 << 10];
	char *p[2 + NPAD];

	mkdir_or_fail(r.dir, 0);
	p[0] = t_path(r.dir, "a");
	p[1] = t_path(r.dir, "b");
	t_write_bytes(p[0], buf, version_bytes(0, 0, buf, sizeof(buf)));
	t_write_bytes(p[1], buf, version_bytes(1, 0, buf, sizeof(buf)));
	for (int i = 0; i < NPAD; i++) {     /* read too: a window large enough for raw inodes */
		char name[32];

		snprintf(name, sizeof(name), "pad%03d", i);
		p[2 + i] = t_path(r.dir, name);
		t_write_bytes(p[2 + i], "x", 1);
	}
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	reuse_arm(&r, p[0], p[1]);

	struct bfo_opts o;
	struct bfo_stats st2;
	struct t_result *res = t_results_new(2 + NPAD);

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	t_batch(&o, p, 2 + NPAD, res, &st2);
	reuse_check(&r, res, 0, 1);
	for (size_t i = 2; i < 2 + NPAD; i++)
		t_expect_plain(res, p, i, "reuse, untouched");
	t_results_free(res, 2 + NPAD);
	t_log("reuse: a name whose inode number went to another file between the listing and the read: "
	      "its own new bytes (%llu files from raw inodes)", (unsigned long long)st2.files_rawmeta);
	free_all(p, 2 + NPAD);
	free(r.tmp);
	free(r.dir);
}

/* ------------------------------------------------------------ cached */

/* Long names: NC2 files pay for listing 66,560 bytes of directory
 * (raw_dirhint.c's DENSITY), the directory holds more. */
static char *cached_name(const char *dir, int i)
{
	char name[160];

	snprintf(name, sizeof(name), "%04d-%0140d", i, 0);
	return t_path(dir, name);
}

static void cached(const char *mnt)
{
	struct reuse r = { .dir = t_path(mnt, "cached") };
	uint8_t buf[32 << 10];
	char *p[NC1 + NC2];
	struct stat st;
	struct bfo_stats bs;

	mkdir_or_fail(r.dir, 0);
	for (int i = 0; i < NC1 + NC2; i++) {
		p[i] = cached_name(r.dir, i);
		t_write_bytes(p[i], buf, version_bytes((unsigned)i, 0, buf, sizeof(buf)));
	}
	T_ASSERT(stat(r.dir, &st) == 0 && (uint64_t)st.st_size > NC2 * 512ull,
		 "directory of %lld bytes: the second window would list it itself", (long long)st.st_size);
	sync();
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	bs = read_all(p, NC1 + NC2, 0, "cached listing");
	T_ASSERT(bs.windows >= 2, "one window: nothing to share");
	T_ASSERT(bs.files_rawmeta == NC1 + NC2, "%llu of %d files from raw inodes: the second window did not use "
		 "the first one's listing", (unsigned long long)bs.files_rawmeta, NC1 + NC2);

	/* The second window's "a" and "b", changed after the first window's
	 * listing (its after_hint hook), before the second window uses it. */
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	reuse_arm(&r, p[NC1], p[NC1 + 1]);

	struct bfo_opts o;
	struct t_result *res = t_results_new(NC1 + NC2);

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	t_batch(&o, p, NC1 + NC2, res, &bs);
	T_ASSERT(r.hooks > 1, "one window: nothing shared");
	reuse_check(&r, res, NC1, NC1 + 1);
	for (size_t i = 0; i < NC1 + NC2; i++)
		if (i != NC1 && i != NC1 + 1)
			t_expect_plain(res, p, i, "cached, untouched");
	t_results_free(res, NC1 + NC2);
	t_log("cached: %d files in %llu windows, one listing; a name of the second window whose inode number "
	      "went to another file after that listing: its own new bytes (%llu files from raw inodes)",
	      NC1 + NC2, (unsigned long long)bs.windows, (unsigned long long)bs.files_rawmeta);
	free_all(p, NC1 + NC2);
	free(r.tmp);
	free(r.dir);
}

/* ------------------------------------------------------------ shared */

/* The walk's paths of dir (in its inode order) into p (cap entries);
 * with listings, shared with ctx before any is submitted. */
static size_t walk_paths(const char *dir, struct bfo_ctx *ctx, bool share, char **p, size_t cap)
{
	struct bfo_walk *w;
	static char buf[1 << 20];
	size_t n = 0;
	long k;

	T_OK(bfo_walk_start(&w, dir, 0, share ? BFO_WALK_LISTINGS : 0));
	while ((k = bfo_walk_next(w, buf, sizeof(buf))) > 0)
		for (long off = 0; off < k; off += (long)strlen(buf + off) + 1) {
			T_ASSERT(n < cap, "more files than made");
			p[n++] = strdup(buf + off);
		}
	T_ASSERT(k == 0, "bfo_walk_next: %ld", k);
	if (share)
		T_EQ(bfo_walk_share(w, ctx), 1);
	bfo_walk_destroy(w);
	return n;
}

static struct bfo_ctx *small_windows_ctx(void)
{
	struct bfo_opts o;

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	o.window_files = NC2;     /* every window too small to list the directory */
	return t_ctx(&o);
}

static void shared(const char *mnt)
{
	struct reuse r = { .dir = t_path(mnt, "shared") };
	uint8_t buf[32 << 10];
	char *made[NC1 + NC2], *p[NC1 + NC2];
	struct t_result *res;
	struct bfo_stats st;
	struct bfo_ctx *ctx;
	size_t n, ia = NC2 + 5, ib = NC2 + 6;   /* in the second window */

	mkdir_or_fail(r.dir, 0);
	for (int i = 0; i < NC1 + NC2; i++) {
		made[i] = cached_name(r.dir, i);
		t_write_bytes(made[i], buf, version_bytes((unsigned)i, 0, buf, sizeof(buf)));
	}
	sync();
	quiet();
	for (int share = 0; share < 2; share++) {
		T_ASSERT(t_drop_caches(), "drop_caches refused");
		ctx = small_windows_ctx();
		n = walk_paths(r.dir, ctx, share, p, NC1 + NC2);
		T_EQ(n, (size_t)(NC1 + NC2));
		res = t_results_new(n);
		t_batch_ctx(ctx, p, n, res, &st, 0);
		bfo_ctx_destroy(ctx);
		for (size_t i = 0; i < n; i++)
			t_expect_plain(res, p, i, share ? "shared listings" : "no listings shared");
		/* all but a last window under 128 files (those take the VFS path) */
		size_t last = n % NC2, want = n - (last < 128 ? last : 0);

		T_EQ(st.files_rawmeta, share ? want : 0);
		t_results_free(res, n);
		free_all(p, n);
	}

	/* After the walk listed the directory, before the second window:
	 * the reuse of "a"'s inode number for "b" (reuse_hook). */
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	ctx = small_windows_ctx();
	n = walk_paths(r.dir, ctx, true, p, NC1 + NC2);
	reuse_arm(&r, p[ia], p[ib]);
	res = t_results_new(n);
	t_batch_ctx(ctx, p, n, res, &st, 0);
	bfo_ctx_destroy(ctx);
	reuse_check(&r, res, ia, ib);
	for (size_t i = 0; i < n; i++)
		if (i != ia && i != ib)
			t_expect_plain(res, p, i, "shared, untouched");
	t_log("shared: %zu files in windows of %d, from the walk's listing only (none without it); a name "
	      "whose inode number went to another file after that listing: its own new bytes", n, NC2);
	t_results_free(res, n);
	free_all(p, n);
	free_all(made, NC1 + NC2);
	free(r.tmp);
	free(r.dir);
}

/* ------------------------------------------------------------ xattrs */

/* The user.* attributes of path, "name=value;" each, sorted by the kernel's
 * listing order; "" when none. */
static char *xattrs_of(const char *path)
{
	char names[4096], val[4096], *out = calloc(1, 1);
	ssize_t n = llistxattr(path, names, sizeof(names));

	for (char *k = names; out && n > 0 && k < names + n; k += strlen(k) + 1) {
		ssize_t vl = lgetxattr(path, k, val, sizeof(val) - 1);
		char *next;

		if (vl < 0)
			t_fail("lgetxattr %s %s: %s", path, k, strerror(errno));
		val[vl] = 0;
		if (asprintf(&next, "%s%s=%s;", out, k, val) < 0)
			t_fail("out of memory");
		free(out);
		out = next;
	}
	if (n < 0)
		t_fail("llistxattr %s: %s", path, strerror(errno));
	return out;
}

static void xattrs(const char *mnt)
{
	char *dir = t_path(mnt, "xattrs"), *copy = t_path(mnt, "xattrs-copy");
	char *p[NSERVED], name[64], big[600], *out = t_path(mnt, "xattrs-cp.err");
	bool has[NSERVED];
	size_t n = 0, flagged = 0;

	mkdir_or_fail(dir, 0);
	/* 600 bytes do not fit beside a 256-byte inode: a block of their own
	 * (of 1 KiB on this small file system) */
	memset(big, 'b', sizeof(big));
	for (int i = 0; i < NSERVED; i++) {
		snprintf(name, sizeof(name), "x%03d", i);
		p[n] = t_path(dir, name);
		t_write_random(p[n], 3000 + (uint64_t)i, 5000 + (uint64_t)i);
		has[n] = i % 3 != 0;
		if ((i % 3 == 1 && setxattr(p[n], "user.small", "s", 1, 0) < 0) ||
		    (i % 3 == 2 && setxattr(p[n], "user.big", big, sizeof(big), 0) < 0))
			t_fail("setxattr %s: %s", p[n], strerror(errno));
		n++;
	}
	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();

	struct t_result *r = t_results_new(n);
	struct bfo_opts o;
	struct bfo_stats st;

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	t_batch(&o, p, n, r, &st);
	T_EQ(st.files_rawmeta, n);
	for (size_t i = 0; i < n; i++) {
		bool no = r[i].flags & BFO_FILE_NO_XATTRS;

		t_expect_plain(r, p, i, "xattrs");
		T_ASSERT(!(no && has[i]), "%s has an extended attribute but came with BFO_FILE_NO_XATTRS",
			 p[i]);
		T_ASSERT(no || has[i], "%s, from a raw inode without extended attributes, came without "
			 "BFO_FILE_NO_XATTRS", p[i]);
		flagged += no;
	}
	t_results_free(r, n);

	T_ASSERT(t_drop_caches(), "drop_caches refused");
	quiet();
	/* (rsync's rule, bfo's: the copy of SRC is DST/SRC, DST made) */
	T_EQ(t_sh("%s cp -a --stats %s %s 2>%s", BFO_CLI, dir, copy, out), 0);
	uint8_t *bytes = NULL;
	uint64_t len = 0;
	char *err = NULL, want[96];

	if (t_read_plain(out, &bytes, &len) == 0 && (err = calloc(1, len + 1)))
		memcpy(err, bytes, len);
	free(bytes);

	snprintf(want, sizeof(want), "(%zu with metadata from the inode tables", n);
	T_ASSERT(err && strstr(err, want), "bfo cp -a did not take its %zu files from raw inodes: %s", n,
		 err ? err : "(no output)");
	for (size_t i = 0; i < n; i++) {
		char *c = t_pathf("%s/xattrs/%s", copy, strrchr(p[i], '/') + 1);
		char *a = xattrs_of(p[i]), *b = xattrs_of(c);

		T_ASSERT(!strcmp(a, b), "%s: extended attributes '%s' in the copy, '%s' in the source", c,
			 b, a);
		free(a);
		free(b);
		free(c);
	}
	t_log("xattrs: %zu files, %zu flagged without attributes (all that have none); "
	      "bfo cp -a from raw inodes kept every attribute", n, flagged);
	free(err);
	free(out);
	free_all(p, n);
	free(dir);
	free(copy);
}

int main(void)
{
	t_init("t_rawino", 600);
	if (!t_is_root())
		t_skip("needs root (a loop-mounted ext4 and the raw engine)");
	const char *mnt = t_loop_fs_or_skip("ext4", 256, "", "");

	served(mnt);
	owner(mnt);
	mounts(mnt);
	race(mnt);
	reuse(mnt);
	cached(mnt);
	shared(mnt);
	xattrs(mnt);
	t_done();
	return 0;
}

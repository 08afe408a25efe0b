/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_raw: the raw engine (O_DIRECT reads of merged regions of the block
 * device) on loop-mounted ext4 and XFS: a few thousand files of 1 KiB..2 MiB,
 * some deliberately fragmented (appended round-robin with fsync between, so
 * their extents interleave), sparse files, fallocated files (unwritten
 * extents, and preallocation beyond EOF), files overwritten after the last
 * sync (dirty in the page cache: FIEMAP_FLAG_SYNC must flush them before the
 * device is read) and files never synced (delayed allocation).  Caches are
 * dropped, the batch is read with engine raw under several merge settings,
 * and every file equals read() and stat(); the statistics show raw did the
 * work (engine raw, files_by_engine[RAW] > 0, regions > 0, and regions read
 * straight into their file's buffer, where the arena of config 1 wraps so
 * those land on memory other files' data held).
 *
 * Then the paths raw must refuse: an ext4 made with -O inline_data (tiny
 * files whose data lives in the inode: not raw, bytes still right) and an
 * ext4 mounted with data=journal (raw refused for the whole file system:
 * the files say uring).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t_helpers.h"

#if T_ASAN
#define NFILES 400
#else
#define NFILES 2000
#endif
#define NFRAG 8
#define MAXP (NFILES + 96)

struct tree {
	char *paths[MAXP];
	size_t n;
	size_t nmixed;                  /* paths[0..nmixed): the mixed set */
	size_t dirty_first, dirty_n;    /* rewritten after the last sync */
};

static void write_at(const char *p, const void *b, size_t len, off_t off)
{
	int fd = open(p, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || pwrite(fd, b, len, off) != (ssize_t)len)
		t_fail("pwrite %s: %s", p, strerror(errno));
	close(fd);
}

static char *add(struct tree *t, const char *dir, const char *name)
{
	T_ASSERT(t->n < MAXP, "too many files");
	t->paths[t->n] = t_path(dir, name);
	return t->paths[t->n++];
}

/* Fragmented files: round-robin appends, fsync after each. */
static void make_fragmented(struct tree *t, const char *mnt)
{
	uint8_t chunk[4096 + 123];
	char name[64];
	int fds[NFRAG];

	for (int f = 0; f < NFRAG; f++) {
		snprintf(name, sizeof(name), "frag%d", f);
		fds[f] = open(add(t, mnt, name), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		if (fds[f] < 0)
			t_fail("create: %s", strerror(errno));
	}
	for (int round = 0; round < 40; round++) {
		for (int f = 0; f < NFRAG; f++) {
			size_t len = round % 3 ? 4096 : sizeof(chunk);

			t_fill_random(chunk, len, (uint64_t)(round * 100 + f));
			if (write(fds[f], chunk, len) != (ssize_t)len || fsync(fds[f]) < 0)
				t_fail("append: %s", strerror(errno));
		}
	}
	long ext = 0;

	for (int f = 0; f < NFRAG; f++) {
		close(fds[f]);
		long e = t_extents(t->paths[t->n - NFRAG + (size_t)f]);

		T_ASSERT(e > 0, "FIEMAP of a fragmented file: %ld", e);
		ext += e;
	}
	t_log("%d fragmented files: %ld extents", NFRAG, ext);
	T_ASSERT(ext > NFRAG, "the round-robin appends did not fragment anything");
}

/* Sparse and fallocated files (unwritten extents read as zeros), an empty
 * one. */
static void make_sparse(struct tree *t, const char *mnt)
{
	uint8_t chunk[4096 + 123];
	char *p = add(t, mnt, "sparse-big");
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	t_fill_random(chunk, sizeof(chunk), 76);
	if (fd < 0 || ftruncate(fd, 2 << 20) < 0 || pwrite(fd, chunk, 4096, 300 << 10) != 4096 ||
	    pwrite(fd, "tail", 4, (3 << 19) + 5) != 4)
		t_fail("sparse file: %s", strerror(errno));
	close(fd);
	p = add(t, mnt, "sparse-small");
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, 20000) < 0 || pwrite(fd, "mid", 3, 10000) != 3)
		t_fail("sparse file: %s", strerror(errno));
	close(fd);
	p = add(t, mnt, "sparse-head");   /* data, then a hole to the end */
	t_write_random(p, 5000, 77);
	if (truncate(p, 70000) < 0)
		t_fail("truncate: %s", strerror(errno));

	/* fallocated: unwritten extents read as zeros */
	p = add(t, mnt, "falloc-partly-written");
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || fallocate(fd, 0, 0, 512 << 10) < 0 ||
	    pwrite(fd, chunk, sizeof(chunk), 100 << 10) != (ssize_t)sizeof(chunk))
		t_fail("fallocate: %s", strerror(errno));
	close(fd);
	p = add(t, mnt, "falloc-never-written");
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || fallocate(fd, 0, 0, 64 << 10) < 0)
		t_fail("fallocate: %s", strerror(errno));
	close(fd);
	p = add(t, mnt, "falloc-beyond-eof");
	t_write_random(p, 10000, 78);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) < 0)
		t_fail("fallocate KEEP_SIZE: %s", strerror(errno));
	close(fd);
	p = add(t, mnt, "empty");
	t_write_bytes(p, "", 0);
}

/* Many extents: above the per-file limit of the plan, and below it but
 * more than one FIEMAP call returns. */
static void make_extents(struct tree *t, const char *mnt)
{
	static const int nblocks[2] = { 300, 100 };
	uint8_t chunk[100];
	char name[64], *p;
	int fd;

	for (int m = 0; m < 2; m++) {
		snprintf(name, sizeof(name), "extents-%d", nblocks[m]);
		p = add(t, mnt, name);
		fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
		for (int b = 0; fd >= 0 && b < nblocks[m]; b++) {
			t_fill_random(chunk, 100, (uint64_t)(b + 1000 * m));
			if (pwrite(fd, chunk, 100, (off_t)b * 8192) != 100)
				t_fail("pwrite: %s", strerror(errno));
		}
		if (fd < 0 || fsync(fd) < 0)
			t_fail("%s: %s", p, strerror(errno));
		close(fd);
		long e = t_extents(p);

		T_ASSERT(e >= nblocks[m], "%s: %ld extents, wanted %d", p, e, nblocks[m]);
	}
}

/* XFS: files sharing their blocks with others (reflink). */
static void make_clones(struct tree *t, const char *mnt, size_t nmixed)
{
	char name[64];

	int cloned = 0;

	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "clone%d", i);
		char *dst = add(t, mnt, name);
		int sfd = open(t->paths[(size_t)i * 97 % nmixed], O_RDONLY | O_CLOEXEC);
		int dfd = open(dst, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);

		if (sfd < 0 || dfd < 0)
			t_fail("open: %s", strerror(errno));
		if (ioctl(dfd, FICLONE, sfd) == 0) {
			cloned++;
		} else {
			/* no reflink: a plain copy keeps the set the same */
			uint8_t *b;
			uint64_t len;

			T_ASSERT(t_read_plain(t->paths[(size_t)i * 97 % nmixed], &b, &len) == 0, "read");
			if (len && write(dfd, b, len) != (ssize_t)len)
				t_fail("write: %s", strerror(errno));
			free(b);
		}
		close(sfd);
		close(dfd);
	}
	t_log("%d files share their extents with another (FICLONE)", cloned);
}

static void make_tree(struct tree *t, const char *mnt, bool with_special, size_t nmixed,
		      bool xfs)
{
	uint64_t seed = 5;
	char name[64];
	size_t big = 0;

	for (int d = 0; d < 20; d++) {
		snprintf(name, sizeof(name), "%s/d%02d", mnt, d);
		if (mkdir(name, 0755) < 0)
			t_fail("mkdir %s: %s", name, strerror(errno));
	}
	/* mixed sizes, created in shuffled directory order */
	t->nmixed = nmixed;
	for (int i = 0; i < (int)nmixed; i++) {
		uint64_t k = t_rand(&seed) % 100, size;

		if (k < 88)
			size = t_rand_range(&seed, 1024, 64 << 10);
		else if (k < 98)
			size = t_rand_range(&seed, 64 << 10, 512 << 10);
		else
			size = t_rand_range(&seed, 512 << 10, 2 << 20);
		if (i % 50 == 0)
			size = 4096 * t_rand_range(&seed, 1, 16);
		snprintf(name, sizeof(name), "d%02d/f%05d", (int)(t_rand(&seed) % 20), i);
		t_write_random(add(t, mnt, name), size, (uint64_t)i);
		big += size;
	}
	if (with_special) {
		make_fragmented(t, mnt);
		make_sparse(t, mnt);
		make_extents(t, mnt);
		if (xfs)
			make_clones(t, mnt, nmixed);
	}
	/* the same paths again in the batch: each index gets the full bytes */
	for (int i = 0; i < 20; i++) {
		T_ASSERT(t->n < MAXP, "too many files");
		t->paths[t->n++] = strdup(t->paths[(size_t)i * 37 % nmixed]);
	}
	t_log("%zu files, %zu MB in the mixed set", t->n, big >> 20);
}

/* After the caches are dropped: rewrite parts of some files and create a
 * few more, none of it synced. */
static void make_dirty(struct tree *t, const char *mnt, int round)
{
	uint8_t b[6000];
	char name[64];

	t->dirty_first = t->n;
	for (size_t i = (size_t)round; i < t->nmixed; i += t->nmixed / 20) {
		struct stat st;

		if (stat(t->paths[i], &st) < 0)
			t_fail("stat");
		t_fill_random(b, sizeof(b), i * 7 + (size_t)round);
		write_at(t->paths[i], b, 100, st.st_size / 2);
		write_at(t->paths[i], b, (size_t)(st.st_size < 6000 ? st.st_size : 6000), 0);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "unsynced-%d-%d", round, i);
		t_write_random(add(t, mnt, name), 3000 + 7000 * (uint64_t)i, 900 + (uint64_t)i);
	}
	t->dirty_n = t->n - t->dirty_first;
}

struct rawrun {
	struct tree *t;
	const char *mnt;
	const char *fs;
};

static void raw_runs(void *arg)
{
	struct rawrun *a = arg;
	struct tree *t = a->t;

	for (int cfg = 0; cfg < 3; cfg++) {
		struct bfo_opts o;
		struct bfo_stats st;
		char msg[160];

		bfo_opts_init(&o);
		o.engine = BFO_ENGINE_RAW;
		if (cfg == 1) {          /* adjacent only, small I/Os, small groups, a
					  * small arena whose ring wraps many times (so
					  * holes land on reused, dirty memory) */
			o.arena_bytes = 8 << 20;
			o.merge_gap = 1;
			o.max_io = 64 << 10;
			o.large_extent = 64 << 10;
			o.window_bytes = 4 << 20;
			o.queue_depth = 4;
			o.window_files = 300;
		} else if (cfg == 2) {   /* merge through large gaps, big I/Os, pieces */
			o.merge_gap = 4 << 20;
			o.max_io = 8 << 20;
			o.large_extent = 8 << 20;
			o.large_file = 1 << 20;
			o.order = BFO_ORDER_PHYSICAL;
		}
		snprintf(msg, sizeof(msg), "%s, engine raw, config %d", a->fs, cfg);
		if (!t_drop_caches())
			t_fail("drop_caches refused");
		make_dirty(t, a->mnt, cfg);

		struct t_result *r = t_results_new(t->n);
		size_t nraw = 0, small = 0;

		t_batch(&o, t->paths, t->n, r, &st);
		for (size_t i = 0; i < t->n; i++) {
			t_expect_plain(r, t->paths, i, msg);
			if (r[i].size <= o.large_file && r[i].size > 0 && i < t->nmixed) {
				small++;
				nraw += r[i].engine == BFO_ENGINE_RAW;
			}
		}
		T_EQ(st.engine, BFO_ENGINE_RAW);
		T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] > 0, "[%s] no file read raw", msg);
		T_ASSERT(st.regions > 0, "[%s] no merged region", msg);
		/* Files of 32 KiB or more whose extents merge with nothing
		 * (all with merge_gap 1; the 1-2 MiB ones in pieces by default)
		 * are read straight into their buffers; config 2 merges through
		 * 4 MiB gaps and may leave none. */
		T_ASSERT(st.direct_regions <= st.regions, "[%s] %llu direct of %llu regions", msg,
			 (unsigned long long)st.direct_regions, (unsigned long long)st.regions);
		T_ASSERT(cfg == 2 || st.direct_regions > 0, "[%s] no region read straight into its buffer",
			 msg);
		T_ASSERT(st.extents >= nraw, "[%s] %llu extents for %zu raw files", msg,
			 (unsigned long long)st.extents, nraw);
		/* Most files of a clean set must stay on the raw path. */
		T_ASSERT(nraw * 10 >= small * 9, "[%s] only %zu of %zu files read raw", msg, nraw, small);
		t_log("%s: ok (%zu files, %zu of %zu mixed files raw, %llu extents, %llu regions, "
		      "%llu direct, %llu I/Os, %llu MB device, %llu MB gaps, %llu fallbacks)", msg, t->n, nraw,
		      small, (unsigned long long)st.extents, (unsigned long long)st.regions,
		      (unsigned long long)st.direct_regions,
		      (unsigned long long)st.ios, (unsigned long long)(st.device_bytes >> 20),
		      (unsigned long long)(st.gap_bytes >> 20), (unsigned long long)st.fallback_files);
		t_results_free(r, t->n);
	}
}

static void free_tree(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->paths[i]);
	t->n = 0;
}

static struct tree T, T_ext4, T_xfs;

static void big_fs(struct tree *t, const char *fstype, const char *losetup_extra, size_t nmixed)
{
	char why[2048];
	const char *mnt = t_loop_fs_ex(fstype, 640, NULL, NULL, losetup_extra, why, sizeof(why));
	char name[96];

	snprintf(name, sizeof(name), "raw on %s%s%s", fstype, losetup_extra ? ", " : "",
		 losetup_extra ? losetup_extra : "");

	struct rawrun a = { t, mnt, name };

	if (!mnt) {
		t_log("%s not checked: %s", name, why);
		if (!strcmp(fstype, "ext4") && !losetup_extra)
			t_skip("%s", why);
		return;
	}
	make_tree(t, mnt, true, nmixed, !strcmp(fstype, "xfs"));
	t_subtest(name, 240, raw_runs, &a);
}

/* One batch over several file systems: ext4, XFS and the temporary
 * directory's, interleaved. */
static void mixed_devices(void *arg)
{
	const char *tmp = arg;
	char *paths[600];
	size_t n = 0;

	for (size_t i = 0; i < T_ext4.nmixed && n < 560; i += 10) {
		paths[n++] = T_ext4.paths[i];
		if (T_xfs.n)
			paths[n++] = T_xfs.paths[i % T_xfs.nmixed];
		if (i % 50 == 0) {
			paths[n] = t_pathf("%s/tmp%zu", tmp, i);
			t_write_random(paths[n++], 1000 + i, i);
		}
	}
	for (int ei = 0; ei < 2; ei++) {
		struct bfo_opts o;
		struct bfo_stats st;
		struct t_result *r = t_results_new(n);
		const char *msg = ei ? "mixed devices, engine auto" : "mixed devices, engine raw";
		uint64_t raw_devs[4] = { 0 };
		int nraw_devs = 0;

		bfo_opts_init(&o);
		o.engine = ei ? BFO_ENGINE_AUTO : BFO_ENGINE_RAW;
		if (!t_drop_caches())
			t_fail("drop_caches refused");
		t_batch(&o, paths, n, r, &st);
		for (size_t i = 0; i < n; i++) {
			t_expect_plain(r, paths, i, msg);
			/* the temporary directory's own file system may be read raw
			 * too (a VM's scratch ext4 on virtio) or not (tmpfs): not
			 * counted */
			if (r[i].engine == BFO_ENGINE_RAW && strncmp(paths[i], tmp, strlen(tmp))) {
				bool seen = false;

				for (int d = 0; d < nraw_devs; d++)
					seen |= raw_devs[d] == r[i].dev;
				if (!seen && nraw_devs < 4)
					raw_devs[nraw_devs++] = r[i].dev;
			}
		}
		T_ASSERT(nraw_devs == (T_xfs.n ? 2 : 1), "[%s] raw reads on %d devices", msg, nraw_devs);
		t_log("%s: ok (%zu files, raw on %d devices)", msg, n, nraw_devs);
		t_results_free(r, n);
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(paths[i], tmp, strlen(tmp)) == 0)
			free(paths[i]);
}

static void inline_data(void *arg)
{
	const char *mnt = arg;
	struct tree *t = &T;
	struct bfo_opts o;
	struct bfo_stats st;
	const char *msg = "ext4 -O inline_data, engine raw";

	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_RAW;
	if (!t_drop_caches())
		t_fail("drop_caches refused");

	struct t_result *r = t_results_new(t->n);
	size_t tiny = 0;

	t_batch(&o, t->paths, t->n, r, &st);
	for (size_t i = 0; i < t->n; i++) {
		t_expect_plain(r, t->paths, i, msg);
		if (r[i].size > 0 && r[i].size <= 48) {
			tiny++;
			if (r[i].engine == BFO_ENGINE_RAW)
				t_fail("[%s] %s (%llu bytes inline) read raw", msg, t->paths[i],
				       (unsigned long long)r[i].size);
		}
		if (r[i].size >= 8192 && r[i].engine != BFO_ENGINE_RAW)
			t_fail("[%s] %s (%llu bytes, not inline) read by %s", msg, t->paths[i],
			       (unsigned long long)r[i].size, t_engine(r[i].engine));
	}
	T_ASSERT(tiny > 0, "no tiny file");
	T_ASSERT(st.files_by_engine[BFO_ENGINE_RAW] > 0, "[%s] nothing read raw", msg);
	t_log("%s: ok (%zu inline files left the raw path, %llu fallbacks)", msg, tiny,
	      (unsigned long long)st.fallback_files);
	t_results_free(r, t->n);
	(void)mnt;
}

static void data_journal(void *arg)
{
	struct tree *t = &T;
	const char *msg = "ext4 -o data=journal, engine raw";

	(void)arg;
	for (int ei = 0; ei < 2; ei++) {
		struct bfo_opts o;
		struct bfo_stats st;

		bfo_opts_init(&o);
		o.engine = ei ? BFO_ENGINE_AUTO : BFO_ENGINE_RAW;
		if (!t_drop_caches())
			t_fail("drop_caches refused");

		struct t_result *r = t_results_new(t->n);

		t_batch(&o, t->paths, t->n, r, &st);
		for (size_t i = 0; i < t->n; i++) {
			t_expect_plain(r, t->paths, i, msg);
			if (r[i].size > 0 && r[i].engine != BFO_ENGINE_URING)
				t_fail("[%s, asked %s] %s read by %s, not uring", msg, t_engine((int)o.engine),
				       t->paths[i], t_engine(r[i].engine));
		}
		T_EQ(st.files_by_engine[BFO_ENGINE_RAW], 0);
		t_log("%s (asked %s): ok, raw refused, uring read it", msg, t_engine((int)o.engine));
		t_results_free(r, t->n);
	}
}

/* Files of IDIRS directories whose inodes follow the directories (made
 * empty, one directory after the other) while their data interleaves on
 * the device (written round-robin, fsync after each): a batch of a few of
 * the directories finds, between its files, the files of the others.
 * The files are of 4096 bytes, or of 1,300: the rest of a file's last
 * block is its own, not a gap (files of ~1.3 KB end to end were read one
 * or two per region). */
#define IDIRS 8
#define IFILES 150

struct ileave {
	const char *mnt, *tag;
	size_t size;            /* of each file: at most 4096 */
};

static void interleaved(void *arg)
{
	const struct ileave *il = arg;
	const size_t n = IDIRS * IFILES, few = 2 * IFILES;
	char **ipaths = calloc(n, sizeof(*ipaths));
	uint8_t buf[4096];

	T_ASSERT(ipaths && il->size <= sizeof(buf), "calloc");
	for (int d = 0; d < IDIRS; d++) {
		char dir[4096];

		snprintf(dir, sizeof(dir), "%s/%s%d", il->mnt, il->tag, d);
		T_ASSERT(mkdir(dir, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
		for (int i = 0; i < IFILES; i++) {
			char *p = ipaths[d * IFILES + i] = t_pathf("%s/f%03d", dir, i);

			t_write_bytes(p, "", 0);
		}
	}
	sync();
	for (int i = 0; i < IFILES; i++)
		for (int d = 0; d < IDIRS; d++) {
			int fd = open(ipaths[d * IFILES + i], O_WRONLY | O_CLOEXEC);

			t_fill_random(buf, il->size, (uint64_t)(d * IFILES + i));
			T_ASSERT(fd >= 0 && write(fd, buf, il->size) == (ssize_t)il->size && fsync(fd) == 0,
				 "write %s: %s", ipaths[d * IFILES + i], strerror(errno));
			close(fd);
		}
	/* a batch of two directories: what lies between their files is the
	 * other six directories' files, 24 KiB, within merge_gap; then every
	 * file in the order written (windows of neighbours on the device) */
	char **rr = calloc(n, sizeof(*rr));

	T_ASSERT(rr, "calloc");
	for (int i = 0; i < IFILES; i++)
		for (int d = 0; d < IDIRS; d++)
			rr[i * IDIRS + d] = ipaths[d * IFILES + i];
	for (int all = 0; all < 2; all++) {
		size_t cnt = all ? n : few;
		char **paths = all ? rr : ipaths;
		struct bfo_opts o;
		struct bfo_stats st;
		struct t_result *r = t_results_new(cnt);
		char msg[128];

		snprintf(msg, sizeof(msg), "interleaved files of %zu bytes, %s", il->size,
			 all ? "every file in the order written" : "two of eight directories");
		bfo_opts_init(&o);
		o.engine = BFO_ENGINE_RAW;
		if (!t_drop_caches())
			t_fail("drop_caches refused");
		t_batch(&o, paths, cnt, r, &st);
		for (size_t i = 0; i < cnt; i++)
			t_expect_plain(r, paths, i, msg);
		T_EQ(st.files_by_engine[BFO_ENGINE_RAW], cnt);
		t_log("%s: %llu KiB of data, %llu KiB from the device (%llu through gaps), %llu regions", msg,
		      (unsigned long long)(cnt * il->size >> 10), (unsigned long long)(st.device_bytes >> 10),
		      (unsigned long long)(st.gap_bytes >> 10), (unsigned long long)st.regions);
		/* no more than a quarter more than 4 KiB a file (it was 4x:
		 * every other directory's bytes read with these) */
		T_ASSERT(st.device_bytes * 4 <= (uint64_t)cnt * 4096 * 5, "[%s] %llu device bytes for %zu files",
			 msg, (unsigned long long)st.device_bytes, cnt);
		/* and a dense batch still merges into large reads */
		T_ASSERT(!all || st.regions * 16 <= cnt, "[%s] %llu regions for %zu adjacent files", msg,
			 (unsigned long long)st.regions, cnt);
		t_results_free(r, cnt);
	}
	for (size_t i = 0; i < n; i++)
		free(ipaths[i]);
	free(ipaths);
	free(rr);
}

int main(void)
{
	t_init("t_raw", 540);
	if (!t_is_root())
		t_skip("not root: loop devices and raw block device reads need root");
	if (T_ASAN)
		t_log("sanitizer build: %d mixed files instead of 2000", NFILES);

	big_fs(&T_ext4, "ext4", NULL, NFILES);
	if (t_have_prog("mkfs.xfs"))
		big_fs(&T_xfs, "xfs", NULL, NFILES);
	else
		t_log("XFS not checked: mkfs.xfs not installed");
	/* a device with 4096-byte logical blocks: O_DIRECT alignment */
	big_fs(&T, "ext4", "--sector-size 4096", NFILES / 4);
	free_tree(&T);
	t_subtest("mixed devices", 120, mixed_devices, (void *)t_tmpdir());
	free_tree(&T_ext4);
	free_tree(&T_xfs);

	char why[2048];
	const char *mnt = t_loop_fs("ext4", 64, NULL, NULL, why, sizeof(why));

	if (mnt) {
		struct ileave whole = { mnt, "i", 4096 }, part = { mnt, "s", 1300 };

		t_subtest("interleaved", 120, interleaved, &whole);
		t_subtest("interleaved small", 120, interleaved, &part);
	} else {
		t_log("interleaved not checked: %s", why);
	}

	/* inline data: tiny files live in the inode */
	mnt = t_loop_fs("ext4", 64, "-O inline_data -I 256", NULL, why, sizeof(why));

	if (mnt) {
		char name[64];

		for (int i = 0; i < 200; i++) {
			snprintf(name, sizeof(name), "tiny%03d", i);
			t_write_random(add(&T, mnt, name), (uint64_t)(1 + i % 48), (uint64_t)i);
		}
		for (int i = 0; i < 50; i++) {
			snprintf(name, sizeof(name), "normal%03d", i);
			t_write_random(add(&T, mnt, name), 8192 + (uint64_t)i * 1000, 500 + (uint64_t)i);
		}
		t_subtest("inline_data", 120, inline_data, (void *)mnt);
		free_tree(&T);
	} else {
		t_log("inline_data not checked: %s", why);
	}

	mnt = t_loop_fs("ext4", 64, NULL, "data=journal", why, sizeof(why));
	if (mnt) {
		char name[64];

		for (int i = 0; i < 300; i++) {
			snprintf(name, sizeof(name), "j%03d", i);
			t_write_random(add(&T, mnt, name), (uint64_t)(i * 211 % 40000), (uint64_t)i);
		}
		t_subtest("data=journal", 120, data_journal, NULL);
		free_tree(&T);
	} else {
		t_log("data=journal not checked: %s", why);
	}
	t_done();
	return 0;
}

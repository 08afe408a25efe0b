/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_write: the writer API (bfo_writer_open/write/close), compared with the
 * plain path.
 *
 * For every engine the machine allows -- batched on worker threads,
 * BFO_WENGINE_URING (both on the test directory's file system
 * and on a loop-mounted XFS), stem on a loop-mounted XFS with reflink --
 * and every durability (none, batch, each):
 *  - "types": two batches holding every entry type (FILE with data, empty
 *    FILE, a page-sized and a large FILE, DIR incl. an empty one, setgid
 *    and sticky ones and a read-only one with a file inside, SYMLINK
 *    relative/absolute/dangling, HARDLINK to a file of the same batch and
 *    of the earlier batch, FIFO, CHR and BLK as root) with
 *    BFO_WENTRY_TIMES (nanoseconds), BFO_WENTRY_OWNER (root) and xattrs
 *    (user.* on files and dirs, trusted.* on a symlink and a fifo as root).
 *    The same tree is built with plain syscalls and copied with `cp -a`;
 *    the written tree must equal that copy entry by entry (type, mode with
 *    set-id/sticky bits, owner, mtime and atime to the nanosecond, bytes,
 *    targets, rdev, xattrs, hard-link groups and link counts) and the
 *    intent (each entry checked against what was asked).  Every status is
 *    0 and every entry's engine the expected one; bfo_writer_stats counts
 *    batches, files, failures, bytes, syncs (none: 0; batch: one per
 *    batch; each: at least one per file) and clones (stem: one per file of
 *    at least a block); no manifest is left between batches; after close
 *    .bfo-journal is gone and no .bfo-tmp.* exists.
 *  - "replace": without BFO_WRITE_REPLACE existing targets (file, symlink,
 *    fifo, hard-link name) give -EEXIST and are untouched (same inode,
 *    ctime, bytes); with it, 150 files are replaced while a reader thread
 *    reads them in a loop and must only ever see the whole old or the
 *    whole new content (never ENOENT, never a mix); afterwards each holds
 *    the new bytes and metadata; an existing symlink is replaced by a file
 *    without its target being touched, and by a new symlink; a hard link
 *    to a file of the same REPLACE batch links to the new file.
 *  - "stop": BFO_WRITE_STOP_ON_ERROR: in one directory, an entry that fails
 *    (-EEXIST) ends the batch: the entries before it are written, the ones
 *    after it get -ECANCELED and are absent; an entry refused by validation
 *    (-EINVAL) stops it too; the next batch of the writer is normal.
 *  - "pieces": two large files written in pieces (BFO_WENTRY_MORE, offsets
 *    increasing) over several calls, interleaved with whole files: each
 *    path is absent until its last piece, then holds exactly its bytes and
 *    the last piece's metadata; BFO_WENTRY_ABORT drops a file; a piece out
 *    of order or without a beginning is -EINVAL and drops the file; a last
 *    piece onto an existing path is -EEXIST, the file is untouched; closing
 *    the writer in the middle of a file leaves nothing; never a .bfo-tmp.*.
 * And once, as uid 65534: OWNER to another uid is -EPERM and that entry is
 * absent (never torn), a read-only directory (0500) still receives the
 * files of its batch, and a read-only file (0444) is written whole.
 * Sizes are smaller under ASan (said in the output).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "t_wutil.h"

#if T_ASAN
#define BIG_FILE ((3u << 20) + 17)
#define PIECE (2u << 20)
#define NPIECES 3
#else
#define BIG_FILE ((3u << 20) + 17)
#define PIECE (8u << 20)
#define NPIECES 3
#endif

struct cfg {
	const char *name;
	const char *dir;            /* file system to write on */
	uint32_t engine, flags, durability;
	uint32_t expect;            /* engine the writer must report */
};

static bool root_user;

/* ------------------------------------------------------------ items */

struct item {
	char path[128];
	int type;
	uint32_t mode;
	uint8_t *data;
	uint64_t len;
	char target[128];
	uint64_t rdev;
	bool owner;
	uint32_t uid, gid;
	int64_t msec, asec;
	uint32_t mnsec, ansec;
	struct tw_xbuf *x;
	int batch;
};

static struct item items[64];
static int nitems;
static int64_t now_sec;

static struct item *add_item(int batch, int type, const char *path, uint32_t mode)
{
	struct item *it = &items[nitems];

	memset(it, 0, sizeof(*it));
	snprintf(it->path, sizeof(it->path), "%s", path);
	it->type = type;
	it->mode = mode;
	it->batch = batch;
	/* distinct times: mtime in 2001, atime in the future (so that no
	 * relatime update can change it while the trees are read) */
	it->msec = 978307200 + nitems * 3601;
	it->mnsec = (uint32_t)(nitems * 7919 + 123) % 1000000000u;
	it->asec = now_sec + 2 * 86400 + nitems;
	it->ansec = (uint32_t)(nitems * 104729 + 77) % 1000000000u;
	nitems++;
	return it;
}

static struct item *add_file(int batch, const char *path, uint32_t mode, uint64_t len, uint64_t seed)
{
	struct item *it = add_item(batch, BFO_WTYPE_FILE, path, mode);

	it->len = len;
	if (len) {
		it->data = malloc(len);
		if (!it->data)
			t_fail("out of memory");
		t_fill_random(it->data, len, seed);
	}
	return it;
}

static void add_xattr(struct item *it, const char *name, const char *val)
{
	if (!it->x) {
		it->x = calloc(1, sizeof(*it->x));
		if (!it->x)
			t_fail("out of memory");
	}
	tw_xattr_add(it->x, name, val, (uint32_t)strlen(val));
}

static void build_items(void)
{
	struct item *it;
	uint32_t dummy;

	(void)dummy;
	nitems = 0;
	tw_now(&now_sec, &dummy);
	/* batch 0 */
	add_item(0, BFO_WTYPE_DIR, "d1", 0755);
	add_xattr(&items[nitems - 1], "user.dirattr", "on a directory");
	add_file(0, "earlier", 0644, 777, 1);
	/* batch 1 */
	add_item(1, BFO_WTYPE_DIR, "d1/sub", 02775);
	add_item(1, BFO_WTYPE_DIR, "empty", 0700);
	add_item(1, BFO_WTYPE_DIR, "sticky", 01777);
	add_item(1, BFO_WTYPE_DIR, "ro", 0555);
	add_file(1, "f0", 0644, 0, 0);
	add_file(1, "d1/small", 0640, 100, 2);
	add_file(1, "d1/sub/mid", 0644, 5000, 3);
	add_file(1, "d1/page", 0600, 4096, 4);
	add_file(1, "big", 0644, BIG_FILE, 5);
	add_file(1, "exec", 0755, 12345, 6);
	add_file(1, "suid", 04755, 333, 7);
	add_file(1, "sgid", 02750, 8192, 8);
	add_file(1, "ro/f", 0444, 4000, 9);
	add_file(1, "sticky/in", 0664, 10, 10);
	it = add_file(1, "xattr", 0644, 50, 11);
	add_xattr(it, "user.a", "alpha");
	add_xattr(it, "user.bb", "a longer value of the second attribute");
	it = add_file(1, "owned", 0640, 4097, 12);
	if (root_user) {
		it->owner = true;
		it->uid = 1234;
		it->gid = 5678;
	}
	it = add_item(1, BFO_WTYPE_HARDLINK, "hl_same", 0);
	snprintf(it->target, sizeof(it->target), "d1/small");
	it = add_item(1, BFO_WTYPE_HARDLINK, "d1/sub/hl_earlier", 0);
	snprintf(it->target, sizeof(it->target), "earlier");
	it = add_item(1, BFO_WTYPE_SYMLINK, "sl_rel", 0777);
	snprintf(it->target, sizeof(it->target), "d1/small");
	it = add_item(1, BFO_WTYPE_SYMLINK, "sl_abs", 0777);
	snprintf(it->target, sizeof(it->target), "/etc/hostname");
	it = add_item(1, BFO_WTYPE_SYMLINK, "d1/sl_dang", 0777);
	snprintf(it->target, sizeof(it->target), "nowhere/at all");
	if (root_user) {
		it->owner = true;
		it->uid = 1234;
		it->gid = 5678;
		add_xattr(it, "trusted.onlink", "a symlink's attribute");
	}
	it = add_item(1, BFO_WTYPE_FIFO, "fifo", 0640);
	if (root_user) {
		it->owner = true;
		it->uid = 4321;
		it->gid = 4321;
		add_xattr(it, "trusted.onfifo", "x");
		it = add_item(1, BFO_WTYPE_CHR, "chr", 0666);
		it->rdev = (1ull << 32) | 3;
		it = add_item(1, BFO_WTYPE_BLK, "d1/blk", 0660);
		it->rdev = (7ull << 32) | 200;
	}
}

static void free_items(void)
{
	for (int i = 0; i < nitems; i++) {
		free(items[i].data);
		free(items[i].x);
	}
	nitems = 0;
}

static void to_wentry(const struct item *it, struct bfo_wentry *e)
{
	memset(e, 0, sizeof(*e));
	e->path = it->path;
	e->type = (uint32_t)it->type;
	e->mode = it->mode;
	e->flags = BFO_WENTRY_TIMES | (it->owner ? BFO_WENTRY_OWNER : 0);
	e->uid = it->uid;
	e->gid = it->gid;
	e->atime_sec = it->asec;
	e->atime_nsec = it->ansec;
	e->mtime_sec = it->msec;
	e->mtime_nsec = it->mnsec;
	if (it->type == BFO_WTYPE_FILE) {
		e->data = it->data;
		e->length = it->len;
	} else if (it->type == BFO_WTYPE_SYMLINK || it->type == BFO_WTYPE_HARDLINK) {
		e->data = it->target;
	}
	e->rdev = it->rdev;
	if (it->x) {
		e->xattrs = it->x->buf;
		e->xattrs_len = it->x->len;
	}
	e->status = 12345;          /* must be overwritten */
	e->engine = 0xffff;
}

/* The same tree with plain syscalls (cp -a then copies it). */
static void make_plain(const char *base)
{
	char p[PATH_MAX];

	for (int i = 0; i < nitems; i++) {
		const struct item *it = &items[i];

		snprintf(p, sizeof(p), "%s/%s", base, it->path);
		switch (it->type) {
		case BFO_WTYPE_DIR:
			if (mkdir(p, 0700) < 0)
				t_fail("mkdir %s: %s", p, strerror(errno));
			break;
		case BFO_WTYPE_FILE:
			t_write_bytes(p, it->data, it->len);
			break;
		case BFO_WTYPE_SYMLINK:
			if (symlink(it->target, p) < 0)
				t_fail("symlink %s: %s", p, strerror(errno));
			break;
		case BFO_WTYPE_HARDLINK: {
			char t[PATH_MAX];

			snprintf(t, sizeof(t), "%s/%s", base, it->target);
			if (link(t, p) < 0)
				t_fail("link %s: %s", p, strerror(errno));
			continue;           /* no metadata of its own */
		}
		case BFO_WTYPE_FIFO:
			if (mkfifo(p, 0600) < 0)
				t_fail("mkfifo %s: %s", p, strerror(errno));
			break;
		default:
			if (mknod(p, (it->type == BFO_WTYPE_CHR ? S_IFCHR : S_IFBLK) | 0600,
				  makedev((unsigned)(it->rdev >> 32), (unsigned)it->rdev)) < 0)
				t_fail("mknod %s: %s", p, strerror(errno));
			break;
		}
		if (it->type == BFO_WTYPE_DIR)
			continue;           /* metadata last, below */
		if (it->x)
			tw_xattr_apply(it->x, p);
		if (it->owner && lchown(p, it->uid, it->gid) < 0)
			t_fail("lchown %s: %s", p, strerror(errno));
		if (it->type != BFO_WTYPE_SYMLINK && chmod(p, it->mode) < 0)
			t_fail("chmod %s: %s", p, strerror(errno));
		struct timespec ts[2] = { { it->asec, it->ansec }, { it->msec, it->mnsec } };

		if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) < 0)
			t_fail("utimensat %s: %s", p, strerror(errno));
	}
	/* directories deepest first */
	for (int depth = 8; depth >= 0; depth--) {
		for (int i = 0; i < nitems; i++) {
			const struct item *it = &items[i];
			int d = 0;

			if (it->type != BFO_WTYPE_DIR)
				continue;
			for (const char *s = it->path; *s; s++)
				d += *s == '/';
			if (d != depth)
				continue;
			if (snprintf(p, sizeof(p), "%s/%s", base, it->path) >= (int)sizeof(p))
				t_fail("path too long");
			if (it->x)
				tw_xattr_apply(it->x, p);
			if (it->owner && lchown(p, it->uid, it->gid) < 0)
				t_fail("lchown %s: %s", p, strerror(errno));
			if (chmod(p, it->mode) < 0)
				t_fail("chmod %s: %s", p, strerror(errno));
			struct timespec ts[2] = { { it->asec, it->ansec }, { it->msec, it->mnsec } };

			if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) < 0)
				t_fail("utimensat %s: %s", p, strerror(errno));
		}
	}
}

/* What was asked, entry by entry. */
static void check_intent(const char *dst, const char *what)
{
	int rfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (rfd < 0)
		t_fail("open %s: %s", dst, strerror(errno));
	for (int i = 0; i < nitems; i++) {
		const struct item *it = &items[i];
		struct stat st;
		char why[256];

		if (fstatat(rfd, it->path, &st, AT_SYMLINK_NOFOLLOW) < 0)
			t_fail("[%s] %s: %s", what, it->path, strerror(errno));
		if (it->type == BFO_WTYPE_HARDLINK) {
			struct stat t;

			T_ASSERT(fstatat(rfd, it->target, &t, AT_SYMLINK_NOFOLLOW) == 0 &&
				 t.st_ino == st.st_ino && t.st_nlink == 2,
				 "[%s] %s is not a second link of %s (inode %lu/%lu, %lu links)", what,
				 it->path, it->target, (unsigned long)st.st_ino, (unsigned long)t.st_ino,
				 (unsigned long)t.st_nlink);
			continue;
		}
		static const mode_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, 0, S_IFIFO, S_IFCHR, S_IFBLK };

		T_ASSERT((st.st_mode & S_IFMT) == types[it->type], "[%s] %s: type %o, expected %o", what,
			 it->path, st.st_mode & S_IFMT, types[it->type]);
		if (it->type != BFO_WTYPE_SYMLINK)
			T_ASSERT((st.st_mode & 07777) == it->mode, "[%s] %s: mode %04o, expected %04o", what,
				 it->path, st.st_mode & 07777, it->mode);
		T_ASSERT(st.st_mtim.tv_sec == it->msec && st.st_mtim.tv_nsec == it->mnsec,
			 "[%s] %s: mtime %lld.%09ld, expected %lld.%09u", what, it->path,
			 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, (long long)it->msec, it->mnsec);
		T_ASSERT(st.st_atim.tv_sec == it->asec && st.st_atim.tv_nsec == it->ansec,
			 "[%s] %s: atime %lld.%09ld, expected %lld.%09u", what, it->path,
			 (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec, (long long)it->asec, it->ansec);
		if (it->owner)
			T_ASSERT(st.st_uid == it->uid && st.st_gid == it->gid, "[%s] %s: owner %u:%u, expected %u:%u",
				 what, it->path, st.st_uid, st.st_gid, it->uid, it->gid);
		else
			T_ASSERT(st.st_uid == geteuid(), "[%s] %s: owner %u, expected the writer %u", what,
				 it->path, st.st_uid, geteuid());
		if (it->type == BFO_WTYPE_FILE) {
			int r = tw_file_check(rfd, it->path, it->data, it->len, why, sizeof(why));

			T_ASSERT(r == 0, "[%s] %s: %s", what, it->path, r < 0 ? strerror(-r) : why);
			T_ASSERT(st.st_nlink == (strcmp(it->path, "d1/small") && strcmp(it->path, "earlier") ? 1u : 2u),
				 "[%s] %s: %lu links", what, it->path, (unsigned long)st.st_nlink);
		} else if (it->type == BFO_WTYPE_SYMLINK) {
			char t[PATH_MAX];
			ssize_t k = readlinkat(rfd, it->path, t, sizeof(t) - 1);

			T_ASSERT(k >= 0 && (size_t)k == strlen(it->target) && !memcmp(t, it->target, (size_t)k),
				 "[%s] %s: wrong symlink target", what, it->path);
		} else if (it->type == BFO_WTYPE_CHR || it->type == BFO_WTYPE_BLK) {
			T_ASSERT(major(st.st_rdev) == (it->rdev >> 32) && minor(st.st_rdev) == (uint32_t)it->rdev,
				 "[%s] %s: rdev %u:%u", what, it->path, major(st.st_rdev), minor(st.st_rdev));
		}
		/* xattrs: every one asked for, with its value */
		const uint8_t *p = it->x ? it->x->buf : NULL, *end = it->x ? it->x->buf + it->x->len : NULL;

		while (p && p < end) {
			const char *key = (const char *)p;
			uint32_t vl;
			char val[512], path[PATH_MAX];

			p += strlen(key) + 1;
			memcpy(&vl, p, sizeof(vl));
			p += sizeof(vl);
			snprintf(path, sizeof(path), "%s/%s", dst, it->path);
			ssize_t k = lgetxattr(path, key, val, sizeof(val));

			TW_CHECK(k == (ssize_t)vl && !memcmp(val, p, vl), "[%s] %s: xattr %s missing or wrong (%s)",
				 what, it->path, key, k < 0 ? strerror(errno) : "value");
			p += vl;
		}
	}
	close(rfd);
}

static struct bfo_writer *open_writer(const char *root, const struct cfg *c, uint32_t extra_flags,
				      uint32_t durability)
{
	struct bfo_write_opts o = { .size = sizeof(o) };
	struct bfo_writer *w = NULL;

	o.engine = c->engine;
	o.flags = c->flags | extra_flags;
	o.durability = durability;
	int r = bfo_writer_open(&w, root, &o);

	if (r < 0)
		t_fail("[%s] bfo_writer_open %s: %s", c->name, root, bfo_strerror(r));
	T_ASSERT(w != NULL, "no writer");
	return w;
}

static void no_leftovers_j(const char *root, bool journal, const char *what)
{
	char msg[2048];
	int n = tw_leftovers(root, journal, msg, sizeof(msg));

	T_ASSERT(n == 0, "[%s] %d leftovers below %s: %s", what, n, root, msg);
}

static void no_leftovers(const char *root, const char *what)
{
	no_leftovers_j(root, true, what);
}

static int manifests_in(const char *root)
{
	char buf[4096];
	int m = 0;

	tw_list_prefix(tw_fmt("%s/.bfo-journal", root), "", buf, sizeof(buf));
	for (char *s = buf, *save = NULL, *t; (t = strtok_r(s, "\n", &save)); s = NULL) {
		size_t k = strlen(t);

		if (k > 2 && !strcmp(t + k - 2, ".m"))
			m++;
	}
	return m;
}

/* ------------------------------------------------------------ types */

static void scenario_types(void *arg)
{
	const struct cfg *c = arg;
	char *base = t_mkdtemp_in(c->dir);
	char *src = t_path(base, "src"), *ref = t_path(base, "ref"), *dst = t_path(base, "dst");
	char msg[4096], what[96];
	struct bfo_wentry e[64];
	struct tw_run r;
	uint64_t bytes = 0;
	unsigned nfiles = 0, nclone = 0, nb[2] = { 0, 0 };
	struct statvfs sv;

	snprintf(what, sizeof(what), "types %s", c->name);
	build_items();
	tw_mkdirs(src);
	make_plain(src);
	tw_runl(&r, "cp", "-a", "--", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a failed: %s", r.err);
	tw_run_free(&r);

	struct bfo_writer *w = open_writer(dst, c, 0, c->durability);

	T_ASSERT(statvfs(dst, &sv) == 0, "statvfs");
	for (int b = 0; b < 2; b++) {
		unsigned n = 0;
		int idx[64];

		for (int i = 0; i < nitems; i++) {
			if (items[i].batch != b)
				continue;
			idx[n] = i;
			to_wentry(&items[i], &e[n++]);
			if (items[i].type == BFO_WTYPE_FILE) {
				bytes += items[i].len;
				nfiles++;
				if (items[i].len >= sv.f_bsize)
					nclone++;
			}
		}
		nb[b] = n;
		int ret = bfo_writer_write(w, e, n);

		for (unsigned k = 0; k < n; k++) {
			T_ASSERT(e[k].status == 0, "[%s] %s: status %d (%s)", what, items[idx[k]].path,
				 e[k].status, bfo_strerror(e[k].status));
			T_ASSERT(e[k].engine == c->expect, "[%s] %s: engine %u, expected %s", what,
				 items[idx[k]].path, e[k].engine, bfo_wengine_name((int)c->expect));
		}
		T_ASSERT(ret == 0, "[%s] batch %d returned %d", what, b, ret);
		T_ASSERT(manifests_in(dst) == 0, "[%s] a manifest is left after batch %d", what, b);
	}

	struct bfo_write_stats st;

	T_OK(bfo_writer_stats(w, &st));
	T_EQ(st.engine, c->expect);
	T_EQ(st.batches, 2);
	T_EQ(st.files, nb[0] + nb[1]);
	T_EQ(st.failed, 0);
	T_EQ(st.bytes, bytes);
	if (c->durability == BFO_DURABILITY_NONE)
		TW_CHECK(st.syncs == 0, "[%s] %llu syncs with durability none", what,
			 (unsigned long long)st.syncs);
	else if (c->durability == BFO_DURABILITY_BATCH)
		TW_CHECK(st.syncs == 2, "[%s] %llu syncs for 2 batches with durability batch", what,
			 (unsigned long long)st.syncs);
	else
		TW_CHECK(st.syncs >= nfiles, "[%s] durability each: %llu syncs counted for %u files "
			 "(stats.syncs counts \"syncfs/fsync calls\")", what, (unsigned long long)st.syncs,
			 nfiles);
	if (c->expect == BFO_WENGINE_STEM)
		TW_CHECK(st.clones == nclone, "[%s] %llu clones, expected %u (files of at least a block)",
			 what, (unsigned long long)st.clones, nclone);
	else
		T_EQ(st.clones, 0);
	T_ASSERT(tw_exists(tw_fmt("%s/.bfo-journal", dst)), "[%s] no journal while the writer is open",
		 what);
	T_OK(bfo_writer_close(w));
	T_ASSERT(!tw_exists(tw_fmt("%s/.bfo-journal", dst)), "[%s] .bfo-journal left after close", what);
	no_leftovers(dst, what);

	int nd = tw_tree_diff(ref, dst, root_user ? TW_CP_A : TW_CP_A & ~TW_OWNER, NULL, msg, sizeof(msg));

	TW_CHECK(nd == 0, "[%s] the written tree differs from cp -a's copy: %s", what, msg);
	check_intent(dst, what);
	t_log("%s: %d entries in 2 batches%s; %llu bytes, %llu syncs, %llu clones", what, nitems,
	      tw_checks_failed() ? ", DIFFERENCES (above)" : " equal cp -a and the intent", (unsigned long long)st.bytes, (unsigned long long)st.syncs,
	      (unsigned long long)st.clones);
	free_items();
	free(src);
	free(ref);
	free(dst);
	free(base);
	tw_checks_end();
}

/* ------------------------------------------------------------ replace */

#define NREP 150

struct reader {
	char *dir;
	uint64_t old_h[NREP], new_h[NREP];
	uint64_t old_len[NREP], new_len[NREP];
	atomic_bool stop;
	atomic_bool began;          /* the reader has been through one file (or failed) */
	uint64_t reads, saw_old, saw_new;
	char bad[512];
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	uint8_t *buf = malloc(1 << 20);

	while (!atomic_load(&rd->stop) && !rd->bad[0]) {
		for (int i = 0; i < NREP && !rd->bad[0]; i++) {
			char p[PATH_MAX];
			int fd;
			ssize_t k, got = 0;

			snprintf(p, sizeof(p), "%s/f%03d", rd->dir, i);
			fd = open(p, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				snprintf(rd->bad, sizeof(rd->bad), "f%03d: open: %s", i, strerror(errno));
				atomic_store(&rd->began, true);
				break;
			}
			while ((k = read(fd, buf + got, (1 << 20) - (size_t)got)) > 0)
				got += k;
			close(fd);
			uint64_t h = t_hash(buf, (size_t)got);

			rd->reads++;
			if ((uint64_t)got == rd->old_len[i] && h == rd->old_h[i])
				rd->saw_old++;
			else if ((uint64_t)got == rd->new_len[i] && h == rd->new_h[i])
				rd->saw_new++;
			else
				snprintf(rd->bad, sizeof(rd->bad), "f%03d: read %zd bytes that are neither the "
					 "old (%llu) nor the new (%llu) content", i, got,
					 (unsigned long long)rd->old_len[i], (unsigned long long)rd->new_len[i]);
			atomic_store(&rd->began, true);
		}
	}
	free(buf);
	return NULL;
}

/* What the steps of the replace scenario share. */
struct repl {
	const struct cfg *c;
	char *base, *dst, *outside, *rdir;
	char what[96];
	struct reader *rd;
	uint8_t *newd[NREP];
	struct bfo_wentry e[NREP + 16];
};

/* dst/r/f000.. (their old and new bytes, for the reader), and beside
 * them a symbolic link out of DST, one in it, a FIFO, two files. */
static void replace_setup(struct repl *x)
{
	uint32_t dummy;

	x->base = t_mkdtemp_in(x->c->dir);
	x->dst = t_path(x->base, "dst");
	x->outside = t_path(x->base, "outside");
	x->rdir = t_path(x->dst, "r");
	x->rd = calloc(1, sizeof(*x->rd));
	T_ASSERT(x->rd, "calloc");
	snprintf(x->what, sizeof(x->what), "replace %s", x->c->name);
	tw_now(&now_sec, &dummy);
	tw_mkdirs(x->rdir);
	tw_mkdirs(x->outside);
	t_write_bytes(tw_fmt("%s/target", x->outside), "outside, must stay", 18);
	x->rd->dir = x->rdir;
	for (int i = 0; i < NREP; i++) {
		char p[PATH_MAX];
		uint64_t ol = 3000 + (uint64_t)i * 50, nl = 7000 + (uint64_t)i * 31;
		uint8_t *od = malloc(ol);

		x->newd[i] = malloc(nl);
		t_fill_random(od, ol, 1000 + (uint64_t)i);
		t_fill_random(x->newd[i], nl, 2000 + (uint64_t)i);
		snprintf(p, sizeof(p), "%s/f%03d", x->rdir, i);
		t_write_bytes(p, od, ol);
		x->rd->old_h[i] = t_hash(od, ol);
		x->rd->new_h[i] = t_hash(x->newd[i], nl);
		x->rd->old_len[i] = ol;
		x->rd->new_len[i] = nl;
		free(od);
	}
	if (symlink(tw_fmt("%s/target", x->outside), tw_fmt("%s/dst/link_out", x->base)) < 0 ||
	    symlink("old-target", tw_fmt("%s/dst/link", x->base)) < 0 ||
	    mkfifo(tw_fmt("%s/dst/fifo", x->base), 0600) < 0)
		t_fail("setup: %s", strerror(errno));
	t_write_bytes(tw_fmt("%s/dst/hsrc", x->base), "old", 3);
	t_write_bytes(tw_fmt("%s/dst/hdst", x->base), "other", 5);
}

/* 1. Without REPLACE: -EEXIST, untouched. */
static void replace_refused(struct repl *x)
{
	struct bfo_wentry *e = x->e;
	const char *what = x->what;
	struct tw_snap *snap = tw_snapshot(x->dst);
	char msg[4096];
	struct bfo_writer *w = open_writer(x->dst, x->c, 0, x->c->durability);
	unsigned n = 0;

	for (int i = 0; i < NREP; i += 10) {
		e[n] = (struct bfo_wentry){ .path = t_pathf("r/f%03d", i), .type = BFO_WTYPE_FILE,
					    .mode = 0644, .data = x->newd[i], .length = x->rd->new_len[i] };
		n++;
	}
	e[n++] = (struct bfo_wentry){ .path = "link", .type = BFO_WTYPE_FILE, .mode = 0644, .data = "x",
				      .length = 1 };
	e[n++] = (struct bfo_wentry){ .path = "link_out", .type = BFO_WTYPE_FILE, .mode = 0644,
				      .data = "x", .length = 1 };
	e[n++] = (struct bfo_wentry){ .path = "fifo", .type = BFO_WTYPE_SYMLINK, .data = "t" };
	e[n++] = (struct bfo_wentry){ .path = "link", .type = BFO_WTYPE_SYMLINK, .data = "new-target" };
	e[n++] = (struct bfo_wentry){ .path = "hdst", .type = BFO_WTYPE_HARDLINK, .data = "hsrc" };
	e[n++] = (struct bfo_wentry){ .path = "fifo", .type = BFO_WTYPE_FIFO, .mode = 0600 };
	unsigned nfail = n;

	e[n++] = (struct bfo_wentry){ .path = "new", .type = BFO_WTYPE_FILE, .mode = 0644, .data = "new",
				      .length = 3 };
	int ret = bfo_writer_write(w, e, n);

	for (unsigned k = 0; k < nfail; k++)
		T_ASSERT(e[k].status == -EEXIST, "[%s] %s over an existing entry without REPLACE: status %d "
			 "(%s), expected -EEXIST", what, e[k].path, e[k].status, bfo_strerror(e[k].status));
	T_ASSERT(e[nfail].status == 0, "[%s] new: %s", what, bfo_strerror(e[nfail].status));
	T_EQ(ret, (int)nfail);
	int nd = tw_snap_diff(snap, x->dst, true, msg, sizeof(msg));

	T_ASSERT(nd == 0, "[%s] existing targets were touched without REPLACE: %s", what, msg);
	T_OK(bfo_writer_close(w));
	for (unsigned k = 0; k < NREP / 10; k++)
		free((char *)e[k].path);
	tw_snap_free(snap);
}

/* 2. With REPLACE, while a reader reads every file in a loop: the
 * writer, still open, for step 3. */
static struct bfo_writer *replace_under_reader(struct repl *x)
{
	struct bfo_wentry *e = x->e;
	const char *what = x->what;
	struct stat old_st[NREP];
	struct bfo_writer *w;
	unsigned n;
	int ret;

	for (int i = 0; i < NREP; i++)
		T_ASSERT(stat(tw_fmt("%s/f%03d", x->rdir, i), &old_st[i]) == 0, "stat");
	w = open_writer(x->dst, x->c, BFO_WRITE_REPLACE, x->c->durability);
	n = 0;
	for (int i = 0; i < NREP; i++) {
		e[n] = (struct bfo_wentry){ .path = t_pathf("r/f%03d", i), .type = BFO_WTYPE_FILE,
					    .mode = 0640, .data = x->newd[i], .length = x->rd->new_len[i],
					    .flags = BFO_WENTRY_TIMES, .mtime_sec = 1000000000 + i,
					    .mtime_nsec = 5000u + (uint32_t)i, .atime_sec = now_sec + 86400,
					    .atime_nsec = 1 };
		n++;
	}
	pthread_t th;

	if (pthread_create(&th, NULL, reader_main, x->rd))
		t_fail("pthread_create");
	/* On a loaded machine the write could end before the thread first
	 * runs: start it only once the reader is reading. */
	while (!atomic_load(&x->rd->began))
		usleep(100);
	ret = bfo_writer_write(w, e, n);
	atomic_store(&x->rd->stop, true);
	pthread_join(th, NULL);
	T_ASSERT(!x->rd->bad[0], "[%s] a reader saw a file that was neither old nor new during REPLACE: "
		 "%s", what, x->rd->bad);
	T_ASSERT(x->rd->reads > 0, "[%s] the reader read nothing", what);
	for (int i = 0; i < NREP; i++) {
		char why[256];
		struct stat st;
		int fd = open(x->rdir, O_RDONLY | O_DIRECTORY);
		int rr = tw_file_check(fd, tw_fmt("f%03d", i), x->newd[i], x->rd->new_len[i], why, sizeof(why));

		close(fd);
		T_ASSERT(e[i].status == 0, "[%s] f%03d: %s", what, i, bfo_strerror(e[i].status));
		T_ASSERT(rr == 0, "[%s] f%03d after REPLACE: %s", what, i, rr < 0 ? strerror(-rr) : why);
		T_ASSERT(stat(tw_fmt("%s/f%03d", x->rdir, i), &st) == 0 && (st.st_mode & 07777) == 0640 &&
			 st.st_mtim.tv_sec == 1000000000 + i && st.st_mtim.tv_nsec == 5000 + i,
			 "[%s] f%03d: metadata not applied", what, i);
		T_ASSERT(st.st_ino != old_st[i].st_ino, "[%s] f%03d: rewritten in place (same inode), "
			 "not replaced", what, i);
		free((char *)e[i].path);
	}
	T_EQ(ret, 0);
	t_log("%s: %d files replaced under a concurrent reader (%llu reads: %llu old, %llu new, never "
	      "anything else)", what, NREP, (unsigned long long)x->rd->reads,
	      (unsigned long long)x->rd->saw_old, (unsigned long long)x->rd->saw_new);
	return w;
}

/* 3. REPLACE of symlinks (one pointing outside) and hard links. */
static void replace_links(struct repl *x, struct bfo_writer *w)
{
	struct bfo_wentry *e = x->e;
	const char *what = x->what;
	struct tw_snap *out_snap = tw_snapshot(x->outside);
	char msg[4096];
	unsigned n = 0;
	int nd;

	e[n++] = (struct bfo_wentry){ .path = "link_out", .type = BFO_WTYPE_FILE, .mode = 0600,
				      .data = "replaced", .length = 8 };
	e[n++] = (struct bfo_wentry){ .path = "link", .type = BFO_WTYPE_SYMLINK, .data = "new-target" };
	e[n++] = (struct bfo_wentry){ .path = "hsrc", .type = BFO_WTYPE_FILE, .mode = 0644,
				      .data = "new hsrc", .length = 8 };
	e[n++] = (struct bfo_wentry){ .path = "hdst", .type = BFO_WTYPE_HARDLINK, .data = "hsrc" };
	e[n++] = (struct bfo_wentry){ .path = "fresh", .type = BFO_WTYPE_FILE, .mode = 0644,
				      .data = "fresh!", .length = 6 };
	e[n++] = (struct bfo_wentry){ .path = "fresh_link", .type = BFO_WTYPE_HARDLINK, .data = "fresh" };
	bfo_writer_write(w, e, n);     /* (each entry's status is checked) */
	T_OK(bfo_writer_close(w));

	int rfd = open(x->dst, O_RDONLY | O_DIRECTORY);
	char why[256], t[64];
	struct stat s1, s2;

	TW_CHECK(e[0].status == 0 && tw_file_check(rfd, "link_out", "replaced", 8, why, sizeof(why)) == 0,
		 "[%s] REPLACE of a symlink by a file: status %s", what, bfo_strerror(e[0].status));
	nd = tw_snap_diff(out_snap, x->outside, false, msg, sizeof(msg));
	TW_CHECK(nd == 0, "[%s] REPLACE of a symlink pointing outside touched its target: %s", what, msg);
	TW_CHECK(e[4].status == 0 && e[5].status == 0 &&
		 fstatat(rfd, "fresh", &s1, AT_SYMLINK_NOFOLLOW) == 0 &&
		 fstatat(rfd, "fresh_link", &s2, AT_SYMLINK_NOFOLLOW) == 0 && s1.st_ino == s2.st_ino &&
		 tw_file_check(rfd, "fresh_link", "fresh!", 6, why, sizeof(why)) == 0,
		 "[%s] REPLACE batch: a hard link to a new file of the same batch: statuses %d (%s), %d (%s)",
		 what, e[4].status, bfo_strerror(e[4].status), e[5].status, bfo_strerror(e[5].status));
	ssize_t k = readlinkat(rfd, "link", t, sizeof(t));

	TW_CHECK(e[1].status == 0 && k == 10 && !memcmp(t, "new-target", 10),
		 "[%s] REPLACE of an existing symlink by a symlink: status %d (%s)", what, e[1].status,
		 bfo_strerror(e[1].status));
	TW_CHECK(e[2].status == 0 && e[3].status == 0 &&
		 fstatat(rfd, "hsrc", &s1, AT_SYMLINK_NOFOLLOW) == 0 &&
		 fstatat(rfd, "hdst", &s2, AT_SYMLINK_NOFOLLOW) == 0 && s1.st_ino == s2.st_ino &&
		 tw_file_check(rfd, "hdst", "new hsrc", 8, why, sizeof(why)) == 0,
		 "[%s] REPLACE of an existing file and of a hard-link name to it: statuses %d (%s), %d (%s)",
		 what, e[2].status, bfo_strerror(e[2].status), e[3].status, bfo_strerror(e[3].status));
	close(rfd);
	tw_snap_free(out_snap);
}

static void scenario_replace(void *arg)
{
	struct repl *x = calloc(1, sizeof(*x));

	T_ASSERT(x, "calloc");
	x->c = arg;
	replace_setup(x);
	replace_refused(x);
	replace_links(x, replace_under_reader(x));
	no_leftovers(x->dst, x->what);
	for (int i = 0; i < NREP; i++)
		free(x->newd[i]);
	free(x->rd);
	free(x->base);
	free(x->dst);
	free(x->outside);
	free(x->rdir);
	free(x);
	tw_checks_end();
}

/* ------------------------------------------------------------ stop */

#define NSTOP 40

static void scenario_stop(void *arg)
{
	const struct cfg *c = arg;
	char *base = t_mkdtemp_in(c->dir);
	char *dst = t_path(base, "dst");
	char what[96], why[256];
	struct bfo_wentry e[NSTOP];
	uint8_t data[NSTOP][300];
	char names[NSTOP][32];

	snprintf(what, sizeof(what), "stop %s", c->name);
	tw_mkdirs(tw_fmt("%s/s", dst));
	t_write_bytes(tw_fmt("%s/s/f010", dst), "pre-existing", 12);

	struct bfo_write_opts o = { .size = sizeof(o), .engine = c->engine,
				    .flags = c->flags | BFO_WRITE_STOP_ON_ERROR,
				    .durability = c->durability, .queue_depth = 2, .threads = 2 };
	struct bfo_writer *w;

	T_OK(bfo_writer_open(&w, dst, &o));
	for (int i = 0; i < NSTOP; i++) {
		snprintf(names[i], sizeof(names[i]), "s/f%03d", i);
		t_fill_random(data[i], sizeof(data[i]), 500 + (uint64_t)i);
		e[i] = (struct bfo_wentry){ .path = names[i], .type = BFO_WTYPE_FILE, .mode = 0644,
					    .data = data[i], .length = sizeof(data[i]) };
	}
	int ret = bfo_writer_write(w, e, NSTOP);
	int rfd = open(dst, O_RDONLY | O_DIRECTORY);
	int canceled = 0, written = 0;
	/* io_uring chains already in flight when the failure completes may
	 * still finish: queue_depth of them are allowed through */
	int strict_from = (c->engine == BFO_WENGINE_URING) ? 11 + (int)o.queue_depth : 11;

	T_ASSERT(e[10].status == -EEXIST, "[%s] the failing entry: %d", what, e[10].status);
	T_ASSERT(tw_file_check(rfd, "s/f010", "pre-existing", 12, why, sizeof(why)) == 0,
		 "[%s] the existing file was touched", what);
	for (int i = 0; i < NSTOP; i++) {
		if (i == 10)
			continue;
		if (e[i].status == 0) {
			written++;
			T_ASSERT(tw_file_check(rfd, names[i], data[i], sizeof(data[i]), why, sizeof(why)) == 0,
				 "[%s] %s has status 0 but is not complete", what, names[i]);
		} else {
			T_ASSERT(e[i].status == -ECANCELED, "[%s] %s: status %d (%s)", what, names[i],
				 e[i].status, bfo_strerror(e[i].status));
			T_ASSERT(!tw_exists_at(rfd, names[i]), "[%s] %s is -ECANCELED but exists", what,
				 names[i]);
			canceled++;
		}
		if (i < 10)
			TW_CHECK(e[i].status == 0, "[%s] %s, before the failure, was not written: %s", what,
				 names[i], bfo_strerror(e[i].status));
		else if (i >= strict_from)
			TW_CHECK(e[i].status == -ECANCELED, "[%s] %s, after the failure of s/f010 in the same "
				 "directory, has status %d (%s), expected -ECANCELED", what, names[i],
				 e[i].status, bfo_strerror(e[i].status));
	}
	T_EQ(ret, 1 + canceled);

	/* an entry refused by validation stops the batch too */
	for (int i = 0; i < 6; i++) {
		snprintf(names[i], sizeof(names[i]), "v/f%d", i);
		e[i] = (struct bfo_wentry){ .path = names[i], .type = BFO_WTYPE_FILE, .mode = 0644,
					    .data = data[i], .length = sizeof(data[i]) };
	}
	e[2].path = "v/../escape";
	ret = bfo_writer_write(w, e, 6);
	T_ASSERT(e[2].status == -EINVAL, "[%s] '..': %d", what, e[2].status);
	for (int i = 3; i < 6; i++) {
		bool ex = tw_exists_at(rfd, names[i]);

		TW_CHECK(e[i].status == -ECANCELED && !ex,
			 "[%s] %s after an invalid entry (-EINVAL) under STOP_ON_ERROR: status %d (%s), %s",
			 what, names[i], e[i].status, bfo_strerror(e[i].status), ex ? "written" : "absent");
		T_ASSERT(e[i].status != 0 || ex, "[%s] %s: status 0 but absent", what, names[i]);
	}

	/* the next batch is normal */
	for (int i = 0; i < 5; i++) {
		snprintf(names[i], sizeof(names[i]), "next/f%d", i);
		e[i] = (struct bfo_wentry){ .path = names[i], .type = BFO_WTYPE_FILE, .mode = 0644,
					    .data = data[i], .length = sizeof(data[i]) };
	}
	ret = bfo_writer_write(w, e, 5);
	T_EQ(ret, 0);
	for (int i = 0; i < 5; i++)
		T_ASSERT(e[i].status == 0 && tw_file_check(rfd, names[i], data[i], sizeof(data[i]), why,
							   sizeof(why)) == 0,
			 "[%s] after a stopped batch, %s: %s", what, names[i], bfo_strerror(e[i].status));
	close(rfd);
	T_OK(bfo_writer_close(w));
	no_leftovers(dst, what);
	t_log("%s: %d written before the failure, %d canceled after it", what, written, canceled);
	free(base);
	free(dst);
	tw_checks_end();
}

/* ------------------------------------------------------------ pieces */

/* Two files in pieces, interleaved with small whole files over many
 * calls: each visible only with its last piece, whole, with its last
 * piece's metadata. */
static void pieces_interleaved(struct bfo_writer *w, int rfd, const char *what, const uint8_t *d1,
			       uint64_t size1, const uint8_t *d2, uint64_t size2)
{
	uint64_t off1 = 0, off2 = 0;
	uint8_t small[8][1000];
	struct bfo_wentry e[16];
	char why[256];
	int ret;

	for (int call = 0; off1 < size1 || off2 < size2; call++) {
		unsigned n = 0;
		int i1 = -1, i2 = -1;

		if (off1 < size1) {
			uint64_t k = MIN((uint64_t)PIECE, size1 - off1);

			i1 = (int)n;
			e[n++] = (struct bfo_wentry){ .path = "big/one", .type = BFO_WTYPE_FILE, .mode = 0600,
						      .data = d1 + off1, .length = k, .offset = off1,
						      .flags = off1 + k < size1 ? BFO_WENTRY_MORE :
						      BFO_WENTRY_TIMES, .mtime_sec = 1234567890,
						      .mtime_nsec = 987654321, .atime_sec = 1234567890 };
			off1 += k;
		}
		for (int s = 0; s < 2; s++) {
			char *p = t_pathf("small/c%d-%d", call, s);

			t_fill_random(small[2 * (call % 4) + s], 1000, (uint64_t)(call * 2 + s));
			e[n++] = (struct bfo_wentry){ .path = p, .type = BFO_WTYPE_FILE, .mode = 0644,
						      .data = small[2 * (call % 4) + s], .length = 1000 };
		}
		if (off2 < size2 && call >= 1) {
			uint64_t k = MIN((uint64_t)PIECE, size2 - off2);

			i2 = (int)n;
			e[n++] = (struct bfo_wentry){ .path = "big/two", .type = BFO_WTYPE_FILE, .mode = 0755,
						      .data = d2 + off2, .length = k, .offset = off2,
						      .flags = off2 + k < size2 ? BFO_WENTRY_MORE : 0 };
			off2 += k;
		}
		ret = bfo_writer_write(w, e, n);
		T_EQ(ret, 0);
		for (unsigned k = 0; k < n; k++)
			T_ASSERT(e[k].status == 0, "[%s] call %d, %s: %s", what, call, e[k].path,
				 bfo_strerror(e[k].status));
		for (unsigned k = 0; k < n; k++) {
			if ((int)k != i1 && (int)k != i2) {
				int rr = tw_file_check(rfd, e[k].path, e[k].data, 1000, why, sizeof(why));

				T_ASSERT(rr == 0, "[%s] %s: %s", what, e[k].path, rr < 0 ? strerror(-rr) : why);
				free((char *)e[k].path);
			}
		}
		T_ASSERT((off1 < size1) != tw_exists_at(rfd, "big/one"),
			 "[%s] big/one %s after %llu of %llu bytes", what,
			 off1 < size1 ? "visible" : "absent", (unsigned long long)off1,
			 (unsigned long long)size1);
		T_ASSERT((off2 < size2) != tw_exists_at(rfd, "big/two"),
			 "[%s] big/two %s after %llu of %llu bytes", what,
			 off2 < size2 ? "visible" : "absent", (unsigned long long)off2,
			 (unsigned long long)size2);
	}
	int rr = tw_file_check(rfd, "big/one", d1, size1, why, sizeof(why));
	struct stat st;

	T_ASSERT(rr == 0, "[%s] big/one: %s", what, rr < 0 ? strerror(-rr) : why);
	rr = tw_file_check(rfd, "big/two", d2, size2, why, sizeof(why));
	T_ASSERT(rr == 0, "[%s] big/two: %s", what, rr < 0 ? strerror(-rr) : why);
	T_ASSERT(fstatat(rfd, "big/one", &st, 0) == 0 && (st.st_mode & 07777) == 0600 &&
		 st.st_mtim.tv_sec == 1234567890 && st.st_mtim.tv_nsec == 987654321,
		 "[%s] big/one: the last piece's metadata was not applied", what);
	T_ASSERT(fstatat(rfd, "big/two", &st, 0) == 0 && (st.st_mode & 07777) == 0755,
		 "[%s] big/two: mode %o", what, st.st_mode & 07777);
}

/* ABORT after two pieces, pieces out of order or without a beginning, the
 * last piece onto an existing file, and a close in the middle of a file:
 * refused or dropped, no file and no temporary left. */
static void pieces_odd(struct bfo_writer *w, int rfd, const char *dst, const char *what,
		       const uint8_t *d1, const uint8_t *d2)
{
	struct bfo_wentry e[2];
	char why[256];
	int ret;

	/* ABORT after two pieces */
	e[0] = (struct bfo_wentry){ .path = "big/aborted", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1, .length = PIECE, .flags = BFO_WENTRY_MORE };
	T_EQ(bfo_writer_write(w, e, 1), 0);
	e[0] = (struct bfo_wentry){ .path = "big/aborted", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1 + PIECE, .length = PIECE, .offset = PIECE,
				    .flags = BFO_WENTRY_MORE };
	T_EQ(bfo_writer_write(w, e, 1), 0);
	e[0] = (struct bfo_wentry){ .path = "big/aborted", .type = BFO_WTYPE_FILE,
				    .offset = 2 * (uint64_t)PIECE, .flags = BFO_WENTRY_ABORT };
	ret = bfo_writer_write(w, e, 1);
	T_ASSERT(!tw_exists_at(rfd, "big/aborted"), "[%s] an aborted file exists", what);
	char list[1024];
	int nt = tw_list_prefix(tw_fmt("%s/big", dst), ".bfo-tmp.", list, sizeof(list));

	T_ASSERT(nt == 0, "[%s] ABORT left temporaries: %s", what, list);

	/* out of order, and a piece without a beginning */
	e[0] = (struct bfo_wentry){ .path = "big/disorder", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1, .length = 1000, .flags = BFO_WENTRY_MORE };
	T_EQ(bfo_writer_write(w, e, 1), 0);
	e[0] = (struct bfo_wentry){ .path = "big/disorder", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1 + 2000, .length = 1000, .offset = 2000 };
	e[1] = (struct bfo_wentry){ .path = "big/headless", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1 + 2000, .length = 1000, .offset = 2000 };
	ret = bfo_writer_write(w, e, 2);
	T_ASSERT(e[0].status == -EINVAL && e[1].status == -EINVAL && ret == 2,
		 "[%s] a piece out of order / without a beginning: %d, %d", what, e[0].status, e[1].status);
	T_ASSERT(!tw_exists_at(rfd, "big/disorder") && !tw_exists_at(rfd, "big/headless"),
		 "[%s] a refused piece left a file", what);
	nt = tw_list_prefix(tw_fmt("%s/big", dst), ".bfo-tmp.", list, sizeof(list));
	T_ASSERT(nt == 0, "[%s] a refused piece left temporaries: %s", what, list);

	/* the last piece onto an existing file */
	e[0] = (struct bfo_wentry){ .path = "big/exists", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1, .length = 5000, .flags = BFO_WENTRY_MORE };
	T_EQ(bfo_writer_write(w, e, 1), 0);
	e[0] = (struct bfo_wentry){ .path = "big/exists", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d1 + 5000, .length = 5000, .offset = 5000 };
	ret = bfo_writer_write(w, e, 1);
	T_ASSERT(e[0].status == -EEXIST && ret == 1, "[%s] the last piece onto an existing file: %d (%s)",
		 what, e[0].status, bfo_strerror(e[0].status));
	T_ASSERT(tw_file_check(rfd, "big/exists", "keep me", 7, why, sizeof(why)) == 0,
		 "[%s] the existing file was changed: %s", what, why);
	nt = tw_list_prefix(tw_fmt("%s/big", dst), ".bfo-tmp.", list, sizeof(list));
	T_ASSERT(nt == 0, "[%s] -EEXIST on the last piece left temporaries: %s", what, list);

	/* close in the middle of a file */
	e[0] = (struct bfo_wentry){ .path = "big/unfinished", .type = BFO_WTYPE_FILE, .mode = 0644,
				    .data = d2, .length = PIECE, .flags = BFO_WENTRY_MORE };
	T_EQ(bfo_writer_write(w, e, 1), 0);
	T_ASSERT(!tw_exists_at(rfd, "big/unfinished"), "[%s] visible before its last piece", what);
	bfo_writer_close(w);
	T_ASSERT(!tw_exists_at(rfd, "big/unfinished"), "[%s] a file whose last piece never came exists",
		 what);
}

static void scenario_pieces(void *arg)
{
	const struct cfg *c = arg;
	char *base = t_mkdtemp_in(c->dir);
	char *dst = t_path(base, "dst");
	char what[96];
	uint64_t size1 = (uint64_t)PIECE * NPIECES - 12345, size2 = (uint64_t)PIECE * 2 + 1;
	uint8_t *d1 = malloc(size1), *d2 = malloc(size2);
	struct bfo_writer *w;
	int rfd;

	snprintf(what, sizeof(what), "pieces %s", c->name);
	t_log("%s: files of %llu and %llu bytes in pieces of %u%s", what, (unsigned long long)size1,
	      (unsigned long long)size2, PIECE, T_ASAN ? " (smaller under ASan)" : "");
	t_fill_random(d1, size1, 41);
	t_fill_random(d2, size2, 42);
	tw_mkdirs(tw_fmt("%s/big", dst));
	t_write_bytes(tw_fmt("%s/big/exists", dst), "keep me", 7);
	rfd = open(dst, O_RDONLY | O_DIRECTORY);

	w = open_writer(dst, c, 0, c->durability);
	pieces_interleaved(w, rfd, what, d1, size1, d2, size2);
	no_leftovers_j(dst, false, what);   /* .bfo-journal exists while open */
	pieces_odd(w, rfd, dst, what, d1, d2);
	no_leftovers(dst, what);
	T_ASSERT(!tw_exists(tw_fmt("%s/.bfo-journal", dst)), "[%s] .bfo-journal left", what);
	close(rfd);
	free(d1);
	free(d2);
	free(base);
	free(dst);
	t_log("%s: pieces, ABORT, disorder, existing target and close mid-file: ok", what);
	tw_checks_end();
}

/* ------------------------------------------------------------ unprivileged */

static void scenario_unpriv(void *arg)
{
	const char *dst = arg;
	char why[256];
	uint8_t data[3][2000];

	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		t_fail("setresuid 65534: %s", strerror(errno));
	for (int i = 0; i < 3; i++)
		t_fill_random(data[i], sizeof(data[i]), 77 + (uint64_t)i);

	struct bfo_write_opts o = { .size = sizeof(o), .durability = BFO_DURABILITY_BATCH };
	struct bfo_writer *w;
	struct bfo_wentry e[5] = {
		{ .path = "rodir", .type = BFO_WTYPE_DIR, .mode = 0500 },
		{ .path = "rodir/inside", .type = BFO_WTYPE_FILE, .mode = 0644, .data = data[0],
		  .length = sizeof(data[0]) },
		{ .path = "readonly", .type = BFO_WTYPE_FILE, .mode = 0444, .data = data[1],
		  .length = sizeof(data[1]) },
		{ .path = "chown", .type = BFO_WTYPE_FILE, .mode = 0644, .data = data[2],
		  .length = sizeof(data[2]), .flags = BFO_WENTRY_OWNER, .uid = 0, .gid = 0 },
		{ .path = "rodir/sub/deep", .type = BFO_WTYPE_FILE, .mode = 0600, .data = data[0],
		  .length = 10 },
	};

	T_OK(bfo_writer_open(&w, dst, &o));
	int ret = bfo_writer_write(w, e, 5);

	T_ASSERT(e[3].status == -EPERM, "[unprivileged] OWNER to uid 0: %d (%s), expected -EPERM",
		 e[3].status, bfo_strerror(e[3].status));
	T_ASSERT(e[0].status == 0 && e[1].status == 0 && e[2].status == 0 && e[4].status == 0,
		 "[unprivileged] statuses %d %d %d %d", e[0].status, e[1].status, e[2].status, e[4].status);
	T_EQ(ret, 1);
	T_OK(bfo_writer_close(w));

	int rfd = open(dst, O_RDONLY | O_DIRECTORY);
	struct stat st;

	T_ASSERT(!tw_exists_at(rfd, "chown"), "[unprivileged] the -EPERM file exists (torn?)");
	T_ASSERT(tw_file_check(rfd, "rodir/inside", data[0], sizeof(data[0]), why, sizeof(why)) == 0,
		 "[unprivileged] rodir/inside: %s", why);
	T_ASSERT(tw_file_check(rfd, "readonly", data[1], sizeof(data[1]), why, sizeof(why)) == 0,
		 "[unprivileged] readonly: %s", why);
	T_ASSERT(tw_file_check(rfd, "rodir/sub/deep", data[0], 10, why, sizeof(why)) == 0,
		 "[unprivileged] rodir/sub/deep: %s", why);
	T_ASSERT(fstatat(rfd, "rodir", &st, 0) == 0 && (st.st_mode & 07777) == 0500,
		 "[unprivileged] rodir mode %o", st.st_mode & 07777);
	T_ASSERT(fstatat(rfd, "readonly", &st, 0) == 0 && (st.st_mode & 07777) == 0444 &&
		 st.st_uid == 65534, "[unprivileged] readonly mode %o owner %u", st.st_mode & 07777,
		 st.st_uid);
	no_leftovers(dst, "unprivileged");
	close(rfd);
	t_log("unprivileged (uid 65534): -EPERM for OWNER (file absent), read-only dir and file: ok");
}

/* ------------------------------------------------------------ main */

int main(void)
{
	t_init("t_write", 1500);
	root_user = t_is_root();
	umask(022);

	const char *tmp = t_tmpdir();
	const char *xfs = NULL;
	char why[2048] = "";
	static struct cfg cfgs[32];
	int ncfg = 0;
	static const uint32_t durs[3] = { BFO_DURABILITY_NONE, BFO_DURABILITY_BATCH, BFO_DURABILITY_EACH };
	static const char *dnames[3] = { "none", "batch", "each" };

	if (root_user) {
		xfs = t_loop_fs("xfs", 400, "-m reflink=1", NULL, why, sizeof(why));
		if (!xfs)
			t_log("no XFS loop file system (%s): the stem engine is not tested", why);
	} else {
		t_log("not root: no owners, device nodes, trusted xattrs or loop XFS (stem) tested");
	}
	t_log("test directory %s is %s", tmp, tw_fstype(tmp));
	static char names[32][64];

	for (int d = 0; d < 3; d++) {
		int k;

		k = ncfg++;
		snprintf(names[k], 64, "batched-threads/%s/%s", tw_fstype(tmp), dnames[d]);
		cfgs[k] = (struct cfg){ names[k], tmp, BFO_WENGINE_BATCHED, 0, durs[d], BFO_WENGINE_BATCHED };
		k = ncfg++;
		snprintf(names[k], 64, "batched-uring/%s/%s", tw_fstype(tmp), dnames[d]);
		cfgs[k] = (struct cfg){ names[k], tmp, BFO_WENGINE_URING, 0, durs[d],
					BFO_WENGINE_URING };
		if (xfs) {
			k = ncfg++;
			snprintf(names[k], 64, "stem/xfs/%s", dnames[d]);
			cfgs[k] = (struct cfg){ names[k], xfs, BFO_WENGINE_STEM, 0, durs[d], BFO_WENGINE_STEM };
			k = ncfg++;
			snprintf(names[k], 64, "batched-uring/xfs/%s", dnames[d]);
			cfgs[k] = (struct cfg){ names[k], xfs, BFO_WENGINE_URING, 0, durs[d],
						BFO_WENGINE_URING };
		}
	}
	/* AUTO picks batched, also where blocks can be shared (stem by name) */
	static struct cfg auto_tmp, auto_xfs;

	auto_tmp = (struct cfg){ "auto/tmp/batch", tmp, BFO_WENGINE_AUTO, 0, BFO_DURABILITY_BATCH,
				 BFO_WENGINE_BATCHED };
	t_subtest("types auto/tmp", 300, scenario_types, &auto_tmp);
	if (xfs) {
		auto_xfs = (struct cfg){ "auto/xfs/batch", xfs, BFO_WENGINE_AUTO, 0, BFO_DURABILITY_BATCH,
					 BFO_WENGINE_BATCHED };
		t_subtest("types auto/xfs", 300, scenario_types, &auto_xfs);
	}
	for (int i = 0; i < ncfg; i++) {
		char n[96];

		snprintf(n, sizeof(n), "types %s", cfgs[i].name);
		t_subtest(n, 300, scenario_types, &cfgs[i]);
	}
	for (int i = 0; i < ncfg; i++) {
		char n[96];

		if (cfgs[i].durability == BFO_DURABILITY_EACH)
			continue;
		snprintf(n, sizeof(n), "replace %s", cfgs[i].name);
		t_subtest(n, 300, scenario_replace, &cfgs[i]);
		snprintf(n, sizeof(n), "stop %s", cfgs[i].name);
		t_subtest(n, 300, scenario_stop, &cfgs[i]);
		snprintf(n, sizeof(n), "pieces %s", cfgs[i].name);
		t_subtest(n, 300, scenario_pieces, &cfgs[i]);
	}
	if (root_user) {
		char *ud = t_mkdtemp_in(tmp);

		if (chown(ud, 65534, 65534) < 0)
			t_fail("chown: %s", strerror(errno));
		char *udst = t_path(ud, "dst");

		t_subtest("unprivileged", 120, scenario_unpriv, udst);
		free(udst);
		free(ud);
	}
	t_done();
	return 0;
}

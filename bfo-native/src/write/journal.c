/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writer's journal: one manifest per batch in ROOT/.bfo-journal, made
 * durable before any data of the batch is written, removed after the
 * batch's durability point.  A manifest left behind means the batch did not
 * finish; recovery then makes every file it lists complete or absent.
 *
 * Trust: another user may own ROOT.  The journal directory is acted on only
 * when the effective user made it (owned by the euid, a real directory,
 * writable by no one else), and a manifest only when it is a single-linked
 * regular file of the euid's in it.  Anything else is refused, not used.
 *
 * Which files are the batch's: as the writer makes each file it appends
 * the file's identity (device, inode, birth time or generation) to the
 * manifest, made durable by the batch's own sync.  Recovery finishes a
 * file, or applies owner, mode or times to it, only when the file at the
 * path has that identity, and then through a descriptor of that file.  An
 * entry without its identity (the machine went down before the sync)
 * proves nothing: a file at its path born after the manifest may be torn,
 * so it is removed, and nothing is ever applied to it.  A file born before
 * the manifest is never touched.
 *
 * A manifest is checksummed as a whole: a torn one was never made durable,
 * so no data of its batch was written, and it is simply removed.  A live
 * writer holds an exclusive flock on its manifest and on a lock file of its
 * own for as long as it is open; recovery skips locked ones, and the
 * directory is removed only when it is empty.
 *
 * This file writes the journal; journal_recover.c reads what a crash left.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "write_meta.h"
#include "write.h"

static const char MAGIC[8] = JOURNAL_MAGIC;
static const char TRAILER[8] = "BFOJEND1";
#define LOCK_MARK JOURNAL_LOCK_MARK
#define BOM 0x01020304u

uint64_t journal_hash(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

/* ------------------------------------------------------------ encoding */

struct buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->oom || n == 0)
		return;
	if (b->len + n > b->cap) {
		size_t c = MAX(b->cap * 2, b->len + n + 4096);
		uint8_t *q = realloc(b->p, c);

		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = c;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

#define PUT(b, v) do { __typeof__(v) v_ = (v); put((b), &v_, sizeof(v_)); } while (0)

struct rd {
	const uint8_t *p;
	size_t len, pos;
	bool bad;
};

static void get(struct rd *r, void *d, size_t n)
{
	if (r->bad || r->pos + n > r->len) {
		r->bad = true;
		memset(d, 0, n);
		return;
	}
	memcpy(d, r->p + r->pos, n);
	r->pos += n;
}

#define GET(r, v) get((r), &(v), sizeof(v))

static int record_write(int jfd, const char *name, const struct mentry *m, uint32_t n,
			const char *stem, uint32_t engine, int *fd_out, bool durable);

#define NEW_SUFFIX JOURNAL_NEW_SUFFIX

int journal_manifest_write(int jfd, const char *name, const struct mentry *m, uint32_t n,
			   const char *stem, uint32_t engine, int *fd_out)
{
	return record_write(jfd, name, m, n, stem, engine, fd_out, true);
}

/* A record that becomes durable with the next sync of the file system. */
int journal_record_write(int jfd, const char *name, const struct mentry *m, uint32_t n, int *fd_out)
{
	return record_write(jfd, name, m, n, NULL, 0, fd_out, false);
}

static int record_write(int jfd, const char *name, const struct mentry *m, uint32_t n,
			const char *stem, uint32_t engine, int *fd_out, bool durable)
{
	struct buf b = { 0 };
	uint32_t stemlen = stem ? (uint32_t)strlen(stem) : 0;
	int fd, ret = 0;

	put(&b, MAGIC, sizeof(MAGIC));
	PUT(&b, (uint32_t)BOM);
	PUT(&b, engine);
	PUT(&b, n);
	PUT(&b, stemlen);
	put(&b, stem, stemlen);
	for (uint32_t i = 0; i < n; i++) {
		const struct mentry *e = &m[i];
		uint16_t plen = (uint16_t)strlen(e->path);

		PUT(&b, e->kind);
		PUT(&b, e->wtype);
		PUT(&b, e->wflags);
		PUT(&b, plen);
		PUT(&b, e->mode);
		PUT(&b, e->uid);
		PUT(&b, e->gid);
		PUT(&b, e->size);
		PUT(&b, e->hash);
		PUT(&b, e->stem_off);
		PUT(&b, e->atime_sec);
		PUT(&b, e->atime_nsec);
		PUT(&b, e->mtime_sec);
		PUT(&b, e->mtime_nsec);
		put(&b, e->path, plen);
	}
	PUT(&b, journal_hash(b.p, b.len));
	put(&b, TRAILER, sizeof(TRAILER));
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	/* Made under another name and locked before it gets its own: a
	 * recovery beside this writer must never find it unlocked, empty or
	 * half written (it would take it for a torn manifest and remove it). */
	char tmp[128];

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s" NEW_SUFFIX, name) >= sizeof(tmp)) {
		free(b.p);
		return -ENAMETOOLONG;
	}
	fd = openat(jfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(b.p);
		return -errno;
	}
	/* Held until the batch ends: recovery leaves a locked manifest alone. */
	flock(fd, LOCK_EX);
	for (size_t off = 0; off < b.len && !ret;) {
		ssize_t k = write(fd, b.p + off, b.len - off);

		if (k < 0 && errno != EINTR)
			ret = -errno;
		else if (k > 0)
			off += (size_t)k;
	}
	/* The manifest and its directory entry are durable before any data. */
	if (!ret && durable && fdatasync(fd) < 0)
		ret = -errno;
	if (!ret && renameat2(jfd, tmp, jfd, name, RENAME_NOREPLACE) < 0)
		/* no RENAME_NOREPLACE here: the name is this writer's own (pid,
		 * id, batch) in a directory no one else can write */
		ret = errno == EINVAL && renameat(jfd, tmp, jfd, name) == 0 ? 0 : -errno;
	if (!ret && durable && fsync(jfd) < 0)
		ret = -errno;
	free(b.p);
	if (ret) {
		unlinkat(jfd, tmp, 0);
		unlinkat(jfd, name, 0);
		close(fd);
		return ret;
	}
	*fd_out = fd;
	return 0;
}

/*
 * Return once a file created from now on is born strictly after the
 * manifest open on fd (see born_after).  File systems stamp files with the
 * coarse real-time clock, truncated to their granularity: a birth time
 * (or, without one, ctime) with no nanoseconds marks whole seconds.  The
 * wait is about one clock tick, or under a second on coarse file systems.
 */
void journal_wait_past(int fd)
{
	struct statx sx;
	struct statx_timestamp t;
	struct timespec now, nap = { 0, 1000000 };

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_CTIME, &sx) < 0)
		return;
	t = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime : sx.stx_ctime;
	for (;;) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (t.tv_nsec == 0 ? now.tv_sec > t.tv_sec :
		    now.tv_sec > t.tv_sec || (now.tv_sec == t.tv_sec && now.tv_nsec > (long)t.tv_nsec))
			return;
		nanosleep(&nap, NULL);
	}
}

/* ------------------------------------------------------------ trust */

/*
 * Open ROOT/.bfo-journal (made with mode 0700 first when create) and check
 * that the effective user made it: a directory (not a symbolic link to one),
 * owned by the euid, writable by no one else.  -ELOOP, -ENOTDIR or -EPERM
 * otherwise: nothing in it is read or written.
 */
int journal_dir_open(int rootfd, bool create)
{
	struct stat st;
	int fd;

	if (create && mkdirat(rootfd, BFO_JOURNAL_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(rootfd, BFO_JOURNAL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* O_NOFOLLOW|O_DIRECTORY on a symbolic link is ENOTDIR on
		 * some kernels, ELOOP on others: name it what it is. */
		if (errno == ENOTDIR && fstatat(rootfd, BFO_JOURNAL_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(st.st_mode))
			return -ELOOP;
		return -errno;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * A live writer's mark: the lock file w-PID-ID.lock, flock'ed while the
 * writer is open, keeps the directory from being removed under it (by
 * recovery, or by another writer closing).  Returns its descriptor.
 */
int journal_lock(int jfd, uint32_t id, char *name, size_t len)
{
	int fd;

	snprintf(name, len, "w-%d-%x.lock", (int)getpid(), id);
	fd = openat(jfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	flock(fd, LOCK_EX);
	/* its mark: recovery removes a lock file that holds it, or nothing
	 * (a kill before the write, a power cut before the data) */
	if (write(fd, LOCK_MARK, sizeof(LOCK_MARK) - 1) != sizeof(LOCK_MARK) - 1) {
		int e = errno ? errno : ENOSPC;

		close(fd);
		unlinkat(jfd, name, 0);
		return -e;
	}
	return fd;
}

/* ------------------------------------------------------------ identities */

/* One file the batch made, appended to its manifest as soon as it exists.
 * Records are written at distinct offsets by several threads: each stands
 * alone, checked by its own hash, so a missing or torn one proves nothing
 * and hides no other. */
struct id_rec {
	char magic[4];
	uint32_t idx, flags, type, gen, born_nsec;
	uint64_t dev, ino;
	int64_t born_sec;
	uint64_t check;
};
_Static_assert(sizeof(struct id_rec) == 56, "id_rec is packed by hand");

/* The file of a manifest's identity records, NAME.ids: apart from the
 * manifest, whose own times tell recovery which files are born after it. */
void journal_ids_name(char *buf, size_t len, const char *mname)
{
	snprintf(buf, len, "%s.ids", mname);
}

int journal_ids_create(int jfd, const char *mname)
{
	char name[128];
	int fd;

	journal_ids_name(name, sizeof(name), mname);
	fd = openat(jfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

/* A finished (or recovered) batch's journal files go, the manifest
 * first: a manifest is a batch that did not finish, and one without its
 * identities would be read as one whose files never became durable
 * (recovery would take its published files for torn ones).  Identities
 * without their manifest are nothing, and recovery removes them. */
void journal_batch_remove(int jfd, const char *mname)
{
	char name[128];

	journal_ids_name(name, sizeof(name), mname);
	unlinkat(jfd, mname, 0);
	unlinkat(jfd, name, 0);
}

/*
 * Append the identity of the file made for manifest entry idx to the
 * batch's identity records open on mfd, at *off (advanced atomically).
 * Made durable by the batch's own sync; until then they are in the page
 * cache, which is all a crash of the process (not of the machine) needs.
 */
int journal_id_append(int mfd, _Atomic uint64_t *off, uint32_t idx, const struct fid *id)
{
	struct id_rec r = { .magic = { 'B', 'F', 'O', 'I' }, .idx = idx, .flags = id->flags,
			    .type = id->type, .gen = id->gen, .born_nsec = id->born_nsec,
			    .dev = id->dev, .ino = id->ino, .born_sec = id->born_sec };
	uint64_t at = atomic_fetch_add(off, sizeof(r));

	r.check = journal_hash(&r, offsetof(struct id_rec, check));
	for (size_t done = 0; done < sizeof(r);) {
		ssize_t k = pwrite(mfd, (const char *)&r + done, sizeof(r) - done, (off_t)(at + done));

		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			done += (size_t)k;
	}
	return 0;
}

/* ------------------------------------------------------------ decoding */

/* Smallest encoded entry: its fixed fields and an empty path.  Bounds the
 * entry count any manifest of this length can claim. */
#define ENTRY_MIN 65

static int decode_ids(const uint8_t *p, size_t len, struct manifest *mf)
{
	mf->ids = calloc(mf->n ? mf->n : 1, sizeof(*mf->ids));
	if (!mf->ids)
		return -ENOMEM;
	for (size_t at = 0; p && at + sizeof(struct id_rec) <= len; at += sizeof(struct id_rec)) {
		struct id_rec r;

		memcpy(&r, p + at, sizeof(r));
		if (memcmp(r.magic, "BFOI", 4) || r.check != journal_hash(&r, offsetof(struct id_rec, check)) ||
		    r.idx >= mf->n || !r.type || (r.type & ~(uint32_t)S_IFMT) || r.born_nsec > 999999999u)
			continue;
		mf->ids[r.idx] = (struct fid){ .dev = r.dev, .ino = r.ino, .born_sec = r.born_sec,
					       .born_nsec = r.born_nsec, .gen = r.gen,
					       .flags = r.flags & (FID_BORN | FID_GEN), .type = r.type };
	}
	return 0;
}

void journal_manifest_free(struct manifest *mf)
{
	for (uint32_t i = 0; i < mf->n; i++)
		free((char *)mf->m[i].path);
	free(mf->m);
	free(mf->stem);
	free(mf->ids);
	memset(mf, 0, sizeof(*mf));
}

/*
 * Decode a manifest and its identity records (mf->ids[i]: type 0 where
 * entry i has none; ids may be NULL).  Every
 * count and length is checked against the bytes there are.  Returns 0, or
 * -EBADMSG for anything that is not a whole manifest (mf is then empty).
 */
int journal_manifest_decode(const uint8_t *p, size_t len, const uint8_t *ids, size_t ids_len,
			    struct manifest *mf)
{
	struct rd rd = { .p = p, .len = len };
	char magic[8];
	uint32_t bom, n, stemlen;
	uint64_t h;

	memset(mf, 0, sizeof(*mf));
	GET(&rd, magic);
	GET(&rd, bom);
	GET(&rd, mf->engine);
	GET(&rd, n);
	GET(&rd, stemlen);
	if (rd.bad || memcmp(magic, MAGIC, 8) || bom != BOM || stemlen >= BFO_WPATH_MAX ||
	    stemlen > len - rd.pos || n > (len - rd.pos - stemlen) / ENTRY_MIN)
		return -EBADMSG;
	mf->stem = calloc(1, stemlen + 1);
	mf->m = calloc(n ? n : 1, sizeof(*mf->m));
	if (!mf->stem || !mf->m)
		goto bad;
	get(&rd, mf->stem, stemlen);
	if (memchr(mf->stem, '/', stemlen) || strlen(mf->stem) != stemlen)
		goto bad;
	for (uint32_t i = 0; i < n && !rd.bad; i++) {
		struct mentry *e = &mf->m[i];
		uint16_t plen;
		char *path;

		GET(&rd, e->kind);
		GET(&rd, e->wtype);
		GET(&rd, e->wflags);
		GET(&rd, plen);
		GET(&rd, e->mode);
		GET(&rd, e->uid);
		GET(&rd, e->gid);
		GET(&rd, e->size);
		GET(&rd, e->hash);
		GET(&rd, e->stem_off);
		GET(&rd, e->atime_sec);
		GET(&rd, e->atime_nsec);
		GET(&rd, e->mtime_sec);
		GET(&rd, e->mtime_nsec);
		if (rd.bad || plen > rd.len - rd.pos)
			goto bad;
		path = malloc((size_t)plen + 1);
		if (!path)
			goto bad;
		get(&rd, path, plen);
		path[plen] = '\0';
		e->path = path;
		mf->n = i + 1;
		/* Only what a writer can have recorded. */
		if (strlen(path) != plen || (e->mode & ~(uint32_t)(S_IFMT | 07777)) ||
		    e->kind < M_FILE || e->kind > M_OTHER || e->atime_nsec > 999999999u ||
		    e->mtime_nsec > 999999999u)
			goto bad;
	}
	if (rd.bad)
		goto bad;
	size_t end = rd.pos;

	GET(&rd, h);
	get(&rd, magic, sizeof(magic));
	if (rd.bad || h != journal_hash(p, end) || memcmp(magic, TRAILER, 8) || rd.pos != len)
		goto bad;
	if (decode_ids(ids, ids_len, mf))
		goto bad;
	return 0;
bad:
	journal_manifest_free(mf);
	return -EBADMSG;
}

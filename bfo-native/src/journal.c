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
#include "meta.h"
#include "write.h"

static const char MAGIC[8] = "BFOJRNL1";
static const char TRAILER[8] = "BFOJEND1";
/* What a writer's lock file holds (journal_lock). */
#define LOCK_MARK "BFO writer lock\n"
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

/* A record being written: recovery never reads one (it reads only ".m"
 * names) and removes it only once its writer is gone. */
#define NEW_SUFFIX ".new"

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
	char proc[32];
	int fd;

	snprintf(name, len, "w-%d-%x.lock", (int)getpid(), id);
	/* Its mark is in it before it has its name (an unnamed file, linked
	 * once written; where the file system or /proc cannot, made and then
	 * written): recovery removes only a lock file that has it, and a kill
	 * in between leaves none without it. */
	fd = openat(jfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		if (flock(fd, LOCK_EX) < 0 ||
		    write(fd, LOCK_MARK, sizeof(LOCK_MARK) - 1) != sizeof(LOCK_MARK) - 1 ||
		    linkat(AT_FDCWD, proc, jfd, name, AT_SYMLINK_FOLLOW) < 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0)
		return fd;
	fd = openat(jfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	flock(fd, LOCK_EX);
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
static void ids_name(char *buf, size_t len, const char *mname)
{
	snprintf(buf, len, "%s.ids", mname);
}

int journal_ids_create(int jfd, const char *mname)
{
	char name[128];
	int fd;

	ids_name(name, sizeof(name), mname);
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

	ids_name(name, sizeof(name), mname);
	unlinkat(jfd, mname, 0);
	unlinkat(jfd, name, 0);
}

/* NAME.m.ids whose NAME.m is gone: a batch that ended between the two
 * unlinks of journal_batch_remove. */
static bool orphan_ids(int jfd, const char *name)
{
	size_t l = strlen(name), sl = sizeof(".m.ids") - 1;
	char m[256];
	struct stat st;

	if (l <= sl || l - 4 >= sizeof(m) || strcmp(name + l - sl, ".m.ids"))
		return false;
	memcpy(m, name, l - 4);
	m[l - 4] = '\0';
	return fstatat(jfd, m, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
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

/* ------------------------------------------------------------ recovery */

struct recovery {
	int rootfd;
	int stem_fd;
	struct statx t0;            /* the manifest's times */
	bool have_btime;
	struct bfo_recover_stats *st;
};

/*
 * Born after the manifest, so possibly made by the batch (the fallback
 * when the batch's identities never became durable; see the top).  The
 * writer waits, once its manifest is durable, until the file system's
 * clock has moved past the manifest's time before it creates anything
 * (journal_wait_past), so a file born in the manifest's own clock tick
 * predates the batch.
 */
static bool born_after(const struct recovery *r, const struct statx *sx)
{
	const struct statx_timestamp *a, *b;

	if (r->have_btime && (sx->stx_mask & STATX_BTIME)) {
		a = &sx->stx_btime;
		b = &r->t0.stx_btime;
	} else {
		a = &sx->stx_ctime;
		b = &r->t0.stx_ctime;
	}
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

static int hash_fd(int fd, uint64_t size, uint64_t off, uint64_t *out)
{
	XXH3_state_t *s = XXH3_createState();
	uint8_t *buf = malloc(1 << 20);
	int ret = 0;

	if (!s || !buf) {
		XXH3_freeState(s);
		free(buf);
		return -ENOMEM;
	}
	XXH3_64bits_reset(s);
	for (uint64_t done = 0; done < size;) {
		ssize_t k = pread(fd, buf, MIN((uint64_t)1 << 20, size - done), (off_t)(off + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			ret = k < 0 ? -errno : -EIO;
			break;
		}
		XXH3_64bits_update(s, buf, (size_t)k);
		done += (uint64_t)k;
	}
	*out = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	free(buf);
	return ret;
}

static void apply_meta(int fd, bool opath, const struct mentry *m)
{
	struct bfo_wentry e = { .mode = m->mode, .uid = m->uid, .gid = m->gid,
				.flags = m->wflags & (BFO_WENTRY_OWNER | BFO_WENTRY_TIMES),
				.atime_sec = m->atime_sec, .atime_nsec = m->atime_nsec,
				.mtime_sec = m->mtime_sec, .mtime_nsec = m->mtime_nsec };

	int lost;   /* (kept as the batch would have kept it; nobody to tell) */

	meta_apply(fd, opath, &e, m->kind == M_SYMLINK, false, NULL, &lost);
}

/* Recreate a file of a stem batch from the durable stem: a new file, so
 * its metadata goes to the descriptor that made it. */
static void finish_from_stem(struct recovery *r, int dfd, const char *base, const struct mentry *m)
{
	uint8_t *buf;
	int fd;

	fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	buf = malloc(1 << 20);
	for (uint64_t done = 0; buf && done < m->size;) {
		ssize_t k = pread(r->stem_fd, buf, MIN((uint64_t)1 << 20, m->size - done),
				  (off_t)(m->stem_off + done));

		if (k <= 0 || write(fd, buf, (size_t)k) != k) {
			free(buf);
			buf = NULL;
			break;
		}
		done += (uint64_t)k;
	}
	if (!buf || fsync(fd) < 0) {
		close(fd);
		unlinkat(dfd, base, 0);   /* never leave a torn file */
		free(buf);
		return;
	}
	free(buf);
	apply_meta(fd, false, m);
	close(fd);
	r->st->finished++;
}

/* Is the file of this entry, proven the batch's (fd, O_PATH), complete?
 * Then its metadata is finished through fd and it stays. */
static bool entry_complete(int fd, const struct mentry *m, const struct statx *sx)
{
	char target[BFO_WPATH_MAX];
	uint64_t h;

	switch (m->kind) {
	case M_FILE: {
		char p[32];
		int rfd;
		bool same;

		if (!S_ISREG(sx->stx_mode) || sx->stx_size != m->size)
			return false;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		rfd = open(p, O_RDONLY | O_CLOEXEC);
		same = rfd >= 0 && hash_fd(rfd, m->size, 0, &h) == 0 && h == m->hash;
		if (rfd >= 0)
			close(rfd);
		if (same)
			apply_meta(fd, true, m);
		return same;
	}
	case M_SYMLINK: {
		ssize_t k = S_ISLNK(sx->stx_mode) ? readlinkat(fd, "", target, sizeof(target)) : -1;

		if (k < 0 || journal_hash(target, (size_t)k) != m->hash)
			return false;
		apply_meta(fd, true, m);
		return true;
	}
	default:
		/* Hard links, fifos, device nodes and directories appear
		 * whole; finish their metadata (a hard link shares its
		 * source's). */
		if (m->wtype != BFO_WTYPE_HARDLINK)
			apply_meta(fd, true, m);
		return true;
	}
}

/* What the entry makes: a hard link or a directory nothing recovery may
 * remove unproven (0). */
static mode_t made_type(const struct mentry *m)
{
	switch (m->wtype) {
	case BFO_WTYPE_FILE: return S_IFREG;
	case BFO_WTYPE_SYMLINK: return S_IFLNK;
	case BFO_WTYPE_FIFO: return S_IFIFO;
	case BFO_WTYPE_CHR: return S_IFCHR;
	case BFO_WTYPE_BLK: return S_IFBLK;
	case BFO_WTYPE_SOCK: return S_IFSOCK;
	}
	return 0;
}

static void recover_entry(struct recovery *r, const struct mentry *m, const struct fid *id)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(m->path, dir, sizeof(dir));
	bool stem_ok = false, gone = true;
	struct statx sx;
	uint64_t h;
	int dfd, fd;

	if (wpath_check(m->path))
		return;
	if (m->kind == M_FILE && r->stem_fd >= 0 && m->stem_off != UINT64_MAX)
		stem_ok = hash_fd(r->stem_fd, m->size, m->stem_off, &h) == 0 && h == m->hash;
	dfd = wpath_open_dir(r->rootfd, dir, stem_ok);
	if (dfd < 0)
		return;
	fd = openat(dfd, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
			     STATX_TYPE | STATX_SIZE | STATX_NLINK | STATX_BTIME | STATX_CTIME, &sx) == 0) {
		gone = false;
		/* A temporary's name is unique to the writer that made it (and
		 * a file in pieces keeps its temporary across batches, so it
		 * may be older than this manifest): it goes by name, and
		 * nothing is applied to it. */
		if (m->kind == M_TEMP) {
			/* (any kind a replacing entry is made as: a file, a
			 * symbolic link, a special file, a hard link, or a
			 * directory that replaces a tree; and what such an
			 * entry displaced, once the names were exchanged:
			 * the new entry then has the name.  Removing follows
			 * no link) */
			if (!strncmp(base, BFO_TMP_PREFIX, sizeof(BFO_TMP_PREFIX) - 1) &&
			    wpath_remove_tree(dfd, base, 0) == 0)
				r->st->removed++;
		} else if (id && id->type) {
			/* Proven the batch's, or left alone. */
			if (!fid_match(fd, id))
				;
			else if (entry_complete(fd, m, &sx))
				r->st->complete++;
			else if (m->kind != M_OTHER && unlinkat(dfd, base, 0) == 0) {
				gone = true;
				r->st->removed++;
			}
		} else if (!(id && id->type) && born_after(r, &sx) && sx.stx_nlink == 1 &&
			   (sx.stx_mode & S_IFMT) == made_type(m)) {
			/* Maybe the batch's, maybe torn, unproven: removed,
			 * never finished. */
			if (unlinkat(dfd, base, 0) == 0) {
				gone = true;
				r->st->removed++;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	if (gone && stem_ok)
		finish_from_stem(r, dfd, base, m);
	close(dfd);
}

/* Acted on only when the effective user wrote it (see the top). */
static bool manifest_trusted(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && st->st_nlink == 1 &&
	       !(st->st_mode & 022) && st->st_size <= BFO_MANIFEST_MAX;
}

/* The size bytes of fd (fewer if it shrank): malloc'ed, or NULL. */
static uint8_t *read_whole(int fd, off_t size, size_t *len)
{
	uint8_t *p = malloc((size_t)size + 1);
	size_t got = 0;

	while (p && got < (size_t)size) {
		ssize_t k = pread(fd, p + got, (size_t)size - got, (off_t)got);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	*len = got;
	return p;
}

/* Read a trusted journal file whole: 0 and *out (malloc'ed, *len bytes),
 * or -errno.  Absent: 0 with *out NULL. */
static int read_trusted(int jfd, const char *name, uint8_t **out, size_t *len)
{
	struct stat st;
	int fd = openat(jfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !manifest_trusted(&st)) {
		close(fd);
		return -EPERM;
	}
	*out = read_whole(fd, st.st_size, len);
	close(fd);
	return *out ? 0 : -ENOMEM;
}

static void recover_manifest(int rootfd, int jfd, const char *name, struct bfo_recover_stats *st)
{
	struct recovery r = { .rootfd = rootfd, .stem_fd = -1, .st = st };
	struct manifest mf = { 0 };
	struct stat fst;
	uint8_t *data = NULL, *ids = NULL;
	size_t got = 0, ids_len = 0;
	char iname[128];
	int fd;

	fd = openat(jfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &fst) < 0 || !manifest_trusted(&fst)) {
		st->untrusted++;
		goto done;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)   /* a live writer's batch */
		goto done;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_CTIME, &r.t0) < 0)
		goto done;
	r.have_btime = r.t0.stx_mask & STATX_BTIME;
	data = read_whole(fd, fst.st_size, &got);
	if (!data)
		goto done;
	st->batches++;
	ids_name(iname, sizeof(iname), name);
	if (read_trusted(jfd, iname, &ids, &ids_len) == -EPERM)
		st->untrusted++;
	if (journal_manifest_decode(data, got, ids, ids_len, &mf) == 0) {
		if (mf.stem[0])
			r.stem_fd = openat(jfd, mf.stem, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		for (uint32_t i = 0; i < mf.n; i++)
			recover_entry(&r, &mf.m[i], mf.ids ? &mf.ids[i] : NULL);
	}
	/* Not decodable: the manifest never became durable, so its batch
	 * wrote no data; it only has to go.  Decoded: what was done to its
	 * files is durable before the manifest goes (a cut in between finds
	 * it again, and doing it again changes nothing). */
	if (mf.n && syncfs(rootfd) < 0)
		goto done;
	if (mf.stem && mf.stem[0])
		unlinkat(jfd, mf.stem, 0);
	journal_batch_remove(jfd, name);
	fsync(jfd);
done:
	if (r.stem_fd >= 0)
		close(r.stem_fd);
	journal_manifest_free(&mf);
	free(data);
	free(ids);
	close(fd);
}

/* "PID-HEX" at *p (decimal, hexadecimal, as a writer names its files):
 * the pid, *p moved past it; 0 when it is not one. */
static int name_pid_id(const char **p)
{
	const char *s = *p;
	long pid = 0;

	if (!isdigit((unsigned char)*s))
		return 0;
	while (isdigit((unsigned char)*s) && pid < INT32_MAX)
		pid = pid * 10 + (*s++ - '0');
	if (*s++ != '-' || !isxdigit((unsigned char)*s) || pid <= 0 || pid >= INT32_MAX)
		return 0;
	while (isxdigit((unsigned char)*s))
		s++;
	*p = s;
	return (int)pid;
}

/* What a writer's own file of each kind holds: a lock file its mark, a
 * probe file zeros, a record the manifest's magic (or nothing yet). */
static bool holds_own(int fd, int kind)
{
	uint8_t buf[4096];
	ssize_t k = pread(fd, buf, sizeof(buf), 0);
	struct stat st;

	if (k < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return false;
	if (kind == 'w')
		return st.st_size == sizeof(LOCK_MARK) - 1 && !memcmp(buf, LOCK_MARK, sizeof(LOCK_MARK) - 1);
	if (kind == 'p') {
		for (ssize_t i = 0; i < k; i++)
			if (buf[i])
				return false;
		return st.st_size == k;
	}
	return k == 0 || (k >= (ssize_t)sizeof(MAGIC) && !memcmp(buf, MAGIC, sizeof(MAGIC)));
}

/* A file of the journal left by a writer that is gone (its lock file, the
 * probe files of its clone test, a record it never finished writing): its
 * name is one a writer makes, exactly, it holds what such a file holds,
 * the pid in its name no longer runs, and nobody holds its lock.  Any
 * other file in the journal is someone's, and stays. */
static bool leftover(int jfd, const char *name)
{
	const char *p = name, *rest;
	int pid = 0, kind = 0, fd;
	bool gone;

	if (!strncmp(p, "w-", 2) && (p += 2, pid = name_pid_id(&p)) && !strcmp(p, ".lock"))
		kind = 'w';
	else if (p = name, !strncmp(p, "probe-", 6) && (p += 6, pid = name_pid_id(&p)) &&
		 (!strcmp(p, "-a") || !strcmp(p, "-b")))
		kind = 'p';
	else if (p = name, (!strncmp(p, "b-", 2) || !strncmp(p, "s-", 2)) && (p += 2, pid = name_pid_id(&p)) &&
		 *p == '-' && strlen(p) > sizeof(".m" NEW_SUFFIX) && (rest = p + strlen(p) - 6) &&
		 !strcmp(rest, ".m" NEW_SUFFIX))
		kind = 'r';
	if (!kind || !(kill(pid, 0) < 0 && errno == ESRCH))
		return false;
	fd = openat(jfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	gone = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && holds_own(fd, kind);
	if (fd >= 0)
		close(fd);
	return gone;
}

int journal_recover(int rootfd, int jfd, struct bfo_recover_stats *st)
{
	int dfd = dup(jfd);
	DIR *d;
	struct dirent *de;
	uint64_t before = st->batches;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	/* Names first: recovery unlinks entries while it goes. */
	char **names = NULL;
	size_t nn = 0, cap = 0;

	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (leftover(jfd, de->d_name) || orphan_ids(jfd, de->d_name)) {
			unlinkat(jfd, de->d_name, 0);
			continue;
		}
		if (l < 3 || strcmp(de->d_name + l - 2, ".m"))
			continue;
		if (nn == cap) {
			cap = cap ? cap * 2 : 16;
			char **t = realloc(names, cap * sizeof(*t));

			if (!t)
				break;
			names = t;
		}
		names[nn++] = strdup(de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < nn; i++) {
		if (names[i])
			recover_manifest(rootfd, jfd, names[i], st);
		free(names[i]);
	}
	free(names);
	return (int)(st->batches - before);
}

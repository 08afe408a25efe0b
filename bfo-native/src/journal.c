/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writer's journal: one manifest per batch in ROOT/.bfo-journal, made
 * durable before any data of the batch is written, removed after the
 * batch's durability point.  A manifest left behind means the batch did not
 * finish; recovery then makes every file it lists complete or absent.
 *
 * Which files are the batch's: a listed path holds a file the batch created
 * only if that file was born (statx btime; ctime where the file system has
 * no birth time) no earlier than the manifest.  So a file that existed
 * before the batch, at a path the batch could not create because it
 * existed, is never touched.
 *
 * A manifest is checksummed as a whole: a torn one was never made durable,
 * so no data of its batch was written, and it is simply removed.  A live
 * writer holds an exclusive flock on its manifest; recovery skips locked
 * ones.
 */
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

#include "internal.h"
#include "write.h"

static const char MAGIC[8] = "BFOJRNL1";
static const char TRAILER[8] = "BFOJEND1";
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
	fd = openat(jfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
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
	if (!ret && durable && fsync(jfd) < 0)
		ret = -errno;
	free(b.p);
	if (ret) {
		unlinkat(jfd, name, 0);
		close(fd);
		return ret;
	}
	*fd_out = fd;
	return 0;
}

/*
 * Return once a file created from now on is born strictly after the
 * manifest open on fd (see is_ours).  File systems stamp files with the
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

/* ------------------------------------------------------------ recovery */

struct recovery {
	int rootfd;
	int stem_fd;
	struct statx t0;            /* the manifest's times */
	bool have_btime;
	struct bfo_recover_stats *st;
};

/*
 * Was the file created by the batch?  Only a file born strictly after the
 * manifest: the writer waits, once its manifest is durable, until the file
 * system's clock has moved past the manifest's time before it creates
 * anything (journal_wait_past), so a file born in the manifest's own clock
 * tick predates the batch and is never taken for one of its files.
 */
static bool is_ours(const struct recovery *r, const struct statx *sx)
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

static void apply_meta(int dfd, const char *base, const struct mentry *m, bool symlink)
{
	if (m->wflags & BFO_WENTRY_OWNER)
		fchownat(dfd, base, m->uid, m->gid, AT_SYMLINK_NOFOLLOW);
	if (!symlink)
		fchmodat(dfd, base, m->mode & 07777, 0);
	if (m->wflags & BFO_WENTRY_TIMES) {
		struct timespec ts[2] = {
			{ m->atime_sec, m->atime_nsec },
			{ m->mtime_sec, m->mtime_nsec },
		};

		utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW);
	}
}

/* Recreate a file of a stem batch from the durable stem. */
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
	close(fd);
	apply_meta(dfd, base, m, false);
	r->st->finished++;
}

static void recover_entry(struct recovery *r, const struct mentry *m)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(m->path, dir, sizeof(dir));
	bool stem_ok = false;
	struct statx sx;
	uint64_t h;
	int dfd;

	if (wpath_check(m->path) && m->kind != M_TEMP)
		return;
	if (m->kind == M_FILE && r->stem_fd >= 0 && m->stem_off != UINT64_MAX)
		stem_ok = hash_fd(r->stem_fd, m->size, m->stem_off, &h) == 0 && h == m->hash;
	dfd = wpath_open_dir(r->rootfd, dir, stem_ok);
	if (dfd < 0)
		return;
	if (statx(dfd, base, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_SIZE | STATX_BTIME | STATX_CTIME,
		  &sx) == 0) {
		/* A temporary's name is unique to the writer that made it (and
		 * a file in pieces keeps its temporary across batches, so it
		 * may be older than this manifest): it goes by name. */
		if (m->kind == M_TEMP) {
			if (!strncmp(base, BFO_TMP_PREFIX, sizeof(BFO_TMP_PREFIX) - 1) &&
			    S_ISREG(sx.stx_mode) && unlinkat(dfd, base, 0) == 0)
				r->st->removed++;
			goto out;
		}
		if (!is_ours(r, &sx))
			goto out;
		switch (m->kind) {
		case M_FILE:
			if (S_ISREG(sx.stx_mode) && sx.stx_size == m->size) {
				int fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
				bool same = fd >= 0 && hash_fd(fd, m->size, 0, &h) == 0 && h == m->hash;

				if (fd >= 0)
					close(fd);
				if (same) {
					apply_meta(dfd, base, m, false);
					r->st->complete++;
					goto out;
				}
			}
			if (!S_ISREG(sx.stx_mode))
				goto out;
			if (unlinkat(dfd, base, 0) == 0)
				r->st->removed++;
			break;
		case M_SYMLINK: {
			char target[BFO_WPATH_MAX];
			ssize_t k = S_ISLNK(sx.stx_mode) ?
				readlinkat(dfd, base, target, sizeof(target)) : -1;

			if (k >= 0 && journal_hash(target, (size_t)k) == m->hash) {
				apply_meta(dfd, base, m, true);
				r->st->complete++;
			} else if (S_ISLNK(sx.stx_mode) && unlinkat(dfd, base, 0) == 0) {
				r->st->removed++;
			}
			goto out;
		}
		default:
			/* Hard links, fifos, device nodes and directories appear
			 * whole; finish their metadata (a hard link shares its
			 * source's). */
			if (m->wtype != BFO_WTYPE_HARDLINK)
				apply_meta(dfd, base, m, false);
			r->st->complete++;
			goto out;
		}
	}
	if (stem_ok)
		finish_from_stem(r, dfd, base, m);
out:
	close(dfd);
}

static bool parse(struct rd *rd, char **stem, struct mentry **out, uint32_t *nout)
{
	char magic[8], trailer[8];
	uint32_t bom, engine, n, stemlen;
	uint64_t h;

	if (rd->len < sizeof(MAGIC) + sizeof(TRAILER) + 8)
		return false;
	memcpy(trailer, rd->p + rd->len - 8, 8);
	memcpy(&h, rd->p + rd->len - 16, 8);
	if (memcmp(trailer, TRAILER, 8) || h != journal_hash(rd->p, rd->len - 16))
		return false;
	rd->len -= 16;
	GET(rd, magic);
	GET(rd, bom);
	GET(rd, engine);
	GET(rd, n);
	GET(rd, stemlen);
	if (rd->bad || memcmp(magic, MAGIC, 8) || bom != BOM || stemlen >= BFO_WPATH_MAX)
		return false;
	*stem = calloc(1, stemlen + 1);
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*stem || !*out)
		return false;
	get(rd, *stem, stemlen);
	for (uint32_t i = 0; i < n && !rd->bad; i++) {
		struct mentry *e = &(*out)[i];
		uint16_t plen;
		char *path;

		GET(rd, e->kind);
		GET(rd, e->wtype);
		GET(rd, e->wflags);
		GET(rd, plen);
		GET(rd, e->mode);
		GET(rd, e->uid);
		GET(rd, e->gid);
		GET(rd, e->size);
		GET(rd, e->hash);
		GET(rd, e->stem_off);
		GET(rd, e->atime_sec);
		GET(rd, e->atime_nsec);
		GET(rd, e->mtime_sec);
		GET(rd, e->mtime_nsec);
		path = malloc((size_t)plen + 1);
		if (!path)
			return false;
		get(rd, path, plen);
		path[plen] = '\0';
		e->path = path;
		*nout = i + 1;
	}
	return !rd->bad && rd->pos == rd->len;
}

static void recover_manifest(int rootfd, int jfd, const char *name, struct bfo_recover_stats *st)
{
	struct recovery r = { .rootfd = rootfd, .stem_fd = -1, .st = st };
	struct mentry *m = NULL;
	uint32_t n = 0;
	char *stem = NULL;
	struct stat fst;
	uint8_t *data = NULL;
	int fd;

	fd = openat(jfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {  /* a live writer's batch */
		close(fd);
		return;
	}
	if (fstat(fd, &fst) < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_CTIME, &r.t0) < 0)
		goto done;
	r.have_btime = r.t0.stx_mask & STATX_BTIME;
	data = malloc((size_t)fst.st_size + 1);
	if (!data)
		goto done;
	size_t got = 0;

	while (got < (size_t)fst.st_size) {
		ssize_t k = pread(fd, data + got, (size_t)fst.st_size - got, (off_t)got);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	struct rd rd = { .p = data, .len = got };

	st->batches++;
	if (parse(&rd, &stem, &m, &n)) {
		if (stem[0])
			r.stem_fd = openat(jfd, stem, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		for (uint32_t i = 0; i < n; i++)
			recover_entry(&r, &m[i]);
	}
	/* Not parsable: the manifest never became durable, so its batch
	 * wrote no data; it only has to go. */
	if (stem && stem[0])
		unlinkat(jfd, stem, 0);
	unlinkat(jfd, name, 0);
	fsync(jfd);
done:
	if (r.stem_fd >= 0)
		close(r.stem_fd);
	for (uint32_t i = 0; i < n; i++)
		free((char *)m[i].path);
	free(m);
	free(stem);
	free(data);
	close(fd);
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
		int pid;

		/* A writer killed while probing for shared blocks left its
		 * probe files: they go once that process is gone. */
		if (sscanf(de->d_name, "probe-%d-", &pid) == 1) {
			if (kill(pid, 0) < 0 && errno == ESRCH)
				unlinkat(dfd, de->d_name, 0);
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

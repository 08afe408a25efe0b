/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recovery (bfo_journal_recover): each manifest a crash left in
 * ROOT/.bfo-journal, its batch made complete or absent file by file, as
 * the states of a batch in bfo-native/README.md say; and what a writer
 * that is gone left beside its manifests.  Acted on only when the journal
 * and the manifest are the effective user's (journal.c, "trust"), and only
 * on files the batch is proven to have made.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common.h"
#include "write_meta.h"
#include "write.h"

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

/* Acted on only when the effective user wrote it (see journal.c). */
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
	journal_ids_name(iname, sizeof(iname), name);
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

/* What a writer's own file of each kind holds: a lock file its mark (or
 * nothing: a kill before the write, a power cut before the data), a
 * probe file zeros, a record the manifest's magic (or nothing yet, or
 * zeros). */
static bool holds_own(int fd, int kind)
{
	uint8_t buf[4096];
	ssize_t k = pread(fd, buf, sizeof(buf), 0);
	struct stat st;

	if (k < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return false;
	if (kind == 'w')
		return st.st_size == 0 || (st.st_size == sizeof(JOURNAL_LOCK_MARK) - 1 &&
					   !memcmp(buf, JOURNAL_LOCK_MARK, sizeof(JOURNAL_LOCK_MARK) - 1));
	bool zeros = true;

	for (ssize_t i = 0; i < k && zeros; i++)
		zeros = !buf[i];
	if (kind == 'p')
		return zeros && st.st_size == k;
	/* (a record's bytes that a power cut kept from the disk read as zeros) */
	return zeros || (k >= (ssize_t)sizeof(JOURNAL_MAGIC) - 1 &&
			 !memcmp(buf, JOURNAL_MAGIC, sizeof(JOURNAL_MAGIC) - 1));
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
		 *p == '-' && strlen(p) > sizeof(".m" JOURNAL_NEW_SUFFIX) && (rest = p + strlen(p) - 6) &&
		 !strcmp(rest, ".m" JOURNAL_NEW_SUFFIX))
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

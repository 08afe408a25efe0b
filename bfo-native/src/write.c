/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BFO_w: write a batch of files with one durability point.
 *
 * Per batch: validate and group the entries by directory; write the
 * manifest and make it durable (journal.c); write the data (stem engine:
 * one sequential stem file, then each file gets its blocks with
 * FICLONERANGE; batched engine: worker threads each take whole directories,
 * or io_uring open/write/close chains); set metadata; one syncfs() for the
 * batch; remove the manifest.  A file that fails is removed, never left
 * torn.  Files larger than the caller's memory arrive as pieces over
 * several calls: they are written to a temporary name in their directory
 * and renamed into place with their last piece.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <liburing.h>

#include "bfo.h"
#include "common.h"
#include "meta.h"
#include "pool.h"
#include "write.h"

#define DEF_WTHREADS 16u
#define DEF_WQD 64u
/* io_uring chains: creates block in io-wq workers; more than this many at
 * once only contend on the file system's journal (measured on ext4/XFS). */
#define URING_WQ_WORKERS 8u
/* Directory descriptors held at once by the io_uring path. */
#define URING_DIRS_AT_ONCE 256u

struct wdir {                       /* a DIR entry: metadata applied at close */
	char *path;
	void *xattrs;               /* a copy: the caller's buffer is gone by then */
	uint64_t xattrs_len;
	uint32_t mode, uid, gid, flags;
	int64_t atime_sec, mtime_sec;
	uint32_t atime_nsec, mtime_nsec;
	struct fid id;              /* what the writer made or found there */
};

struct wstream {                    /* a file arriving in pieces */
	char *path;
	char *temp;                 /* base name of the temporary */
	int fd;
	int dfd;
	uint64_t next;              /* bytes written so far */
	int jfd;                    /* its journal record (flock'ed), or -1 */
	char jname[96];
};

/* DURABILITY_CLOSE: batches that may share one syncfs.  Bounds the
 * manifests (and descriptors) held, and the work a recovery may face. */
#define DEFER_MAX_BATCHES 64u

struct bfo_writer {
	int rootfd, jfd;
	int lockfd;                 /* journal/w-PID-ID.lock: this writer lives */
	char lockname[64];
	struct bfo_write_opts o;
	uint32_t engine;            /* resolved: STEM or BATCHED */
	bool uring;                 /* BATCHED with whole files as io_uring chains */
	uint32_t blksz;
	bool is_root;
	struct pool pool;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned tasks_left;
	uint32_t id;
	uint64_t seq;
	struct bfo_write_stats st;
	struct wdir *dirs;
	size_t ndirs, capdirs;
	struct wstream *streams;
	size_t nstreams, capstreams;
	uint64_t tmp_seq;
	int first_err;
	mode_t umask;               /* the process's, read once at open */
	/* DURABILITY_CLOSE: batches written but not yet synced; their
	 * manifests stay (locked) until the syncfs that covers them. */
	struct deferred_batch {
		int mfd;
		char mname[96];
	} deferred[DEFER_MAX_BATCHES];
	unsigned ndeferred;
};

static void release_deferred(struct bfo_writer *w);

/* Per batch. */
struct wbatch {
	struct bfo_writer *w;
	struct bfo_wentry *e;
	uint32_t n;
	uint32_t *order;            /* entry indices grouped by directory */
	uint32_t nordered;          /* entries in order: all but pieces */
	bool *piece;                /* entry i is a piece of a file in pieces */
	bool pieces;                /* the batch has pieces */
	char **temps;               /* REPLACE: temporary base name per entry */
	char **first_tmp;           /* first piece of a large file: its temporary */
	uint64_t *stem_off;         /* STEM: offset of each entry in the stem */
	uint64_t stem_len;          /* bytes of the stem; 0: none */
	char stem_name[112];
	struct mentry *m;           /* the manifest's records */
	uint32_t nm;
	uint32_t *midx;             /* entry -> its manifest record */
	char mname[96];
	int mfd;                    /* the manifest (locked), or -1 */
	bool defer;                 /* DURABILITY_CLOSE: a later syncfs covers it */
	int ifd;                    /* the manifest's identity records, or -1 */
	_Atomic uint64_t ids_off;   /* where the next identity record goes */
	int stem_fd;
	struct wtask *tasks;        /* one per directory of order */
	uint32_t ntasks;
	/* Whole regular files were written by io_uring chains (or failed
	 * there): the pool's directory tasks skip them. */
	bool files_done;
	atomic_bool stop;           /* STOP_ON_ERROR hit */
};

struct wtask {
	struct pool_task task;
	struct wbatch *b;
	uint32_t first, count;      /* range of b->order */
	char dir[BFO_WPATH_MAX];
};

BFO_API const char *bfo_wengine_name(int engine)
{
	switch (engine) {
	case BFO_WENGINE_AUTO: return "auto";
	case BFO_WENGINE_STEM: return "stem";
	case BFO_WENGINE_BATCHED: return "batched";
	case BFO_WENGINE_URING: return "uring";
	}
	return "?";
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static size_t dir_len(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? (size_t)(s - path) : 0;
}

static int write_all(int fd, const void *data, uint64_t len, uint64_t off)
{
	const uint8_t *p = data;

	while (len) {
		ssize_t k = pwrite(fd, p, MIN(len, (uint64_t)1 << 30), (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		off += (uint64_t)k;
		len -= (uint64_t)k;
	}
	return 0;
}

static void tmp_name(struct bfo_writer *w, char *buf, size_t len)
{
	pthread_mutex_lock(&w->lock);
	uint64_t s = ++w->tmp_seq;

	pthread_mutex_unlock(&w->lock);
	snprintf(buf, len, BFO_TMP_PREFIX "%x.%llu", w->id, (unsigned long long)s);
}

/* ------------------------------------------------------------ entries */

/* The batch made entry i's file, of identity id (or, id NULL, the file
 * open on fd): the journal learns it before anything else is done to the
 * file (what recovery may touch). */
static int journal_made(struct wbatch *b, uint32_t i, int fd, const struct fid *id)
{
	struct fid own;
	int ret;

	if (b->ifd < 0 || b->midx[i] == UINT32_MAX)
		return 0;
	if (!id && (ret = fid_of_fd(fd, &own)))
		return ret;
	return journal_id_append(b->ifd, &b->ids_off, b->midx[i], id ? id : &own);
}

/* A regular file the batch made is open on fd, its data written: its
 * identity for the journal, then its metadata, through fd. */
static int file_made(struct wbatch *b, uint32_t i, int fd, bool mode_done)
{
	int ret = journal_made(b, i, fd, NULL);

	return ret ? ret : meta_apply(fd, false, &b->e[i], false, mode_done);
}

static int write_file(struct wbatch *b, int dfd, uint32_t i)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];
	const char *name = b->temps && b->temps[i] ? b->temps[i] : base_of(e->path);
	uint64_t done = 0;
	int fd, ret = 0;

	/* Created with its final mode where the umask cannot take bits away
	 * (then no chmod: on XFS each is a logged transaction per file). */
	bool exact = !(e->mode & 07000) && !(e->mode & w->umask);

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    exact ? e->mode & 0777 : 0600);
	if (fd < 0)
		return -errno;
	/* Stem: whole blocks are shared from the durable stem, the tail is
	 * written (cloning a partial block would copy it on truncate). */
	if (b->stem_off && b->stem_off[i] != UINT64_MAX) {
		uint64_t whole = ALIGN_DOWN(e->length, w->blksz);
		struct file_clone_range cr = {
			.src_fd = b->stem_fd,
			.src_offset = b->stem_off[i],
			.src_length = whole,
			.dest_offset = 0,
		};

		if (whole && ioctl(fd, FICLONERANGE, &cr) == 0) {
			done = whole;
			stat_add(&w->st.clones, 1);
		}
	}
	ret = write_all(fd, (const uint8_t *)e->data + done, e->length - done, done);
	if (!ret && w->o.durability == BFO_DURABILITY_EACH) {
		if (fsync(fd) < 0)
			ret = -errno;
		stat_add(&w->st.syncs, 1);
	}
	if (!ret)
		ret = file_made(b, i, fd, exact);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret)
		unlinkat(dfd, name, 0);  /* never torn */
	else
		stat_add(&w->st.bytes, e->length);
	return ret;
}

static mode_t type_of(const struct bfo_wentry *e)
{
	return e->type == BFO_WTYPE_FIFO ? S_IFIFO : e->type == BFO_WTYPE_SOCK ? S_IFSOCK :
	       e->type == BFO_WTYPE_CHR ? S_IFCHR : S_IFBLK;
}

/* Symbolic links, fifos, sockets and device nodes appear whole; then their
 * metadata, and a failure there removes them again. */
static int write_special(struct wbatch *b, int dfd, uint32_t i)
{
	struct bfo_wentry *e = &b->e[i];
	const char *name = b->temps && b->temps[i] ? b->temps[i] : base_of(e->path);
	bool link = e->type == BFO_WTYPE_SYMLINK;
	int ret;

	if (link) {
		ret = symlinkat(e->data, dfd, name);
	} else {
		mode_t type = type_of(e);
		bool dev = type == S_IFCHR || type == S_IFBLK;

		ret = mknodat(dfd, name, type | 0600, dev ?
			      makedev((unsigned)(e->rdev >> 32), (unsigned)e->rdev) : 0);
	}
	if (ret < 0)
		return -errno;
	/* Made by name: what is there now is ours only if it is of our
	 * type, ours, and linked once (another user may have swapped it;
	 * one of theirs is neither touched nor removed). */
	struct stat st;
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != (link ? S_IFLNK : type_of(e)) ||
	    st.st_uid != geteuid() || st.st_nlink != 1) {
		close(fd);
		return -ESTALE;
	}
	ret = journal_made(b, i, fd, NULL);
	if (!ret)
		ret = meta_apply(fd, true, e, link, false);
	close(fd);
	if (ret)
		unlinkat(dfd, name, 0);
	return ret;
}

static int write_dir(struct wbatch *b, int dfd, uint32_t i)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];
	struct wdir d;
	bool made = true;
	int fd, ret;

	/* Kept writable by its owner until close, when its own metadata is
	 * applied after everything inside it is written, to this very
	 * directory (its identity is kept: cp -a also gives an existing
	 * directory the source's metadata, but never what took its name). */
	if (mkdirat(dfd, base_of(e->path), 0700) < 0) {
		if (errno != EEXIST)
			return -errno;
		made = false;
	}
	fd = openat(dfd, base_of(e->path), O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = fid_of_fd(fd, &d.id);
	close(fd);
	if (ret)
		return ret;
	if (d.id.type != S_IFDIR)
		return -EEXIST;
	if (made && (ret = journal_made(b, i, -1, &d.id)))
		return ret;
	struct fid id = d.id;

	d = (struct wdir){ .path = strdup(e->path), .mode = e->mode, .uid = e->uid, .gid = e->gid,
			   .flags = e->flags, .atime_sec = e->atime_sec, .mtime_sec = e->mtime_sec,
			   .atime_nsec = e->atime_nsec, .mtime_nsec = e->mtime_nsec, .id = id };
	if (!d.path)
		return -ENOMEM;
	if (e->xattrs_len) {
		d.xattrs = malloc(e->xattrs_len);
		if (!d.xattrs) {
			free(d.path);
			return -ENOMEM;
		}
		memcpy(d.xattrs, e->xattrs, e->xattrs_len);
		d.xattrs_len = e->xattrs_len;
	}
	pthread_mutex_lock(&w->lock);
	if (w->ndirs == w->capdirs) {
		size_t c = w->capdirs ? w->capdirs * 2 : 64;
		struct wdir *t = realloc(w->dirs, c * sizeof(*t));

		if (!t) {
			pthread_mutex_unlock(&w->lock);
			free(d.path);
			free(d.xattrs);
			return -ENOMEM;
		}
		w->dirs = t;
		w->capdirs = c;
	}
	w->dirs[w->ndirs++] = d;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

static void set_status(struct wbatch *b, uint32_t i, int status)
{
	b->e[i].status = status;
	if (status && (b->w->o.flags & BFO_WRITE_STOP_ON_ERROR))
		atomic_store(&b->stop, true);
}

static void group_task(struct pool_task *pt)
{
	struct wtask *t = (struct wtask *)pt;
	struct wbatch *b = t->b;
	struct bfo_writer *w = b->w;
	int dfd = wpath_open_dir(w->rootfd, t->dir, true);

	for (uint32_t k = t->first; k < t->first + t->count; k++) {
		uint32_t i = b->order[k];
		struct bfo_wentry *e = &b->e[i];
		int ret;

		if (e->status || (b->files_done && e->type == BFO_WTYPE_FILE))
			continue;
		if (atomic_load(&b->stop)) {
			e->status = -ECANCELED;
			continue;
		}
		if (dfd < 0) {
			set_status(b, i, dfd);
			continue;
		}
		switch (e->type) {
		case BFO_WTYPE_FILE: ret = write_file(b, dfd, i); break;
		case BFO_WTYPE_DIR: ret = write_dir(b, dfd, i); break;
		case BFO_WTYPE_HARDLINK: ret = 0; break;   /* after all groups */
		default: ret = write_special(b, dfd, i); break;
		}
		set_status(b, i, ret);
	}
	if (dfd >= 0)
		close(dfd);
	pthread_mutex_lock(&w->lock);
	if (--w->tasks_left == 0)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* ------------------------------------------------------------ io_uring */

/*
 * The io_uring variant of the batched engine: per file an openat (create,
 * exclusive), then a write (and an fsync for DURABILITY_EACH) once the
 * descriptor is known; identity and metadata go to that descriptor before
 * it is closed.  Only whole regular files take this path; everything else
 * goes to the pool as usual.  Descriptors held: the queue depth.
 */
struct uchain {
	uint32_t i;
	int dfd;
	int fd;
	int err;
	int64_t written;            /* the write's result; short: finished by hand */
};

enum { U_OPEN = 1, U_WRITE, U_FSYNC };

/* A chain ended: finish the file through its descriptor, or remove it. */
static void uchain_done(struct wbatch *b, struct uchain *c)
{
	struct bfo_wentry *e = &b->e[c->i];
	const char *name = b->temps && b->temps[c->i] ? b->temps[c->i] : base_of(e->path);

	if (c->fd >= 0) {
		/* A short write: finish it here to learn the real error
		 * (ENOSPC, EDQUOT) or to complete the file. */
		if (!c->err && c->written >= 0 && (uint64_t)c->written < e->length)
			c->err = write_all(c->fd, (const uint8_t *)e->data + c->written,
					   e->length - (uint64_t)c->written, (uint64_t)c->written);
		if (!c->err)
			c->err = file_made(b, c->i, c->fd, false);
		if (close(c->fd) < 0 && !c->err)
			c->err = -errno;
		/* Only a file this chain made is removed (-EEXIST came from
		 * the open: the file there is not ours). */
		if (c->err)
			unlinkat(c->dfd, name, 0);
	}
	set_status(b, c->i, c->err);
	if (!c->err)
		stat_add(&b->w->st.bytes, e->length);
}

/* The open of slot s completed with fd: its write (and fsync) go out. */
static bool uchain_write(struct io_uring *ring, struct wbatch *b, struct uchain *c, uint32_t s)
{
	struct bfo_wentry *e = &b->e[c->i];
	struct io_uring_sqe *q;

	if (!e->length && b->w->o.durability != BFO_DURABILITY_EACH)
		return false;
	if (io_uring_sq_space_left(ring) < 2)
		io_uring_submit(ring);
	q = io_uring_get_sqe(ring);
	io_uring_prep_write(q, c->fd, e->data, (unsigned)MIN(e->length, (uint64_t)1 << 30), 0);
	q->user_data = (uint64_t)s << 8 | U_WRITE;
	if (b->w->o.durability == BFO_DURABILITY_EACH) {
		q->flags |= IOSQE_IO_LINK;
		q = io_uring_get_sqe(ring);
		io_uring_prep_fsync(q, c->fd, 0);
		q->user_data = (uint64_t)s << 8 | U_FSYNC;
	}
	return true;
}

static int uring_files(struct wbatch *b, uint32_t *idx, int *dfds, uint32_t n)
{
	struct bfo_writer *w = b->w;
	unsigned qd = w->o.queue_depth ? w->o.queue_depth : DEF_WQD;
	struct io_uring ring;
	struct uchain *ch;
	uint32_t *free_slots, nfree, sub = 0, done = 0;
	unsigned wq[2] = { URING_WQ_WORKERS, URING_WQ_WORKERS };
	bool each = w->o.durability == BFO_DURABILITY_EACH;
	int ret;

	ret = io_uring_queue_init(qd * 2, &ring, 0);
	if (ret < 0)
		return ret;
	io_uring_register_iowq_max_workers(&ring, wq);
	ch = calloc(qd, sizeof(*ch));
	free_slots = malloc(qd * sizeof(*free_slots));
	if (!ch || !free_slots) {
		free(ch);
		free(free_slots);
		io_uring_queue_exit(&ring);
		return -ENOMEM;
	}
	for (nfree = 0; nfree < qd; nfree++)
		free_slots[nfree] = nfree;
	while (done < n) {
		/* STOP_ON_ERROR: what is not submitted yet is cancelled. */
		while (sub < n && atomic_load(&b->stop)) {
			b->e[idx[sub]].status = -ECANCELED;
			sub++;
			done++;
		}
		if (done == n)
			break;
		while (nfree && sub < n && !atomic_load(&b->stop)) {
			uint32_t i = idx[sub], s = free_slots[--nfree];
			const char *name = b->temps && b->temps[i] ? b->temps[i] : base_of(b->e[i].path);
			struct io_uring_sqe *q;

			if (io_uring_sq_space_left(&ring) < 1)
				io_uring_submit(&ring);
			ch[s] = (struct uchain){ .i = i, .dfd = dfds[sub], .fd = -1, .written = -1 };
			q = io_uring_get_sqe(&ring);
			io_uring_prep_openat(q, dfds[sub], name,
					     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			q->user_data = (uint64_t)s << 8 | U_OPEN;
			sub++;
		}
		io_uring_submit_and_wait(&ring, 1);
		struct io_uring_cqe *cqe;
		unsigned head, k = 0;
		uint32_t ended[64];
		unsigned nended = 0;

		io_uring_for_each_cqe(&ring, head, cqe) {
			uint32_t s = (uint32_t)(cqe->user_data >> 8);
			unsigned op = cqe->user_data & 0xff;
			struct uchain *c = &ch[s];
			bool end = false;

			k++;
			if (op == U_OPEN) {
				if (cqe->res < 0)
					c->err = cqe->res;
				else
					c->fd = cqe->res;
				/* Submitted after this loop: the ring is being read. */
				end = cqe->res < 0;
				if (!end)
					ended[nended++] = s | 0x80000000u;
			} else if (op == U_WRITE) {
				if (cqe->res >= 0)
					c->written = cqe->res;
				else if (!c->err)
					c->err = cqe->res;
				end = !each;
			} else {
				stat_add(&w->st.syncs, 1);
				if (cqe->res < 0 && cqe->res != -ECANCELED && !c->err)
					c->err = cqe->res;
				end = true;
			}
			if (end)
				ended[nended++] = s;
			if (nended == sizeof(ended) / sizeof(ended[0]))
				break;
		}
		io_uring_cq_advance(&ring, k);
		for (unsigned x = 0; x < nended; x++) {
			uint32_t s = ended[x] & 0x7fffffffu;

			if ((ended[x] & 0x80000000u) && uchain_write(&ring, b, &ch[s], s))
				continue;
			uchain_done(b, &ch[s]);
			free_slots[nfree++] = s;
			done++;
		}
	}
	free(ch);
	free(free_slots);
	io_uring_queue_exit(&ring);
	return 0;
}

static void run_tasks_wait(struct bfo_writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->tasks_left)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

/* Whole regular files through io_uring, a wave of directories at a time so
 * the directory descriptors held stay bounded. */
/* Asked for by name, the io_uring engine fails at open where the kernel
 * or a seccomp policy refuses io_uring, as the stem engine does where
 * blocks cannot be shared, rather than failing every file. */
static bool uring_usable(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(2, &ring, 0) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static void data_uring(struct wbatch *b, uint32_t gfirst, uint32_t gend, struct wtask *tasks)
{
	struct bfo_writer *w = b->w;
	uint32_t *idx = malloc(b->n * sizeof(*idx));
	int *dfds = malloc(b->n * sizeof(*dfds));
	int *open_fds = malloc(URING_DIRS_AT_ONCE * sizeof(*open_fds));

	if (!idx || !dfds || !open_fds) {
		free(idx);
		free(dfds);
		free(open_fds);
		for (uint32_t g = gfirst; g < gend; g++)
			for (uint32_t k = tasks[g].first; k < tasks[g].first + tasks[g].count; k++)
				set_status(b, b->order[k], -ENOMEM);
		return;
	}
	for (uint32_t g = gfirst; g < gend;) {
		uint32_t n = 0, nopen = 0, gstop = g;

		for (; gstop < gend && nopen < URING_DIRS_AT_ONCE; gstop++) {
			struct wtask *t = &tasks[gstop];
			int dfd = wpath_open_dir(w->rootfd, t->dir, true);

			if (dfd >= 0)
				open_fds[nopen++] = dfd;
			for (uint32_t k = t->first; k < t->first + t->count; k++) {
				uint32_t i = b->order[k];

				if (b->e[i].status || b->e[i].type != BFO_WTYPE_FILE)
					continue;
				if (dfd < 0) {
					set_status(b, i, dfd);
					continue;
				}
				idx[n] = i;
				dfds[n++] = dfd;
			}
		}
		int ret = uring_files(b, idx, dfds, n);

		if (ret < 0) {
			for (uint32_t k = 0; k < n; k++)
				set_status(b, idx[k], ret);
		}
		for (uint32_t k = 0; k < nopen; k++)
			close(open_fds[k]);
		g = gstop;
	}
	free(idx);
	free(dfds);
	free(open_fds);
}

/* ------------------------------------------------------------ streams */

static struct wstream *stream_find(struct bfo_writer *w, const char *path)
{
	for (size_t i = 0; i < w->nstreams; i++)
		if (!strcmp(w->streams[i].path, path))
			return &w->streams[i];
	return NULL;
}

static void stream_drop(struct bfo_writer *w, struct wstream *s, bool unlink_temp)
{
	if (s->fd >= 0)
		close(s->fd);
	if (unlink_temp)
		unlinkat(s->dfd, s->temp, 0);
	if (s->jfd >= 0) {
		unlinkat(w->jfd, s->jname, 0);
		close(s->jfd);
	}
	close(s->dfd);
	free(s->path);
	free(s->temp);
	*s = w->streams[--w->nstreams];
}

/*
 * A piece of a large file (BFO_WENTRY_MORE, or a later offset).  The file
 * grows under a temporary name and takes its real name with the last
 * piece, after its data is durable: it is complete or absent.
 */
static int write_piece(struct wbatch *b, uint32_t i)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];
	struct wstream *s = stream_find(w, e->path);
	const char *tmp = b->first_tmp[i];
	char dir[BFO_WPATH_MAX];
	int ret;

	if (e->flags & BFO_WENTRY_ABORT) {
		if (s)
			stream_drop(w, s, true);
		return 0;
	}
	if (!s) {
		if (e->offset != 0 || !tmp)
			return -EINVAL;    /* a piece without its beginning */
		if (w->nstreams == w->capstreams) {
			size_t c = w->capstreams ? w->capstreams * 2 : 8;
			struct wstream *t = realloc(w->streams, c * sizeof(*t));

			if (!t)
				return -ENOMEM;
			w->streams = t;
			w->capstreams = c;
		}
		wpath_split(e->path, dir, sizeof(dir));
		int dfd = wpath_open_dir(w->rootfd, dir, true);

		if (dfd < 0)
			return dfd;
		int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd < 0) {
			ret = -errno;
			close(dfd);
			return ret;
		}
		s = &w->streams[w->nstreams++];
		*s = (struct wstream){ .path = strdup(e->path), .temp = strdup(tmp), .fd = fd, .dfd = dfd,
				       .jfd = -1 };
		if (!s->path || !s->temp) {
			stream_drop(w, s, true);
			return -ENOMEM;
		}
		/* The temporary outlives this batch's manifest: its own record
		 * keeps it known to recovery until the file is complete (it is
		 * made durable by this batch's sync, like everything else). */
		if (w->o.durability != BFO_DURABILITY_NONE) {
			char tp[BFO_WPATH_MAX + 64];
			struct mentry me = { .kind = M_TEMP, .stem_off = UINT64_MAX, .path = tp };

			snprintf(tp, sizeof(tp), "%s%s%s", dir, *dir ? "/" : "", tmp);
			snprintf(s->jname, sizeof(s->jname), "s-%d-%x-%s.m", (int)getpid(), w->id,
				 tmp + sizeof(BFO_TMP_PREFIX) - 1);
			ret = journal_record_write(w->jfd, s->jname, &me, 1, &s->jfd);
			if (ret) {
				stream_drop(w, s, true);
				return ret;
			}
		}
	}
	if (e->offset != s->next) {
		stream_drop(w, s, true);
		return -EINVAL;            /* pieces must come in order */
	}
	ret = write_all(s->fd, e->data, e->length, e->offset);
	if (ret) {
		stream_drop(w, s, true);
		return ret;
	}
	s->next += e->length;
	stat_add(&w->st.bytes, e->length);
	if (e->flags & BFO_WENTRY_MORE)
		return 0;
	/* The last piece: durable data, metadata, then the real name. */
	if (w->o.durability != BFO_DURABILITY_NONE && fsync(s->fd) < 0)
		ret = -errno;
	if (!ret)
		ret = file_made(b, i, s->fd, false);
	if (!ret && close(s->fd) < 0)
		ret = -errno;
	s->fd = -1;
	if (!ret && renameat2(s->dfd, s->temp, s->dfd, base_of(e->path),
			      (w->o.flags & BFO_WRITE_REPLACE) ? 0 : RENAME_NOREPLACE) < 0)
		ret = -errno;
	stream_drop(w, s, ret != 0);
	return ret;
}

/* ------------------------------------------------------------ a batch */

static int validate(struct bfo_writer *w, struct bfo_wentry *e)
{
	int ret = wpath_check(e->path);

	if (ret)
		return ret;
	switch (e->type) {
	case BFO_WTYPE_FILE:
		if (e->length && !e->data)
			return -EINVAL;
		if ((e->flags & BFO_WENTRY_MORE) || e->offset || stream_find(w, e->path) ||
		    (e->flags & BFO_WENTRY_ABORT))
			return 1;          /* a piece: handled as a stream */
		return 0;
	case BFO_WTYPE_SYMLINK:
		return e->data && *(const char *)e->data ? 0 : -EINVAL;
	case BFO_WTYPE_HARDLINK:
		return e->data ? wpath_check(e->data) : -EINVAL;
	case BFO_WTYPE_DIR:
	case BFO_WTYPE_FIFO:
	case BFO_WTYPE_CHR:
	case BFO_WTYPE_BLK:
	case BFO_WTYPE_SOCK:
		return 0;
	}
	return -EINVAL;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct bfo_wentry *e = arg;
	const char *pa = e[*(const uint32_t *)a].path, *pb = e[*(const uint32_t *)b].path;
	size_t la = dir_len(pa), lb = dir_len(pb);
	int c = strncmp(pa, pb, MIN(la, lb));

	if (c)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void link_pass(struct wbatch *b)
{
	char sdir[BFO_WPATH_MAX], ddir[BFO_WPATH_MAX];

	for (uint32_t i = 0; i < b->n; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (e->type != BFO_WTYPE_HARDLINK || e->status)
			continue;
		if (atomic_load(&b->stop)) {
			e->status = -ECANCELED;
			continue;
		}
		const char *sbase = wpath_split(e->data, sdir, sizeof(sdir));
		const char *dbase = wpath_split(e->path, ddir, sizeof(ddir));
		int sfd = wpath_open_dir(b->w->rootfd, sdir, false);
		int dfd = sfd < 0 ? sfd : wpath_open_dir(b->w->rootfd, ddir, true);
		int ret = 0;

		const char *tmp = b->temps ? b->temps[i] : NULL;

		if (sfd < 0 || dfd < 0)
			ret = sfd < 0 ? sfd : dfd;
		else if (linkat(sfd, sbase, dfd, tmp ? tmp : dbase, 0) < 0)
			ret = -errno;
		else if (tmp && renameat(dfd, tmp, dfd, dbase) < 0) {
			/* REPLACE: the new link takes the name atomically. */
			ret = -errno;
			unlinkat(dfd, tmp, 0);
		}
		if (sfd >= 0)
			close(sfd);
		if (dfd >= 0)
			close(dfd);
		set_status(b, i, ret);
	}
}

/* REPLACE: every temporary takes its real name once the data is durable. */
static void rename_pass(struct wbatch *b)
{
	char dir[BFO_WPATH_MAX];

	for (uint32_t i = 0; i < b->n; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (!b->temps[i] || e->type == BFO_WTYPE_HARDLINK)
			continue;
		const char *base = wpath_split(e->path, dir, sizeof(dir));
		int dfd = wpath_open_dir(b->w->rootfd, dir, false);

		if (dfd < 0)
			continue;
		if (e->status == 0 && renameat(dfd, b->temps[i], dfd, base) < 0) {
			e->status = -errno;
			unlinkat(dfd, b->temps[i], 0);
		}
		close(dfd);
	}
}

/* pwritev until everything is written (it may write less than asked). */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t k = pwritev(fd, iov, n, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -ENOSPC;
		off += (uint64_t)k;
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

static int write_stem(struct wbatch *b, const char *stem_name)
{
	struct bfo_writer *w = b->w;
	static const uint8_t zeros[4096];
	struct iovec iov[IOV_MAX];
	uint64_t batch_off = 0, end = 0;
	int niov = 0, ret = 0;

	b->stem_fd = openat(w->jfd, stem_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (b->stem_fd < 0)
		return -errno;
	/* Each stem file whole, block-aligned, back to back, in the order
	 * the files will be created: one sequential stream in few large
	 * pwritev calls.  stem_off was assigned in entry order; the stem is
	 * laid out in that same order. */
	for (uint32_t i = 0; i < b->n && !ret; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (b->stem_off[i] == UINT64_MAX)
			continue;
		uint64_t pad = ALIGN_UP(e->length, w->blksz) - e->length;
		int need = 1 + (int)((pad + sizeof(zeros) - 1) / sizeof(zeros));

		if (niov + need > IOV_MAX) {
			ret = pwritev_all(b->stem_fd, iov, niov, batch_off);
			batch_off = end;
			niov = 0;
		}
		iov[niov++] = (struct iovec){ (void *)e->data, e->length };
		for (uint64_t p = pad; p;) {
			uint64_t c = MIN(p, sizeof(zeros));

			iov[niov++] = (struct iovec){ (void *)zeros, c };
			p -= c;
		}
		end += e->length + pad;
	}
	if (!ret && niov)
		ret = pwritev_all(b->stem_fd, iov, niov, batch_off);
	if (!ret && w->o.durability != BFO_DURABILITY_NONE && fdatasync(b->stem_fd) < 0)
		ret = -errno;
	return ret;
}

static int batch_alloc(struct wbatch *b)
{
	uint32_t n = b->n;

	b->order = malloc(n * sizeof(*b->order));
	b->first_tmp = calloc(n, sizeof(*b->first_tmp));
	b->piece = calloc(n, sizeof(*b->piece));
	b->m = calloc(2 * (size_t)n, sizeof(*b->m));
	b->midx = malloc(n * sizeof(*b->midx));
	if (!b->order || !b->first_tmp || !b->piece || !b->m || !b->midx)
		return -ENOMEM;
	if (b->w->o.flags & BFO_WRITE_REPLACE) {
		b->temps = calloc(n, sizeof(*b->temps));
		if (!b->temps)
			return -ENOMEM;
	}
	if (b->w->engine == BFO_WENGINE_STEM) {
		b->stem_off = malloc(n * sizeof(*b->stem_off));
		if (!b->stem_off)
			return -ENOMEM;
	}
	return 0;
}

/* A temporary's base name, strdup'ed, or NULL with the entry failed. */
static char *batch_tmp_name(struct wbatch *b, uint32_t i)
{
	char tmp[64], *s;

	tmp_name(b->w, tmp, sizeof(tmp));
	s = strdup(tmp);
	if (!s)
		b->e[i].status = -ENOMEM;
	return s;
}

/* Entry i, valid (v from validate): a piece of a file in pieces, or an
 * entry written whole, in order, with its temporary and its stem place. */
static void plan_entry(struct wbatch *b, uint32_t i, int v)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];

	if (v == 1) {
		b->piece[i] = b->pieces = true;
		/* A first piece's temporary is named now, so the manifest
		 * lists it before it exists. */
		if (e->offset == 0 && !(e->flags & BFO_WENTRY_ABORT) && !stream_find(w, e->path))
			b->first_tmp[i] = batch_tmp_name(b, i);
		return;
	}
	b->order[b->nordered++] = i;
	/* REPLACE: everything but directories is made under a temporary
	 * name and renamed over its target once the data is durable. */
	if (b->temps && e->type != BFO_WTYPE_DIR)
		b->temps[i] = batch_tmp_name(b, i);
	if (b->stem_off && e->type == BFO_WTYPE_FILE && e->length >= w->blksz) {
		b->stem_off[i] = b->stem_len;
		b->stem_len += ALIGN_UP(e->length, w->blksz);
	}
}

/* 1. Validate, and plan: directory groups, temporaries, stem. */
static void batch_plan(struct wbatch *b)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = b->e;
	uint32_t n = b->n;

	for (uint32_t i = 0; i < n; i++) {
		int v = validate(w, &e[i]);

		e[i].status = v < 0 ? v : 0;
		e[i].engine = (uint16_t)w->st.engine;
		if (b->stem_off)
			b->stem_off[i] = UINT64_MAX;
		if (v >= 0)
			plan_entry(b, i, v);
	}
	qsort_r(b->order, b->nordered, sizeof(*b->order), order_cmp, e);
	/* STOP_ON_ERROR: an invalid entry ends the batch before anything is
	 * written. */
	if (w->o.flags & BFO_WRITE_STOP_ON_ERROR) {
		bool bad = false;

		for (uint32_t i = 0; i < n && !bad; i++)
			bad = e[i].status != 0;
		if (bad) {
			for (uint32_t i = 0; i < n; i++)
				if (!e[i].status)
					e[i].status = -ECANCELED;
			b->nordered = 0;
			for (uint32_t i = 0; i < n; i++)
				b->piece[i] = false;
		}
	}
}

/* Entry i's manifest record (and its temporary's, removed by recovery if
 * the batch does not finish). */
static int manifest_record(struct wbatch *b, uint32_t i)
{
	struct bfo_wentry *x = &b->e[i];
	struct mentry *me = &b->m[b->nm];
	char dir[BFO_WPATH_MAX];
	const char *temp = NULL;

	b->midx[i] = b->nm++;
	*me = (struct mentry){ .kind = M_OTHER, .wtype = (uint8_t)x->type,
			       .wflags = (uint8_t)(x->flags & (BFO_WENTRY_OWNER | BFO_WENTRY_TIMES)),
			       .mode = x->mode, .uid = x->uid, .gid = x->gid,
			       .stem_off = UINT64_MAX, .atime_sec = x->atime_sec,
			       .atime_nsec = x->atime_nsec, .mtime_sec = x->mtime_sec,
			       .mtime_nsec = x->mtime_nsec, .path = x->path };
	if (x->type == BFO_WTYPE_FILE && !b->piece[i]) {
		me->kind = M_FILE;
		me->size = x->length;
		me->hash = journal_hash(x->data, x->length);
		if (b->stem_off)
			me->stem_off = b->stem_off[i];
	} else if (x->type == BFO_WTYPE_SYMLINK) {
		me->kind = M_SYMLINK;
		me->hash = journal_hash(x->data, strlen(x->data));
	}
	if (b->temps && b->temps[i])
		temp = b->temps[i];
	struct wstream *s = b->piece[i] ? stream_find(b->w, x->path) : NULL;

	if (s)
		temp = s->temp;
	else if (b->first_tmp[i])
		temp = b->first_tmp[i];
	if (!temp)
		return 0;
	wpath_split(x->path, dir, sizeof(dir));
	char *tp = malloc(strlen(dir) + strlen(temp) + 2);

	if (!tp)
		return -ENOMEM;
	sprintf(tp, "%s%s%s", dir, *dir ? "/" : "", temp);
	b->m[b->nm++] = (struct mentry){ .kind = M_TEMP, .path = tp, .stem_off = UINT64_MAX };
	return 0;
}

/* 2. The manifest, durable before any data. */
static int batch_manifest(struct wbatch *b)
{
	struct bfo_writer *w = b->w;
	int ret;

	if (w->o.durability == BFO_DURABILITY_NONE) {
		if (b->stem_len)
			snprintf(b->stem_name, sizeof(b->stem_name), "b-%d-%x-%llu.stem", (int)getpid(),
				 w->id, (unsigned long long)++w->seq);
		return 0;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		b->midx[i] = UINT32_MAX;
		if (!b->e[i].status && (ret = manifest_record(b, i)))
			return ret;
	}
	snprintf(b->mname, sizeof(b->mname), "b-%d-%x-%llu.m", (int)getpid(), w->id,
		 (unsigned long long)++w->seq);
	if (b->stem_len)
		snprintf(b->stem_name, sizeof(b->stem_name), "%s.stem", b->mname);
	ret = journal_manifest_write(w->jfd, b->mname, b->m, b->nm, b->stem_len ? b->stem_name : NULL,
				     w->engine, &b->mfd);
	if (ret)
		return ret;
	b->ifd = journal_ids_create(w->jfd, b->mname);
	if (b->ifd < 0)
		return b->ifd;
	journal_wait_past(b->mfd);
	return 0;
}

/* The stem, or none (disk full...): then the files are written normally,
 * and the partial stem's space goes back first. */
static void batch_stem(struct wbatch *b)
{
	if (!write_stem(b, b->stem_name))
		return;
	if (b->stem_fd >= 0) {
		close(b->stem_fd);
		b->stem_fd = -1;
	}
	unlinkat(b->w->jfd, b->stem_name, 0);
	for (uint32_t i = 0; i < b->n; i++)
		b->stem_off[i] = UINT64_MAX;
}

/* One pool task per directory of the ordered entries. */
static int batch_tasks(struct wbatch *b)
{
	b->tasks = calloc(b->nordered ? b->nordered : 1, sizeof(*b->tasks));
	if (!b->tasks)
		return -ENOMEM;
	for (uint32_t k = 0; k < b->nordered; k++) {
		const char *p = b->e[b->order[k]].path;
		size_t dl = dir_len(p);
		struct wtask *cur = b->ntasks ? &b->tasks[b->ntasks - 1] : NULL;

		if (!cur || strlen(cur->dir) != dl || strncmp(cur->dir, p, dl)) {
			cur = &b->tasks[b->ntasks++];
			cur->task.fn = group_task;
			cur->b = b;
			cur->first = k;
			memcpy(cur->dir, p, MIN(dl, sizeof(cur->dir) - 1));
			cur->dir[MIN(dl, sizeof(cur->dir) - 1)] = '\0';
		}
		cur->count++;
	}
	return 0;
}

/* 3. Data: the stem first (one sequential stream), then files,
 * directory by directory on the pool (or io_uring chains). */
static int batch_data(struct wbatch *b)
{
	struct bfo_writer *w = b->w;
	int ret;

	if (b->stem_len)
		batch_stem(b);
	ret = batch_tasks(b);
	if (ret)
		return ret;
	if (w->uring) {
		/* Whole files go through io_uring; the pool takes the rest. */
		data_uring(b, 0, b->ntasks, b->tasks);
		b->files_done = true;
	}
	w->tasks_left = b->ntasks;
	for (uint32_t g = 0; g < b->ntasks; g++)
		pool_push(&w->pool, &b->tasks[g].task);
	run_tasks_wait(w);
	for (uint32_t i = 0; i < b->n; i++)
		if (b->piece[i] && !b->e[i].status)
			set_status(b, i, atomic_load(&b->stop) ? -ECANCELED : write_piece(b, i));
	/* Hard links after everything they may link to exists by its name:
	 * with REPLACE that is after the renames (batch_sync). */
	if (!b->temps)
		link_pass(b);
	return 0;
}

/* 4. One durability point for the batch (two with REPLACE: the new data
 * is durable before any old file is replaced).  DURABILITY_CLOSE leaves
 * plain batches to a later syncfs: their manifests stay until then, so a
 * crash before it is recovered like any unfinished batch. */
static void batch_sync(struct wbatch *b)
{
	struct bfo_writer *w = b->w;

	if (w->o.durability == BFO_DURABILITY_CLOSE && b->mfd >= 0 && !b->temps && !b->pieces &&
	    !w->nstreams && w->ndeferred < DEFER_MAX_BATCHES)
		b->defer = true;
	if (w->o.durability != BFO_DURABILITY_NONE && !b->defer) {
		/* Deferred batches lose their manifests only once durable. */
		if (syncfs(w->rootfd) < 0) {
			if (!w->first_err)
				w->first_err = -errno;
		} else {
			release_deferred(w);
		}
		stat_add(&w->st.syncs, 1);
	}
	if (b->temps) {
		rename_pass(b);
		link_pass(b);
		if (w->o.durability != BFO_DURABILITY_NONE) {
			syncfs(w->rootfd);
			stat_add(&w->st.syncs, 1);
		}
	}
}

static void batch_free(struct wbatch *b)
{
	for (uint32_t i = 0; i < b->nm; i++)
		if (b->m[i].kind == M_TEMP)
			free((char *)b->m[i].path);
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->temps)
			free(b->temps[i]);
		if (b->first_tmp)
			free(b->first_tmp[i]);
	}
	free(b->first_tmp);
	free(b->temps);
	free(b->stem_off);
	free(b->order);
	free(b->piece);
	free(b->midx);
	free(b->m);
	free(b->tasks);
}

/* 5. The batch is durable: its manifest and stem go (a deferred manifest
 * stays until the syncfs that covers it).  ret: the batch failed as a
 * whole; every entry without a status of its own gets it. */
static int batch_end(struct wbatch *b, int ret)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = b->e;
	uint32_t failed = 0;

	if (b->stem_fd >= 0) {
		close(b->stem_fd);
		unlinkat(w->jfd, b->stem_name, 0);
	}
	if (b->ifd >= 0)
		close(b->ifd);
	if (b->mfd >= 0 && b->defer) {
		struct deferred_batch *d = &w->deferred[w->ndeferred++];

		d->mfd = b->mfd;
		snprintf(d->mname, sizeof(d->mname), "%s", b->mname);
	} else if (b->mfd >= 0) {
		journal_batch_remove(w->jfd, b->mname);
		close(b->mfd);   /* releases the lock */
	}
	if (ret) {
		for (uint32_t i = 0; i < b->n; i++)
			if (!e[i].status)
				e[i].status = ret;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		if (e[i].status)
			failed++;
	}
	w->st.batches++;
	w->st.files += b->n - failed;
	w->st.failed += failed;
	batch_free(b);
	return ret ? ret : (int)failed;
}

/* Nanoseconds since *t0, which moves to now. */
static uint64_t lap(uint64_t *t0)
{
	uint64_t t = bfo_now_ns(), d = t - *t0;

	*t0 = t;
	return d;
}

BFO_API int bfo_writer_write(struct bfo_writer *w, struct bfo_wentry *e, unsigned n)
{
	struct wbatch b = { .w = w, .e = e, .n = n, .stem_fd = -1, .ifd = -1, .mfd = -1 };
	uint64_t t0 = bfo_now_ns();
	int ret;

	if (!w || (n && !e))
		return -EINVAL;
	if (n == 0)
		return 0;
	ret = batch_alloc(&b);
	if (!ret) {
		batch_plan(&b);
		ret = batch_manifest(&b);
	}
	if (!ret) {
		w->st.ns_manifest += lap(&t0);
		ret = batch_data(&b);
	}
	if (!ret) {
		w->st.ns_data += lap(&t0);
		batch_sync(&b);
		w->st.ns_sync += lap(&t0);
	}
	return batch_end(&b, ret);
}

/* ------------------------------------------------------------ open/close */

/* mkdir -p of the root itself (the caller chose it; symlinks in it are
 * the caller's business). */
static int mkdir_p(const char *path)
{
	char *p = strdup(path);
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0755) < 0 && errno != EEXIST) {
				ret = -errno;
				break;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return ret;
}

/* Can this file system share blocks between files (FICLONERANGE)? */
static bool probe_clone(struct bfo_writer *w)
{
	char a[64], b2[64];
	uint8_t *buf = calloc(1, w->blksz);
	bool ok = false;
	int fa, fb;

	snprintf(a, sizeof(a), "probe-%d-%x-a", (int)getpid(), w->id);
	snprintf(b2, sizeof(b2), "probe-%d-%x-b", (int)getpid(), w->id);
	fa = openat(w->jfd, a, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	fb = openat(w->jfd, b2, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (buf && fa >= 0 && fb >= 0 && pwrite(fa, buf, w->blksz, 0) == (ssize_t)w->blksz) {
		struct file_clone_range cr = { .src_fd = fa, .src_length = w->blksz };

		ok = ioctl(fb, FICLONERANGE, &cr) == 0;
	}
	if (fa >= 0) {
		close(fa);
		unlinkat(w->jfd, a, 0);
	}
	if (fb >= 0) {
		close(fb);
		unlinkat(w->jfd, b2, 0);
	}
	free(buf);
	return ok;
}

static int opts_take(struct bfo_write_opts *out, const struct bfo_write_opts *in)
{
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	if (in) {
		size_t n = in->size;

		if (n < offsetof(struct bfo_write_opts, reserved))
			return -EINVAL;
		if (n > sizeof(*out)) {
			for (size_t i = sizeof(*out); i < n; i++)
				if (((const uint8_t *)in)[i])
					return -E2BIG;
			n = sizeof(*out);
		}
		memcpy(out, in, n);
		out->size = sizeof(*out);
	}
	for (size_t i = 0; i < sizeof(out->reserved) / sizeof(out->reserved[0]); i++)
		if (out->reserved[i])
			return -EINVAL;
	if (out->flags & ~(BFO_WRITE_REPLACE | BFO_WRITE_STOP_ON_ERROR))
		return -EINVAL;
	if (out->engine > BFO_WENGINE_URING || out->durability > BFO_DURABILITY_CLOSE ||
	    out->threads > 256 || out->queue_depth > 4096)
		return -EINVAL;
	if (!out->threads)
		out->threads = DEF_WTHREADS;
	return 0;
}

/*
 * The journal directory, checked (journal_dir_open), and this writer's
 * lock file in it.  Another writer closing or a recovery may remove the
 * directory while it is empty, between our open and our lock file: then
 * it is made again.
 */
static int journal_take(struct bfo_writer *w)
{
	int ret = -ENOENT;

	for (int tries = 0; tries < 100 && ret == -ENOENT; tries++) {
		w->jfd = journal_dir_open(w->rootfd, true);
		if (w->jfd < 0) {
			ret = w->jfd;
			w->jfd = -1;
			continue;
		}
		w->lockfd = journal_lock(w->jfd, w->id, w->lockname, sizeof(w->lockname));
		ret = w->lockfd < 0 ? w->lockfd : 0;
		if (ret) {
			close(w->jfd);
			w->jfd = -1;
		}
	}
	return ret;
}

/* This writer's lock goes; the directory too when no one else is in it. */
static void journal_leave(struct bfo_writer *w)
{
	if (w->lockfd >= 0) {
		unlinkat(w->jfd, w->lockname, 0);
		close(w->lockfd);
	}
	if (w->jfd >= 0) {
		close(w->jfd);
		unlinkat(w->rootfd, BFO_JOURNAL_DIR, AT_REMOVEDIR);
	}
	w->jfd = w->lockfd = -1;
}

BFO_API int bfo_writer_open(struct bfo_writer **out, const char *root, const struct bfo_write_opts *opts)
{
	struct bfo_writer *w;
	struct statvfs sv;
	struct bfo_recover_stats rs = { 0 };
	int ret;

	if (!out || !root || !*root)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->rootfd = w->jfd = w->lockfd = -1;
	ret = opts_take(&w->o, opts);
	if (ret)
		goto fail;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->id = (uint32_t)(bfo_now_ns() ^ ((uint64_t)getpid() << 16) ^ (uintptr_t)w);
	w->is_root = geteuid() == 0;
	w->umask = process_umask();
	ret = mkdir_p(root);
	if (ret)
		goto fail;
	w->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->rootfd < 0) {
		ret = -errno;
		goto fail;
	}
	/* A read-only file system says so here, even where an old journal
	 * directory makes mkdir answer EEXIST first. */
	if (fstatvfs(w->rootfd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		ret = -EROFS;
		goto fail;
	}
	ret = journal_take(w);
	if (ret)
		goto fail;
	/* Unfinished batches of earlier writers come first. */
	journal_recover(w->rootfd, w->jfd, &rs);
	w->blksz = fstatvfs(w->rootfd, &sv) == 0 && sv.f_bsize >= 512 && sv.f_bsize <= (1u << 20) ?
		   (uint32_t)sv.f_bsize : 4096;
	if (w->o.engine == BFO_WENGINE_AUTO || w->o.engine == BFO_WENGINE_STEM) {
		if (probe_clone(w)) {
			w->engine = BFO_WENGINE_STEM;
		} else if (w->o.engine == BFO_WENGINE_STEM) {
			ret = -EOPNOTSUPP;
			goto fail;
		} else {
			w->engine = BFO_WENGINE_BATCHED;
		}
	} else {
		w->engine = BFO_WENGINE_BATCHED;
		w->uring = w->o.engine == BFO_WENGINE_URING;
		if (w->uring && !uring_usable()) {
			ret = -EOPNOTSUPP;
			goto fail;
		}
	}
	/* The manifest records STEM or BATCHED (what recovery needs); the
	 * stats name the engine that ran. */
	w->st.engine = w->uring ? BFO_WENGINE_URING : w->engine;
	ret = pool_start(&w->pool, w->o.threads);
	if (ret)
		goto fail;
	*out = w;
	return 0;
fail:
	/* Leave no trace of an open that did not happen. */
	journal_leave(w);
	if (w->rootfd >= 0)
		close(w->rootfd);
	free(w);
	return ret;
}

BFO_API int bfo_writer_stats(struct bfo_writer *w, struct bfo_write_stats *st)
{
	if (!w || !st)
		return -EINVAL;
	*st = w->st;
	st->clones = __atomic_load_n(&w->st.clones, __ATOMIC_RELAXED);
	st->syncs = __atomic_load_n(&w->st.syncs, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&w->st.bytes, __ATOMIC_RELAXED);
	return 0;
}

/* The deferred batches are durable (a syncfs just returned): their
 * manifests go. */
static void release_deferred(struct bfo_writer *w)
{
	for (unsigned i = 0; i < w->ndeferred; i++) {
		journal_batch_remove(w->jfd, w->deferred[i].mname);
		close(w->deferred[i].mfd);
	}
	w->ndeferred = 0;
}

/* DURABILITY_CLOSE: one syncfs for the batches written since the last. */
static int sync_deferred(struct bfo_writer *w)
{
	int ret = 0;

	if (!w->ndeferred)
		return 0;
	if (syncfs(w->rootfd) < 0)
		ret = -errno;
	stat_add(&w->st.syncs, 1);
	if (!ret)
		release_deferred(w);
	return ret;
}

static int depth_cmp(const void *a, const void *b)
{
	const struct wdir *x = a, *y = b;
	size_t dx = 0, dy = 0;

	for (const char *p = x->path; *p; p++)
		dx += *p == '/';
	for (const char *p = y->path; *p; p++)
		dy += *p == '/';
	return dx < dy ? 1 : dx > dy ? -1 : 0;
}

BFO_API int bfo_writer_close(struct bfo_writer *w)
{
	char dir[BFO_WPATH_MAX];
	int ret;

	if (!w)
		return 0;
	ret = w->first_err;
	/* A failed syncfs leaves the manifests: recovery decides. */
	int sr = sync_deferred(w);

	if (sr < 0 && !ret)
		ret = sr;
	for (unsigned i = 0; i < w->ndeferred; i++)
		close(w->deferred[i].mfd);
	w->ndeferred = 0;
	/* Files whose last piece never came are dropped. */
	while (w->nstreams)
		stream_drop(w, &w->streams[0], true);
	/* Directories: deepest first, times last (writing inside a directory
	 * changes its mtime). */
	if (w->ndirs > 1)
		qsort(w->dirs, w->ndirs, sizeof(*w->dirs), depth_cmp);
	for (size_t i = 0; i < w->ndirs; i++) {
		struct wdir *d = &w->dirs[i];
		const char *base = wpath_split(d->path, dir, sizeof(dir));
		int dfd = wpath_open_dir(w->rootfd, dir, false);
		struct bfo_wentry e = { .mode = d->mode, .uid = d->uid, .gid = d->gid, .flags = d->flags,
					.atime_sec = d->atime_sec, .mtime_sec = d->mtime_sec,
					.atime_nsec = d->atime_nsec, .mtime_nsec = d->mtime_nsec,
					.xattrs = d->xattrs, .xattrs_len = d->xattrs_len };
		int fd = dfd < 0 ? -1 : fid_open(dfd, base, &d->id);
		int r = dfd < 0 ? 0 : fd < 0 ? fd : meta_apply(fd, true, &e, false, false);

		if (r && !ret)
			ret = r;
		if (fd >= 0)
			close(fd);
		if (dfd >= 0)
			close(dfd);
		free(d->path);
		free(d->xattrs);
	}
	free(w->dirs);
	if (w->o.durability != BFO_DURABILITY_NONE && w->ndirs && syncfs(w->rootfd) < 0 && !ret)
		ret = -errno;
	pool_stop(&w->pool);
	journal_leave(w);
	close(w->rootfd);
	free(w->streams);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	return ret;
}

BFO_API int bfo_journal_recover(const char *root, struct bfo_recover_stats *stats)
{
	struct bfo_recover_stats local = { 0 };
	int rootfd, jfd, ret;

	if (!root)
		return -EINVAL;
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	jfd = journal_dir_open(rootfd, false);
	if (jfd < 0) {
		close(rootfd);
		return jfd == -ENOENT ? 0 : jfd;
	}
	ret = journal_recover(rootfd, jfd, stats);
	if (ret >= 0 && (stats->removed || stats->finished))
		syncfs(rootfd);
	close(jfd);
	unlinkat(rootfd, BFO_JOURNAL_DIR, AT_REMOVEDIR);
	close(rootfd);
	return ret;
}

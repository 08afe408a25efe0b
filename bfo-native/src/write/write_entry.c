/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One entry of a batch made in its directory: a regular file (its data
 * written, or its whole blocks shared from the stem), a directory (its
 * metadata kept for close), a symbolic link, fifo, socket or device node.
 * A file that fails is removed, never left torn.  The pool runs one
 * group_task per directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "fdlimit.h"
#include "test_hooks.h"
#include "writer.h"

const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

size_t dir_len(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? (size_t)(s - path) : 0;
}

int write_all(int fd, const void *data, uint64_t len, uint64_t off)
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

/* The name entry i is made under in its directory: its temporary
 * (REPLACE), or its own base name. */
const char *entry_name(const struct wbatch *b, uint32_t i)
{
	return b->temps && b->temps[i] ? b->temps[i] : base_of(b->e[i].path);
}

/* The batch made entry i's file, of identity id (or, id NULL, the file
 * open on fd, whose identity then goes to *own when own is not NULL): the
 * journal learns it before anything else is done to the file (what
 * recovery may touch).  1 when *own was filled, 0, or -errno. */
static int journal_made(struct wbatch *b, uint32_t i, int fd, const struct fid *id,
			struct fid *own)
{
	struct fid mine;
	int ret;

	if (b->ifd < 0 || b->midx[i] == UINT32_MAX)
		return 0;
	if (!own)
		own = &mine;
	if (!id && (ret = fid_of_fd(fd, own)))
		return ret;
	ret = journal_id_append(b->ifd, &b->ids_off, b->midx[i], id ? id : own);
	return ret ? ret : !id;
}

int file_made(struct wbatch *b, uint32_t i, int fd, bool mode_done)
{
	struct fid own;
	int ret = journal_made(b, i, fd, NULL, &own);

	return ret < 0 ? ret : meta_apply(fd, false, &b->e[i], false, mode_done, ret ? &own : NULL,
					  &b->e[i].owner_status);
}

static int write_file(struct wbatch *b, int dfd, uint32_t i)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];
	const char *name = entry_name(b, i);
	uint64_t done = 0;
	int fd, ret = 0;

	/* Created with its final mode where the umask cannot take bits away
	 * (then no chmod: on XFS each is a logged transaction per file). */
	bool exact = !(e->mode & 07000) && !(e->mode & w->umask);

	fd = fdl_openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
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
	if (fdl_close(fd) < 0 && !ret)
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
	const char *name = entry_name(b, i);
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
	int fd = fdl_openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (st.st_mode & S_IFMT) != (link ? S_IFLNK : type_of(e)) ||
	    st.st_uid != geteuid() || st.st_nlink != 1) {
		fdl_close(fd);
		return -ESTALE;
	}
	ret = journal_made(b, i, fd, NULL, NULL);
	if (ret >= 0)
		ret = meta_apply(fd, true, e, link, false, NULL, &e->owner_status);
	fdl_close(fd);
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
	fd = fdl_openat(dfd, base_of(e->path), O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = fid_of_fd(fd, &d.id);
	fdl_close(fd);
	if (ret)
		return ret;
	if (d.id.type != S_IFDIR)
		return -EEXIST;
	if (made && (ret = journal_made(b, i, -1, &d.id, NULL)))
		return ret;
	struct fid id = d.id;

	d = (struct wdir){ .path = strdup(e->path), .mode = e->mode, .uid = e->uid, .gid = e->gid,
			   .flags = e->flags, .atime_sec = e->atime_sec, .mtime_sec = e->mtime_sec,
			   .atime_nsec = e->atime_nsec, .mtime_nsec = e->mtime_nsec, .id = id };
	/* An owner this user namespace cannot give is known now, named with
	 * the entry, and the directory kept as meta_apply keeps files; other
	 * refusals come at close. */
	if ((e->flags & BFO_WENTRY_OWNER) && (!idmap_has(&w->uids, e->uid) || !idmap_has(&w->gids, e->gid))) {
		e->owner_status = -EINVAL;
		d.flags &= ~BFO_WENTRY_OWNER;
		d.mode &= S_IRWXU;
	}
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

void set_status(struct wbatch *b, uint32_t i, int status)
{
	b->e[i].status = status;
	if (status && (b->w->o.flags & BFO_WRITE_STOP_ON_ERROR))
		atomic_store(&b->stop, true);
}

void group_task(struct pool_task *pt)
{
	struct wtask *t = (struct wtask *)pt;
	struct wbatch *b = t->b;
	struct bfo_writer *w = b->w;
	int dfd = wpath_open_dir_held(w->rootfd, t->dir, !t->late);
	uint64_t bytes = 0;

	if (dfd >= 0 && bfo_test_hooks.dir_opened)
		bfo_test_hooks.dir_opened(bfo_test_hooks.arg, t->dir);
	for (uint32_t k = t->first; k < t->first + t->count; k++) {
		uint32_t i = b->order[k];
		struct bfo_wentry *e = &b->e[i];
		int ret;

		if (b->files_done && e->type == BFO_WTYPE_FILE && !e->status)
			bytes += e->length;      /* (written by the io_uring chains) */
		if (e->status || (b->files_done && e->type == BFO_WTYPE_FILE))
			continue;
		if (batch_stopped(b)) {
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
		if (!ret && e->type == BFO_WTYPE_FILE)
			bytes += e->length;
	}
	if (dfd >= 0)
		fdl_close(dfd);
	flusher_note(w, bytes);
	pthread_mutex_lock(&w->lock);
	if (--w->tasks_left == 0)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

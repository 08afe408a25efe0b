/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: the queue of files tar wrote and closed whose data and
 * metadata are not out yet, and writing it out (one bfo_fdwrite() of all
 * its data, then each file's metadata in tar's order, then a syncfs, then
 * their names, then the closes).
 */
#include "extract.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wfile *wfile_new(const char *name, unsigned di)
{
	struct wfile *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->di = di;
	if (!(w->name = strdup(name))) {
		free(w);
		return NULL;
	}
	return w;
}

/* w (queued) is tar's new file fd, as fstat found it: captured. */
void wfile_hold(struct wfile *w, int fd, const struct stat *sb)
{
	w->fd = fd;
	w->dev = sb->st_dev;
	w->ino = sb->st_ino;
	w->uid = w->uid0 = sb->st_uid;
	w->gid = w->gid0 = sb->st_gid;
	w->setid = (sb->st_mode & (S_ISUID | S_ISGID)) != 0;
	ex.wtab[fd] = w;
	counters.xfiles++;
}

void wfile_free(struct wfile *w)
{
	xdir_put(w->dir);
	free(w->base);
	free(w->rel);
	free(w->buf);
	free(w->m);
	free(w->name);
	free(w);
}

int queue_add(struct wfile *w)
{
	if (ex.nq == ex.qcap) {
		unsigned nc = ex.qcap ? 2 * ex.qcap : 1024;
		struct wfile **p = realloc(ex.queue, nc * sizeof(*p));

		if (!p)
			return -1;
		ex.queue = p;
		ex.qcap = nc;
	}
	ex.queue[ex.nq++] = w;
	return 0;
}

/* Deferred metadata, in tar's order; failures reported as tar words them. */
static void apply_meta(struct wfile *w)
{
	char what[96];

	for (unsigned i = 0; i < w->nm; i++) {
		struct meta *m = &w->m[i];

		switch (m->op) {
		case M_TIMES:
			if (real_futimens(w->fd, m->null_ts ? NULL : m->ts) < 0)
				report(w, "Cannot utime", errno);
			break;
		case M_CHOWN:
			/* tar as root chowns every file, most often to the
			 * owner it was created with (root extracting root's
			 * files): then the chown would change nothing (no
			 * set-id bits to clear; capabilities come later, by
			 * name, which flushes first) but still log an inode
			 * update. */
			if (m->uid == w->uid && m->gid == w->gid && !w->setid)
				break;
			if (real_fchown(w->fd, m->uid, m->gid) < 0) {
				snprintf(what, sizeof(what), "Cannot change ownership to uid %lu, gid %lu",
					 (unsigned long)m->uid, (unsigned long)m->gid);
				report(w, what, errno);
			} else {
				w->uid = m->uid;
				w->gid = m->gid;
				w->setid = 0;
			}
			break;
		case M_CHMOD:
			if (real_fchmod(w->fd, m->mode) < 0) {
				snprintf(what, sizeof(what), "Cannot change mode to %04o", (unsigned)m->mode);
				report(w, what, errno);
			} else {
				w->setid = (m->mode & (S_ISUID | S_ISGID)) != 0;
			}
			break;
		}
	}
	w->nm = 0;
}

/* w's buffered bytes written now, alone. */
void write_one(struct wfile *w)
{
	struct bfo_fdwrite_entry one = { .fd = w->fd, .buf = w->buf, .length = w->len, .offset = w->written };

	if (!w->len)
		return;
	if (bfo_fdwrite(&one, 1, BFO_FDWRITE_PORTABLE) != 0)
		report(w, "Cannot write", one.status < 0 ? -one.status : EIO);
	w->written += one.done;
	w->len = 0;
}

/* A syncfs of each file system in mask (bit i: file system i), with
 * BFO_TAR_DURABILITY=batch; its failure reported in tar's words. */
void commit_devs(uint32_t mask)
{
	for (unsigned i = 0; i < MAX_DEVS && settings.durability; i++) {
		int r;

		if (!(mask & (1u << i)))
			continue;
		r = bfo_syncfs(dev_fd(i));
		__atomic_add_fetch(&counters.early_syncfs, 1, __ATOMIC_RELAXED);
		if (r < 0)
			say(NULL, "Cannot commit the extracted files to disk", -r);
	}
}

/*
 * Before q[0..n)'s new files take their names: their data and metadata on
 * disk, one syncfs per file system they are on.  A link is a small
 * journal transaction that a file system may commit before the file's
 * delayed-allocation blocks are written: a power cut then left the name
 * on an empty or short file (pc.py's tar workload, `torn`).  Replacements
 * through the journal are libbfo's writer's (it syncs their bytes before
 * its renames); those that fall back to a rename of ours are synced by
 * replace_files.
 */
static void commit_before_names(struct wfile **q, unsigned n, int final)
{
	uint32_t mask = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct wfile *w = q[i];

		if (unnamed(w) && (w->closed || final) && !w->journal)
			mask |= 1u << w->di;
	}
	commit_devs(mask);
}

/*
 * The data of q[0..n) in one batch, then each file's metadata in tar's
 * order, then a syncfs of their file systems, then the names of those
 * made unnamed (final: also of those tar has not closed).  Runs on tar's
 * thread (flush_queue) or on the flusher (a generation of closed files):
 * it touches nothing but the files, their names and (replacements) the
 * journal.
 */
void write_out(struct wfile **q, unsigned n, int final)
{
	struct bfo_fdwrite_entry *e;
	unsigned m = 0;

	e = calloc(n, sizeof(*e));
	for (unsigned i = 0; i < n; i++) {
		struct wfile *w = q[i];

		/* a replacement's bytes go to the journal, not to tar's file */
		w->journal = replace_journal(w, final);
		if (!w->len || w->journal)
			continue;
		if (e) {
			e[m].fd = w->fd;
			e[m].buf = w->buf;
			e[m].length = w->len;
			e[m].offset = w->written;
			m++;
		} else {        /* no memory for the batch: one by one */
			write_one(w);
		}
	}
	if (e && m) {
		/* pwrite() in a loop, not io_uring: tar's files are buffered, and
		 * ext4 cannot write a page-cache write without blocking, so
		 * io_uring hands every one to a worker thread (0.98 CPU-s for
		 * 120,000 files of 3.5 KB against 0.47 s for the same writes by
		 * tar) on a machine whose cores tar's own creates and the
		 * writeback already fill: tar -x + sync of that set took 2.8-3.2 s
		 * instead of 3.3-3.6 s (plain tar 4.3-4.7 s). */
		int r = bfo_fdwrite(e, m, BFO_FDWRITE_PORTABLE);

		for (unsigned i = 0, k = 0; i < n && k < m; i++) {
			struct wfile *w = q[i];

			if (!w->len || w->journal)
				continue;
			if (r < 0)
				e[k].status = r;
			if (e[k].status < 0)
				report(w, "Cannot write", -e[k].status);
			w->written += e[k].done;
			w->len = 0;
			k++;
		}
	}
	free(e);
	for (unsigned i = 0; i < n; i++)
		apply_meta(q[i]);
	commit_before_names(q, n, final);
	name_files(q, n, final);
}

/*
 * Write every queued file's data in one batch, then each file's metadata
 * in tar's order, then close what tar closed, after the generation in
 * flight.  Files tar still has open stay captured (their next bytes go
 * after what was written).
 */
void flush_queue(void)
{
	unsigned kept = 0;

	wait_generation();
	if (!ex.nq)
		return;
	counters.xflushes++;
	write_out(ex.queue, ex.nq, ex.final);
	for (unsigned i = 0; i < ex.nq; i++) {
		struct wfile *w = ex.queue[i];

		if (w->closed) {
			real_close(w->fd);
			wfile_free(w);
		} else {
			if (w->cap > (64u << 10) || w->libc) {
				free(w->buf);
				w->buf = NULL;
				w->cap = 0;
			}
			ex.queue[kept++] = w;   /* still tar's: stays queued */
		}
	}
	ex.nq = kept;
	ex.queued_bytes = 0;
	names_rebuild();
	space_forget_looks();
}

/*
 * tar does something to fd we do not defer: its bytes are written out and
 * its I/O is libc's from here.  A file made unnamed stays queued (libc) to
 * take its name at tar's close; one tar named itself is let go.
 */
void detach(int fd)
{
	struct wfile *w = ex.wtab[fd];

	flush_queue();
	real_lseek(fd, (off_t)w->written, SEEK_SET);    /* where tar's writes left it */
	counters.xdetached++;
	if (w->dir) {
		w->libc = 1;
		free(w->buf);
		w->buf = NULL;
		w->cap = 0;
		return;
	}
	ex.wtab[fd] = NULL;
	for (unsigned i = 0; i < ex.nq; i++) {
		if (ex.queue[i] == w) {
			memmove(&ex.queue[i], &ex.queue[i + 1], (ex.nq - i - 1) * sizeof(*ex.queue));
			ex.nq--;
			break;
		}
	}
	wfile_free(w);
}

/* Whether dev/ino is a file written later than tar believes. */
int pending_inode(dev_t dev, ino_t ino)
{
	for (unsigned i = 0; i < ex.nq; i++)
		if (ex.queue[i]->dev == dev && ex.queue[i]->ino == ino)
			return 1;
	return generation_has(dev, ino);
}

/* Files written later than tar believes: queued, or in the flusher's generation. */
int pending(void)
{
	return ex.nq || generation_in_flight();
}

/*
 * An open of tar's was refused for want of descriptors (EMFILE, ENFILE):
 * the files tar closed whose descriptors the queue and the flusher still
 * hold are written out and closed.  Whether any was: then the open is
 * worth trying again, as tar would have had those descriptors back.
 */
int fds_released(void)
{
	int held = generation_in_flight();

	for (unsigned i = 0; i < ex.nq && !held; i++)
		held = ex.queue[i]->closed;
	if (!held)
		return 0;
	counters.xfd_waits++;
	flush_queue();
	return 1;
}

/* Before a name-based call on dirfd/path: flush when it reaches a pending
 * file (by its name, or by the inode a stat finds), or a directory whose
 * metadata a pending name would change. */
void flush_if_pending(int dirfd, const char *path, int nofollow)
{
	struct stat sb;

	if (!pending())
		return;
	if (!path || names_reach(dirfd, path) ||
	    real_fstatat(dirfd, path, &sb, nofollow ? AT_SYMLINK_NOFOLLOW : 0) < 0 ||
	    (S_ISREG(sb.st_mode) && pending_inode(sb.st_dev, sb.st_ino)) ||
	    (S_ISDIR(sb.st_mode) && names_dir_holds(sb.st_dev, sb.st_ino)))
		flush_queue();  /* also when unsure */
}

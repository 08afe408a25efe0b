/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writer's own parts, shared by its files: the writer, a batch and its
 * directory tasks, and what each file lends the others.
 *   write.c         the writer: open, stats, close, recovery
 *   write_batch.c   bfo_writer_write: a batch in five steps
 *   write_entry.c   one entry made: file, directory, special file
 *   write_stem.c    the stem engine: the batch's stem file, the clone probe
 *   write_uring.c   whole files as io_uring chains
 *   write_stream.c  files arriving in pieces
 * Not installed; write.h is the journal's and the path checks'.
 */
#ifndef BFO_WRITER_H
#define BFO_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfo.h"
#include "write_meta.h"
#include "pool.h"
#include "write.h"

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
/* ... and a writeback is started behind them (write_flush.c) once this
 * many file bytes were deferred since the last. */
#define FLUSH_MIN_BYTES (8ull << 20)

/* The io_uring path (write_uring.c): chains at once by default, and
 * directory descriptors held at once; both scaled to the descriptor
 * budget at open (write.c, fit_fds). */
#define URING_DEF_QD       64u
#define URING_DIRS_AT_ONCE 256u

struct bfo_writer {
	int rootfd, jfd;
	int lockfd;                 /* journal/w-PID-ID.lock: this writer lives */
	char lockname[64];
	struct bfo_write_opts o;
	uint32_t engine;            /* resolved: STEM or BATCHED */
	bool uring;                 /* BATCHED with whole files as io_uring chains */
	unsigned uring_dirs;        /* io_uring path: directories held at once */
	unsigned uring_qd;          /* io_uring path: chains (a file each) at once */
	uint32_t blksz;
	bool is_root;
	struct idmap uids, gids;    /* what chown can give (directories: write_dir) */
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
	/* The root's mtime before the journal was made in it: set back at
	 * close when nothing of the root's own changed (root_touched), as
	 * rsync leaves DST's mtime; the journal's coming and going is ours. */
	struct timespec root_mtime;
	bool root_mtime_ok;
	atomic_bool root_touched;
	mode_t umask;               /* the process's, read once at open */
	/* DURABILITY_CLOSE: batches written but not yet synced; their
	 * manifests stay (locked) until the syncfs that covers them. */
	struct deferred_batch {
		int mfd;
		char mname[96];
	} deferred[DEFER_MAX_BATCHES];
	unsigned ndeferred;
	/* DURABILITY_BATCH and CLOSE: writeback started in the background
	 * behind the data the directory tasks write (write_flush.c) */
	struct flusher {
		pthread_mutex_t lock;
		pthread_cond_t cond;
		pthread_t thread;
		uint64_t kicks, done;   /* writebacks asked for; of them, begun */
		uint64_t bytes;         /* file bytes written since the last kick */
		bool started, failed, stop;
	} fl;
	/* bfo_writer_cancel(), or its copier's cancel or broken stream
	 * (writer_cancel_with): batches stop between files and later ones
	 * write nothing; after bfo_writer_cancel() alone, close also leaves
	 * the deferred batches to recovery. */
	atomic_bool cancel;
	const atomic_bool *cancel_also[2];
};

/* A batch: one bfo_writer_write call. */
struct wbatch {
	struct bfo_writer *w;
	struct bfo_wentry *e;
	uint32_t n;
	uint32_t *order;            /* entry indices grouped by directory */
	uint32_t nordered;          /* entries in order: all but pieces */
	bool *piece;                /* entry i is a piece of a file in pieces */
	bool pieces;                /* the batch has pieces */
	char **temps;               /* REPLACE: temporary base name per entry */
	bool *trash;                /* with temps: what the entry displaced is
				       under its temporary (REPLACE_TREE) */
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
	uint32_t nearly;            /* tasks [0, nearly) are not late */
	/* Whole regular files were written by io_uring chains (or failed
	 * there): the pool's directory tasks skip them. */
	bool files_done;
	atomic_bool stop;           /* STOP_ON_ERROR hit */
};

static inline bool writer_cancelled(const struct bfo_writer *w)
{
	return atomic_load(&w->cancel) || (w->cancel_also[0] && atomic_load(w->cancel_also[0])) ||
	       (w->cancel_also[1] && atomic_load(w->cancel_also[1]));
}

/* Files not begun yet are not begun: STOP_ON_ERROR hit, or cancelled. */
static inline bool batch_stopped(struct wbatch *b)
{
	return atomic_load(&b->stop) || writer_cancelled(b->w);
}

struct wtask {
	struct pool_task task;
	struct wbatch *b;
	uint32_t first, count;      /* range of b->order */
	/* Its directory is, or is below, a non-directory entry of the
	 * batch: written in a second round, resolved against what the first
	 * round left and never created (lnk/x after the symlink lnk fails
	 * ELOOP whichever thread runs first). */
	bool late;
	char *dir;                  /* malloc'd (a task per directory of the batch) */
};

/* write.c */
/* The deferred batches are durable (a syncfs just returned): their
 * manifests go. */
void release_deferred(struct bfo_writer *w);
/* write_flush.c: a directory task wrote bytes of files (a writeback is
 * asked for behind each FLUSH_MIN_BYTES, DURABILITY_BATCH and CLOSE
 * only); the writer closes (waits for a syncfs under way). */
void flusher_note(struct bfo_writer *w, uint64_t bytes);
void flusher_stop(struct bfo_writer *w);
/* A descriptor of the writer's root, the caller's to close (or -errno):
 * for the copiers, which give the root its source's metadata at the end
 * and must not reopen it by a name someone may have swapped since. */
int writer_root_fd(struct bfo_writer *w);

/* write_entry.c */
const char *base_of(const char *path);
size_t dir_len(const char *path);
int write_all(int fd, const void *data, uint64_t len, uint64_t off);
const char *entry_name(const struct wbatch *b, uint32_t i);
/* A regular file the batch made is open on fd, its data written: its
 * identity for the journal, then its metadata, through fd. */
int file_made(struct wbatch *b, uint32_t i, int fd, bool mode_done);
/* Entry i's outcome; a failure stops the batch with STOP_ON_ERROR. */
void set_status(struct wbatch *b, uint32_t i, int status);
/* A wtask: the entries of one directory, made one after another. */
void group_task(struct pool_task *pt);

/* write_stem.c */
/* The stem of the entries with a stem_off (durable unless DURABILITY_NONE):
 * 0 or -errno, and then the files are written without it. */
int write_stem(struct wbatch *b, const char *stem_name);
/* Can this file system share blocks between files (FICLONERANGE)? */
bool probe_clone(struct bfo_writer *w);

/* write_uring.c */
/* Asked for by name, the io_uring engine fails at open where the kernel
 * or a seccomp policy refuses io_uring, as the stem engine does where
 * blocks cannot be shared, rather than failing every file. */
bool uring_usable(void);
/* The whole regular files of tasks [gfirst, gend) as io_uring chains. */
void data_uring(struct wbatch *b, uint32_t gfirst, uint32_t gend, struct wtask *tasks);

/* write_stream.c */
struct wstream *stream_find(struct bfo_writer *w, const char *path);
void stream_drop(struct bfo_writer *w, struct wstream *s, bool unlink_temp);
/* Entry i, a piece of a file in pieces: 0 or -errno. */
int write_piece(struct wbatch *b, uint32_t i);

#endif

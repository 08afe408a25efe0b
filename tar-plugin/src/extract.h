/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract (tar -x): writing the files tar extracts through libbfo.
 *
 * GNU tar (1.34) extracts a regular file like this (strace):
 *
 *	openat(dirfd, name, O_WRONLY|O_CREAT|O_EXCL|O_NOCTTY|O_NONBLOCK|O_CLOEXEC)
 *	write()...
 *	futimens(F) fchown(F) fchmod(F)     (utimensat(F, NULL...))
 *	close(F)
 *
 * and directories, symlinks and hard links by name (mkdirat, symlinkat,
 * linkat, utimensat/fchownat/fchmodat by name); a name that exists fails
 * the open with EEXIST, and tar unlinks it and opens again.  The plugin
 * makes tar's new file unnamed (O_TMPFILE in its directory, once the name
 * is known to be free: extract_name.c), keeps that fd (the file is
 * written through it, never re-opened by name), buffers its write()s,
 * defers its fd-based metadata calls in tar's order and, at tar's
 * close(), queues the fd.  The queue is flushed (one bfo_fdwrite() of all
 * pending data, then the metadata in order, then a syncfs() of the file
 * systems its new files are on, then each file takes its name, then the
 * closes; on the flusher thread, extract_flusher.c, when only full) when
 * it holds ex.queue_files files or QUEUE_BYTES bytes, before any call
 * that may depend on a pending file (a name-based call that reaches one
 * or the directory holding one, a hard link, rename or unlink, a
 * write-open without O_EXCL, a stat that finds one), when tar closes its
 * archive and at exit, followed by one syncfs() per file system: a name
 * reaches the disk only after its file's data and metadata, whatever a
 * power cut interrupts (BFO_TAR_DURABILITY=none: no syncfs, names as
 * plain tar's).  tar's unlink of a file that existed before it started,
 * between its failed open and its next one, is deferred: the new file
 * then replaces the old one atomically when it takes its name
 * (extract_replace.c, through libbfo's journal).  Data is queued only
 * while it surely fits on its file system (extract_space.c): a full file
 * system is met by tar's own write().  A file that grows beyond
 * WFILE_MAX, or on which tar seeks, truncates, syncs or dups (sparse
 * members), is written out and its I/O handed back to libc (it still
 * takes its name at tar's close).  A deferred write or metadata call that
 * fails is reported the way tar reports it ("tar: NAME: Cannot write:
 * ...") and tar's exit status becomes 2.
 */
#ifndef BFO_TAR_EXTRACT_H
#define BFO_TAR_EXTRACT_H

#include "bfo_tar.h"

/*
 * Files queued at most.  Each holds the descriptor tar opened it with,
 * and the flusher's generation holds as many again, so the queue is sized
 * at start from what tar's soft RLIMIT_NOFILE leaves free: a quarter of
 * it (both queues: half; tar keeps the other half), from QUEUE_FILES_MIN
 * to QUEUE_FILES_MAX (1024: T2's figures; a login's 1024 gives about 250).
 * tar's limit is never raised (its children and its own errors stay as
 * plain tar's); an open of tar's refused with EMFILE while files are
 * pending is retried once they are written and closed (fds_released).
 */
#define QUEUE_FILES_MAX 1024u
#define QUEUE_FILES_MIN 4u
#define QUEUE_BYTES   (64ull << 20)
#define WFILE_MAX     (1ull << 20)
#define MAX_DEVS      16

enum meta_op { M_TIMES, M_CHOWN, M_CHMOD };

struct meta {
	int op;
	struct timespec ts[2];
	int null_ts;
	uid_t uid;
	gid_t gid;
	mode_t mode;
};

/* A directory tar makes files in, held until they have their names. */
struct xdir {
	int fd;                 /* O_PATH | O_DIRECTORY */
	dev_t dev;
	ino_t ino;
	unsigned refs;          /* atomic: its unnamed files, and the cache */
};
struct xroot;

struct wfile {
	int fd;
	int closed;             /* tar closed it; we still hold the fd */
	int libc;               /* tar's writes and metadata on it go to libc (detached) */
	int seeked;             /* tar seeked or truncated it (a sparse member) */
	char *name;             /* as tar named it, for messages */
	dev_t dev;
	ino_t ino;
	uid_t uid;              /* its owner, as created or last chowned */
	gid_t gid;
	uid_t uid0;             /* its owner as created */
	gid_t gid0;
	int setid;              /* it may have set-id bits (a chown would clear them) */
	unsigned di;            /* index of its file system (extract_space.c) */
	uint64_t written;       /* bytes already in the file */
	char *buf;              /* bytes after that, not yet written */
	size_t len, cap;
	struct meta *m;
	unsigned nm, mcap;
	/* Its name (extract_name.c): a file made unnamed takes it once whole. */
	struct xdir *dir;       /* its directory, held; NULL: named by tar's own open */
	char *base;             /* its name in dir */
	uint64_t bh;            /* hash of base */
	int named;              /* it has its name */
	int replaces;           /* an older file has the name: replaced atomically */
	struct xroot *root;     /* replaces: the journal's root (tar's directory), or NULL */
	char *rel;              /* replaces: its path below root, or NULL */
	int journal;            /* this flush: its buffered bytes go through the journal */
};

/* Extraction's state on tar's thread (extract.c). */
struct extract_state {
	struct wfile *wtab[FDTAB_MAX];  /* captured fds */
	struct wfile **queue;           /* files with pending data or metadata, tar's order */
	unsigned nq, qcap;
	unsigned queue_files;           /* the bound of nq (QUEUE_FILES_MAX above) */
	uint64_t queued_bytes;
	int extracting;                 /* tar created something */
	int dirty;                      /* something to commit at the end */
	int deferred_failed;            /* a deferred call failed: tar's status becomes 2 */
	/* Messages go where tar's stderr went, through our own copy of it: at
	 * exit tar has closed stderr already (and stdout: no fflush then). */
	int errfd;
	int exiting;
	int final;                      /* the last flushes: files tar left open take their names too */
	struct timespec t0;             /* extraction began (the coarse clock) */
};

extern struct extract_state ex;

/* extract_end.c */
void say(const char *name, const char *what, int err);
void report(const struct wfile *w, const char *what, int err);
void start_extracting(void);
void final_flush(void);

/* extract_queue.c */
struct wfile *wfile_new(const char *name, unsigned di);
void wfile_hold(struct wfile *w, int fd, const struct stat *sb);
void write_one(struct wfile *w);
void wfile_free(struct wfile *w);
int queue_add(struct wfile *w);
void commit_devs(uint32_t mask);
void write_out(struct wfile **q, unsigned n, int final);
void flush_queue(void);
void detach(int fd);
int pending_inode(dev_t dev, ino_t ino);
void flush_if_pending(int dirfd, const char *path, int nofollow);
int fds_released(void);

/* extract_name.c: tar's new files made unnamed, and named once whole */
int unnamed_create(int dirfd, const char *path, int flags, mode_t mode);
void name_files(struct wfile **q, unsigned n, int final);
int names_reach(int dirfd, const char *path);
int names_dir_holds(dev_t dev, ino_t ino);

/* extract_dirmeta.c: a directory's metadata while names in it are pending */
int dir_meta_unflushed(int dirfd, const char *path, int flags, const struct timespec ts[2], int what,
		       mode_t mode);
void dir_times_restore(struct wfile **q, unsigned n);
void dir_times_drop(dev_t dev, ino_t ino);
void dir_times_entry_made(int dirfd, const char *path);
void dir_times_prune(void);
void names_add(const struct wfile *w);
void names_handoff(struct wfile *const *g, unsigned n);
void names_generation_done(void);
void names_rebuild(void);
/* path as its directory part (malloc'd; "." for none) and its last name;
 * 0 where that is not a plain name in a directory (extract_name.c). */
int path_split(const char *path, char **part, const char **base);
void xdir_put(struct xdir *d);
void xdir_names_changed(void);
int xdir_fd(const struct xdir *d);
unsigned xdirs_open(void);
void note_eexist(int dirfd, const char *path);
int defer_unlink(int dirfd, const char *path, int flags);
int victim_is(int dirfd, const char *path);
void victim_settle(void);
int link_replacing(int od, const char *op, int nd, const char *np, int flags, const char *target);
int unnamed(const struct wfile *w);
int name_link(struct wfile *w, const char *name);

/* extract_replace.c: a replacement takes its name through libbfo's journal */
struct xroot *root_of(int dirfd);
char *rel_path(const char *path);
int replace_journal(const struct wfile *w, int final);
void replace_files(struct wfile **q, unsigned n, int final);
void roots_close(void);
void roots_forget(void);

/* extract_flusher.c */
void flush_queue_behind(void);
void wait_generation(void);
int generation_has(dev_t dev, ino_t ino);
int generation_in_flight(void);
void flusher_forget(void);

/* extract_space.c */
int known_dev(dev_t dev);
int note_dev(int dirfd, const char *path, dev_t dev);
int reserve(unsigned i, uint64_t bytes);
uint64_t blocks_of(unsigned i, uint64_t n);
uint64_t dev_block(unsigned i);
void charge_name(void);
void space_forget_looks(void);
unsigned space_ndevs(void);
int dev_fd(unsigned i);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The copier's insides, shared by its files: the API and a local run
 * (copy.c), entries and their metadata (copy_entry.c), batches and read
 * results (copy_batch.c), sources and their walk (copy_tree.c), the
 * sending end of a stream (send_copier.c) and the receiving end (recv.c):
 * the rules for the destination and for the metadata a copy takes.
 */
#ifndef BFO_COPY_H
#define BFO_COPY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bfo.h"
#include "copy_who.h"
#include "sync.h"

struct wire_out;

#define BATCH_MAX_ENTRIES 16384u
#define PROGRESS_NS 250000000ull
#define WALK_THREADS 8u
#define WALK_BATCH (1u << 16)

struct hl {                         /* first copy of a multiply linked inode */
	uint64_t dev, ino;
	char *dest;
	bool pending;               /* arriving in pieces: not at its name yet */
	char **waiting;             /* other names, linked after its last piece */
	size_t nwaiting;
};

struct src {
	const char *arg;            /* as the caller named it */
	char *name;                 /* its name for the filter rules (copy_src_name) */
	struct stat st;             /* its lstat */
	char *root;                 /* without trailing slashes */
	size_t len;
	char *prefix;               /* destination, relative to the writer's root */
	bool file;                  /* the source is not a directory */
	bool fresh;                 /* its copy did not exist before the run:
				       nothing there to compare with */
};

/* Where a copier's batches go (copy_flush): the writer, for a local copy
 * and a receiver (copy.c's copy_writer_sink), or the stream, for a sender
 * (send_copier.c). */
struct copy_sink {
	/* c's batch c->e[0..n) written or sent: 0, or -errno when the run
	 * cannot go on (said, but for a cancel; the batch not written) */
	int (*put)(struct bfo_copier *c);
	/* entries carry their source's metadata whole (the receiver decides
	 * what the copy takes), file sizes in c->sizes, paths by source */
	bool stream;
};
extern const struct copy_sink copy_writer_sink;

/* A copier: one run at a time, local (copy.c), to a stream (copy.c with
 * send.c) or from one (recv.c). */
struct bfo_copier {
	struct bfo_opts ro;
	struct bfo_write_opts wo;
	uint32_t flags;
	struct bfo_copy_callbacks cb;
	atomic_bool cancel;
	/* readable once cancelled (an eventfd): a wait on the stream polls it,
	 * so a cancel that lands just before the wait still ends it */
	int wakefd;
	pthread_mutex_t lock;       /* guards st for readers on other threads */
	struct bfo_copy_stats st;
	struct bfo_stats rst;       /* the read side's, once a run or send returned */

	/* one run */
	bool archive;
	struct copy_who who;        /* whose copy it is: what metadata it may take */
	const struct copy_sink *sink;   /* where the batches go */
	struct wire_out *out;       /* bfo_copier_send: the stream (send_copier.c's) */
	uint64_t *sizes;            /* send: each FILE entry's whole size */
	size_t capsizes;
	struct bfo_ctx *rctx;
	struct bfo_writer *w;
	char *root;
	uint64_t batch_bytes_max, t0, last_progress;
	struct bfo_wentry *e;       /* the batch being built */
	size_t n, cap;
	char **owned;               /* strings the batch owns */
	size_t nowned, capowned;
	uint64_t batch_bytes;
	struct bfo_file *held;      /* read entries the batch points into */
	size_t nheld, capheld;
	uint16_t *src_of;
	size_t nsub, capsub;
	struct src *srcs;
	size_t nsrcs;
	uint64_t *skip;             /* read indices whose later pieces are skipped */
	size_t nskip, capskip;
	struct hl *hls;
	size_t nhls, caphls;
	bool oom;
	bool reading;               /* a read batch was started */
	int send_err;               /* the stream (or the destination) could not be written */
	int nospace;                /* -ENOSPC or -EDQUOT met: the run stops (copy_report) */
	int dst_fd;                 /* the destination root, compared and written (owned) */
	const atomic_bool *broken;  /* a receiver's broken stream (rx.broken): its writer stops */

	/* a sync (the destination compared through its index) */
	struct filter *filter;      /* --exclude/--include (bfo_copier_set_opts) */
	void (*item)(void *arg, int what, const char *path);
	void *item_arg;
	void (*owner_lost)(void *arg, const char *path, int status);
	void *owner_lost_arg;
	int compress;               /* zstd level of a stream sent, 0: none */
	uint64_t delete_max;        /* --delete deletes at most this many (bfo_copy_opts) */
	uint8_t *want_of;           /* by read index: the file's WANT_* */
	size_t capwant;
	struct groups *groups;      /* hard link groups the list met */
	uint64_t list_seq;          /* list batches made */
	uint64_t list_rawmeta;      /* their files' metadata from inode tables */
	bool list_errors;           /* a source was not listed whole: no --delete */
	bool cut;                   /* a receiver's run stopped before the sender's list
				       came whole (a broken stream, an answer that could
				       not be written): no --delete either */
	bool listing;               /* the run compares through an index */
	bool overlap;               /* two sources' copies share places (copy_loses) */
	bool tail_changed;          /* after the writer closed, the destination changed (deletions,
				       directories' times, the root's metadata): copy_tail_durable */
	struct sync sync;           /* what it compares with */
	struct ixjob *ixjob;        /* the index being built (copy_sync.c) */
	struct duplex *duplex;      /* a sender's back channel (send_copier.c) */
	struct prescan *prescan;    /* its list begun before the receiver answered */
	uint64_t list_tree_bytes;   /* the listed regular files' bytes */
};

/* One bfo_copier_run or bfo_copier_send: what its steps share. */
struct run {
	bool send;                  /* bfo_copier_send: to a stream */
	bool dst_is_dir;
	bool root_existed;          /* the writer's root was there before the run */
	char *single;               /* DST is the copy of one non-directory: its name */
	const char *root_meta_src;  /* the source directory the root itself stands for */
	struct stat root_meta_st;   /* its lstat, taken before the walk read it */
};

/* ---- copy_entry.c */

/* *p holds at least need elements of elem bytes (doubling); false: no memory. */
bool copy_grow(void **p, size_t *cap, size_t need, size_t elem);
/* s (malloc'd) is freed with the batch; NULL (s freed) when out of memory. */
char *copy_own(struct bfo_copier *c, char *s);
/* A zeroed entry at the end of the batch, or NULL (c->oom). */
struct bfo_wentry *copy_add(struct bfo_copier *c);
/* a/b (a or b may be ""), malloc'd. */
char *copy_join(const char *a, const char *b);
/* src's xattrs onto e, packed as the writer takes them, owned by the batch. */
void copy_take_xattrs(struct bfo_copier *c, const char *src, struct bfo_wentry *e);
/* The metadata e takes: a sender passes it whole, a local copy as copy_meta. */
void copy_meta_from(struct bfo_copier *c, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
		    uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn);
/* A run begins: statistics and who copies, reset.  A cancel that came
 * before it (a signal between the caller's handler and the run) stays. */
void copy_run_reset(struct bfo_copier *c);
/* A run returns: its cancel is forgotten. */
void copy_run_end(struct bfo_copier *c);

/* Something has the name path below rootfd (not followed). */
bool copy_exists(int rootfd, const char *path);
/* The file open at fd has every xattr e would give it, with the same
 * value (one it has and e has not stays: not compared).  An interrupted
 * copy can leave a directory with its times but not its xattrs, which come
 * last. */
bool copy_has_xattrs(int fd, const struct bfo_wentry *e);

/* The batch c->e[0..n) was written (or sent): each failed entry reported
 * with its path below the root, the others counted in the statistics. */
void copy_batch_done(struct bfo_copier *c);
/* The item callback for an entry written (or sent) at path. */
void copy_item(struct bfo_copier *c, const char *path);
/* Write (or send) the batch, report its failures, give the read entries back. */
void copy_flush(struct bfo_copier *c);
/* copy_flush when the batch is full. */
void copy_maybe_flush(struct bfo_copier *c);
/* Take what the read engine has ready; with final, everything until the
 * read batch has ended. */
void copy_drain(struct bfo_copier *c, int timeout_ms, bool final);
/* Queue a source regular file of source srcno (want: its WANT_* from the
 * list, 0 without one); its bytes come through copy_drain. */
void copy_submit_file(struct bfo_copier *c, const char *src, uint16_t srcno, uint8_t want);

/* ---- copy_tree.c */

/* Source src (st: its lstat, or NULL) gets the next slot of c->srcs and
 * goes to the read engine, the walk or the batch.  false: out of memory,
 * the run stops taking sources. */
bool copy_source(struct bfo_copier *c, struct run *r, const char *src, const struct stat *st);
/* copy_source in two steps: the slot (0; 1: src is missing, reported, no
 * slot; -ENOMEM), then the copy of slot srcno (the walk, or the list). */
int copy_source_prep(struct bfo_copier *c, struct run *r, const char *src, const struct stat *st);
void copy_source_go(struct bfo_copier *c, struct run *r, uint16_t srcno);
/* A directory, symbolic link (its target: target, or read from src when
 * NULL) or special file src (lstat st) of source srcno into the batch as
 * dest; want: its WANT_* (REPLACE, TREE: what has its name is replaced). */
void copy_add_other(struct bfo_copier *c, const char *src, const char *dest, const struct stat *st,
		    const char *target, uint16_t srcno, uint8_t want);
/* Source i's copy has the place of another's, or lies below one: the
 * destination's index scans each place once (the first, or the one
 * above). */
bool copy_covered(const struct bfo_copier *c, size_t i);
/*
 * Several sources give a name (copies that share places, c->overlap):
 * rsync's rule decides which entry is copied (its clean_flist), the first
 * source's, unless a later one's is a directory and it is not.  True when
 * source srcno's entry at rel (a directory when dir) is not the one; the
 * other sources are looked at without following a link.  The name is
 * still the copy's: the one that wins keeps it from --delete.
 */
bool copy_loses(const struct bfo_copier *c, uint16_t srcno, const char *rel, bool dir);

/* ---- copy_list.c */

struct lbatch;
/* The list of source srcno (src, its lstat st): each batch to emit (which
 * owns it then), in order.  Failures are reported (and keep --delete
 * from running).  Returns 0 or -errno. */
int copy_list_source(struct bfo_copier *c, uint16_t srcno, const char *src, const struct stat *st,
		     void (*emit)(struct bfo_copier *c, struct lbatch *b));
/* The entries of b its wants ask for: files to the read engine, the rest
 * into the batch (the root's own entry aside: its metadata comes last). */
void copy_list_apply(struct bfo_copier *c, const struct lbatch *b);
/* The list's memory (hard link groups), freed. */
void copy_list_free(struct bfo_copier *c);

/* ---- copy_prescan.c: a sender's list, begun while the connection is made */

/* Scan the prepared sources into list batches on a thread of its own. */
int copy_prescan_start(struct bfo_copier *c);
/* The receiver wants the list: each batch (those made and those to come)
 * to use, in order, then the scan's end. */
void copy_prescan_take(struct bfo_copier *c, void (*use)(struct bfo_copier *c, struct lbatch *b));
/* The receiver wants everything: the scan stopped, its batches and
 * reports dropped. */
void copy_prescan_drop(struct bfo_copier *c);
/* copy_report on the scan's thread: kept for the run's thread (true). */
bool copy_report_deferred(struct bfo_copier *c, const char *path, int status);

/* ---- copy_sync.c: a local run that compares through the index */

/* The destination's copies of the sources prepared so far are indexed on
 * a thread of its own, while the sources are listed.  0 or -errno. */
int copy_sync_start(struct bfo_copier *c);
/* The index, once built (waited for; its failures named), or NULL. */
struct dindex *copy_sync_index(struct bfo_copier *c);
/* A list batch: decided against the index, told, applied (unless
 * BFO_COPY_DRY_RUN); freed.  While the index is being built it may wait
 * in a bounded queue instead, so that the listing goes on. */
void copy_sync_emit(struct bfo_copier *c, struct lbatch *b);
/* The listing is done: the batches still waiting are decided. */
void copy_sync_flush(struct bfo_copier *c);
/* The run's end, the writer closed: --delete, then the directories'
 * times.  Frees the index. */
void copy_sync_end(struct bfo_copier *c);

/* ---- copy.c */

/* c->root (made by copy_dest) for a run: c->dst_fd on it and, when it
 * did not exist (existed false) or is not compared, the writer too; else
 * unfinished batches recovered, and the writer left for copy_writer_open.
 * Returns 0 or -errno. */
int copy_dest_open(struct bfo_copier *c, bool existed);
/* The writer on c->root, if not open yet: 0 or -errno (-ESTALE: not the
 * directory c->dst_fd compared). */
int copy_writer_open(struct bfo_copier *c);
/* Writer (unwritten) and c->dst_fd closed, after a run that could not go on. */
void copy_dest_close(struct bfo_copier *c);

/* The reads still coming are written (or, cancelled, dropped). */
void copy_run_drain(struct bfo_copier *c);
/* A run's memory, freed. */
void copy_run_cleanup(struct bfo_copier *c);

/* An entry failed: counted, and named through the error callback. */
void copy_report(struct bfo_copier *c, const char *path, int status);
/* An entry written whose owner could not be given (bfo_copy_opts'
 * owner_lost, else the error callback): counted as an error. */
void copy_owner_lost(struct bfo_copier *c, const char *path, int status);
/* The destination root (c->dst_fd) takes e's metadata, as any directory:
 * left alone when a rerun finds it so already, failures and an owner the
 * namespace cannot give reported against c->root. */
void copy_root_meta(struct bfo_copier *c, const struct bfo_wentry *e);
/* What changed at the destination after its writer closed is made
 * durable (one syncfs, as the writer's durability asks): a copy that
 * returned has deleted, for good, what it said it deleted. */
void copy_tail_durable(struct bfo_copier *c);
/* The progress callback, at most every PROGRESS_NS unless force. */
void copy_progress(struct bfo_copier *c, bool force);

/* What the first source of a copy is, for copy_dest. */
enum { COPY_SRC_OTHER = 0, COPY_SRC_DIR = 1, COPY_SRC_CONTENTS = 2 /* SRC/. */ };

/*
 * cp's rules for DST (with into, BFO_COPY_INTO's: rsync's), given nsrc
 * sources of which the first is what first says: into DST when it is a
 * directory (*dst_is_dir; with into, also a directory to be made), else
 * DST is the copy of the one source.  *root: the writer's root, and
 * whether it existed before; *single: DST's name when DST is the copy of
 * one non-directory, else NULL (both malloc'd).  Returns 0, -ENOTDIR
 * (several sources, DST not a directory) or -ENOMEM.
 */
int copy_dest(const char *dst, unsigned nsrc, int first, bool into, bool *dst_is_dir,
	      bool *root_existed, char **root, char **single);
/* The name source src takes inside a directory (malloc'd): its last
 * component, "" for SRC/. and the like (into_name). */
char *copy_src_name(const char *src);

/* The name a source named base takes inside an existing directory: ""
 * for ".", ".." and "/" (their contents go into the directory itself). */
const char *into_name(const char *base);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a local copy (copy.c) and the receiving end of a stream (recv.c)
 * share: cp's rules for the destination and for the metadata a copy takes.
 */
#ifndef BFO_COPY_H
#define BFO_COPY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfo.h"

struct wire_out;

/* Who makes the copy, which decides what metadata it may take. */
struct copy_who {
	bool archive;               /* cp -a, else cp -r */
	bool is_root;
	uid_t euid;
	gid_t egid;
	mode_t umask;
};

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
	char *root;                 /* without trailing slashes */
	size_t len;
	char *prefix;               /* destination, relative to the writer's root */
	bool file;                  /* the source is not a directory */
};

/* A copier: one run at a time, local (copy.c), to a stream (copy.c with
 * send.c) or from one (recv.c). */
struct bfo_copier {
	struct bfo_opts ro;
	struct bfo_write_opts wo;
	uint32_t flags;
	struct bfo_copy_callbacks cb;
	atomic_bool cancel;
	pthread_mutex_t lock;       /* guards st for readers on other threads */
	struct bfo_copy_stats st;
	struct bfo_stats rst;       /* the read side's, once a run or send returned */

	/* one run */
	bool archive;
	struct copy_who who;        /* whose copy it is: what metadata it may take */
	struct wire_out *out;       /* bfo_copier_send: batches go here, not to w */
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
	int send_err;               /* the stream could not be written */
	int dst_fd;                 /* the writer's root, for BFO_COPY_UPDATE (not owned) */
};

void copy_who_init(struct copy_who *who, bool archive);
/* A run begins: statistics, cancellation and who copies, reset. */
void copy_run_reset(struct bfo_copier *c);

/*
 * BFO_COPY_UPDATE: is the file at path (below rootfd, not followed) already
 * a copy of a source file of this size and mtime (with BFO_COPY_CHECKSUM:
 * this size and these bytes, data being the whole file, or NULL for a file
 * in pieces, which is then copied again)?  true counts it as skipped.
 */
bool copy_unchanged(struct bfo_copier *c, int rootfd, const char *path, uint64_t size,
		    int64_t msec, uint32_t mnsec, const void *data);

/* The batch c->e[0..n) was written (or sent): each failed entry reported
 * with its path below the root, the others counted in the statistics. */
void copy_batch_done(struct bfo_copier *c);

/* An entry failed: counted, and named through the error callback. */
void copy_report(struct bfo_copier *c, const char *path, int status);
/* The progress callback, at most every PROGRESS_NS unless force. */
void copy_progress(struct bfo_copier *c, bool force);

/* The metadata e takes from a source with this mode, owner and times: all
 * of it with -a (owner as root only, set-id bits only with their owner),
 * the permission bits less the umask without. */
void copy_meta(const struct copy_who *who, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
	       uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn);

/*
 * cp's rules for DST, given nsrc sources of which the first is a directory
 * or not: into DST when it is a directory (*dst_is_dir), else DST is the
 * copy of the one source.  *root: the writer's root; *single: DST's name
 * when DST is the copy of one non-directory, else NULL (both malloc'd).
 * Returns 0, -ENOTDIR (several sources, DST not a directory) or -ENOMEM.
 */
int copy_dest(const char *dst, unsigned nsrc, bool first_is_dir, bool *dst_is_dir,
	      char **root, char **single);

/* The name a source named base takes inside an existing directory: ""
 * for ".", ".." and "/" (their contents go into the directory itself). */
const char *into_name(const char *base);

#endif

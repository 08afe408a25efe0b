/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo.h - Batch-File Operations: read, write and copy many small files as
 * one batch, with few large I/Os sorted by disk address.
 *
 * This is libbfo's only public header.  Conventions, as in liburing:
 *  - every exported name is bfo_ + object + verb;
 *  - functions return 0, a count, or a negative errno value, and never
 *    read or write the thread's errno;
 *  - handles are opaque; public structs have fixed-width fields, a leading
 *    `size` member where the caller fills them (extensible like openat2's
 *    struct open_how) and reserved padding for later fields.
 *
 * Reading a directory (or any files and directories), in short:
 *
 *	static int use(void *arg, const struct bfo_file *f)
 *	{
 *		... f->path, f->status, f->data[0..f->length) ...
 *		return 0;                        // nonzero: stop
 *	}
 *	bfo_ctx_create(&ctx, NULL);
 *	failed = bfo_read_tree(ctx, (const char *[]){ "dir" }, 1, 0, use, NULL);
 *	bfo_ctx_destroy(ctx);
 *
 * The same batch driven by the caller, paths it names itself:
 *
 *	struct bfo_opts o;
 *	struct bfo_ctx *ctx;
 *	bfo_opts_init(&o);
 *	bfo_ctx_create(&ctx, &o);
 *	bfo_read_submit(ctx, paths, n);          // may accept fewer than n
 *	bfo_read_finish(ctx);                    // no more paths
 *	while ((k = bfo_read_wait(ctx, files, 64, -1)) > 0) {
 *		... use files[0..k) ...
 *		bfo_read_release(ctx, files, k);
 *	}
 *	bfo_ctx_destroy(ctx);
 *
 * The engine works in two phases per window of files (metadata of the whole
 * window first, then its data in an order chosen for the device) and
 * pipelines windows, so a caller that submits more paths than one window
 * holds streams through them with bounded memory, descriptors and threads.
 */
#ifndef BFO_H
#define BFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BFO_VERSION_MAJOR 0
#define BFO_VERSION_MINOR 1
#define BFO_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, as returned by bfo_version(). */
#define BFO_VERSION_NUMBER \
	(BFO_VERSION_MAJOR * 10000 + BFO_VERSION_MINOR * 100 + BFO_VERSION_PATCH)

/* Data engines.  AUTO picks, per file system, the best one available. */
enum bfo_engine {
	BFO_ENGINE_AUTO = 0,
	/* O_DIRECT reads of merged regions from the file system's block
	 * device, sorted by physical offset; needs a readable device node and
	 * ext2/3/4 or XFS. */
	BFO_ENGINE_RAW = 1,
	/* per-file reads through io_uring at high queue depth. */
	BFO_ENGINE_URING = 2,
	/* a thread pool of pread() calls. */
	BFO_ENGINE_PORTABLE = 3,
	/* no data was read (metadata-only and plan-only batches, failures
	 * found in the metadata phase). */
	BFO_ENGINE_NONE = 4,
};

/* The order in which the uring and portable engines read files. */
enum bfo_order {
	/* physical order (FIEMAP) on rotational devices, inode order without
	 * any FIEMAP call elsewhere: mapping every file costs more than it
	 * saves on flash.  On a rotational device a window of 1,024 files or
	 * more maps every 8th file first and keeps inode order when that
	 * sample shows it is physical order already. */
	BFO_ORDER_AUTO = 0,
	BFO_ORDER_INODE = 1,
	BFO_ORDER_PHYSICAL = 2,
};

/* bfo_opts.flags */
#define BFO_READ_NOFOLLOW       (1u << 0) /* a symlink is refused: -ELOOP */
#define BFO_READ_STOP_ON_ERROR  (1u << 1) /* end the batch at the first failure */
#define BFO_READ_METADATA_ONLY  (1u << 2) /* phase 1 only: no data is read */
#define BFO_READ_PLAN_ONLY      (1u << 3) /* phase 1 plus the ORDER_LIST, no data */

/*
 * Options of a context.  Zero in any numeric field means "the default";
 * bfo_opts_init() fills the defaults so callers can read them.
 */
struct bfo_opts {
	uint32_t size;          /* sizeof(struct bfo_opts) as the caller knows it */
	uint32_t flags;         /* BFO_READ_* */
	uint32_t engine;        /* enum bfo_engine */
	uint32_t order;         /* enum bfo_order */
	uint32_t window_files;  /* files planned together (phase 1) */
	uint32_t queue_depth;   /* I/Os in flight in phase 2 */
	uint32_t threads;       /* metadata and portable-engine threads */
	uint32_t reserved0;
	uint64_t window_bytes;  /* data bytes dispatched together (phase 2) */
	uint64_t arena_bytes;   /* memory that holds delivered data */
	uint64_t merge_gap;     /* raw: read through gaps up to this size (in all at most a
				 * quarter of a region's data); 1: adjacent only */
	uint64_t max_io;        /* raw: largest single read */
	uint64_t large_extent;  /* raw: extents above this are not merged */
	uint64_t large_file;    /* files above this are delivered in pieces of this size */
	uint64_t reserved[8];
};

/*
 * A delivered file (or piece of a file).  160 bytes, fixed layout, so
 * bindings can read an array of them from a direct buffer.
 *
 * A file of at most opts.large_file bytes is delivered once, with offset 0,
 * length == size and BFO_FILE_LAST set.  A larger file is delivered as
 * consecutive pieces in offset order; the last one has BFO_FILE_LAST.  If a
 * piece fails, an entry with status < 0 and BFO_FILE_LAST ends that file and
 * the pieces before it must be discarded.  The metadata (times, owner,
 * links) is the file's as stat'ed before its bytes were read.
 *
 * Pseudo files, whose st_size is not their size (procfs, sysfs, debugfs,
 * tracefs, configfs, securityfs, cgroup and other kernel file systems; and
 * files of size 0 on file systems other than ext2/3/4, XFS, btrfs and
 * tmpfs), are read to EOF as cat does, whatever st_size says: size is then
 * the number of bytes read, delivered in one entry.  One of more than
 * opts.large_file bytes fails with -EFBIG.
 */
#define BFO_FILE_LAST     (1u << 0) /* last (or only) entry of this file */
/* The file had no extended attributes (no ACL, no security label) when
 * its metadata was read: set only where that is known without asking the
 * file by name (the raw engine's inode-table metadata on ext4), so a copier
 * may skip listing them.  Unset says nothing. */
#define BFO_FILE_NO_XATTRS (1u << 1)

struct bfo_file {
	uint64_t index;         /* position of the path in the batch, from 0 */
	union {                 /* the path as submitted (library copy) */
		const char *path;
		uint64_t path_u64;
	};
	union {                 /* the bytes; NULL when length is 0 or status < 0 */
		const void *data;
		uint64_t data_u64;
	};
	uint64_t offset;        /* offset of data within the file */
	uint64_t length;        /* bytes at data */
	uint64_t size;          /* file size */
	int64_t mtime_sec;
	int64_t ctime_sec;
	int64_t atime_sec;
	uint64_t ino;
	uint64_t dev;           /* major << 32 | minor */
	uint64_t cookie;        /* private to the library: identifies the entry */
	uint32_t mtime_nsec;
	uint32_t ctime_nsec;
	uint32_t atime_nsec;
	uint32_t mode;          /* st_mode, also set for refused file types */
	uint32_t uid, gid;
	uint32_t nlink;
	int32_t status;         /* 0, or -errno: see bfo_strerror() */
	uint16_t engine;        /* enum bfo_engine that produced this entry */
	uint16_t flags;         /* BFO_FILE_* */
	uint32_t reserved0;
	uint64_t reserved[3];
};

/*
 * What a batch did.  Times are wall-clock nanoseconds; meta and data are
 * each the time during which at least one window was in that phase, so
 * with pipelining they overlap and can add up to more than total.
 */
struct bfo_stats {
	uint64_t files;         /* paths submitted */
	uint64_t files_ok;      /* files delivered completely */
	uint64_t files_failed;  /* files delivered with status < 0 */
	uint64_t bytes;         /* file bytes delivered */
	uint64_t device_bytes;  /* bytes read by I/Os, merged gaps included */
	uint64_t ios;           /* data read I/Os issued */
	uint64_t regions;       /* raw: merged regions read */
	uint64_t extents;       /* extents mapped (FIEMAP) */
	uint64_t gap_bytes;     /* raw: bytes read through and discarded */
	uint64_t fallback_files;/* files that left the raw or uring path for a per-file read */
	uint64_t windows;       /* planning windows */
	uint64_t ns_meta;
	uint64_t ns_data;
	uint64_t ns_total;
	uint32_t engine;        /* the engine that read most bytes (enum bfo_engine) */
	uint32_t engines;       /* bit (1 << engine) for every engine that ran */
	uint64_t files_by_engine[5]; /* files delivered, by the engine that read them
				   (BFO_ENGINE_NONE: no data read: empty under plan,
				   metadata only, failed before a read) */
	uint64_t direct_regions;/* raw: regions read straight into the file's buffer, no copy */
	uint64_t files_rawmeta; /* raw on ext4: files whose metadata and extents were read from
				   the inode tables on the device, with no statx, open or FIEMAP */
	/* The paths within an engine, of files delivered (bfo read --stats
	 * names each): */
	uint64_t files_raw_itable; /* of files_by_engine[RAW]: metadata from the inode
				      tables (the others: statx, open and FIEMAP) */
	uint64_t files_pieces;  /* of files_by_engine[PORTABLE]: files larger than
				   large_file, read and delivered in pieces */
	uint64_t reserved[4];
};

struct bfo_ctx;

/*
 * bfo_version - MAJOR * 10000 + MINOR * 100 + PATCH of the loaded library.
 */
int bfo_version(void);

/*
 * bfo_opts_init - fill *opts with the defaults and set opts->size.
 */
void bfo_opts_init(struct bfo_opts *opts);

/*
 * bfo_ctx_create - make a context: worker threads, an io_uring instance
 * when the engine can use one, and the memory arena.
 *
 * opts may be NULL for the defaults.  Returns 0 and stores the context in
 * *ctx, or -EINVAL for a bad option, -E2BIG when opts->size is larger than
 * this library knows and the extra bytes are not zero, -EOPNOTSUPP when the
 * requested engine cannot run here (see bfo_ctx_describe() for why),
 * -ENOMEM.  The caller owns the context and frees it with bfo_ctx_destroy().
 */
int bfo_ctx_create(struct bfo_ctx **ctx, const struct bfo_opts *opts);

/*
 * bfo_ctx_destroy - cancel any batch in flight, wait for its I/O, stop the
 * threads and free everything, including entries not yet released.
 * No other call on ctx may run concurrently.  NULL is ignored.
 */
void bfo_ctx_destroy(struct bfo_ctx *ctx);

/*
 * bfo_ctx_reset - make ctx ready for an unrelated batch, as if new, while
 * keeping its threads, io_uring instance, arena pages and device cache:
 * creating a context costs about a millisecond of threads, mappings and
 * ring setup before any I/O, so a caller that reads many small batches
 * (one per Spark task, say) keeps contexts in a pool and resets one
 * between users instead of destroying it.
 *
 * A batch in flight is cancelled and its I/O waited for; entries not yet
 * released are released (their data and paths must no longer be used,
 * and releasing them again returns -EINVAL); the statistics read zero and
 * a stop by BFO_READ_STOP_ON_ERROR or bfo_read_cancel() is forgotten.
 * Options are those the context was created with.  A context whose batch
 * simply ended needs no reset to start the next one (see
 * bfo_read_submit()); reset is for handing it to a new owner.
 * No other call on ctx may run concurrently.  Returns 0, or -EINVAL for a
 * NULL ctx.
 */
int bfo_ctx_reset(struct bfo_ctx *ctx);

/*
 * bfo_ctx_describe - write a NUL-terminated, human-readable line about the
 * engines this context can use (and why not the others) into buf.
 * Returns the length the full text needs, like snprintf.
 */
int bfo_ctx_describe(struct bfo_ctx *ctx, char *buf, size_t len);

/*
 * bfo_read_submit - add paths to the current batch; the first call after
 * a batch ended starts a new one (indices restart at 0, stats reset).
 *
 * The library copies the strings.  It accepts paths while its input queue
 * has room and returns how many it took (0..n, in order); the caller
 * submits the rest after consuming results with bfo_read_wait().
 * Returns -EINVAL for a NULL path, -ECANCELED while a batch stopped by
 * BFO_READ_STOP_ON_ERROR or bfo_read_cancel() is not yet drained by
 * bfo_read_wait(), -EBUSY after bfo_read_finish() until the batch ended.
 */
int bfo_read_submit(struct bfo_ctx *ctx, const char *const *paths, unsigned n);

/*
 * bfo_read_submit_packed - like bfo_read_submit() for NUL-terminated paths
 * laid end to end in buf[0..len) (the form `find -print0` writes and
 * bindings can pass in one buffer).  Returns the number of bytes consumed,
 * always at a path boundary, or a negative errno value as above; -EINVAL
 * if buf does not end with a NUL.
 */
long bfo_read_submit_packed(struct bfo_ctx *ctx, const char *buf, size_t len);

/*
 * bfo_read_finish - declare that the current batch has no more paths.
 * Returns 0, or -EINVAL when no batch was started (a batch of zero paths
 * is started by calling bfo_read_submit(ctx, NULL, 0) first).
 */
int bfo_read_finish(struct bfo_ctx *ctx);

/*
 * bfo_read_flush - plan the paths submitted so far now, without ending the
 * batch.  A window is otherwise formed only when it is full (or at
 * bfo_read_finish()); a caller that learns its paths a few hundred at a
 * time (the tar plugin, from tar's directory listings) flushes after each
 * lot and keeps submitting: every lot is delivered without a finish, the
 * indices go on counting, and while one lot's data is read the next one's
 * metadata phase runs, where a batch per lot would leave the device idle
 * between them.  Returns 0 (also after bfo_read_finish(): nothing to do),
 * -EINVAL when no batch was started, -ECANCELED while a stopped batch is
 * not yet drained.
 */
int bfo_read_flush(struct bfo_ctx *ctx);

/*
 * bfo_read_wait - fetch completed entries, in completion order.
 *
 * Blocks until at least one entry is ready or timeout_ms passes (-1: no
 * limit, 0: poll), then stores up to max entries in files.  Every entry
 * must be given back with bfo_read_release(); until then its path and data
 * stay valid and its arena space stays in use.
 *
 * Returns the number of entries (> 0); 0 when the batch has ended (all
 * entries delivered after bfo_read_finish(), or the batch was stopped);
 * -EAGAIN when nothing is in flight and the batch needs more paths,
 * bfo_read_flush() or bfo_read_finish(); -ENOBUFS when the arena is full of entries the
 * caller still holds and nothing else can complete; -ETIME on timeout;
 * -EINVAL when no batch was started.
 */
int bfo_read_wait(struct bfo_ctx *ctx, struct bfo_file *files, unsigned max,
		  int timeout_ms);

/*
 * bfo_read_release - give entries returned by bfo_read_wait() back.  Their
 * data and path must not be used afterwards.  Returns 0, or -EINVAL for an
 * entry this context did not deliver or already released (the rest of the
 * array is still released).
 */
int bfo_read_release(struct bfo_ctx *ctx, const struct bfo_file *files,
		     unsigned n);

/*
 * bfo_read_cancel - end the current batch early.  Entries not yet
 * delivered are dropped, in-flight I/O is waited for, and bfo_read_wait()
 * returns 0 once that is done (also after an -ENOBUFS, while the caller
 * still holds entries); entries already delivered stay valid until
 * released.  May be called from any thread.  Returns 0.
 */
int bfo_read_cancel(struct bfo_ctx *ctx);

/*
 * bfo_read_stats - copy the current (or last) batch's statistics into
 * *stats; safe while the batch runs, for progress.  Returns 0.
 */
int bfo_read_stats(struct bfo_ctx *ctx, struct bfo_stats *stats);

/*
 * What bfo_read_tree() hands each entry to: the entry (valid during the
 * call only; its data and path are released when it returns) and the arg
 * given.  Returns 0 to go on; any other value stops the batch.
 */
typedef int (bfo_read_tree_fn)(void *arg, const struct bfo_file *file);

/*
 * bfo_read_tree - read files and directories as one batch, in one call.
 *
 * Each directory of paths[0..n) is walked (bfo_walk_start(): its regular
 * files, and the symbolic links that lead to one, in inode order; special
 * files and links to directories are skipped), anything else is read as
 * the path it is, and every entry the batch delivers is handed to fn, in
 * completion order, then released.  fn is a bfo_read_tree_fn,
 * int fn(void *arg, const struct bfo_file *file): the entry is valid
 * during the call only; fn returns 0 to go on, anything else to stop.
 *
 * The batch is the one bfo_read_submit() and bfo_read_wait() make, with
 * the same guarantees: one entry per file, or consecutive pieces in offset
 * order for a file above opts.large_file, the last with BFO_FILE_LAST;
 * status 0 or -errno per file (a path that does not exist gives -ENOENT, a
 * file that cannot be opened -EACCES); the context's flags apply
 * (BFO_READ_NOFOLLOW, BFO_READ_STOP_ON_ERROR...).  A directory the walk
 * cannot read (the root included) is handed to fn as an entry of its own:
 * status < 0, mode S_IFDIR, BFO_FILE_LAST, no data, and index UINT64_MAX
 * as it is no path of the batch.  A symbolic link named in paths is
 * followed to decide whether it is a directory (find -H's rule).
 *
 * Memory and descriptors are those of the batch and of one walk at a
 * time, whatever the size of the trees: paths are submitted while the
 * context's input queue has room (two windows) and results are consumed
 * while it is full.  flags: BFO_WALK_NOFOLLOW (the walks skip symbolic
 * links), BFO_WALK_UNSORTED; 0 for the defaults.  ctx must have no batch in
 * progress; it may be used again after the call.
 *
 * Returns the number of files (and directories) that failed, 0 when every
 * one was read; fn's value when it stopped the batch (negative as it is,
 * -ECANCELED for a positive one); -ECANCELED when bfo_read_cancel() ended
 * the batch early; -EINVAL (NULL ctx or fn or path, an unknown flag),
 * -ENOMEM, or another error of bfo_read_submit() or bfo_read_wait().  On
 * any early end the rest of the batch is cancelled and never handed to fn.
 */
long bfo_read_tree(struct bfo_ctx *ctx, const char *const *paths, unsigned n, unsigned flags,
		   bfo_read_tree_fn *fn, void *arg);

/*
 * bfo_engine_name - "auto", "raw", "uring", "portable" or "none".
 * Returns "?" for an unknown value.  The string is static.
 */
const char *bfo_engine_name(int engine);

/*
 * bfo_strerror - text for a status or return value (0 or -errno), like
 * strerror() but thread-safe, with BFO's one errno of its own meaning:
 * -ESTALE, the file changed while it was being read (size, times or
 * identity differed before and after) and nothing was delivered.
 * As a read status, -EINVAL means "not a regular file" (bfo_file.mode has
 * the type) and -ELOOP "a symbolic link" under BFO_READ_NOFOLLOW.
 * The string is static.
 */
const char *bfo_strerror(int status);

/* ================================================================ write */

/*
 * Writing a batch (BFO_w).  A writer is opened on a destination root; every
 * path it writes is relative to that root and is resolved beneath it
 * without following any symbolic link.  bfo_writer_write() writes one batch:
 *
 *  1. a manifest of the batch (paths, sizes, checksums) is written to
 *     ROOT/.bfo-journal/ and made durable before any data;
 *  2. data, in one large stream: files are created (never over an existing
 *     one unless BFO_WRITE_REPLACE), directory by directory;
 *  3. metadata (mode, owner, times) of the batch;
 *  4. one durability point for the whole batch (BFO_DURABILITY_BATCH);
 *  5. the manifest is removed.
 *
 * After a crash, bfo_journal_recover() (also run by bfo_writer_open() and
 * `bfo recover`) finishes or removes every file of an unfinished batch:
 * each file is then complete or absent, never torn.
 */

/* Engines of the writer. */
enum bfo_wengine {
	BFO_WENGINE_AUTO = 0,
	/* the batch's data in one stem file, written sequentially and made
	 * durable, then shared into each file with FICLONERANGE (XFS with
	 * reflink, btrfs; -EOPNOTSUPP elsewhere); the stem is removed after
	 * the batch.  Chosen by name only: AUTO is BATCHED */
	BFO_WENGINE_STEM = 1,
	/* files created and written directory by directory on worker
	 * threads, the writeback behind them; one syncfs for the batch (what
	 * AUTO picks, on every file system) */
	BFO_WENGINE_BATCHED = 2,
	/* the batched engine's plan, each whole file submitted as one io_uring
	 * open/write/close chain instead of on worker threads (io-wq capped at
	 * 8 workers; files in pieces and directories still go to the threads).
	 * Like the read engines, which is faster depends on the kernel and the
	 * file system; -EOPNOTSUPP at open where io_uring is unavailable. */
	BFO_WENGINE_URING = 3,
};

enum bfo_durability {
	BFO_DURABILITY_BATCH = 0,  /* durable when bfo_writer_write() returns */
	BFO_DURABILITY_NONE = 1,   /* page cache only, like cp; no manifest */
	/* each file durable as it is written, before the next one is made
	 * (like rsync --fsync): for a destination consumed file by file while
	 * the batch goes on.  An fsync per file: slower than BATCH. */
	BFO_DURABILITY_EACH = 2,
	/* durable when bfo_writer_close() returns: each batch's manifest is
	 * durable before its data, as with BATCH, but up to 64 consecutive
	 * batches share one syncfs (at close, or when the 65th comes), so a
	 * long stream of batches (a copy) does not wait on the disk once per
	 * batch.  After a crash every batch not yet synced is recovered like
	 * an unfinished one: its files complete or absent.  Batches that
	 * replace files or continue large files in pieces are synced at once. */
	BFO_DURABILITY_CLOSE = 3,
};

/* bfo_write_opts.flags */
#define BFO_WRITE_REPLACE        (1u << 0) /* an existing target is replaced (atomically) */
#define BFO_WRITE_STOP_ON_ERROR  (1u << 1) /* the rest of a batch fails with -ECANCELED */
/* (1u << 2) was BFO_WRITE_URING, now BFO_WENGINE_URING; reserved */
/* the root must exist (-ENOENT at open otherwise) instead of being made
 * with its parents: for a writer inside a directory that another process
 * may remove meanwhile (a job's staging directory), which must not come
 * back */
#define BFO_WRITE_NO_MKROOT      (1u << 3)

struct bfo_write_opts {
	uint32_t size;          /* sizeof(struct bfo_write_opts) as the caller knows it */
	uint32_t flags;         /* BFO_WRITE_* */
	uint32_t engine;        /* enum bfo_wengine */
	uint32_t durability;    /* enum bfo_durability */
	uint32_t threads;       /* worker threads (0: default) */
	uint32_t queue_depth;   /* io_uring chains in flight (0: default) */
	uint64_t reserved[8];
};

/* Types of a bfo_wentry. */
enum bfo_wtype {
	BFO_WTYPE_FILE = 0,      /* data/length; pieces with BFO_WENTRY_MORE */
	BFO_WTYPE_DIR = 1,       /* created if missing; metadata applied at close */
	BFO_WTYPE_SYMLINK = 2,   /* data: the target, NUL-terminated */
	BFO_WTYPE_HARDLINK = 3,  /* data: existing path beneath the root, NUL-terminated */
	BFO_WTYPE_FIFO = 4,
	BFO_WTYPE_CHR = 5,       /* rdev */
	BFO_WTYPE_BLK = 6,       /* rdev */
	BFO_WTYPE_SOCK = 7,      /* a Unix socket's node (mknod S_IFSOCK, as cp -a
				    makes it); recovered like a fifo */
};

/* Bytes of the longest relative path a writer entry may have, its NUL
 * included: a longer one fails with -EINVAL.  Directories are resolved one
 * component at a time, so trees deeper than PATH_MAX are written. */
#define BFO_WPATH_MAX 32768

/* bfo_wentry.flags */
#define BFO_WENTRY_OWNER  (1u << 0) /* set uid/gid (root only; else -EPERM;
				       ids not mapped: owner_status) */
#define BFO_WENTRY_TIMES  (1u << 1) /* set atime/mtime (else the current time) */
#define BFO_WENTRY_MORE   (1u << 2) /* FILE: more pieces of this file follow in
				       later calls (data at offset); the file
				       appears at its path with its last piece */
#define BFO_WENTRY_ABORT  (1u << 3) /* FILE: drop a file whose earlier pieces
				       were written (its source failed) */
/* This entry replaces what has its name (atomically, as BFO_WRITE_REPLACE
 * does for every entry of a writer), while the batch's other entries are
 * created as usual, never over anything: a copier marks the entries it
 * found at the destination, and the rest of a first copy goes without a
 * temporary name and a second durability point. */
#define BFO_WENTRY_REPLACE (1u << 4)
/* With BFO_WENTRY_REPLACE: what has the entry's name may also be of the
 * other kind, a directory (with everything below it) where the entry is
 * not one, or a non-directory where it is one (rsync's type change).  The
 * name changes hands atomically, once the entry's data is durable for a
 * file (renameat2 RENAME_EXCHANGE), and what it displaced is removed only
 * after the batch's durability point: a crash leaves the old entry or the
 * new one at the name, and `bfo recover` removes what is left of the other.
 * A directory entry's children in the same batch go into the new
 * directory. */
#define BFO_WENTRY_REPLACE_TREE (1u << 5)

/* One entry of a batch.  128 bytes, fixed layout. */
struct bfo_wentry {
	union {                 /* relative path: no leading '/', no '.' or '..' */
		const char *path;
		uint64_t path_u64;
	};
	union {                 /* FILE bytes; SYMLINK/HARDLINK target */
		const void *data;
		uint64_t data_u64;
	};
	uint64_t length;        /* FILE: bytes at data */
	uint64_t offset;        /* FILE: offset of data in the file (pieces) */
	uint64_t rdev;          /* CHR/BLK: major << 32 | minor */
	int64_t atime_sec;
	int64_t mtime_sec;
	uint32_t atime_nsec;
	uint32_t mtime_nsec;
	uint32_t type;          /* enum bfo_wtype */
	uint32_t mode;          /* permission bits (07777) */
	uint32_t uid, gid;
	uint32_t flags;         /* BFO_WENTRY_* */
	int32_t status;         /* out: 0 or -errno */
	uint16_t engine;        /* out: enum bfo_wengine that wrote it */
	uint16_t reserved0;
	/* out: 0, or, with status 0 and BFO_WENTRY_OWNER, -EINVAL: the user
	 * namespace does not map the uid or gid (unshare -r, a rootless
	 * container), and the entry was written and kept as cp -a and rsync
	 * keep it then, the caller's, its permissions the owner's only (mode
	 * & 0700: no set-id bit, nothing for a group it was not meant for) */
	int32_t owner_status;
	union {                 /* extended attributes to set, or NULL: records of
				   name, NUL, uint32_t value length (host order),
				   value bytes, back to back */
		const void *xattrs;
		uint64_t xattrs_u64;
	};
	uint64_t xattrs_len;    /* bytes at xattrs */
	uint64_t reserved[2];
};

/* What a writer did, over all its batches. */
struct bfo_write_stats {
	uint64_t batches;
	uint64_t files;         /* entries written successfully */
	uint64_t failed;        /* entries with status < 0 */
	uint64_t bytes;         /* file bytes written */
	uint64_t syncs;         /* durability points (syncfs/fsync calls) */
	uint64_t clones;        /* stem: FICLONERANGE calls */
	uint64_t ns_manifest, ns_data, ns_meta, ns_sync;
	uint32_t engine;        /* enum bfo_wengine in use */
	uint32_t reserved0;
	/* DURABILITY_BATCH and CLOSE: syncfs calls run behind the data as it
	 * is written (one per 8 MiB at most), so that the device writes while
	 * the rest is created (not durability points: the batch's syncfs, or
	 * with CLOSE the writer's own at close, are) */
	uint64_t writebacks;
	uint64_t reserved[7];
};

struct bfo_writer;

/*
 * bfo_writer_open - open a writer on the directory root (created if
 * missing, with its parents, unless BFO_WRITE_NO_MKROOT: then -ENOENT).
 * Runs recovery of unfinished batches found in
 * ROOT/.bfo-journal first.  Picks the engine (AUTO: batched, on every
 * file system).  Returns 0 and the writer in
 * *w, or -errno (-ENOTDIR, -EROFS, -EACCES, -EOPNOTSUPP for a forced stem
 * engine the file system cannot run...).  The caller owns the writer and
 * ends it with bfo_writer_close().
 */
int bfo_writer_open(struct bfo_writer **w, const char *root, const struct bfo_write_opts *opts);

/*
 * bfo_writer_write - write entries[0..n) as one batch and set every
 * entry's status (0 or -errno: -EEXIST target exists, -EINVAL bad path
 * ('..', absolute, empty, the journal's name), -ELOOP a symlink in the
 * destination path, -ENOSPC, -EDQUOT, -ECANCELED after a failure with
 * BFO_WRITE_STOP_ON_ERROR...).  A failed file is never left torn: it is
 * removed.  The entries and their data are only read during the call.
 *
 * Returns the number of entries that failed (0: all written), or -errno
 * when the batch could not run at all (the manifest could not be made
 * durable: every status is then that error and nothing was written).
 */
int bfo_writer_write(struct bfo_writer *w, struct bfo_wentry *entries, unsigned n);

/*
 * bfo_writer_stats - copy the writer's statistics.  Returns 0.
 */
int bfo_writer_stats(struct bfo_writer *w, struct bfo_write_stats *stats);

/*
 * bfo_writer_cancel - make the writer stop soon, from any thread or a
 * signal handler (async-signal-safe): in the batch in progress, files not
 * begun yet fail with -ECANCELED and are never made, those begun are
 * finished, and the batch ends as any batch does (its durability point,
 * one syncfs of what it wrote); later batches write nothing (every entry
 * -ECANCELED).  bfo_writer_close() then skips the syncfs that would make
 * BFO_DURABILITY_CLOSE's deferred batches durable (up to 64 of them):
 * their manifests stay in ROOT/.bfo-journal, where bfo_journal_recover()
 * (`bfo recover`, or the next writer opened on ROOT) checks their files,
 * as after a crash.  No file is left torn.  Returns 0, or -EINVAL.
 */
int bfo_writer_cancel(struct bfo_writer *w);

/*
 * bfo_writer_close - apply the metadata of directories written (times
 * last, deepest first, as cp -a and tar do), drop pieces of files that
 * never got their last piece, make that durable (unless DURABILITY_NONE),
 * remove the journal directory and free the writer.  The root's mtime is
 * then what it was at bfo_writer_open() when no batch made, replaced or
 * removed a name in the root nor gave it metadata (the journal's coming
 * and going is not the caller's change: rsync -a leaves DST's mtime so).
 * Returns 0 or the first -errno met; the writer is freed either way.
 * NULL is ignored.
 */
int bfo_writer_close(struct bfo_writer *w);

/* What recovery did. */
struct bfo_recover_stats {
	uint64_t batches;       /* unfinished batches found */
	uint64_t complete;      /* files found complete (metadata finished) */
	uint64_t finished;      /* files completed from a stem */
	uint64_t removed;       /* torn files and leftovers removed */
	uint64_t untrusted;     /* manifests not acted on: not a single-linked
				 * file of the effective user's own */
	uint64_t reserved[3];
};

/*
 * bfo_journal_recover - finish or remove every file of the unfinished
 * batches recorded in ROOT/.bfo-journal, then remove their manifests.
 * Touches nothing the batches did not write.  Returns the number of
 * batches recovered (0: none), or -errno; stats may be NULL.
 */
int bfo_journal_recover(const char *root, struct bfo_recover_stats *stats);

/*
 * bfo_wengine_name - "auto", "stem" or "batched"; "?" otherwise.
 */
const char *bfo_wengine_name(int engine);

/* ================================================================= copy */

/*
 * Copying trees (BFO_m): the read engine on the sources piped into a
 * writer on the destination, both at once, with bounded memory.  Regular
 * files stream out of the read engine in disk order; directories, links
 * and special files come from the walk; batches of at most a quarter of the
 * read arena go to the writer while the read engine reads ahead.
 *
 * Destination rules are cp's: with several sources, or when dst is an
 * existing directory, each source is copied to dst/basename(source);
 * otherwise the one source becomes dst.  A source SRC/. (or SRC/..) is
 * the directory's contents: they go into dst, which takes SRC's metadata.
 * With BFO_COPY_INTO they are rsync's instead, so that the same copy run
 * twice lands in the same place (see there).
 */

/* bfo_copier_create flags */
#define BFO_COPY_ARCHIVE  (1u << 0) /* like cp -a: mode bits, owner and group (as
				       root), atime/mtime, symlinks, hard links,
				       special files, xattrs where both sides can */
#define BFO_COPY_REPLACE  (1u << 1) /* replace existing destination files */
/* Files whose copy already exists with the same size and mtime are left
 * as they are (and counted as skipped), others replaced: running the same
 * copy again finishes one that was interrupted. */
#define BFO_COPY_UPDATE   (1u << 2)
#define BFO_COPY_CHECKSUM (1u << 3) /* with UPDATE: same size and content
				       (xxh3), whatever the mtime */
/* rsync's destination rule instead of cp's: a directory source (other
 * than SRC/.), and every source when there are several, is copied to
 * dst/basename(source) whether dst exists or not (dst is made, with its
 * parents, when missing); so is a file source when dst ends with '/'.
 * SRC/. still copies the contents into dst; a single file onto a dst that
 * is not a directory and does not end with '/' becomes dst, as with cp.
 * (rsync's SRC/ is SRC/. here: the bfo command maps one onto the other.)
 * For bfo_copier_recv, the receiver's flag decides. */
#define BFO_COPY_INTO     (1u << 4)
/* With UPDATE: what the destination's copies have and the sources do not
 * is deleted, once the copy is durable (rsync's --delete): within the
 * copied trees only, never through a symbolic link, nothing when a source
 * could not be listed whole.  An entry of the other kind in the way of a
 * copy (a directory where a file goes, or the reverse) goes at once. */
#define BFO_COPY_DELETE   (1u << 5)
/* Compare and report (bfo_copy_opts' item callback) what would be copied
 * and deleted, and change nothing. */
#define BFO_COPY_DRY_RUN  (1u << 6)

struct bfo_copy_stats {
	uint64_t files;         /* regular files copied */
	uint64_t others;        /* directories, links, special files created */
	uint64_t bytes;         /* file bytes copied */
	uint64_t errors;        /* entries that failed */
	uint64_t batches;       /* writer batches */
	uint64_t ns_total;
	uint32_t read_engine;   /* enum bfo_engine that read most bytes */
	uint32_t write_engine;  /* enum bfo_wengine */
	uint64_t skipped;       /* files left as they were (BFO_COPY_UPDATE) */
	uint64_t deleted;       /* entries deleted (BFO_COPY_DELETE; with DRY_RUN, that would be) */
	uint64_t tree_bytes;    /* bytes of the sources' regular files, as listed (a sync) */
	uint64_t wire_sent;     /* bytes written to the stream (and its back channel), as they went */
	uint64_t wire_received; /* bytes read from them */
	uint64_t delete_held;   /* deletions not made: past bfo_copy_opts' delete_limit */
	uint64_t space_needed;  /* bytes of the files the destination's full file system refused
				   in the batch that met it (the run's result: -ENOSPC or -EDQUOT) */
	/* What a progress display measures against: the regular files the
	 * sources' walk (or a sync's list) met so far, and, once listed_whole
	 * is 1, that it met them all: listed_files (and a sync's tree_bytes)
	 * are then the run's totals.  Files copied and skipped add up to
	 * listed_files at the end. */
	uint64_t listed_files;
	uint64_t listed_whole;
	uint64_t reserved[2];
};

/* Called on the thread of bfo_copier_run(): error once per failed entry
 * (path is the source, or the destination for writer failures), progress at
 * most a few times a second.  Either may be NULL. */
struct bfo_copy_callbacks {
	void (*error)(void *arg, const char *path, int status);
	void (*progress)(void *arg, const struct bfo_copy_stats *stats);
	void *arg;
};

struct bfo_copier;

/* What a copier is told beyond bfo_copier_create's flags (all optional). */
struct bfo_copy_opts {
	uint32_t size;          /* sizeof(struct bfo_copy_opts) as the caller knows it */
	int32_t compress;       /* a stream sent (bfo_copier_send*): compressed with zstd at
				   this level (1 to 19; negative: zstd's fast levels), 0: not */
	/* rsync's filter rules, NULL-terminated (NULL: none): "- PATTERN"
	 * excludes, "+ PATTERN" includes, the first that matches a name
	 * decides, an excluded directory is not entered (bfo-native
	 * README.md, "Syncing").  A receiver is given the sender's rules:
	 * what they exclude is protected from BFO_COPY_DELETE. */
	const char *const *filters;
	/* Each entry copied (or, with BFO_COPY_DRY_RUN, that would be):
	 * what '>' and its path below the destination; each deleted: '-'.
	 * Called on the thread of the run. */
	void (*item)(void *arg, int what, const char *path);
	void *item_arg;
	/* Each entry copied whose owner could not be given (bfo_wentry's
	 * owner_status, -EINVAL), by its path at the destination, with
	 * owner_lost_arg: kept as cp -a keeps it, and counted in errors.
	 * Called on the thread of the run; NULL: the error callback is
	 * called instead. */
	void (*owner_lost)(void *arg, const char *path, int status);
	void *owner_lost_arg;
	/* BFO_COPY_DELETE deletes at most delete_limit - 1 entries (0: no
	 * limit; rsync's --max-delete=N is N + 1), an entry of the other kind
	 * making way for a copy's entry counted with what is below it; the
	 * deletions past it are not made (bfo_copy_stats' delete_held). */
	uint64_t delete_limit;
	uint64_t reserved[5];
};

/*
 * bfo_copier_set_opts - give the copier opts (copied, filters included);
 * for the runs that follow.  Returns 0, -EINVAL (a rule that is not one,
 * a level out of range, reserved fields not 0), -E2BIG (opts->size larger
 * than this library knows, the rest not 0) or -ENOMEM.
 */
int bfo_copier_set_opts(struct bfo_copier *c, const struct bfo_copy_opts *opts);

/*
 * bfo_copier_create - make a copier with read options ropts and write
 * options wopts (either may be NULL for the defaults), BFO_COPY_* flags and
 * callbacks (may be NULL; copied).  Returns 0 and the copier in *c, or
 * -EINVAL / -ENOMEM / -EMFILE (it holds one descriptor, its cancel's
 * wakeup).  Free it with bfo_copier_destroy().
 */
int bfo_copier_create(struct bfo_copier **c, const struct bfo_opts *ropts,
		      const struct bfo_write_opts *wopts, uint32_t flags,
		      const struct bfo_copy_callbacks *cb);

/*
 * bfo_copier_run - copy srcs[0..n) to dst and make the copy durable as the
 * write options say.  Blocks until done or cancelled.  Returns the number
 * of entries that failed (0: all copied; each was reported through the
 * error callback), or -errno when the copy could not run at all (dst not a
 * directory with several sources, destination not writable, -ENOSPC or
 * -EDQUOT: the destination's file system (or quota) is full, and the run
 * stopped at the batch that met it, each of its files whole or absent,
 * nothing more read or reported (bfo_copy_stats' space_needed), -ELOOP: a
 * source directory copied into itself (bfo_copier_check), -ECANCELED
 * after bfo_copier_cancel()).  Entries named .bfo-journal, at any level of
 * a source, are writers' journals (perhaps this run's own): never copied,
 * never deleted.  One run at a time per copier.
 */
int bfo_copier_run(struct bfo_copier *c, const char *const *srcs, unsigned n, const char *dst);

/*
 * bfo_copier_check - whether bfo_copier_run(c, srcs, n, dst) would copy a
 * source directory into itself: the place its copy takes (by the rules of
 * c's flags) is that directory or lies below it, links resolved.  Its walk
 * would then meet its own copy, as cp's "cannot copy a directory into
 * itself" warns.  A place below the source that the copier's filter rules
 * (bfo_copier_set_opts) exclude, or one of its directories above it, is
 * never walked, so such a copy may go ahead (SRC/. into SRC/out with
 * "- out").  Returns 0, or -ELOOP with *which (may be NULL) the index of
 * the first such source, or -ENOMEM.  bfo_copier_run() refuses such a run
 * with -ELOOP before anything is opened or written; call this first to
 * name the source.  A copy to a remote destination cannot be checked here.
 */
int bfo_copier_check(struct bfo_copier *c, const char *const *srcs, unsigned n, const char *dst,
		     unsigned *which);

/*
 * Copying between machines: bfo_copier_send() reads the sources as
 * bfo_copier_run() does and writes them as a stream to a descriptor (a
 * pipe, a socket, ssh's stdin); bfo_copier_recv() reads such a stream and
 * writes it under a destination with the copier's writer, by the same cp
 * rules.  The stream (format in bfo-native/README.md) is versioned, holds
 * the data in large frames in the order the read engine delivered it, with
 * an xxh3 hash per file or piece checked before a file is published.  The
 * receiver trusts nothing in it: every field is bounded, nothing is
 * written outside the destination, no symbolic link is followed, and a
 * stream that breaks leaves each file complete or absent.  Metadata goes
 * whole; the receiver's flags (BFO_COPY_ARCHIVE, and whether it runs as
 * root) decide what the copy takes.  Version 2 adds the file list before
 * the data and a back channel (bfo_copier_send_duplex(),
 * bfo_copier_recv_duplex()): the receiver answers which entries it wants,
 * so a rerun sends only what differs; a receiver also reads version 1.
 * Stream version of this library (what a sender writes):
 */
#define BFO_STREAM_VERSION 2

/*
 * bfo_copier_send_duplex - bfo_copier_send with a back channel: reply_fd
 * carries the receiver's answers (its bfo_copier_recv_duplex's reply_fd),
 * and when the receiver has a copy to compare with, the file list goes
 * first and only what differs is read and sent (stream version 2: the
 * list, the wants, the result; bfo-native README.md).  reply_fd -1: as
 * bfo_copier_send.  Returns as bfo_copier_send; -EBADMSG when the
 * receiver's answers are not bfo's.
 */
int bfo_copier_send_duplex(struct bfo_copier *c, const char *const *srcs, unsigned n, int fd,
			   int reply_fd);

/*
 * bfo_copier_send - read srcs[0..n) and write them as a stream to fd
 * (BFO_COPY_ARCHIVE: with xattrs; the write options are not used).  fd is
 * not closed.  Returns the number of entries that failed to read (each
 * reported), or -errno: -EPIPE when the stream could not be written (the
 * receiver went away), -ECANCELED, -EINVAL, -ENOMEM.
 */
int bfo_copier_send(struct bfo_copier *c, const char *const *srcs, unsigned n, int fd);

/*
 * bfo_copier_recv - read a stream of bfo_copier_send() from fd and write
 * it to dst as bfo_copier_run() would have (recovering unfinished batches
 * at dst first).  Returns the number of entries that failed (each
 * reported; a stream that breaks off or is malformed counts as one more,
 * reported with its reason as the path), or -errno when nothing could be
 * done: -EBADMSG not a bfo stream, -EPROTONOSUPPORT a stream version this
 * library does not read (the reason reported as for a malformed stream),
 * -ENOTDIR several sources and dst not a directory, or as
 * bfo_writer_open().
 */
int bfo_copier_recv(struct bfo_copier *c, int fd, const char *dst);

/*
 * bfo_copier_recv_duplex - bfo_copier_recv with a back channel: the
 * receiver answers on reply_fd (the sender's bfo_copier_send_duplex
 * reply_fd): whether it has a copy to compare with, and then a want for
 * each entry of the sender's list, so that only what differs comes; at
 * the end what it deleted (BFO_COPY_DELETE) and its result.  A stream
 * whose sender waits for answers needs reply_fd (-1: -EBADMSG).  Without
 * a list (a one-way stream), each entry is compared as it comes.
 */
int bfo_copier_recv_duplex(struct bfo_copier *c, int fd, int reply_fd, const char *dst);

/*
 * bfo_copier_stats - the current (or last) run's statistics; safe from any
 * thread while a run is going on.  Returns 0.
 */
int bfo_copier_stats(struct bfo_copier *c, struct bfo_copy_stats *stats);

/*
 * bfo_copier_read_stats - the read side's statistics (struct bfo_stats:
 * files per engine and path, I/Os, times) of the last bfo_copier_run() or
 * bfo_copier_send() once it has returned; all zero before, during, and
 * after bfo_copier_recv(), which reads no files.  Returns 0, or -EINVAL.
 */
int bfo_copier_read_stats(struct bfo_copier *c, struct bfo_stats *stats);

/*
 * bfo_copier_cancel - make a running bfo_copier_run() (or send, or recv)
 * stop soon (files already written stay, none is left torn), including
 * one blocked on its stream (a stream on a pipe or a socket; a write to a
 * full pipe on a kernel whose pipes refuse RWF_NOWAIT still waits for the
 * pipe's reader, or a signal).  With no run going on, the next run is
 * cancelled as it starts (a signal handler installed before a run loses
 * nothing); each run forgets the cancel as it returns.  Safe from any
 * thread and async-signal-safe (errno kept).  Returns 0.
 */
int bfo_copier_cancel(struct bfo_copier *c);

/*
 * bfo_copier_destroy - free the copier (no run may be in progress).
 * NULL is ignored.
 */
void bfo_copier_destroy(struct bfo_copier *c);

/* ------------------------------------------------------------------ walk */

/*
 * A tree walk that hands out the regular files below a directory in inode
 * order, a sort buffer at a time, listing directories on a few threads
 * (their entries' types come with the listing: no stat per entry).  Inode
 * order is close to disk order on ext4 and XFS, so a read batch fed by the
 * walk has a metadata phase that reads the inode tables sequentially: this
 * is how `bfo read DIR` and bindings' tree reads feed the engine.
 * Symbolic links are followed when they lead to a regular file (unless
 * BFO_WALK_NOFOLLOW); special files, links to directories and dangling
 * links are skipped and counted.  One walk is used by one thread at a time.
 */
struct bfo_walk;

#define BFO_WALK_NOFOLLOW (1u << 0)  /* skip symbolic links */
#define BFO_WALK_UNSORTED (1u << 1)  /* hand paths out as listed, not sorted */
#define BFO_WALK_LISTINGS (1u << 2)  /* keep directory listings for bfo_walk_share */

struct bfo_walk_stats {
	uint64_t files;          /* paths handed out so far */
	uint64_t skipped;        /* entries skipped so far */
	uint64_t failures;       /* directories that could not be read */
	uint64_t reserved[5];
};

/*
 * bfo_walk_start - start walking the directory root.  sort_files is the
 * sort buffer in files (0: 262144); memory is bounded by two such buffers
 * of paths.  Stores the walk in *w and returns 0, or -EINVAL (NULL
 * argument, unknown flag) or -ENOMEM.  A root that cannot be read is not
 * an error here: it is the walk's first failure.  The caller owns the walk
 * and frees it with bfo_walk_destroy().  With BFO_WALK_UNSORTED the paths
 * come in the order the threads list them and sort_files only sizes the
 * buffer: a buffer is handed out when full, so a small one hands out the
 * first paths sooner (`bfo read --sort-buffer 0`).
 */
int bfo_walk_start(struct bfo_walk **w, const char *root, size_t sort_files, unsigned flags);

/*
 * bfo_walk_next - the next paths of the walk, as NUL-terminated paths laid
 * end to end in buf[0..len) (the form bfo_read_submit_packed() takes).
 * Returns the number of bytes stored, always whole paths; 0 when the walk
 * is over; -ENOBUFS when the next path alone does not fit in len (it stays
 * next).  Blocks while the walk fills its sort buffer.
 */
long bfo_walk_next(struct bfo_walk *w, char *buf, size_t len);

/*
 * bfo_walk_failure - take the oldest directory the walk could not read:
 * copies its path (NUL-terminated) into buf and stores its -errno in
 * *status.  Returns 1 when one was taken, 0 when there is none now,
 * -ENOBUFS when the path does not fit in len (it stays).  Up to 1024
 * failures are kept at a time; more are only counted in the stats.
 */
int bfo_walk_failure(struct bfo_walk *w, char *buf, size_t len, int *status);

/*
 * bfo_walk_stats - fill *stats with the walk's counters.  Returns 0.
 */
int bfo_walk_stats(struct bfo_walk *w, struct bfo_walk_stats *stats);

/*
 * bfo_walk_share - hand the directory listings the walk made so far
 * (started with BFO_WALK_LISTINGS) to ctx, for the batch that reads the
 * walk's paths: the raw engine then takes its files' inode numbers from
 * them instead of listing the directories again (and lists none it would
 * not have listed for its first windows).  Call it after bfo_walk_next
 * and before submitting the paths it gave.  A listing counts for ctx's
 * batch in progress, or the next one, and is dropped when that batch
 * ends; it is only a hint: the directory's state before its listing is
 * recorded and checked again after each file's data is read, as for the
 * engine's own listings.  Returns the number of listings ctx took (0 when
 * it does not read inodes from the device, or none was made since the
 * last call), or -EINVAL.  The walk keeps at most 32 MiB of listings, and
 * none in a process that may not read inodes without opening the files
 * (without CAP_DAC_OVERRIDE, say).
 */
int bfo_walk_share(struct bfo_walk *w, struct bfo_ctx *ctx);

/*
 * bfo_walk_destroy - stop the walk's threads and free it; NULL is ignored.
 */
void bfo_walk_destroy(struct bfo_walk *w);

/* -------------------------------------------------------------- dirahead */

/*
 * Directory read-ahead, for a caller that lists directories itself, one at
 * a time and in an order of its own (the tar plugin lists the directories
 * GNU tar is about to enter).  A directory listed cold waits for its inode
 * and blocks, behind a busy device for milliseconds each; a few threads
 * read the directories named here beforehand (open, every entry, close)
 * so the caller's own listing finds them in the page cache.  Nothing read
 * is handed out: only the cache changes, so a directory read for nothing
 * costs its reads and no more.
 */
struct bfo_dirahead;

/* Also stat each entry (lstat, in inode order), so the caller's stat of
 * it finds its inode in the cache too. */
#define BFO_DIRAHEAD_STAT (1u << 0)

struct bfo_dirahead_stats {
	uint64_t read;           /* directories read to the end */
	uint64_t failed;         /* could not be opened or read (the caller's listing will see why) */
	uint64_t dropped;        /* still queued when the read-ahead was destroyed */
	uint64_t queued;         /* added and not yet taken by a thread */
	uint64_t reserved[4];
};

/*
 * bfo_dirahead_start - start a read-ahead with threads threads (0: 2, at
 * most 64) and room for queue directories not yet read (0: 256), flags
 * BFO_DIRAHEAD_*.  Stores it in *d and returns 0, or -EINVAL (NULL d,
 * unknown flag), -ENOMEM or -EAGAIN (no thread).  The caller owns it and
 * frees it with bfo_dirahead_destroy().
 */
int bfo_dirahead_start(struct bfo_dirahead **d, unsigned threads, unsigned queue, unsigned flags);

/*
 * bfo_dirahead_add - queue the directory at path (copied) to be read soon,
 * in the order added.  A relative path is resolved when it is read, against
 * the working directory of that moment.  A symbolic link is not followed.
 * Returns 0, -EAGAIN when the queue is full (nothing is queued: add it again
 * later, or let the caller's listing read it), -EINVAL (NULL d or path, empty
 * path) or -ENOMEM.  Never blocks on I/O.
 */
int bfo_dirahead_add(struct bfo_dirahead *d, const char *path);

/*
 * bfo_dirahead_stats - fill *stats with the read-ahead's counters.  Returns
 * 0 or -EINVAL.
 */
int bfo_dirahead_stats(struct bfo_dirahead *d, struct bfo_dirahead_stats *stats);

/*
 * bfo_dirahead_destroy - drop what is still queued, wait for the reads in
 * progress, stop the threads and free d; NULL is ignored.  Not to be called
 * in a child forked while d had threads (they are not in the child): such a
 * child leaves d alone.
 */
void bfo_dirahead_destroy(struct bfo_dirahead *d);

/* --------------------------------------------------------------- fdwrite */

/*
 * Batched writes to fds the caller already holds (GNU tar's own fds in the
 * tar plugin: a path is never re-opened, so nothing swapped in between can
 * redirect a write).  One call writes every entry, many in flight at once
 * (io_uring, else pwrite() in a loop); each entry gets its own status.
 */
struct bfo_fdwrite_entry {
	int32_t fd;              /* open for writing */
	uint32_t reserved0;      /* must be 0 */
	const void *buf;         /* length bytes, held until the call returns */
	uint64_t length;
	uint64_t offset;         /* file offset of buf[0] (positioned write) */
	uint64_t done;           /* out: bytes written */
	int32_t status;          /* out: 0, or -errno of the failing write */
	uint32_t reserved1;
	uint64_t reserved[2];    /* must be 0 */
};

#define BFO_FDWRITE_PORTABLE (1u << 0)  /* pwrite() only, no io_uring */

/*
 * bfo_fdwrite - write entries e[0..n): each entry's buf to its fd at its
 * offset, all of it (short writes are continued).  Entries are independent:
 * their order of completion is not defined, so two entries must not
 * overlap in the same file.  Returns the number of entries that failed
 * (their status says why, their done how far they got), or -EINVAL (NULL
 * e with n > 0, a negative fd, a NULL buf with a length, unknown flags or
 * non-zero reserved fields).  Falls back to pwrite() where io_uring is
 * missing or refused.
 */
int bfo_fdwrite(struct bfo_fdwrite_entry *e, unsigned n, unsigned flags);

/*
 * bfo_syncfs - the durability point of a batch: commit the file system
 * that holds fd (data, metadata and directory entries of every file on
 * it) to stable storage.  Returns 0 or -errno.
 */
int bfo_syncfs(int fd);

#ifdef __cplusplus
}
#endif

#endif /* BFO_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers of the C tests.  Every test compares what BFO delivers with
 * the plain path (read() and stat() of the same file); these helpers make
 * files, run batches with every contract of bfo.h checked on the way, and
 * undo everything a test set up (temporary directories, mounts, loop
 * devices, images) at exit, on failure and on fatal signals.
 */
#ifndef T_HELPERS_H
#define T_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bfo.h"

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif
#ifndef T_ASAN
#define T_ASAN 0
#endif

/* ------------------------------------------------------------ outcome */

/* Arm the watchdog (alarm: a hang becomes a failure with a message),
 * install the cleanup handlers and print the test's name. */
void t_init(const char *name, unsigned alarm_seconds);
/* Re-arm the watchdog for one step, with what the step was doing. */
void t_watchdog(unsigned seconds, const char *what);

_Noreturn void t_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void t_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define t_fail(...) t_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define T_ASSERT(cond, ...) \
	do { if (!(cond)) t_assert_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)
_Noreturn void t_assert_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* bfo calls: a negative return fails the test with bfo_strerror(). */
#define T_OK(call) \
	do { long t_r_ = (long)(call); \
	     if (t_r_ < 0) t_fail_at(__FILE__, __LINE__, "%s returned %ld (%s)", #call, t_r_, \
				      bfo_strerror((int)t_r_)); } while (0)
#define T_EQ(a, b) \
	do { long long t_a_ = (long long)(a), t_b_ = (long long)(b); \
	     if (t_a_ != t_b_) t_fail_at(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", \
					  #a, t_a_, #b, t_b_); } while (0)

void t_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run fn(arg) in a child process with its own watchdog of `seconds`, so a
 * hang or a crash in one configuration is reported and the others still
 * run.  Returns true when it passed (a skip, exit 77, counts as passed and
 * is logged).  t_done() fails the test if any sub-test failed.  With
 * BFO_TEST_ONLY=NAME[,NAME...] in the environment only those sub-tests run.
 */
bool t_subtest(const char *name, unsigned seconds, void (*fn)(void *arg), void *arg);
/* Log PASS, or fail naming the sub-tests that failed. */
void t_done(void);

/* ------------------------------------------------------------ cleanup */

/* Things undone at exit (normal, t_fail, fatal signal), newest first. */
void t_cleanup_mount(const char *mnt);      /* umount (lazy if busy) */
void t_cleanup_loop(const char *dev);       /* detach a loop device */
void t_cleanup_unlink(const char *path);    /* unlink a file */
void t_cleanup_rmdir(const char *path);     /* rmdir an (empty) directory */
void t_cleanup_rmtree(const char *path);    /* rm -rf */
/* SIGTERM (SIGKILL after 5 s) and reap a child of this process, e.g. a
 * server a test started; the test must not reap it itself before. */
void t_cleanup_kill(pid_t pid);
/* Run every registered cleanup now (also done at exit). */
void t_cleanup_now(void);

/* ------------------------------------------------------------ environment */

bool t_is_root(void);
bool t_have_prog(const char *name);        /* an executable in PATH */
/* system() with a printf-style command; returns the exit status (or -1).
 * Output goes where the command sends it: add redirections as needed. */
int t_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool t_drop_caches(void);                  /* sync + drop_caches; false if refused */
long t_rss_peak_kb(void);                  /* VmHWM */
long t_rss_kb(void);                       /* VmRSS: resident now */
int t_open_fds(void);                      /* entries of /proc/self/fd */
/*
 * From now on io_uring_setup fails with ENOSYS in this process (and what
 * it forks), as in a container whose seccomp policy refuses io_uring.  It
 * cannot be undone: call it in a forked child (t_subtest).  Skips (exit 77)
 * on an architecture it does not know, or where no filter can be set.
 */
void t_deny_io_uring(void);

/* ------------------------------------------------------------ files */

/* A fresh directory under /tmp (mode 0755), removed at exit. */
const char *t_tmpdir(void);
/* A fresh directory under dir. */
char *t_mkdtemp_in(const char *dir);
char *t_path(const char *dir, const char *name);      /* malloc'ed dir/name */
char *t_pathf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* p (malloc'ed) kept for the life of the process: never freed, and not
 * counted by the leak checker (up to 256 of them) */
const char *t_keep(char *p);

uint64_t t_rand(uint64_t *state);                     /* splitmix64 */
uint64_t t_rand_range(uint64_t *state, uint64_t lo, uint64_t hi);  /* [lo, hi] */
void t_fill_random(void *buf, size_t len, uint64_t seed);
/* Create (truncate) path with size pseudo-random bytes from seed. */
void t_write_random(const char *path, uint64_t size, uint64_t seed);
void t_write_bytes(const char *path, const void *buf, size_t len);
/* 0 and the whole file in a malloc'ed buffer (NULL for empty), or -errno. */
int t_read_plain(const char *path, uint8_t **buf, uint64_t *len);
uint64_t t_hash(const void *buf, size_t len);          /* XXH3-64 */
/* Extents FIEMAP reports for path, or -errno. */
long t_extents(const char *path);
int t_hash_file(const char *path, uint64_t *hash, uint64_t *len);

/* ------------------------------------------------------------ loop file systems */

/*
 * A sparse image of size_mb under /var/tmp, attached with losetup, made with
 * mkfs.<fstype> (extra arguments appended) and mounted with mount_opts on a
 * fresh directory; all of it undone at exit.  Returns the mount point, or
 * NULL with the reason in why (caller skips).
 */
const char *t_loop_fs(const char *fstype, unsigned size_mb, const char *mkfs_extra,
		      const char *mount_opts, char *why, size_t why_len);
/* The same with extra losetup arguments (e.g. "--sector-size 4096"). */
const char *t_loop_fs_ex(const char *fstype, unsigned size_mb, const char *mkfs_extra,
			 const char *mount_opts, const char *losetup_extra, char *why, size_t why_len);
/* The same, but a failure is a skip (exit 77) with the reason. */
const char *t_loop_fs_or_skip(const char *fstype, unsigned size_mb, const char *mkfs_extra,
			      const char *mount_opts);

/* ------------------------------------------------------------ batches */

struct t_result {
	int status;            /* -1000: never delivered */
	int engine;
	unsigned entries;      /* entries delivered for this index */
	unsigned pieces;       /* successful pieces (entries with data or length 0) */
	bool last;             /* an entry with BFO_FILE_LAST came */
	uint64_t size;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint32_t mode;
	uint32_t uid, gid, nlink;
	uint64_t ino;
	uint64_t dev;
	uint8_t *data;         /* reassembled bytes (malloc'ed), NULL if none */
	uint64_t len;          /* bytes reassembled */
	uint64_t order;        /* completion order of the last entry, from 0 */
	uint16_t flags;        /* BFO_FILE_* of the last entry */
};

#define T_STATUS_NONE (-1000)

/* t_batch_ex flags */
#define T_PARTIAL  (1u << 0)   /* not every index must be delivered (stop/cancel) */
#define T_NODATA   (1u << 1)   /* metadata-only / plan-only: no data at all */

/*
 * Run one whole batch on a new context made from o (NULL: defaults):
 * submit every path (resubmitting what bfo_read_submit did not take after
 * consuming results), bfo_read_finish, then bfo_read_wait until it returns
 * 0, releasing entries one wait later than received (and checking their
 * bytes did not change while held).  Checks on the way: every index is
 * delivered exactly once with BFO_FILE_LAST, pieces arrive contiguous and
 * in offset order, length == size for a whole file, data NULL when status
 * < 0 or length 0, the path is the one submitted, and the statistics agree
 * with what was delivered (files, files_ok, files_failed, bytes,
 * files_by_engine).  out[0..n) receives the results; st (optional) the
 * statistics.  Returns the number of entries delivered.
 */
uint64_t t_batch(const struct bfo_opts *o, char *const *paths, size_t n,
		 struct t_result *out, struct bfo_stats *st);
uint64_t t_batch_ctx(struct bfo_ctx *ctx, char *const *paths, size_t n,
		     struct t_result *out, struct bfo_stats *st, unsigned flags);
struct t_result *t_results_new(size_t n);
void t_results_free(struct t_result *r, size_t n);

/* Index i was read correctly: status 0, bytes equal read(); size, mtime,
 * ctime, mode, inode, device, owner and link count equal stat() of the
 * path now.  ctx_msg names the run. */
void t_expect_plain_at(const char *file, int line, const struct t_result *r,
		       char *const *paths, size_t i, const char *ctx_msg);
#define t_expect_plain(r, paths, i, msg) t_expect_plain_at(__FILE__, __LINE__, r, paths, i, msg)
/* Index i failed with exactly this status. */
void t_expect_status_at(const char *file, int line, const struct t_result *r,
			char *const *paths, size_t i, int status, const char *ctx_msg);
#define t_expect_status(r, paths, i, st, msg) t_expect_status_at(__FILE__, __LINE__, r, paths, i, st, msg)

/* Make a context or fail. */
struct bfo_ctx *t_ctx(const struct bfo_opts *o);
/* Engine name for messages, and the list of engines tests loop over. */
const char *t_engine(int e);
extern const int t_engines_nonraw[3];   /* auto, uring, portable */

#endif

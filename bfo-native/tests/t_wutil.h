/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the write, copy, crash and recovery tests (t_write*, t_cp,
 * t_crash, t_powercut, t_recover), on top of t_helpers.h:
 *  - running the `bfo` command (or cp) with captured output, optionally as
 *    another user, and spawning it in the background to kill it;
 *  - comparing two trees entry by entry the way `cp -a` defines a copy
 *    (type, mode, owner, times with nanoseconds, bytes, symlink targets,
 *    rdev, xattrs, hard-link groups and link counts);
 *  - snapshots of a tree, to prove that files a batch must not touch are
 *    untouched (inode, ctime, mtime, mode, owner, size, bytes);
 *  - the leftovers a writer must never leave (.bfo-tmp.*, .bfo-journal);
 *  - packing xattrs in the bfo_wentry format, paths deeper than PATH_MAX.
 * Every walk is descriptor based (openat), so trees deeper than PATH_MAX
 * work too.
 */
#ifndef T_WUTIL_H
#define T_WUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "t_helpers.h"

#ifndef BFO_CLI
#define BFO_CLI "bfo"
#endif

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* ------------------------------------------------------------ checks */

/*
 * A check that does not end the test at once: the failure is printed
 * ("FAIL file:line: ...") and counted, so that one run reports every
 * broken contract of a scenario; tw_checks_end() then fails the test if
 * any check failed.  T_ASSERT stays for what later steps depend on.
 */
#define TW_CHECK(cond, ...) \
	do { if (!(cond)) tw_check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); } while (0)
void tw_check_fail(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int tw_checks_failed(void);
void tw_checks_end(void);

/* A formatted string in one of 16 rotating thread-local buffers of
 * PATH_MAX + 256 bytes: for short-lived paths, no allocation to free. */
const char *tw_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------ programs */

struct tw_run {
	char *out, *err;        /* NUL-terminated captured outputs */
	size_t out_len, err_len;
	int status;             /* exit status, or 128 + signal */
};

/*
 * Run argv (argv[0] looked up in PATH unless it has a '/'), stdin from
 * in[0..in_len) (NULL: /dev/null), capture stdout and stderr.  uid/gid:
 * run as that user (setresgid + setgroups(0) + setresuid in the child), or
 * (uid_t)-1 for the current user.  Fails the test if it cannot start.
 */
void tw_run(struct tw_run *r, const void *in, size_t in_len, uid_t uid, gid_t gid,
	    char *const argv[]);
void tw_run_free(struct tw_run *r);
/* Like tw_run with a NULL-terminated list of arguments, no stdin, current user. */
void tw_runl(struct tw_run *r, const char *arg0, ...) __attribute__((sentinel));

/*
 * Start argv in the background: stdin from stdin_path (NULL: /dev/null),
 * stdout and stderr appended to out_path (NULL: /dev/null).  Returns the
 * pid.  The child is in its own process group.
 */
pid_t tw_spawn(char *const argv[], const char *stdin_path, const char *out_path);
/* waitpid; returns the exit status or 128 + signal. */
int tw_wait(pid_t pid);
/*
 * tw_wait for a long run on a machine that may be busy: instead of a
 * deadline, the watchdog fires (naming what) only after stall_secs in
 * which neither pid's I/O (/proc/PID/io) nor the inodes and blocks used on
 * dir's file system changed.
 */
int tw_wait_progress(pid_t pid, const char *dir, unsigned stall_secs, const char *what);

/*
 * Wait until the process pid runs prog (past its exec) and has a handler
 * for signal sig (SigCgt in /proc/PID/status): it has come that far,
 * however slowly it started.  False when it ended first (not reaped here).
 */
bool tw_wait_catching(pid_t pid, const char *prog, int sig);

/* A remote shell that runs the far side here, as ssh would: HOST dropped,
 * the rest one command line for sh; made in dir (malloc'd path). */
char *tw_local_rsh(const char *dir);

/* Sleep for ns nanoseconds (not a timing assertion: only to pick a point). */
void tw_sleep_ns(uint64_t ns);

/*
 * Let the file system's coarse clock move on (30 ms, several ticks), so
 * that files a test made are born strictly before the batch it starts
 * next.  Recovery tells the batch's files from older ones by birth time,
 * and within one clock tick it cannot (t_recover's "same tick" case tests
 * exactly that); other tests settle so that they test what they mean to.
 */
void tw_settle(void);

/* ------------------------------------------------------------ trees */

#define TW_MODE    (1u << 0)  /* permission bits incl. set-id and sticky */
#define TW_OWNER   (1u << 1)  /* uid, gid */
#define TW_MTIME   (1u << 2)  /* mtime with nanoseconds (dirs, files, symlinks) */
#define TW_ATIME   (1u << 3)  /* atime with nanoseconds */
#define TW_XATTRS  (1u << 4)  /* every xattr name and value */
#define TW_LINKS   (1u << 5)  /* hard links: same groups, same st_nlink */
#define TW_TOP     (1u << 6)  /* the top directories' own metadata too */
#define TW_CP_A    (TW_MODE | TW_OWNER | TW_MTIME | TW_ATIME | TW_XATTRS | TW_LINKS)

/*
 * Compare the trees at a and b: the same names (byte for byte) with the
 * same type, size, bytes, symlink target, rdev, and what flags ask for.
 * Returns 0 when equal, else the number of differences; the first ones are
 * described in msg (names escaped).  Entries named in ignore (top-level
 * names, NULL-terminated list, or NULL) are skipped on both sides.
 */
int tw_tree_diff(const char *a, const char *b, unsigned flags, const char *const *ignore,
		 char *msg, size_t len);

/*
 * Count what a writer must not leave below root: names starting with
 * ".bfo-tmp." and (with journal) directories named ".bfo-journal"
 * (anywhere).  The first ones are described in msg.
 */
int tw_leftovers(const char *root, bool journal, char *msg, size_t len);

/* A snapshot of every entry below root (root itself excluded). */
struct tw_snap;
struct tw_snap *tw_snapshot(const char *root);
/*
 * Compare root now with the snapshot: every entry must still be there and
 * unchanged (inode, type, mode, owner, size, mtime, ctime, link count,
 * bytes, symlink target).  With allow_new, entries that appeared are fine
 * and directories are only checked to be the same directory (their
 * mtime/ctime change with new entries); without it, any new entry is a
 * difference.  Returns the number of differences, described in msg.
 */
int tw_snap_diff(const struct tw_snap *s, const char *root, bool allow_new, char *msg, size_t len);
void tw_snap_free(struct tw_snap *s);
/* Number of entries in the snapshot. */
size_t tw_snap_count(const struct tw_snap *s);

/* ------------------------------------------------------------ files */

/* Escape a name for messages (static buffer per call slot, 4 slots). */
const char *tw_esc(const char *s);

/*
 * Open rel (any length, components resolved one at a time below dirfd
 * without following symlinks in directories) with flags.  -errno on error.
 */
int tw_open_deep(int dirfd, const char *rel, int flags);

/* 0 when the file at dirfd/rel (deep) holds exactly data[0..len), else a
 * reason in why; -errno if it cannot be opened (ENOENT: absent). */
int tw_file_check(int dirfd, const char *rel, const void *data, uint64_t len, char *why,
		  size_t whylen);

/* Whether anything exists at path (lstat). */
bool tw_exists(const char *path);
bool tw_exists_at(int dirfd, const char *rel);

/* mkdir -p (mode 0755), failing the test on error. */
void tw_mkdirs(const char *path);

/* Packed xattrs in the bfo_wentry format. */
struct tw_xbuf {
	uint8_t buf[4096];
	size_t len;
};
void tw_xattr_add(struct tw_xbuf *x, const char *name, const void *val, uint32_t vlen);
/* Set the same attributes on path (lsetxattr), failing the test on error. */
void tw_xattr_apply(const struct tw_xbuf *x, const char *path);

/* Fill the file system holding dir until about leave bytes are free (a
 * file named name below dir, fallocate'd). */
void tw_fill_fs(const char *dir, const char *name, uint64_t leave);

/* Free bytes of the file system holding path. */
uint64_t tw_free_bytes(const char *path);

/* The time now (CLOCK_REALTIME) in seconds and nanoseconds. */
void tw_now(int64_t *sec, uint32_t *nsec);

/* The file system type name (ext2/ext3 say "ext2/ext3") of path. */
const char *tw_fstype(const char *path);

/* The file names in dir matching a prefix (newline-separated into buf);
 * returns the count. */
int tw_list_prefix(const char *dir, const char *prefix, char *buf, size_t len);

/* ------------------------------------------------------------ crash input */

/*
 * The input of the crash tests: nfiles files (0 bytes to 512 KiB, and one
 * of big bytes in the middle, when big is not 0) in 24 directories, a
 * symbolic link every 97 files, as a stream of `bfo write`'s simple format
 * (dir/stream) and, with plain, as a plain tree (dir/src, the source of
 * `bfo cp -a`).  npre of its file paths are chosen to exist before a run
 * (tw_input_pre_create makes them, with other bytes, plus files of its own
 * under own/).  Contents are generated again from seeds when checked.
 */
struct tw_input;
struct tw_input *tw_input_make(const char *dir, int nfiles, uint64_t big, bool plain, int npre);
const char *tw_input_stream(const struct tw_input *in);
const char *tw_input_src(const struct tw_input *in);
int tw_input_count(const struct tw_input *in);       /* entries: files and links */
int tw_input_expected(const struct tw_input *in);    /* of them, not pre-existing */
void tw_input_pre_create(const struct tw_input *in, const char *dir, const char *prefix);
/*
 * The crash invariant below dir (input paths below dir/prefix): every input
 * file absent or complete (size, bytes, mode, mtime), every link absent or
 * right; no .bfo-tmp.* or .bfo-journal; the snapshot pre (taken after
 * tw_input_pre_create) unchanged; nothing else appeared.  Problems are
 * TW_CHECK failures tagged with what; returns their number; *present gets
 * the number of input entries found.
 */
int tw_input_check(const struct tw_input *in, const char *dir, const char *prefix,
		   struct tw_snap *pre, const char *what, int *present);
/* From now on tw_input_check also accepts a pre-existing input file
 * replaced by its new version, complete (bfo cp replaces what differs);
 * such files are dropped from the snapshot it is given. */
void tw_input_replaceable(struct tw_input *in, bool on);
void tw_input_free(struct tw_input *in);

/* Manifests (*.m) in root/.bfo-journal; the first one's path in first. */
int tw_manifests(const char *root, char *first, size_t len);
/* The highest batch number among root's manifests (names end in -SEQ.m),
 * 0 if none. */
unsigned tw_manifest_seq(const char *root);
/* Poll (every 50 us) until batch k's manifest exists in root: true; false
 * when the process pid ended first (it was reaped here). */
bool tw_wait_manifest(pid_t pid, const char *root, unsigned k);

/*
 * A source tree with every file type, for the copy tests (t_cp, t_sendrecv):
 * regular files of 0 bytes to 3 MiB (sizes around page boundaries too)
 * plus one of TW_GEN_BIG bytes, above the read engine's large_file, so it
 * travels in pieces; directories, empty ones included, with modes 0750,
 * setgid and sticky; symbolic links relative, absolute, dangling and to a
 * directory; hard links (three names of one file); a FIFO, a socket's
 * node, a character and a block device (root); set-id files; odd names
 * (a newline, a tab, non-UTF-8 bytes, a backslash, a leading dash);
 * user.* xattrs, trusted.* on a symlink (root); mtimes with nanoseconds,
 * atimes in the future; several owners (root).  Returns the number of
 * entries.
 */
#define TW_GEN_BIG ((17u << 20) + 123)
int tw_gen_tree(const char *src, uint64_t seed);
/* Its pieces: times set by index i (atime in the future, mtime with ns),
 * a directory with a mode, a user.* (or trusted.*) xattr; each fails the
 * test when it cannot. */
void tw_gen_times(const char *p, int i);
void tw_gen_mkdir(const char *p, mode_t mode);
void tw_gen_xattr(const char *p, const char *k, const char *v);

/*
 * After a copy was killed: every regular file below dst (the journal's
 * aside) holds the bytes of its namesake below src, or is absent.  Returns
 * the number that do not, each reported as a failed check.
 */
int tw_complete_or_absent(const char *src, const char *dst);

/* A copy at dst equals the reference ref (cp's, made the plain way) in
 * what flags ask (TW_*), and left no .bfo-tmp.* or .bfo-journal: checks
 * (TW_CHECK) named by what. */
void tw_expect_copy(const char *ref, const char *dst, unsigned flags, const char *what);

/* The regular files below dir, each name counted (0 when dir is absent). */
int tw_count_regular(const char *dir);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libbfo_tar.so - an LD_PRELOAD plugin that makes an unmodified GNU tar
 * read the files it archives through libbfo's batch reader (create.h) and
 * write the files it extracts through libbfo's batch writer (extract.h).
 *
 * What its parts share.  The files:
 *	real.h, interpose.c   the libc functions, resolved once; the re-entrancy
 *	                      guard; the plugin's life (load, fork, exit)
 *	hooks.c               every exported libc name, each handing tar's call
 *	                      to create and extract, then to libc
 *	settings.c            the BFO_TAR_* environment and the stats line
 *	tar_sort.c            the --sort order tar was given
 *	create*.c             tar -c: listings, lots, serving tar's reads
 *	extract*.c            tar -x: the queue, the flusher, free space,
 *	                      files named once whole, replacements
 *	archive_ahead.c       tar -x: reading tar's archive ahead of it
 *
 * Interposition follows libeatmydata: a thread-local guard passes through
 * every call the plugin (or libbfo) makes while inside a hook; only tar's
 * own thread is served (libbfo's workers always pass through); errno is
 * what libc left; after fork() the child passes everything through; any
 * internal failure turns the plugin off and tar goes on through libc.
 */
#ifndef BFO_TAR_H
#define BFO_TAR_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bfo.h"
#include "real.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))

#define FDTAB_MAX     65536            /* fds above are never served nor captured */

/* ------------------------------------------------------------ interpose.c */

struct plugin {
	int active;             /* 0: every hook passes through */
	int extract_ok;         /* tar -x goes through the plugin */
	pthread_t tar_thread;
	pid_t owner_pid;
};

extern struct plugin plugin;
extern TLS int in_hook;

/* Hooks do their own work only on tar's thread, outside another hook. */
static inline int enter(void)
{
	if (!plugin.active || in_hook || !pthread_equal(pthread_self(), plugin.tar_thread))
		return 0;
	in_hook = 1;
	return 1;
}

static inline void leave(void)
{
	in_hook = 0;
}

/* enter(), for extraction's hooks. */
static inline int xenter(void)
{
	return plugin.extract_ok && enter();
}

/* Stop reading ahead: libc from now on (fds being served stay served). */
void plugin_off(void);
/* Descriptors tar's soft RLIMIT_NOFILE leaves free now. */
unsigned fds_left(void);

/* ------------------------------------------------------------ settings.c */

struct settings {
	uint64_t arena_bytes;   /* BFO_TAR_ARENA_MB */
	const char *engine;     /* BFO_TAR_ENGINE; NULL: auto */
	int durability;         /* BFO_TAR_DURABILITY; 0: none */
	int extract;            /* BFO_TAR_EXTRACT; 0: off */
};

extern struct settings settings;

/* What BFO_TAR_STATS writes: create's counters, then extraction's. */
struct counters {
	uint64_t served, served_bytes, fallback, skipped, batches, ios, direct_ios, device_bytes, dirs_ahead;
	uint64_t dirs_handed;    /* directories handed to libbfo's read-ahead */
	uint64_t xfiles, xbytes, xflushes, xbehind, xdetached, syncfs, early_syncfs;
	uint64_t xread_ahead;   /* atomic: the archive read-ahead thread adds to it */
	uint64_t xqueue_files;  /* the queue's bound, from tar's descriptor limit */
	uint64_t xfd_waits;     /* opens of tar's retried after the queue gave descriptors back */
	/* atomic (the flusher adds to them): files made unnamed that took
	 * their names by a link of their own, through the journal over an
	 * older file, by a rename of our own over an older file */
	uint64_t xlinked, xreplaced, xrenamed;
};

extern struct counters counters;

void settings_read(void);
void stats_write(void);

/* ------------------------------------------------------------ tar_sort.c */

enum sort_mode { SORT_NONE, SORT_NAME, SORT_INODE };

enum sort_mode tar_sort_mode(void);

/* ------------------------------------------------------------ create*.c */

struct ent;
struct served;

void create_init(void);
void create_stop(void);
void create_forget(void);
int create_started(void);
struct ent *create_open_before(int dirfd, const char *path, int flags);
void create_open_after(int fd, struct ent *e);
struct served *served_fd(int fd);
ssize_t serve_read(struct served *s, void *buf, size_t n);
uint64_t served_pos(const struct served *s);
void unserve(int fd);
void create_dir_opened(DIR *d, int fd);
void create_dir_entry(DIR *d, const char *name, unsigned char type, uint64_t ino, int end);
void create_dir_closed(DIR *d);

/* ------------------------------------------------------------ extract*.c */

struct wfile;

int extracting(void);
void extract_forget(void);
struct wfile *captured(int fd);
struct wfile *held(int fd);
int close_captured(int fd);
void closing_archive(int fd);
void closing_fd(int fd);
void xdir_dirfd_closed(int fd);
int before_open(int dirfd, const char *path, int flags, mode_t mode, int by_openat);
void after_open(int dirfd, int fd, const char *path, int flags);
int write_captured(int fd, const void *buf, size_t n);
int defer_times(int fd, const struct timespec ts[2]);
int defer_chown(int fd, uid_t uid, gid_t gid);
int defer_chmod(int fd, mode_t mode);
/* what a by-name call sets (a directory's may go ahead of its pending names) */
enum { DM_NONE, DM_TIMES, DM_OWNER, DM_MODE };
void by_name(int dirfd, const char *path, int flags, int what, mode_t mode);
void flush_all_first(void);
void note_extracting(void);
void note_metadata_by_name(int dirfd, const char *path, const struct timespec ts[2], int flags);
int stat_saw_pending(int r, const struct stat *sb);
void give_back(int fd, int seek);
void stat_unnamed_fd(int fd, struct stat *sb);
int unlink_deferred(int dirfd, const char *path, int flags);
void name_call(int dirfd, const char *path);
int link_replaced(int od, const char *op, int nd, const char *np, int flags, const char *target);
void create_failed(int dirfd, const char *path);
void looking(int dirfd, const char *path);
int write_open(int flags);
int pending(void);
int fds_released(void);

/* ------------------------------------------------------------ archive_ahead.c */

void archive_ahead_note_read(int fd);
void archive_ahead_read(int fd, ssize_t r);
void archive_ahead_seek(int fd, off_t r);
void archive_ahead_closing(int fd);
void archive_ahead_start(void);
void archive_ahead_forget(void);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The libc functions the plugin interposes, in one table: each is resolved
 * once with dlsym(RTLD_NEXT) into real_<name> (interpose.c), and the
 * plugin only calls libc through these (or through its own hooks).
 *
 * The last column says who cannot work without it: a missing REAL_CREATE
 * symbol leaves the plugin off, a missing REAL_EXTRACT one leaves tar -x to
 * libc; REAL_OPTIONAL ones fall back to their base name (openat64 to
 * openat...) or are glibc's own aliases.
 */
#ifndef BFO_TAR_REAL_H
#define BFO_TAR_REAL_H

#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#define REAL_OPTIONAL 0
#define REAL_CREATE   1
#define REAL_EXTRACT  2

#define REAL_CALLS(X) \
	X(openat,       int,               (int, const char *, int, ...),                        REAL_CREATE) \
	X(openat64,     int,               (int, const char *, int, ...),                        REAL_OPTIONAL) \
	X(__openat_2,   int,               (int, const char *, int),                             REAL_CREATE) \
	X(__openat64_2, int,               (int, const char *, int),                             REAL_OPTIONAL) \
	X(read,         ssize_t,           (int, void *, size_t),                                REAL_CREATE) \
	X(close,        int,               (int),                                                REAL_CREATE) \
	X(lseek,        off_t,             (int, off_t, int),                                    REAL_CREATE) \
	X(lseek64,      off_t,             (int, off_t, int),                                    REAL_OPTIONAL) \
	X(fdopendir,    DIR *,             (int),                                                REAL_CREATE) \
	X(readdir,      struct dirent *,   (DIR *),                                              REAL_CREATE) \
	X(readdir64,    struct dirent64 *, (DIR *),                                              REAL_OPTIONAL) \
	X(closedir,     int,               (DIR *),                                              REAL_CREATE) \
	X(write,        ssize_t,           (int, const void *, size_t),                          REAL_EXTRACT) \
	X(futimens,     int,               (int, const struct timespec *),                       REAL_EXTRACT) \
	X(utimensat,    int,               (int, const char *, const struct timespec *, int),    REAL_EXTRACT) \
	X(fchown,       int,               (int, uid_t, gid_t),                                  REAL_EXTRACT) \
	X(fchmod,       int,               (int, mode_t),                                        REAL_EXTRACT) \
	X(fchownat,     int,               (int, const char *, uid_t, gid_t, int),               REAL_EXTRACT) \
	X(fchmodat,     int,               (int, const char *, mode_t, int),                     REAL_EXTRACT) \
	X(linkat,       int,               (int, const char *, int, const char *, int),          REAL_EXTRACT) \
	X(renameat,     int,               (int, const char *, int, const char *),               REAL_EXTRACT) \
	X(renameat2,    int,               (int, const char *, int, const char *, unsigned),     REAL_EXTRACT) \
	X(unlinkat,     int,               (int, const char *, int),                             REAL_EXTRACT) \
	X(mkdirat,      int,               (int, const char *, mode_t),                          REAL_EXTRACT) \
	X(symlinkat,    int,               (const char *, int, const char *),                    REAL_EXTRACT) \
	X(mknodat,      int,               (int, const char *, mode_t, dev_t),                   REAL_OPTIONAL) \
	X(mkfifoat,     int,               (int, const char *, mode_t),                          REAL_OPTIONAL) \
	X(opendir,      DIR *,             (const char *),                                       REAL_CREATE) \
	X(fstat,        int,               (int, struct stat *),                                 REAL_EXTRACT) \
	X(fstatat,      int,               (int, const char *, struct stat *, int),              REAL_EXTRACT) \
	X(stat,         int,               (const char *, struct stat *),                        REAL_EXTRACT) \
	X(ftruncate,    int,               (int, off_t),                                         REAL_EXTRACT) \
	X(fsync,        int,               (int),                                                REAL_EXTRACT) \
	X(dup,          int,               (int),                                                REAL_EXTRACT) \
	X(dup2,         int,               (int, int),                                           REAL_EXTRACT) \
	X(setxattr,     int,               (const char *, const char *, const void *, size_t, int), REAL_EXTRACT) \
	X(lsetxattr,    int,               (const char *, const char *, const void *, size_t, int), REAL_EXTRACT) \
	X(open,         int,               (const char *, int, ...),                             REAL_EXTRACT) \
	X(__open_2,     int,               (const char *, int),                                  REAL_EXTRACT)

#define REAL_DECLARE(name, ret, params, need) extern ret (*real_##name) params;
REAL_CALLS(REAL_DECLARE)
#undef REAL_DECLARE

/* Resolves the table (once; every hook calls it first). */
void resolve(void);
/* Whether every symbol `need` (REAL_CREATE or REAL_EXTRACT) names resolved. */
int real_complete(int need);

#endif

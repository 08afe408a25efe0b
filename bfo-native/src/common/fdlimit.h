/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The descriptor budget.  libbfo lives in other programs (tar through the
 * plugin, a JVM, the bfo command) under whatever soft RLIMIT_NOFILE they
 * run with, 1024 for a login or a service by default.  Each part that
 * holds descriptors at once (a read context's pool threads, a walk's
 * threads, a writer's workers and io_uring chains) sizes itself at
 * creation from what the limit leaves free then: a quarter of it, the rest
 * staying the program's own (fdl_share).  libbfo never raises the limit.
 *
 * What libbfo opens for a moment (a file mapped or read, a directory
 * listed, a file created) is counted (fdl_open...fdl_close).  An open
 * refused with EMFILE or ENFILE while other threads of libbfo hold such
 * descriptors waits for one of them to be closed and tries again
 * (fdl_retry), so no file fails for want of descriptors libbfo itself
 * took; when no other thread of libbfo holds one, the refusal is the
 * program's and the file fails with it.
 */
#ifndef BFO_FDLIMIT_H
#define BFO_FDLIMIT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Descriptors the soft RLIMIT_NOFILE leaves free now (UINT32_MAX: no limit). */
unsigned fdl_free(void);

/* Of want descriptors held at once, how many a part may hold: at most a
 * quarter of fdl_free(), at least least. */
unsigned fdl_share(unsigned want, unsigned least);

/* Counted opens and their closes (the count is process-wide). */
int fdl_open(const char *path, int flags, mode_t mode);
int fdl_openat(int dfd, const char *path, int flags, mode_t mode);
DIR *fdl_opendir(const char *path);
int fdl_close(int fd);
int fdl_closedir(DIR *d);

/* For descriptors made otherwise (io_uring): counted and released. */
void fdl_hold(void);
void fdl_release(void);

/*
 * An open failed with err: whether to try again.  gen is fdl_gen() taken
 * before the open; true (gen updated) once another thread of libbfo
 * closed a counted descriptor since then, waiting for it if need be;
 * false for any other error, or when no other thread holds one.
 */
uint64_t fdl_gen(void);
bool fdl_retry(int err, uint64_t *gen);

#endif

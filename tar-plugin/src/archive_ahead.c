/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extract: reading tar's archive ahead of it.  tar reads its archive in
 * records (10 KiB) through the page cache, and its own thread is the first
 * to touch every page of it; on a VM whose host backs freshly read guest
 * pages lazily, that first touch is most of the CPU time of tar's thread,
 * which bounds the extraction (README: How extract works).  From tar's
 * first extracted file on, a thread of ours reads the archive (pread into
 * one reused buffer, its own open file so readahead sees one sequential
 * reader) up to WARM_AHEAD past tar's position, on the other core: tar
 * then copies touched pages, and the device sees a sequential reader far
 * ahead of tar.  tar still reads every byte itself through libc, so
 * nothing it gets depends on this thread; an error or EOF just ends it.
 * Only a regular file opened read-only with WARM_MIN or more left is read
 * ahead (not a pipe from a compressor, not stdin from a terminal).
 */
#include "bfo_tar.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WARM_AHEAD    (64ull << 20)
#define WARM_CHUNK    (1u << 20)
#define WARM_MIN      (8ull << 20)

static struct {
	int read_last;          /* tar's thread: fd of its last read() before extracting */
	int src;                /* tar's fd of the archive being read ahead */
	uint64_t pos;           /* tar's offset in it (atomic: tar's thread writes) */
	int stop;               /* atomic: the thread ends */
	int ended;              /* atomic: the thread ended */
} ra = { .read_last = -1, .src = -1 };

/*
 * Tests only, hidden (tests/testhooks.c, preloaded beside the plugin):
 * tar's thread, having started the read-ahead, waits until it has read
 * something (or ended), so that a test sees it work whatever the threads'
 * timing.  Undefined, its address is NULL: tar and every other program.
 */
extern const int bfo_tar_test_ahead_first __attribute__((weak));

static void *warmer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char *buf = malloc(WARM_CHUNK);
	uint64_t at = __atomic_load_n(&ra.pos, __ATOMIC_RELAXED);

	while (buf && !__atomic_load_n(&ra.stop, __ATOMIC_RELAXED)) {
		uint64_t pos = __atomic_load_n(&ra.pos, __ATOMIC_RELAXED);
		ssize_t k;

		if (at < pos)           /* tar caught up, or seeked past us */
			at = pos;
		if (at >= pos + WARM_AHEAD) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
			continue;
		}
		k = pread(fd, buf, WARM_CHUNK, (off_t)at);
		if (k <= 0)
			break;
		at += (uint64_t)k;
		__atomic_fetch_add(&counters.xread_ahead, (uint64_t)k, __ATOMIC_RELAXED);
	}
	free(buf);
	real_close(fd);
	__atomic_store_n(&ra.ended, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* tar created its first file: if the fd it last read is its archive (a
 * regular file it opened read-only, enough of it left), read it ahead. */
void archive_ahead_start(void)
{
	char proc[40];
	struct stat sb;
	pthread_t t;
	sigset_t all, old;
	off_t pos;
	int fd = ra.read_last, fl, own;

	if (fd < 0 || ra.src >= 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
	    (fl & O_ACCMODE) != O_RDONLY || real_fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
	    (pos = real_lseek(fd, 0, SEEK_CUR)) < 0 || (uint64_t)sb.st_size < (uint64_t)pos + WARM_MIN)
		return;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	own = real_open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (own < 0)
		return;
	posix_fadvise(own, 0, 0, POSIX_FADV_SEQUENTIAL);
	__atomic_store_n(&ra.pos, (uint64_t)pos, __ATOMIC_RELAXED);
	__atomic_store_n(&ra.stop, 0, __ATOMIC_RELAXED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);       /* signals stay tar's */
	__atomic_store_n(&ra.ended, 0, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, warmer, (void *)(intptr_t)own) == 0) {
		pthread_detach(t);
		ra.src = fd;
	} else {
		real_close(own);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (&bfo_tar_test_ahead_first && ra.src >= 0 &&
	       !__atomic_load_n(&counters.xread_ahead, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&ra.ended, __ATOMIC_ACQUIRE)) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
}

/* tar closed its archive: the thread ends after its current pread. */
static void warm_end(void)
{
	__atomic_store_n(&ra.stop, 1, __ATOMIC_RELAXED);
	ra.src = -1;
}

/* tar's read() through libc, on any thread; before extracting, the fd tar
 * reads may be its archive. */
void archive_ahead_note_read(int fd)
{
	if (plugin.extract_ok && !extracting() && pthread_equal(pthread_self(), plugin.tar_thread))
		ra.read_last = fd;
}

/* tar read r bytes of fd: the thread keeps WARM_AHEAD past tar's position. */
void archive_ahead_read(int fd, ssize_t r)
{
	if (r > 0 && fd >= 0 && fd == ra.src)
		__atomic_fetch_add(&ra.pos, (uint64_t)r, __ATOMIC_RELAXED);
}

/* tar's lseek() on fd returned r. */
void archive_ahead_seek(int fd, off_t r)
{
	if (r >= 0 && fd >= 0 && fd == ra.src)
		__atomic_store_n(&ra.pos, (uint64_t)r, __ATOMIC_RELAXED);
}

void archive_ahead_closing(int fd)
{
	if (fd == ra.src && fd >= 0)
		warm_end();
}

/* After fork(): the thread stayed in the parent. */
void archive_ahead_forget(void)
{
	ra.src = -1;
}

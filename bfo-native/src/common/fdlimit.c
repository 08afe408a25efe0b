/* SPDX-License-Identifier: Apache-2.0 */
/* The descriptor budget (fdlimit.h). */
#include "fdlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "test_hooks.h"

unsigned fdl_free(void)
{
	struct rlimit rl;
	char buf[4096];
	long n, used = 0;
	int fd;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= UINT32_MAX)
		return UINT32_MAX;
	/* The entries of /proc/self/fd, less the one listing them. */
	fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == EMFILE ? 0 : (unsigned)(rl.rlim_cur / 2);      /* no /proc: half */
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + off);

			used += d->d_name[0] != '.';
			off += d->d_reclen;
		}
	}
	close(fd);
	used = used > 0 ? used - 1 : 0;
	return rl.rlim_cur > (rlim_t)used ? (unsigned)(rl.rlim_cur - (rlim_t)used) : 0;
}

unsigned fdl_share(unsigned want, unsigned least)
{
	unsigned quarter = fdl_free() / 4;

	return MAX(MIN(want, quarter), MIN(least, want));
}

/* ------------------------------------------------------------ counted */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned held;          /* counted descriptors open now */
	unsigned held_waiting;  /* of them, held by threads waiting in fdl_retry */
	unsigned waiters;
	uint64_t gen;           /* counted closes so far */
} fdl = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static __thread int mine;       /* counted descriptors this thread opened less those it closed */

void fdl_hold(void)
{
	__atomic_fetch_add(&fdl.held, 1, __ATOMIC_RELAXED);
	mine++;
}

void fdl_release(void)
{
	mine--;
	__atomic_fetch_sub(&fdl.held, 1, __ATOMIC_RELAXED);
	/* seq_cst with fdl_retry's waiters++ then gen load: one of the two
	 * sees the other (a waiter never misses this close). */
	__atomic_fetch_add(&fdl.gen, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&fdl.waiters, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&fdl.lock);
		pthread_cond_broadcast(&fdl.cond);
		pthread_mutex_unlock(&fdl.lock);
	}
}

uint64_t fdl_gen(void)
{
	return __atomic_load_n(&fdl.gen, __ATOMIC_ACQUIRE);
}

/*
 * When every counted descriptor is held by a waiting thread, nobody will
 * close one, unless one of them gives up and closes its own: each waits
 * this long for that before it gives up too.  Only then: a budget far too
 * small for even one descriptor per thread.
 */
#define FDL_STALEMATE_NS 200000000ull
/* At most this long in all for one open (a descriptor never given back). */
#define FDL_WAIT_MAX_NS  60000000000ull

static struct timespec deadline(uint64_t ns)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += (long)(ns % 1000000000ull);
	t.tv_sec += (time_t)(ns / 1000000000ull) + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

bool fdl_retry(int err, uint64_t *gen)
{
	unsigned my = mine > 0 ? (unsigned)mine : 0;
	uint64_t t0 = bfo_now_ns();
	bool again = false, stalemate = false, hooked = false;

	if (err != EMFILE && err != ENFILE)
		return false;
	pthread_mutex_lock(&fdl.lock);
	__atomic_fetch_add(&fdl.waiters, 1, __ATOMIC_SEQ_CST);
	fdl.held_waiting += my;
	/* Others waiting with what they hold can no longer count on ours. */
	pthread_cond_broadcast(&fdl.cond);
	for (;;) {
		uint64_t g = __atomic_load_n(&fdl.gen, __ATOMIC_SEQ_CST);
		struct timespec until;
		unsigned held;

		if (g != *gen) {
			*gen = g;
			again = true;
			break;
		}
		held = __atomic_load_n(&fdl.held, __ATOMIC_RELAXED);
		if (held > fdl.held_waiting) {
			/* Someone will close one (a read or a create ends);
			 * the bound is against a descriptor never given back. */
			stalemate = false;
			if (bfo_now_ns() - t0 > FDL_WAIT_MAX_NS)
				break;
			if (bfo_test_hooks.fd_retry && !hooked) {
				hooked = true;
				pthread_mutex_unlock(&fdl.lock);
				bfo_test_hooks.fd_retry(bfo_test_hooks.arg);
				pthread_mutex_lock(&fdl.lock);
				continue;
			}
			until = deadline(FDL_STALEMATE_NS);
			pthread_cond_timedwait(&fdl.cond, &fdl.lock, &until);
			continue;
		}
		/* libbfo holds none: the limit is the program's.  Only
		 * waiters hold some: a stalemate, unless one gives up. */
		if (!held || stalemate)
			break;
		stalemate = true;
		until = deadline(FDL_STALEMATE_NS);
		pthread_cond_timedwait(&fdl.cond, &fdl.lock, &until);
	}
	fdl.held_waiting -= my;
	__atomic_fetch_sub(&fdl.waiters, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&fdl.lock);
	return again;
}

int fdl_openat(int dfd, const char *path, int flags, mode_t mode)
{
	uint64_t gen = fdl_gen();
	int fd;

	while ((fd = openat(dfd, path, flags, mode)) < 0 && fdl_retry(errno, &gen))
		;
	if (fd >= 0)
		fdl_hold();
	return fd;
}

int fdl_open(const char *path, int flags, mode_t mode)
{
	return fdl_openat(AT_FDCWD, path, flags, mode);
}

DIR *fdl_opendir(const char *path)
{
	int fd = fdl_open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, 0);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		fdl_close(fd);
		errno = e;
	}
	return d;
}

int fdl_close(int fd)
{
	int r = close(fd);

	fdl_release();
	return r;
}

int fdl_closedir(DIR *d)
{
	int r = closedir(d);

	fdl_release();
	return r;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* The stream's bytes on a descriptor, counted, compressed when asked (wio.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "test_hooks.h"
#include "wio.h"

#ifdef BFO_HAVE_ZSTD
#include <zstd.h>

#define ZBUF (128u << 10)

/* libzstd, loaded on first use: the functions this file calls. */
static struct {
	bool ok;
	ZSTD_CCtx *(*create_c)(void);
	size_t (*free_c)(ZSTD_CCtx *);
	size_t (*c_param)(ZSTD_CCtx *, ZSTD_cParameter, int);
	size_t (*compress)(ZSTD_CCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *, ZSTD_EndDirective);
	ZSTD_DCtx *(*create_d)(void);
	size_t (*free_d)(ZSTD_DCtx *);
	size_t (*d_param)(ZSTD_DCtx *, ZSTD_dParameter, int);
	size_t (*decompress)(ZSTD_DCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *);
	unsigned (*is_error)(size_t);
} zs;
static pthread_once_t zs_once = PTHREAD_ONCE_INIT;

static void zs_load(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	*(void **)&zs.create_c = dlsym(h, "ZSTD_createCCtx");
	*(void **)&zs.free_c = dlsym(h, "ZSTD_freeCCtx");
	*(void **)&zs.c_param = dlsym(h, "ZSTD_CCtx_setParameter");
	*(void **)&zs.compress = dlsym(h, "ZSTD_compressStream2");
	*(void **)&zs.create_d = dlsym(h, "ZSTD_createDCtx");
	*(void **)&zs.free_d = dlsym(h, "ZSTD_freeDCtx");
	*(void **)&zs.d_param = dlsym(h, "ZSTD_DCtx_setParameter");
	*(void **)&zs.decompress = dlsym(h, "ZSTD_decompressStream");
	*(void **)&zs.is_error = dlsym(h, "ZSTD_isError");
	zs.ok = zs.create_c && zs.free_c && zs.c_param && zs.compress && zs.create_d && zs.free_d &&
		zs.d_param && zs.decompress && zs.is_error;
	/* (the handle stays: the functions are used for the process's life) */
}

bool wio_zstd_available(void)
{
	pthread_once(&zs_once, zs_load);
	return zs.ok;
}
#else
bool wio_zstd_available(void)
{
	return false;
}
#endif

void wio_init(struct wio *w, int fd, int stopfd, const atomic_bool *cancel)
{
	struct stat st;

	*w = (struct wio){ .fd = fd, .stopfd = stopfd, .cancel = cancel };
	/* Not for files or devices: their RWF_NOWAIT may fail with EAGAIN
	 * for reasons poll() does not wait out.  Without a stopfd nothing
	 * but a signal would end the wait anyway. */
	w->nowait = stopfd >= 0 && fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
	w->fifo = w->nowait && S_ISFIFO(st.st_mode);
}

/* What a write to a pipe takes without waiting, where the kernel's pipes
 * refuse RWF_NOWAIT (6.1): poll()'s POLLOUT promises a free page; more
 * when the pipe's size less what it holds (in pages, one more for a page
 * partly read and one for a page partly written) leaves more.  A lone
 * writer is then never held in the kernel by a reader that stopped. */
static size_t pipe_room(int fd)
{
	int cap = fcntl(fd, F_GETPIPE_SZ), queued = 0;
	long room;

	if (cap <= 0 || ioctl(fd, FIONREAD, &queued) < 0 || queued < 0)
		return 4096;
	room = (long)cap - ((long)queued / 4096 + 2) * 4096;
	return room > 4096 ? (size_t)room : 4096;
}

/* One write: RWF_NOWAIT where it is wanted and the kernel takes it for
 * this descriptor (sockets always; pipes on the kernels that gave them
 * FMODE_NOWAIT, 6.18 here, not 6.1).  A kernel that refuses it says
 * EOPNOTSUPP once; then writev: to a pipe, of no more than it takes at
 * once (pipe_room), so that a stop still ends the wait in poll(); to
 * anything else a write that may wait in the kernel as before. */
static ssize_t write_once(struct wio *w, const struct iovec *iov, int n)
{
	if (w->nowait && !bfo_test_hooks.pipe_nowait_refused) {
		ssize_t k = pwritev2(w->fd, iov, n, -1, RWF_NOWAIT);

		if (k >= 0 || (errno != EOPNOTSUPP && errno != EINVAL))
			return k;
		w->nowait = false;
	}
	if (w->fifo) {
		size_t room = pipe_room(w->fd), sum = 0;
		int k = 0;

		while (k < n && sum + iov[k].iov_len <= room)
			sum += iov[k++].iov_len;
		if (k == 0) {
			struct iovec part = { iov[0].iov_base, room };

			return writev(w->fd, &part, 1);
		}
		n = k;
	}
	return writev(w->fd, iov, n);
}

/* Before a read or write that may block: -ECANCELED once *cancel is set
 * or stopfd is readable (a cancel just before the call ends the wait),
 * 1 when a signal interrupted the wait (look again), 0 to go on, -errno.
 * Without a stopfd, only a signal's EINTR ends the call's wait. */
static int wait_ready(struct wio *w, short events)
{
	struct pollfd pf[2] = { { w->fd, events, 0 }, { w->stopfd, POLLIN, 0 } };

	if (w->cancel && atomic_load(w->cancel))
		return -ECANCELED;
	if (w->stopfd < 0)
		return 0;
	if (poll(pf, 2, -1) < 0)
		return errno == EINTR ? 1 : -errno;
	return (pf[1].revents & POLLIN) ? -ECANCELED : 0;
}

/* All of iov[0..n) to the descriptor, continuing short writes;
 * -ECANCELED once *cancel is set or stopfd is readable (see wio_init for
 * a write to a full pipe; one to anything else that blocks in the kernel
 * ends on a signal's EINTR or the far side's end). */
static int write_all(struct wio *w, struct iovec *iov, size_t n)
{
	while (n) {
		int r = wait_ready(w, POLLOUT);

		if (r < 0)
			return r;
		if (r)
			continue;
		ssize_t k = write_once(w, iov, (int)MIN(n, (size_t)IOV_MAX));

		if (k < 0) {
			/* EAGAIN: full after all (another writer, or a
			 * caller's O_NONBLOCK): poll again */
			if (errno == EINTR || (errno == EAGAIN && w->stopfd >= 0))
				continue;
			return -errno;
		}
		w->bytes += (uint64_t)k;
		while (n && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* Up to len bytes from the descriptor: the count, 0 at its end, or -errno
 * (-ECANCELED: stopfd became readable, or a signal came with cancel set). */
static ssize_t read_some(struct wio *w, void *p, size_t len)
{
	for (;;) {
		int r = wait_ready(w, POLLIN);
		ssize_t k;

		if (r < 0)
			return r;
		if (r)
			continue;
		k = read(w->fd, p, len);
		if (k >= 0) {
			w->bytes += (uint64_t)k;
			return k;
		}
		if (errno != EINTR || (w->cancel && atomic_load(w->cancel)))
			return errno == EINTR ? -ECANCELED : -errno;
	}
}

#ifdef BFO_HAVE_ZSTD
int wio_compress(struct wio *w, int level)
{
	if (!wio_zstd_available())
		return -EOPNOTSUPP;
	w->z = zs.create_c();
	w->buf = malloc(ZBUF);
	w->cap = ZBUF;
	w->writer = true;
	if (!w->z || !w->buf)
		return -ENOMEM;
	if (zs.is_error(zs.c_param(w->z, ZSTD_c_compressionLevel, level)) ||
	    zs.is_error(zs.c_param(w->z, ZSTD_c_windowLog, WIO_WINDOW_LOG)))
		return -EINVAL;
	return 0;
}

int wio_decompress(struct wio *w)
{
	if (!wio_zstd_available())
		return -EOPNOTSUPP;
	w->z = zs.create_d();
	w->buf = malloc(ZBUF);
	w->cap = ZBUF;
	if (!w->z || !w->buf)
		return -ENOMEM;
	/* a stream asking for a larger window is refused, not obeyed */
	if (zs.is_error(zs.d_param(w->z, ZSTD_d_windowLogMax, WIO_WINDOW_LOG)))
		return -EINVAL;
	return 0;
}

/* Compress in (or, with mode ZSTD_e_flush, flush) into the buffer,
 * writing it out each time it fills. */
static int z_feed(struct wio *w, ZSTD_inBuffer *in, ZSTD_EndDirective mode)
{
	for (;;) {
		ZSTD_outBuffer out = { w->buf, w->cap, w->len };
		size_t left = zs.compress(w->z, &out, in, mode);

		if (zs.is_error(left))
			return -EIO;
		w->len = out.pos;
		if (w->len == w->cap || (mode == ZSTD_e_flush && w->len)) {
			struct iovec v = { w->buf, w->len };
			int ret = write_all(w, &v, 1);

			if (ret)
				return ret;
			w->len = 0;
		}
		if (mode == ZSTD_e_flush ? !left : in->pos == in->size)
			return 0;
	}
}

static int z_writev(struct wio *w, const struct iovec *iov, size_t n)
{
	ZSTD_inBuffer none = { NULL, 0, 0 };
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		ZSTD_inBuffer in = { iov[i].iov_base, iov[i].iov_len, 0 };

		ret = z_feed(w, &in, ZSTD_e_continue);
	}
	return ret ? ret : z_feed(w, &none, ZSTD_e_flush);
}

static ssize_t z_read(struct wio *w, void *p, size_t len)
{
	ZSTD_outBuffer out = { p, len, 0 };

	while (out.pos < out.size) {
		size_t before = out.pos, r;
		ZSTD_inBuffer in = { w->buf, w->len, w->pos };

		/* what the decoder holds, or makes of what was read, first:
		 * the sender may wait for an answer before it sends more */
		r = zs.decompress(w->z, &out, &in);
		w->pos = in.pos;
		if (zs.is_error(r))
			return -EBADMSG;
		if (out.pos > before || w->pos < w->len)
			continue;
		if (w->eof)
			break;
		ssize_t k = read_some(w, w->buf, w->cap);

		if (k < 0)
			return k;
		w->eof = k == 0;
		w->len = (size_t)k;
		w->pos = 0;
	}
	return (ssize_t)out.pos;
}

#else
int wio_compress(struct wio *w, int level)
{
	(void)w;
	(void)level;
	return -EOPNOTSUPP;
}

int wio_decompress(struct wio *w)
{
	(void)w;
	return -EOPNOTSUPP;
}
#endif

int wio_writev(struct wio *w, struct iovec *iov, size_t n)
{
#ifdef BFO_HAVE_ZSTD
	if (w->z)
		return z_writev(w, iov, n);
#endif
	return write_all(w, iov, n);
}

ssize_t wio_read(struct wio *w, void *p, size_t len)
{
	size_t got = 0;

#ifdef BFO_HAVE_ZSTD
	if (w->z)
		return z_read(w, p, len);
#endif
	while (got < len) {
		ssize_t k = read_some(w, (char *)p + got, len - got);

		if (k < 0)
			return k;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (ssize_t)got;
}

void wio_free(struct wio *w)
{
#ifdef BFO_HAVE_ZSTD
	if (w->z && w->writer)
		zs.free_c(w->z);
	else if (w->z)
		zs.free_d(w->z);
#endif
	w->z = NULL;
	free(w->buf);
	w->buf = NULL;
}

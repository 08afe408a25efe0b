/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_fdwrite: write many (fd, buffer, length, offset) entries in one
 * batched submission, for callers that already hold the fds (the tar
 * plugin writes the fds GNU tar opened, never a path re-opened later).
 * io_uring when the kernel has it (one ring per call, entries in flight up
 * to the ring's depth, short writes resubmitted), else pwrite() in a loop.
 * bfo_syncfs: the batch's durability point, one syncfs per file system.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"

#define FDW_DEPTH 256u          /* entries in flight at once */

static int pwrite_entry(struct bfo_fdwrite_entry *e)
{
	while (e->done < e->length) {
		ssize_t k = pwrite(e->fd, (const char *)e->buf + e->done,
				   (size_t)(e->length - e->done), (off_t)(e->offset + e->done));

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		e->done += (uint64_t)k;
	}
	return 0;
}

static void prep(struct io_uring *ring, struct bfo_fdwrite_entry *e, unsigned i)
{
	struct io_uring_sqe *q = io_uring_get_sqe(ring);
	uint64_t left = e->length - e->done;

	/* the ring has room: the caller never submits more than it holds */
	io_uring_prep_write(q, e->fd, (const char *)e->buf + e->done,
			    left > (1u << 30) ? (1u << 30) : (unsigned)left, e->offset + e->done);
	io_uring_sqe_set_data64(q, i);
}

static int uring_entries(struct bfo_fdwrite_entry *e, unsigned n)
{
	struct io_uring ring;
	unsigned depth = n < FDW_DEPTH ? n : FDW_DEPTH, next = 0, inflight = 0;
	int failed = 0, stop = 0, ret = io_uring_queue_init(depth, &ring, 0);

	if (ret < 0)
		return ret;
	while (next < n || inflight) {
		struct io_uring_cqe *c;

		while (next < n && inflight < depth) {
			if (e[next].length == 0) {
				next++;
				continue;
			}
			prep(&ring, &e[next], next);
			next++;
			inflight++;
		}
		if (!inflight)
			break;
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0 && ret != -EINTR) {
			/* Stop submitting; wait for what is in flight, so no
			 * buffer is still in use when we return. */
			next = n;
			stop = 1;
			if (io_uring_wait_cqe(&ring, &c) < 0)
				break;
		}
		while (io_uring_peek_cqe(&ring, &c) == 0) {
			struct bfo_fdwrite_entry *x = &e[c->user_data];

			inflight--;
			if (c->res > 0) {
				x->done += (uint64_t)c->res;
				if (x->done < x->length && !stop) {  /* short: the rest */
					prep(&ring, x, (unsigned)c->user_data);
					inflight++;
				}
			} else if ((c->res == -EINTR || c->res == -EAGAIN) && !stop) {
				prep(&ring, x, (unsigned)c->user_data);
				inflight++;
			} else if (c->res <= 0 && c->res != -EINTR && c->res != -EAGAIN) {
				x->status = c->res ? c->res : -EIO;
			}
			io_uring_cqe_seen(&ring, c);
		}
		if (ret < 0 && ret != -EINTR)
			failed = ret;
	}
	io_uring_queue_exit(&ring);
	/* After a ring failure, entries not finished are completed by the
	 * caller with pwrite() from where each stands (done is exact: only
	 * completions move it).  An entry whose write was lost in a ring that
	 * could not even be waited on is written again from done as well. */
	return failed;
}

BFO_API int bfo_fdwrite(struct bfo_fdwrite_entry *e, unsigned n, unsigned flags)
{
	unsigned failed = 0;
	int saved = errno;

	if ((n && !e) || (flags & ~BFO_FDWRITE_PORTABLE))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (e[i].fd < 0 || (!e[i].buf && e[i].length) || e[i].reserved0 ||
		    e[i].reserved[0] || e[i].reserved[1])
			return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++) {
		e[i].done = 0;
		e[i].status = 0;
	}
	/* io_uring pays for itself from a few entries on; a missing or
	 * refused io_uring (ENOSYS, EPERM, ENOMEM for locked memory) falls
	 * back to pwrite for whatever it did not write. */
	if (n < 4 || (flags & BFO_FDWRITE_PORTABLE) || uring_entries(e, n) < 0) {
		for (unsigned i = 0; i < n; i++)
			if (e[i].status == 0 && e[i].done < e[i].length)
				e[i].status = pwrite_entry(&e[i]);
	}
	for (unsigned i = 0; i < n; i++)
		if (e[i].status < 0)
			failed++;
	errno = saved;
	return (int)failed;
}

BFO_API int bfo_syncfs(int fd)
{
	int saved = errno, ret = syncfs(fd) < 0 ? -errno : 0;

	errno = saved;
	return ret;
}

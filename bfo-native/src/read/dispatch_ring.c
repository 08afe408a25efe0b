/* SPDX-License-Identifier: Apache-2.0 */
/* The read dispatcher's io_uring (see dispatch_ring.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <liburing.h>

#include "common.h"
#include "fdlimit.h"
#include "dispatch_ring.h"
#include "test_hooks.h"

/* Raw region buffers: at most this much memory, at least a few buffers. */
#define RBUF_BUDGET (32u << 20)

static unsigned pow2_at_least(unsigned n)
{
	unsigned p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

void uring_free(struct uring_state *u)
{
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	if (u->slot_fd)
		for (unsigned i = 0; i < u->nslots; i++)
			if (u->slot_fd[i] >= 0) {
				close(u->slot_fd[i]);
				fdl_release();
			}
	free(u->slot_fd);
	free(u->ops);
	free(u->slot_free);
	free(u->opened);
	free(u->rbuf_free);
	free(u->rbuf);
	free(u);
}

/*
 * Does this kernel put a file taken out of the registered table later, in
 * a worker?  6.1 does (io_rsrc_put_work, about a second later, then
 * fput's delayed work): every file a batch read through direct descriptors
 * stays open after the batch returned, and after the process exited, so an
 * unmount right after `bfo read` says "target is busy".  Newer kernels put
 * it in the caller, before io_uring_register returns.  Asked of the kernel
 * once per process: a pipe's write end goes into slot 0 and out again, and
 * its read end sees the hang-up at once only where the removal closed it.
 */
static bool removal_deferred(struct io_uring *ring)
{
	static _Atomic int known;       /* 0 not asked, 1 deferred, 2 at once */
	int p[2], fd, k = atomic_load(&known);

	if (k)
		return k == 1;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return true;            /* not asked: the safe side, not kept */
	k = 1;
	fd = p[1];
	if (io_uring_register_files_update(ring, 0, &fd, 1) == 1) {
		close(p[1]);
		p[1] = -1;
		fd = -1;
		if (io_uring_register_files_update(ring, 0, &fd, 1) == 1) {
			struct pollfd pf = { .fd = p[0], .events = POLLIN };

			if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLHUP))
				k = 2;
		}
	}
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	atomic_store(&known, k);
	return k == 1;
}

struct uring_state *uring_create(unsigned qd, char *why, size_t len)
{
	struct io_uring_params p;
	struct io_uring_probe *probe;
	struct uring_state *u;
	struct rlimit rl;
	unsigned entries = pow2_at_least(2 * qd + 8);
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int ret = -EINVAL;

	u = calloc(1, sizeof(*u));
	if (!u) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	/* Newest flags first; older kernels refuse them with EINVAL. */
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = entries * 2;
		ret = io_uring_queue_init_params(entries, &u->ring, &p);
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0) {
		snprintf(why, len, "io_uring_setup: %s", strerrordesc_np(-ret));
		free(u);
		return NULL;
	}
	probe = io_uring_get_probe_ring(&u->ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_OPENAT) ||
	    !io_uring_opcode_supported(probe, IORING_OP_READ) ||
	    !io_uring_opcode_supported(probe, IORING_OP_READ_FIXED) ||
	    !io_uring_opcode_supported(probe, IORING_OP_POLL_ADD)) {
		snprintf(why, len, "io_uring lacks openat/read/poll");
		if (probe)
			io_uring_free_probe(probe);
		goto fail;
	}
	io_uring_free_probe(probe);
	/* The direct-descriptor table may not exceed RLIMIT_NOFILE. */
	u->nslots = qd;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    u->nslots > rl.rlim_cur / 2)
		u->nslots = (unsigned)MAX(rl.rlim_cur / 2, 1);
	ret = io_uring_register_files_sparse(&u->ring, u->nslots);
	if (ret < 0) {
		snprintf(why, len, "io_uring direct descriptors: %s", strerrordesc_np(-ret));
		goto fail;
	}
	if (bfo_test_hooks.uring_plain_fds || removal_deferred(&u->ring)) {
		io_uring_unregister_files(&u->ring);
		u->plain_fds = true;
		/* ordinary descriptors: a part's share of what the limit leaves */
		u->nslots = MIN(u->nslots, fdl_share(u->nslots, 1));
		u->slot_fd = malloc(u->nslots * sizeof(*u->slot_fd));
		if (!u->slot_fd) {
			snprintf(why, len, "out of memory");
			goto fail;
		}
		for (unsigned i = 0; i < u->nslots; i++)
			u->slot_fd[i] = -1;
	}
	u->nops = qd;
	u->ops = calloc(u->nops, sizeof(*u->ops));
	u->slot_free = malloc(u->nslots * sizeof(*u->slot_free));
	u->opened = malloc(u->nops * sizeof(*u->opened));
	if (!u->ops || !u->slot_free || !u->opened) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < u->nops; i++)
		u->ops[i].next_free = i + 1 < u->nops ? i + 1 : UINT32_MAX;
	u->op_free = 0;
	for (unsigned i = 0; i < u->nslots; i++)
		u->slot_free[i] = u->nslots - 1 - i;
	u->nslot_free = u->nslots;
	return u;
fail:
	uring_free(u);
	return NULL;
}

struct io_uring_sqe *get_sqe(struct uring_state *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (!sqe) {
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

uint32_t op_get(struct uring_state *u, enum op_kind kind, struct window *w,
		uint32_t idx, uint32_t res)
{
	uint32_t i = u->op_free;
	struct op *op = &u->ops[i];

	u->op_free = op->next_free;
	op->kind = (uint8_t)kind;
	op->w = w;
	op->idx = idx;
	op->res = res;
	op->open_err = 0;
	u->ops_busy++;
	return i;
}

void op_put(struct uring_state *u, uint32_t i)
{
	u->ops[i].kind = OP_FREE;
	u->ops[i].next_free = u->op_free;
	u->op_free = i;
	u->ops_busy--;
}

/* Region buffers are made on first use, so contexts that never read raw
 * do not pay for them.  Registered (READ_FIXED) when the kernel lets us
 * pin them; plain reads otherwise. */
bool rbuf_ready(struct uring_state *u, uint64_t max_io, unsigned qd)
{
	if (u->rbuf)
		return true;
	if (u->rbuf_tried)
		return false;
	u->rbuf_tried = true;
	u->rbuf_size = max_io + 2 * 4096;
	u->nrbuf = (unsigned)MIN((size_t)qd, MAX(RBUF_BUDGET / u->rbuf_size, 4));
	if (posix_memalign((void **)&u->rbuf, 4096, u->rbuf_size * u->nrbuf)) {
		u->rbuf = NULL;
		return false;
	}
	u->rbuf_free = malloc(u->nrbuf * sizeof(*u->rbuf_free));
	struct iovec *iov = calloc(u->nrbuf, sizeof(*iov));

	if (!u->rbuf_free || !iov) {
		free(iov);
		free(u->rbuf);
		u->rbuf = NULL;
		return false;
	}
	for (unsigned i = 0; i < u->nrbuf; i++) {
		u->rbuf_free[i] = i;
		iov[i].iov_base = u->rbuf + (size_t)i * u->rbuf_size;
		iov[i].iov_len = u->rbuf_size;
	}
	u->nrbuf_free = u->nrbuf;
	u->rbuf_fixed = io_uring_register_buffers(&u->ring, iov, u->nrbuf) == 0;
	free(iov);
	return true;
}

void arm_evfd(struct uring_state *u, int evfd)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	io_uring_prep_poll_multishot(sqe, evfd, POLLIN);
	sqe->user_data = UD_EVFD;
	u->evfd_armed = true;
}

void drain_evfd(int evfd)
{
	uint64_t v;

	while (read(evfd, &v, sizeof(v)) == sizeof(v))
		;
}

void ring_cancel_inflight(struct uring_state *u, bool stopping)
{
	struct io_uring_sqe *sqe;

	if (!u)
		return;
	if (!stopping) {
		u->cancel_sent = false;
		return;
	}
	if (u->cancel_sent || !u->ops_busy)
		return;
	sqe = get_sqe(u);
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	sqe->user_data = UD_CANCEL;
	io_uring_submit(&u->ring);
	u->cancel_sent = true;
}

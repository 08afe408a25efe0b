/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The io_uring variant of the batched engine: per file an openat (create,
 * exclusive), then a write (and an fsync for DURABILITY_EACH) once the
 * descriptor is known; identity and metadata go to that descriptor before
 * it is closed.  Only whole regular files take this path; everything else
 * goes to the pool as usual.  Descriptors held: a file per chain
 * (uring_qd) and uring_dirs directories, sized by the writer (fit_fds).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <liburing.h>

#include "common.h"
#include "writer.h"
#include "fdlimit.h"
#include "test_hooks.h"

/* io_uring chains: creates block in io-wq workers; more than this many at
 * once only contend on the file system's journal (measured on ext4/XFS). */
#define URING_WQ_WORKERS 8u

struct uchain {
	uint32_t i;
	int dfd;
	int fd;
	int err;
	int64_t written;            /* the write's result; short: finished by hand */
};

enum { U_OPEN = 1, U_WRITE, U_FSYNC };

/* A chain ended: finish the file through its descriptor, or remove it. */
static void uchain_done(struct wbatch *b, struct uchain *c)
{
	struct bfo_wentry *e = &b->e[c->i];
	const char *name = entry_name(b, c->i);

	if (c->fd >= 0) {
		/* A short write: finish it here to learn the real error
		 * (ENOSPC, EDQUOT) or to complete the file. */
		if (!c->err && c->written >= 0 && (uint64_t)c->written < e->length)
			c->err = write_all(c->fd, (const uint8_t *)e->data + c->written,
					   e->length - (uint64_t)c->written, (uint64_t)c->written);
		if (!c->err)
			c->err = file_made(b, c->i, c->fd, false);
		if (fdl_close(c->fd) < 0 && !c->err)
			c->err = -errno;
		/* Only a file this chain made is removed (-EEXIST came from
		 * the open: the file there is not ours). */
		if (c->err)
			unlinkat(c->dfd, name, 0);
	}
	set_status(b, c->i, c->err);
	if (!c->err)
		stat_add(&b->w->st.bytes, e->length);
}

/* The open of slot s completed with fd: its write (and fsync) go out. */
static bool uchain_write(struct io_uring *ring, struct wbatch *b, struct uchain *c, uint32_t s)
{
	struct bfo_wentry *e = &b->e[c->i];
	struct io_uring_sqe *q;

	if (!e->length && b->w->o.durability != BFO_DURABILITY_EACH)
		return false;
	if (io_uring_sq_space_left(ring) < 2)
		io_uring_submit(ring);
	q = io_uring_get_sqe(ring);
	io_uring_prep_write(q, c->fd, e->data, (unsigned)MIN(e->length, (uint64_t)1 << 30), 0);
	q->user_data = (uint64_t)s << 8 | U_WRITE;
	if (b->w->o.durability == BFO_DURABILITY_EACH) {
		q->flags |= IOSQE_IO_LINK;
		q = io_uring_get_sqe(ring);
		io_uring_prep_fsync(q, c->fd, 0);
		q->user_data = (uint64_t)s << 8 | U_FSYNC;
	}
	return true;
}

/* The chains of one uring_files call: its ring, and a chain per slot. */
struct uchains {
	struct io_uring ring;
	struct uchain *ch;
	uint32_t *free_slots, nfree, qd;
	/* Files whose open met EMFILE/ENFILE while descriptors of ours were
	 * held (fdlimit.h): opened again once one was closed. */
	struct uretry {
		uint32_t i;
		int dfd;
	} *retry;
	uint32_t nretry;
	uint32_t holding;           /* chains holding a file's descriptor */
	bool retry_ready;           /* a descriptor was closed since they failed */
	uint64_t gen;               /* fdl_gen() when this ring held none */
};

static void uchains_exit(struct uchains *u)
{
	free(u->ch);
	free(u->free_slots);
	free(u->retry);
	io_uring_queue_exit(&u->ring);
}

static int uchains_init(struct uchains *u, unsigned qd)
{
	unsigned wq[2] = { URING_WQ_WORKERS, URING_WQ_WORKERS };
	int ret = io_uring_queue_init(qd * 2, &u->ring, 0);

	if (ret < 0)
		return ret;
	io_uring_register_iowq_max_workers(&u->ring, wq);
	u->ch = calloc(qd, sizeof(*u->ch));
	u->free_slots = malloc(qd * sizeof(*u->free_slots));
	u->retry = malloc(qd * sizeof(*u->retry));
	u->nretry = u->holding = 0;
	u->retry_ready = false;
	u->gen = fdl_gen();
	if (!u->ch || !u->free_slots || !u->retry) {
		uchains_exit(u);
		return -ENOMEM;
	}
	u->qd = qd;
	for (u->nfree = 0; u->nfree < qd; u->nfree++)
		u->free_slots[u->nfree] = u->nfree;
	return 0;
}

static void uchain_submit_open(struct wbatch *b, struct uchains *u, uint32_t i, int dfd)
{
	uint32_t s = u->free_slots[--u->nfree];
	struct io_uring_sqe *q;

	if (io_uring_sq_space_left(&u->ring) < 1)
		io_uring_submit(&u->ring);
	u->ch[s] = (struct uchain){ .i = i, .dfd = dfd, .fd = -1, .written = -1 };
	q = io_uring_get_sqe(&u->ring);
	io_uring_prep_openat(q, dfd, entry_name(b, i),
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	q->user_data = (uint64_t)s << 8 | U_OPEN;
}

/* Opens for the files to open again (once a descriptor came back), then
 * for those from idx[sub] on, while slots are free: the next sub.  No new
 * file while some wait to open again: they would meet EMFILE too, and the
 * retry list (qd entries) holds at most the slots that are free. */
static uint32_t uchains_open(struct wbatch *b, struct uchains *u, const uint32_t *idx,
			     const int *dfds, uint32_t sub, uint32_t n)
{
	/* Nothing in flight holds or may take a descriptor: try them again
	 * (uchains_short then asks fdl_retry, which bounds a refusal that is
	 * the program's). */
	if (u->nretry && u->nfree == u->qd)
		u->retry_ready = true;
	while (u->nfree && u->nretry && u->retry_ready && !batch_stopped(b)) {
		struct uretry r = u->retry[--u->nretry];

		uchain_submit_open(b, u, r.i, r.dfd);
	}
	u->retry_ready = false;
	if (u->nretry)
		return sub;
	while (u->nfree && sub < n && !batch_stopped(b)) {
		uchain_submit_open(b, u, idx[sub], dfds[sub]);
		sub++;
	}
	return sub;
}

/*
 * The opens short[0..n) of this reap met EMFILE/ENFILE (their slots are
 * free again): whether they go again later.  They do while another chain
 * of this ring is in flight, holding a descriptor it will close or opening
 * one it may take and then close, or when another thread of libbfo closed
 * one (fdl_retry, asked once for them all); else the refusal is the
 * program's and they fail.  Returns the files failed.
 */
static uint32_t uchains_short(struct wbatch *b, struct uchains *u, const uint32_t *short_fd, unsigned n)
{
	bool idle = u->nfree == u->qd, again = true;
	uint32_t failed = 0;

	if (!n)
		return 0;
	if (idle)
		again = fdl_retry(short_fd[0] & 0x80000000u ? ENFILE : EMFILE, &u->gen);
	else if (u->holding && bfo_test_hooks.fd_retry)
		bfo_test_hooks.fd_retry(bfo_test_hooks.arg);
	for (unsigned x = 0; x < n; x++) {
		struct uchain *c = &u->ch[short_fd[x] & 0x7fffffffu];

		if (again) {
			u->retry[u->nretry++] = (struct uretry){ .i = c->i, .dfd = c->dfd };
			continue;
		}
		c->err = short_fd[x] & 0x80000000u ? -ENFILE : -EMFILE;
		uchain_done(b, c);
		failed++;
	}
	/* In flight: their ends say when (a close sets it; with none
	 * left, uchains_open tries again). */
	u->retry_ready = again && idle;
	return failed;
}

/* The completions there are: a chain whose open succeeded gets its write,
 * a chain that ended is finished and its slot freed.  Returns the files
 * finished. */
static uint32_t uchains_reap(struct wbatch *b, struct uchains *u)
{
	bool each = b->w->o.durability == BFO_DURABILITY_EACH;
	struct io_uring_cqe *cqe;
	unsigned head, k = 0;
	uint32_t ended[64], short_fd[64], done = 0;
	unsigned nended = 0, nshort = 0;

	io_uring_for_each_cqe(&u->ring, head, cqe) {
		uint32_t s = (uint32_t)(cqe->user_data >> 8);
		unsigned op = cqe->user_data & 0xff;
		struct uchain *c = &u->ch[s];
		bool end = false;

		k++;
		if (op == U_OPEN) {
			/* Decided below, once the opens of this reap that got a
			 * descriptor count as holding one: in completion order,
			 * an EMFILE before them looked like the program's. */
			if (cqe->res == -EMFILE || cqe->res == -ENFILE) {
				short_fd[nshort++] = s | (cqe->res == -ENFILE ? 0x80000000u : 0);
				if (nshort == sizeof(short_fd) / sizeof(short_fd[0]))
					break;
				continue;
			}
			if (cqe->res < 0) {
				c->err = cqe->res;
			} else {
				c->fd = cqe->res;
				fdl_hold();
				u->holding++;
			}
			/* Submitted after this loop: the ring is being read. */
			end = cqe->res < 0;
			if (!end)
				ended[nended++] = s | 0x80000000u;
		} else if (op == U_WRITE) {
			if (cqe->res >= 0)
				c->written = cqe->res;
			else if (!c->err)
				c->err = cqe->res;
			end = !each;
		} else {
			stat_add(&b->w->st.syncs, 1);
			if (cqe->res < 0 && cqe->res != -ECANCELED && !c->err)
				c->err = cqe->res;
			end = true;
		}
		if (end)
			ended[nended++] = s;
		if (nended == sizeof(ended) / sizeof(ended[0]))
			break;
	}
	io_uring_cq_advance(&u->ring, k);
	for (unsigned x = 0; x < nshort; x++)
		u->free_slots[u->nfree++] = short_fd[x] & 0x7fffffffu;
	done += uchains_short(b, u, short_fd, nshort);
	for (unsigned x = 0; x < nended; x++) {
		uint32_t s = ended[x] & 0x7fffffffu;

		if ((ended[x] & 0x80000000u) && uchain_write(&u->ring, b, &u->ch[s], s))
			continue;
		if (u->ch[s].fd >= 0) {
			u->holding--;
			u->retry_ready = true;
		}
		uchain_done(b, &u->ch[s]);
		u->free_slots[u->nfree++] = s;
		done++;
	}
	return done;
}

/* The chains of the files idx[0..n) (each in directory dfds[k]) on u. */
static void uring_files(struct wbatch *b, struct uchains *u, uint32_t *idx, int *dfds, uint32_t n)
{
	uint32_t sub = 0, done = 0;

	while (done < n) {
		/* STOP_ON_ERROR: what is not submitted yet is cancelled. */
		while (sub < n && batch_stopped(b)) {
			b->e[idx[sub]].status = -ECANCELED;
			sub++;
			done++;
		}
		while (u->nretry && batch_stopped(b)) {
			b->e[u->retry[--u->nretry].i].status = -ECANCELED;
			done++;
		}
		if (done == n)
			break;
		sub = uchains_open(b, u, idx, dfds, sub, n);
		io_uring_submit_and_wait(&u->ring, 1);
		done += uchains_reap(b, u);
	}
}

bool uring_usable(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(2, &ring, 0) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

/*
 * A wave of directories at a time, so the directory descriptors held stay
 * bounded: at most uring_dirs, and within what the descriptor limit leaves
 * free when the wave starts (its ring, then half for directories and half
 * for the chains' files), so a wave never takes the descriptors its own
 * chains need.
 */
void data_uring(struct wbatch *b, uint32_t gfirst, uint32_t gend, struct wtask *tasks)
{
	struct bfo_writer *w = b->w;
	uint32_t *idx = malloc(b->n * sizeof(*idx));
	int *dfds = malloc(b->n * sizeof(*dfds));
	int *open_fds = malloc(w->uring_dirs * sizeof(*open_fds));
	uint64_t gen = fdl_gen();

	if (!idx || !dfds || !open_fds) {
		free(idx);
		free(dfds);
		free(open_fds);
		for (uint32_t g = gfirst; g < gend; g++)
			for (uint32_t k = tasks[g].first; k < tasks[g].first + tasks[g].count; k++)
				set_status(b, b->order[k], -ENOMEM);
		return;
	}
	for (uint32_t g = gfirst; g < gend;) {
		uint32_t n = 0, nopen = 0, gstop = g;
		unsigned room = fdl_free(), dirs, qd;
		struct uchains u;
		int ret;

		room = room > 1 ? room - 1 : 1;
		dirs = MIN(w->uring_dirs, MAX(1u, room / 2));
		qd = MIN(w->uring_qd, MAX(1u, room - dirs));
		ret = uchains_init(&u, qd);
		if ((ret == -EMFILE || ret == -ENFILE) && fdl_retry(-ret, &gen))
			continue;
		for (; gstop < gend && nopen < dirs; gstop++) {
			struct wtask *t = &tasks[gstop];
			int dfd = ret < 0 ? ret : wpath_open_dir_held(w->rootfd, t->dir, !t->late);

			/* Out of descriptors with directories of this wave
			 * open: the rest go in the next wave, after these. */
			if ((dfd == -EMFILE || dfd == -ENFILE) && nopen)
				break;
			if (dfd >= 0)
				open_fds[nopen++] = dfd;
			if (dfd >= 0 && bfo_test_hooks.dir_opened)
				bfo_test_hooks.dir_opened(bfo_test_hooks.arg, t->dir);
			for (uint32_t k = t->first; k < t->first + t->count; k++) {
				uint32_t i = b->order[k];

				if (b->e[i].status || b->e[i].type != BFO_WTYPE_FILE)
					continue;
				if (dfd < 0) {
					set_status(b, i, dfd);
					continue;
				}
				idx[n] = i;
				dfds[n++] = dfd;
			}
		}
		if (ret == 0) {
			uring_files(b, &u, idx, dfds, n);
			uchains_exit(&u);
		}
		for (uint32_t k = 0; k < nopen; k++)
			fdl_close(open_fds[k]);
		g = gstop;
	}
	free(idx);
	free(dfds);
	free(open_fds);
}

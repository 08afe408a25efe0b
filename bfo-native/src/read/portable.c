/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-file reads on the pool: the portable engine, the fallback of the raw
 * and uring engines, and large files in pieces.  Each read holds its own
 * descriptor only while it runs and checks with fstat() before and after
 * that the file is the one planned and did not change meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "fdlimit.h"
#include "ctx.h"
#include "portable.h"
#include "plan.h"
#include "test_hooks.h"

/* Until EOF or len bytes: pread at off, or, with off UINT64_MAX, read()
 * from the file's position (pseudo files need not support pread). */
static int read_full(int fd, uint8_t *buf, uint64_t len, uint64_t off, uint64_t *got)
{
	*got = 0;
	while (*got < len) {
		size_t want = (size_t)MIN(len - *got, (uint64_t)1 << 30);
		ssize_t n = off == UINT64_MAX ? read(fd, buf + *got, want) :
			    pread(fd, buf + *got, want, (off_t)(off + *got));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		*got += (uint64_t)n;
	}
	return 0;
}

static bool fresh_stat(int fd, struct entry *fresh)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	entry_meta_from_stat(fresh, &st);
	return true;
}

/*
 * A pseudo file: its bytes are made when read, its size and times say
 * nothing, so it is read to EOF and checked only to be the file planned.
 * Filling the buffer means EOF was not seen: the dispatcher asks again
 * with a larger one.  The descriptor is non-blocking, so a file that
 * never ends without blocking (trace_pipe) fails with -EAGAIN, not hangs.
 */
static void pseudo_read(struct fitem *it, const struct entry *e, int fd)
{
	int ret;

	if (it->fresh.ino != e->ino || it->fresh.dev != e->dev) {
		it->changed = true;
		return;
	}
	ret = read_full(fd, it->buf, it->len, UINT64_MAX, &it->got);
	if (ret) {
		it->result = ret;
		return;
	}
	if (bfo_test_hooks.after_data)
		bfo_test_hooks.after_data(bfo_test_hooks.arg, e->path);
	it->full = it->got == it->len;
	it->result = 0;
}

static void fitem_read(struct fitem *it, enum fjob_kind kind, const struct entry *e,
		       bool nofollow)
{
	uint64_t got = 0, want;
	int fd, ret;

	fd = fdl_open(e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			       (nofollow ? O_NOFOLLOW : 0), 0);
	if (fd < 0) {
		it->result = -errno;
		return;
	}
	it->fresh_ok = fresh_stat(fd, &it->fresh);
	if (!it->fresh_ok) {
		it->result = -EIO;
		goto out;
	}
	if (!S_ISREG(it->fresh.mode)) {
		it->result = S_ISDIR(it->fresh.mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	if (e->pseudo) {
		pseudo_read(it, e, fd);
		goto out;
	}
	if (!meta_same(&it->fresh, e)) {
		it->changed = true;
		goto out;
	}
	/* A whole file is read one byte past its size: getting that byte
	 * means it grew after it was stat'ed. */
	want = kind == FJ_WHOLE ? e->size + 1 : it->len;
	ret = read_full(fd, it->buf, want, kind == FJ_WHOLE ? 0 : it->off, &got);
	if (ret) {
		it->result = ret;
		goto out;
	}
	if (bfo_test_hooks.after_data)
		bfo_test_hooks.after_data(bfo_test_hooks.arg, e->path);
	it->fresh_ok = fresh_stat(fd, &it->fresh);
	if (!it->fresh_ok || got != (kind == FJ_WHOLE ? e->size : it->len) ||
	    !meta_same(&it->fresh, e)) {
		it->changed = true;
		goto out;
	}
	it->result = 0;
out:
	fdl_close(fd);
}

void fjob_run(struct pool_task *t)
{
	struct fjob *j = (struct fjob *)t;
	struct bfo_ctx *ctx = j->ctx;
	bool nofollow = ctx->o.flags & BFO_READ_NOFOLLOW;

	for (uint32_t i = 0; i < j->n; i++)
		fitem_read(&j->items[i], j->kind, &j->w->e[j->items[i].ei], nofollow);
	pthread_mutex_lock(&ctx->lock);
	j->next = ctx->done_jobs;
	ctx->done_jobs = j;
	ctx_wake_dispatcher(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

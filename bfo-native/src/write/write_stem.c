/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stem engine: a batch's files large enough to own a block are first
 * written back to back, block-aligned, into one stem file in the journal
 * directory (one sequential stream), made durable, and each file then
 * shares its whole blocks from it (FICLONERANGE, write_entry.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"
#include "writer.h"

/* pwritev until everything is written (it may write less than asked). */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t k = pwritev(fd, iov, n, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -ENOSPC;
		off += (uint64_t)k;
		while (n > 0 && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

int write_stem(struct wbatch *b, const char *stem_name)
{
	struct bfo_writer *w = b->w;
	static const uint8_t zeros[4096];
	struct iovec iov[IOV_MAX];
	uint64_t batch_off = 0, end = 0;
	int niov = 0, ret = 0;

	b->stem_fd = openat(w->jfd, stem_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (b->stem_fd < 0)
		return -errno;
	/* Each stem file whole, block-aligned, back to back, in the order
	 * the files will be created: one sequential stream in few large
	 * pwritev calls.  stem_off was assigned in entry order; the stem is
	 * laid out in that same order. */
	for (uint32_t i = 0; i < b->n && !ret; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (b->stem_off[i] == UINT64_MAX)
			continue;
		uint64_t pad = ALIGN_UP(e->length, w->blksz) - e->length;
		int need = 1 + (int)((pad + sizeof(zeros) - 1) / sizeof(zeros));

		if (niov + need > IOV_MAX) {
			ret = pwritev_all(b->stem_fd, iov, niov, batch_off);
			batch_off = end;
			niov = 0;
		}
		iov[niov++] = (struct iovec){ (void *)e->data, e->length };
		for (uint64_t p = pad; p;) {
			uint64_t c = MIN(p, sizeof(zeros));

			iov[niov++] = (struct iovec){ (void *)zeros, c };
			p -= c;
		}
		end += e->length + pad;
	}
	if (!ret && niov)
		ret = pwritev_all(b->stem_fd, iov, niov, batch_off);
	if (!ret && w->o.durability != BFO_DURABILITY_NONE && fdatasync(b->stem_fd) < 0)
		ret = -errno;
	return ret;
}

bool probe_clone(struct bfo_writer *w)
{
	char a[64], b2[64];
	uint8_t *buf = calloc(1, w->blksz);
	bool ok = false;
	int fa, fb;

	snprintf(a, sizeof(a), "probe-%d-%x-a", (int)getpid(), w->id);
	snprintf(b2, sizeof(b2), "probe-%d-%x-b", (int)getpid(), w->id);
	fa = openat(w->jfd, a, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	fb = openat(w->jfd, b2, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (buf && fa >= 0 && fb >= 0 && pwrite(fa, buf, w->blksz, 0) == (ssize_t)w->blksz) {
		struct file_clone_range cr = { .src_fd = fa, .src_length = w->blksz };

		ok = ioctl(fb, FICLONERANGE, &cr) == 0;
	}
	if (fa >= 0) {
		close(fa);
		unlinkat(w->jfd, a, 0);
	}
	if (fb >= 0) {
		close(fb);
		unlinkat(w->jfd, b2, 0);
	}
	free(buf);
	return ok;
}

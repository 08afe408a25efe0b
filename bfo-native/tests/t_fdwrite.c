/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_fdwrite: bfo_fdwrite() writes every (fd, buffer, offset) entry, with
 * io_uring and with the pwrite() fallback: 600 files of sizes 0 to 70 KiB
 * (more entries than the ring holds at once), two entries at different
 * offsets of one file, and one file in pieces; the bytes read back with
 * plain read() equal the buffers.  Per-entry errors: an fd opened
 * read-only fails alone (-EBADF) while the others are written; bad
 * arguments give -EINVAL and write nothing.  bfo_syncfs() on a written fd
 * returns 0, on a bad fd -EBADF; errno is never touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "t_helpers.h"

#define NFILES 600

static void check_file(const char *path, const unsigned char *want, size_t len)
{
	unsigned char *got = malloc(len + 2);
	int fd = open(path, O_RDONLY);
	size_t have = 0;
	ssize_t k;

	T_ASSERT(fd >= 0 && got, "open %s", path);
	while ((k = read(fd, got + have, len + 2 - have)) > 0)
		have += (size_t)k;
	close(fd);
	T_EQ(have, len);
	T_ASSERT(memcmp(got, want, len) == 0, "%s: bytes differ from the buffer", path);
	free(got);
}

static void run(const char *dir, unsigned flags)
{
	struct bfo_fdwrite_entry *e = calloc(NFILES + 3, sizeof(*e));
	unsigned char **bufs = calloc(NFILES + 3, sizeof(*bufs));
	size_t *lens = calloc(NFILES + 3, sizeof(*lens));
	char path[4096];
	int ro;

	T_ASSERT(e && bufs && lens, "memory");
	for (unsigned i = 0; i < NFILES; i++) {
		lens[i] = i == 0 ? 0 : (size_t)(i * 7919u) % (70u << 10);
		bufs[i] = malloc(lens[i] + 1);
		for (size_t j = 0; j < lens[i]; j++)
			bufs[i][j] = (unsigned char)(rand() >> 7);
		snprintf(path, sizeof(path), "%s/f%u-%u", dir, i, flags);
		e[i].fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		T_ASSERT(e[i].fd >= 0, "create %s", path);
		e[i].buf = bufs[i];
		e[i].length = lens[i];
	}
	/* one file, two entries at different offsets */
	snprintf(path, sizeof(path), "%s/two-%u", dir, flags);
	e[NFILES].fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	e[NFILES + 1].fd = e[NFILES].fd;
	lens[NFILES] = 10000;
	bufs[NFILES] = malloc(2 * lens[NFILES]);
	for (size_t j = 0; j < 2 * lens[NFILES]; j++)
		bufs[NFILES][j] = (unsigned char)(j * 31 + 7);
	e[NFILES].buf = bufs[NFILES];
	e[NFILES].length = lens[NFILES];
	e[NFILES + 1].buf = bufs[NFILES] + lens[NFILES];
	e[NFILES + 1].length = lens[NFILES];
	e[NFILES + 1].offset = lens[NFILES];
	/* read-only fd: fails alone */
	snprintf(path, sizeof(path), "%s/ro-%u", dir, flags);
	close(open(path, O_WRONLY | O_CREAT | O_EXCL, 0644));
	ro = open(path, O_RDONLY);
	e[NFILES + 2].fd = ro;
	e[NFILES + 2].buf = "abc";
	e[NFILES + 2].length = 3;

	errno = 4242;
	T_EQ(bfo_fdwrite(e, NFILES + 3, flags), 1);
	T_EQ(errno, 4242);
	T_EQ(e[NFILES + 2].status, -EBADF);
	T_EQ(e[NFILES + 2].done, 0);
	for (unsigned i = 0; i < NFILES + 2; i++) {
		T_EQ(e[i].status, 0);
		T_EQ(e[i].done, e[i].length);
	}
	T_EQ(bfo_syncfs(e[0].fd), 0);
	for (unsigned i = 0; i < NFILES; i++) {
		close(e[i].fd);
		snprintf(path, sizeof(path), "%s/f%u-%u", dir, i, flags);
		check_file(path, bufs[i], lens[i]);
		free(bufs[i]);
	}
	close(e[NFILES].fd);
	close(ro);
	snprintf(path, sizeof(path), "%s/two-%u", dir, flags);
	check_file(path, bufs[NFILES], 2 * lens[NFILES]);
	snprintf(path, sizeof(path), "%s/ro-%u", dir, flags);
	check_file(path, (const unsigned char *)"", 0);
	free(bufs[NFILES]);
	free(bufs);
	free(lens);
	free(e);
}

int main(void)
{
	char *dir;
	struct bfo_fdwrite_entry bad = { .fd = -1 };
	char path[4096];

	t_init("t_fdwrite", 120);
	dir = t_mkdtemp_in(t_tmpdir());
	T_EQ(bfo_fdwrite(NULL, 1, 0), -EINVAL);
	T_EQ(bfo_fdwrite(NULL, 0, 0), 0);
	T_EQ(bfo_fdwrite(&bad, 1, 0), -EINVAL);
	snprintf(path, sizeof(path), "%s/untouched", dir);
	bad.fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	bad.buf = "xyz";
	bad.length = 3;
	T_EQ(bfo_fdwrite(&bad, 1, 1u << 7), -EINVAL);
	bad.reserved[1] = 1;
	T_EQ(bfo_fdwrite(&bad, 1, 0), -EINVAL);
	close(bad.fd);
	check_file(path, (const unsigned char *)"", 0);
	errno = 77;
	T_EQ(bfo_syncfs(-1), -EBADF);
	T_EQ(errno, 77);
	srand(7);
	run(dir, 0);
	run(dir, BFO_FDWRITE_PORTABLE);
	t_log("io_uring and pwrite paths: %u files each, bytes equal to read()", NFILES);
	free(dir);
	t_done();
	return 0;
}

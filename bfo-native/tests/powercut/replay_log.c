/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pc_replay_log: reads a dm-log-writes log and replays it onto a device,
 * for the power-cut harness (pc.py).  No Debian package carries xfstests'
 * replay-log; this does the two things the harness needs of it.
 *
 *   pc_replay_log index LOGDEV
 *       one line per entry: INDEX OFFSET FLAGS SECTOR NR_SECTORS MARK
 *       (OFFSET: the entry's byte offset in the log; MARK "-" when none)
 *   pc_replay_log apply LOGDEV DEV FROM OFFSET TO
 *       writes entries FROM..TO-1 (FROM's byte offset given) onto DEV,
 *       discards as zeros, then fsync; the harness replays a log in
 *       steps, checking the device between them
 *
 * The log (the kernel's Documentation/admin-guide/device-mapper/
 * log-writes.rst, drivers/md/dm-log-writes.c): a super block in the first
 * sector (u64 magic 0x6a736677736872, u64 version 1, u64 nr_entries, u32
 * sectorsize); from the second sector on, per entry, one sector holding
 * u64 sector, u64 nr_sectors, u64 flags (1 FLUSH, 2 FUA, 4 DISCARD,
 * 8 MARK, 16 METADATA), u64 data_len and, for a mark, its name; then, for
 * a write, nr_sectors sectors of data.  Sectors are of sectorsize bytes,
 * little-endian numbers.  Entries are in the order the writes completed
 * and reached stable storage: any prefix is a state the device could have
 * held at a power cut.
 *
 * Exit 0, or 1 with the reason on stderr (a log that breaks its format
 * included: every number is bounded by the log's own size).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <unistd.h>

#define LOG_MAGIC 0x6a736677736872ull
#define F_DISCARD 4u
#define F_MARK 8u

static int fail(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "pc_replay_log: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

static uint64_t dev_size(int fd)
{
	struct stat st;
	uint64_t sz = 0;

	if (fstat(fd, &st) < 0)
		return 0;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, &sz) == 0 ? sz : 0;
	return (uint64_t)st.st_size;
}

static int full_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

static int full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t k = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

struct log {
	int fd;
	uint64_t size, nr, ss;
	uint8_t *sec;
};

static int log_open(struct log *l, const char *path)
{
	uint8_t sb[512];

	l->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (l->fd < 0)
		return fail("%s: %s", path, strerror(errno));
	l->size = dev_size(l->fd);
	if (full_pread(l->fd, sb, sizeof(sb), 0) < 0)
		return fail("%s: cannot read the super block%s", path, "");
	uint64_t magic, version;
	uint32_t ss;

	memcpy(&magic, sb, 8);
	memcpy(&version, sb + 8, 8);
	memcpy(&l->nr, sb + 16, 8);
	memcpy(&ss, sb + 24, 4);
	magic = le64toh(magic);
	version = le64toh(version);
	l->nr = le64toh(l->nr);
	l->ss = le32toh(ss);
	if (magic != LOG_MAGIC || version != 1)
		return fail("%s: not a dm-log-writes log (magic, version)%s", path, "");
	if (l->ss < 512 || l->ss > 65536 || (l->ss & (l->ss - 1)) || l->nr > l->size / l->ss)
		return fail("%s: sector size or entry count out of bounds%s", path, "");
	l->sec = malloc(l->ss);
	return l->sec ? 0 : fail("out of memory%s%s", "", "");
}

/* The entry at *off: its header fields; *off moves past it. */
static int log_entry(struct log *l, uint64_t *off, uint64_t *sector, uint64_t *nsec, uint64_t *flags,
		     char *mark, size_t mlen)
{
	uint64_t v[4];

	if (*off + l->ss > l->size || full_pread(l->fd, l->sec, l->ss, *off) < 0)
		return fail("entry header past the end of the log%s%s", "", "");
	memcpy(v, l->sec, sizeof(v));
	*sector = le64toh(v[0]);
	*nsec = le64toh(v[1]);
	*flags = le64toh(v[2]);
	uint64_t dlen = le64toh(v[3]);

	mark[0] = 0;
	if (*flags & F_MARK) {
		size_t k = dlen < mlen - 1 ? (size_t)dlen : mlen - 1;

		if (k > l->ss - 32)
			k = l->ss - 32;
		memcpy(mark, l->sec + 32, k);
		mark[k] = 0;
		for (size_t i = 0; i < k; i++)
			if (mark[i] <= ' ' || mark[i] > '~')
				mark[i] = '_';
	}
	if (*nsec > l->size / l->ss)
		return fail("entry length out of bounds%s%s", "", "");
	*off += l->ss;
	if (!(*flags & F_DISCARD))
		*off += *nsec * l->ss;
	return 0;
}

static int cmd_index(const char *path)
{
	struct log l;
	uint64_t off, sector, nsec, flags;
	char mark[256];

	if (log_open(&l, path))
		return 1;
	off = l.ss;
	for (uint64_t i = 0; i < l.nr; i++) {
		uint64_t at = off;

		if (log_entry(&l, &off, &sector, &nsec, &flags, mark, sizeof(mark)))
			return 1;
		printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", i, at, flags,
		       sector, nsec, mark[0] ? mark : "-");
	}
	return 0;
}

static int cmd_apply(const char *path, const char *devpath, uint64_t from, uint64_t off, uint64_t to)
{
	struct log l;
	uint64_t sector, nsec, flags, dsize;
	char mark[256];
	int dev;
	uint8_t *buf;
	size_t cap = 1 << 20;

	if (log_open(&l, path))
		return 1;
	dev = open(devpath, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return fail("%s: %s", devpath, strerror(errno));
	dsize = dev_size(dev);
	buf = malloc(cap);
	if (!buf || to > l.nr || from > to || off < l.ss)
		return fail("bad range or out of memory%s%s", "", "");
	for (uint64_t i = from; i < to; i++) {
		uint64_t at = off;

		if (log_entry(&l, &off, &sector, &nsec, &flags, mark, sizeof(mark)))
			return 1;
		if (!nsec || (flags & F_MARK))
			continue;
		uint64_t bytes = nsec * l.ss, dst = sector * l.ss;

		if (dst > dsize || bytes > dsize - dst)
			return fail("a write past the end of %s%s", devpath, "");
		for (uint64_t done = 0; done < bytes;) {
			size_t k = (size_t)(bytes - done < cap ? bytes - done : cap);

			if (flags & F_DISCARD)
				memset(buf, 0, k);
			else if (full_pread(l.fd, buf, k, at + l.ss + done) < 0)
				return fail("cannot read an entry's data%s%s", "", "");
			if (full_pwrite(dev, buf, k, dst + done) < 0)
				return fail("%s: write: %s", devpath, strerror(errno));
			done += k;
		}
	}
	if (fsync(dev) < 0)
		return fail("%s: fsync: %s", devpath, strerror(errno));
	close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "index"))
		return cmd_index(argv[2]);
	if (argc == 7 && !strcmp(argv[1], "apply"))
		return cmd_apply(argv[2], argv[3], strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10),
				 strtoull(argv[6], NULL, 10));
	fprintf(stderr, "usage: pc_replay_log index LOG | apply LOG DEV FROM OFFSET TO\n");
	return 2;
}

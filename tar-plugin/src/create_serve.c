/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Create: serving.  tar's open of a listed file is matched with what the
 * batch read (identity, size, mtime, ctime, through the fd tar got from
 * libc), and its read()s on that fd are answered from libbfo's arena.
 */
#include "create.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

static int same_file(const struct bfo_file *f, const struct stat *sb)
{
	uint64_t dev = ((uint64_t)major(sb->st_dev) << 32) | minor(sb->st_dev);

	return f->dev == dev && f->ino == (uint64_t)sb->st_ino &&
	       f->size == (uint64_t)sb->st_size &&
	       f->mtime_sec == (int64_t)sb->st_mtim.tv_sec &&
	       f->mtime_nsec == (uint32_t)sb->st_mtim.tv_nsec &&
	       f->ctime_sec == (int64_t)sb->st_ctim.tv_sec &&
	       f->ctime_nsec == (uint32_t)sb->st_ctim.tv_nsec;
}

/* tar is about to open dirfd/name read-only: the entry we hold for it. */
static struct ent *lookup(int dirfd, const char *name, int flags)
{
	struct group *g;
	struct ent *e;

	if ((flags & (O_ACCMODE | O_CREAT | O_TRUNC | O_DIRECTORY | O_PATH)) != O_RDONLY ||
	    strchr(name, '/'))
		return NULL;
	g = group_by_fd(dirfd);
	if (!g || !g->listed)
		return NULL;
	e = group_find(g, name);
	if (!e)
		return NULL;
	cr.tar_reads = 1;
	if (e->state == E_NEW) {
		/* tar is ahead of the read-ahead (a subdirectory listed while
		 * its parent's batch runs): let that batch land, then start
		 * the next one here, with this file first. */
		pump(NULL, 1);
		g->cursor = (size_t)(e - g->e);
		topup();
		g->cursor++;
	}
	if (e->state == E_INFLIGHT)
		pump(e, 0);
	if (e->state != E_READY) {
		e->state = E_DONE;
		counters.fallback++;
		return NULL;
	}
	return e;
}

static void serve(int fd, struct ent *e)
{
	struct stat sb;
	struct served *s = NULL;

	e->state = E_DONE;
	if (fd >= FDTAB_MAX || fstat(fd, &sb) < 0 || !same_file(&e->f, &sb) ||
	    !(s = malloc(sizeof(*s)))) {
		drop_held(&e->f, e->epoch);
		counters.fallback++;
		return;
	}
	s->f = e->f;
	s->pos = 0;
	s->epoch = e->epoch;
	if (cr.fdtab[fd]) {                /* cannot be: tar closed it before */
		free(s);
		drop_held(&e->f, e->epoch);
		return;
	}
	cr.fdtab[fd] = s;
	counters.served++;
}

void unserve(int fd)
{
	struct served *s = cr.fdtab[fd];

	cr.fdtab[fd] = NULL;
	if (s->f.data) {
		drop_held(&s->f, s->epoch);
	}
	free(s);
}

/* tar is about to open dirfd/path: the entry we hold for it, if any. */
struct ent *create_open_before(int dirfd, const char *path, int flags)
{
	pump(NULL, 0);
	return lookup(dirfd, path, flags);
}

/* tar's open of e returned fd: serve it, or give e's data back. */
void create_open_after(int fd, struct ent *e)
{
	if (!e)
		return;
	if (fd >= 0) {
		serve(fd, e);
	} else {
		drop_held(&e->f, e->epoch);
		e->state = E_DONE;
	}
	topup();
}

struct served *served_fd(int fd)
{
	return (unsigned)fd < FDTAB_MAX ? cr.fdtab[fd] : NULL;
}

uint64_t served_pos(const struct served *s)
{
	return s->pos;
}

/* tar's read() of a served fd, from memory; the data goes back once read. */
ssize_t serve_read(struct served *s, void *buf, size_t n)
{
	uint64_t k = s->f.length - s->pos;

	if (k > n)
		k = n;
	if (k)
		memcpy(buf, (const char *)s->f.data + s->pos, k);
	s->pos += k;
	counters.served_bytes += k;
	if (s->pos == s->f.length && s->f.data) {
		drop_held(&s->f, s->epoch);
		s->f.data = NULL;
	}
	return (ssize_t)k;
}

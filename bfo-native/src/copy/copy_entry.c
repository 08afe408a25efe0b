/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a copier's entries are made of (copy.h): its bookkeeping (failures,
 * progress, strings a batch owns), the metadata an entry takes from its
 * source, and --update's look at what the destination already has.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "copy.h"
#include "write_meta.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

/* ---------------------------------------------------------- bookkeeping */

bool copy_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = MAX(*cap * 2, MAX(need, 64));
	void *q = realloc(*p, c * elem);

	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static void count_error(struct bfo_copier *c)
{
	pthread_mutex_lock(&c->lock);
	c->st.errors++;
	pthread_mutex_unlock(&c->lock);
}

/* A full destination ends the run, as rsync's and cp's end: its batch
 * finishes (each file whole or absent), nothing more is read, and the
 * failures it causes are counted, not each said: the caller says it once. */
static bool full(struct bfo_copier *c, int status)
{
	if (status != -ENOSPC && status != -EDQUOT)
		return false;
	if (!c->nospace) {
		c->nospace = status;
		bfo_copier_cancel(c);
	}
	count_error(c);
	return true;
}

void copy_report(struct bfo_copier *c, const char *path, int status)
{
	if (full(c, status))
		return;
	/* (from a sender's scan begun early: said later, or dropped) */
	if (c->prescan && copy_report_deferred(c, path, status))
		return;
	count_error(c);
	if (c->cb.error)
		c->cb.error(c->cb.arg, path, status);
}

void copy_owner_lost(struct bfo_copier *c, const char *path, int status)
{
	if (!c->owner_lost) {
		copy_report(c, path, status);
		return;
	}
	count_error(c);
	c->owner_lost(c->owner_lost_arg, path, status);
}

/* The destination root already has the metadata e would give it (a copy
 * run again): it is left alone, as other directories are. */
static bool root_same(struct bfo_copier *c, const struct bfo_wentry *e)
{
	struct stat st;

	return (c->flags & BFO_COPY_UPDATE) && fstat(c->dst_fd, &st) == 0 &&
	       (st.st_mode & 07777) == e->mode &&
	       (!(e->flags & BFO_WENTRY_OWNER) || (st.st_uid == e->uid && st.st_gid == e->gid)) &&
	       (e->flags & BFO_WENTRY_TIMES) && st.st_mtim.tv_sec == e->mtime_sec &&
	       (uint64_t)st.st_mtim.tv_nsec == e->mtime_nsec && copy_has_xattrs(c->dst_fd, e);
}

void copy_root_meta(struct bfo_copier *c, const struct bfo_wentry *e)
{
	int lost = 0, ret;

	if (c->dst_fd < 0) {
		copy_report(c, c->root, -EBADF);
		return;
	}
	if (root_same(c, e))
		return;
	c->tail_changed = true;
	ret = meta_apply(c->dst_fd, false, e, false, false, NULL, &lost);
	if (ret)
		copy_report(c, c->root, ret);
	else if (lost)
		copy_owner_lost(c, c->root, lost);
}

void copy_tail_durable(struct bfo_copier *c)
{
	if (c->tail_changed && c->dst_fd >= 0 && !(c->flags & BFO_COPY_DRY_RUN) &&
	    c->wo.durability != BFO_DURABILITY_NONE && syncfs(c->dst_fd) < 0)
		copy_report(c, c->root, -errno);
	c->tail_changed = false;
}

void copy_progress(struct bfo_copier *c, bool force)
{
	uint64_t now = bfo_now_ns();
	struct bfo_copy_stats st;

	if (!c->cb.progress || (!force && now - c->last_progress < PROGRESS_NS))
		return;
	c->last_progress = now;
	bfo_copier_stats(c, &st);
	c->cb.progress(c->cb.arg, &st);
}

char *copy_own(struct bfo_copier *c, char *s)
{
	if (!s || !copy_grow((void **)&c->owned, &c->capowned, c->nowned + 1, sizeof(*c->owned))) {
		free(s);
		c->oom = true;
		return NULL;
	}
	c->owned[c->nowned++] = s;
	return s;
}

struct bfo_wentry *copy_add(struct bfo_copier *c)
{
	if (!copy_grow((void **)&c->e, &c->cap, c->n + 1, sizeof(*c->e)) ||
	    (c->sink->stream && !copy_grow((void **)&c->sizes, &c->capsizes, c->n + 1, sizeof(*c->sizes)))) {
		c->oom = true;
		return NULL;
	}
	memset(&c->e[c->n], 0, sizeof(c->e[0]));
	return &c->e[c->n++];
}

char *copy_join(const char *a, const char *b)
{
	char *p = malloc(strlen(a) + strlen(b) + 2);

	if (p)
		sprintf(p, "%s%s%s", a, *a && *b ? "/" : "", b);
	return p;
}

void copy_take_xattrs(struct bfo_copier *c, const char *src, struct bfo_wentry *e)
{
	ssize_t n = llistxattr(src, NULL, 0);
	char *names, *buf;
	size_t cap = 256, len = 0;

	if (n <= 0)
		return;
	names = malloc((size_t)n);
	buf = malloc(cap);
	if (!names || !buf || (n = llistxattr(src, names, (size_t)n)) <= 0) {
		free(names);
		free(buf);
		return;
	}
	for (char *k = names; k < names + n; k += strlen(k) + 1) {
		ssize_t vl = lgetxattr(src, k, NULL, 0);
		size_t kl = strlen(k) + 1;

		if (vl < 0)
			continue;
		while (len + kl + sizeof(uint32_t) + (size_t)vl > cap)
			cap *= 2;
		char *nb = realloc(buf, cap);

		if (!nb)
			break;
		buf = nb;
		vl = lgetxattr(src, k, buf + len + kl + sizeof(uint32_t), (size_t)vl);
		if (vl < 0)
			continue;
		uint32_t v32 = (uint32_t)vl;

		memcpy(buf + len, k, kl);
		memcpy(buf + len + kl, &v32, sizeof(v32));
		len += kl + sizeof(v32) + (size_t)vl;
	}
	free(names);
	if (!len || !copy_own(c, buf)) {
		if (!len)
			free(buf);
		return;
	}
	e->xattrs = buf;
	e->xattrs_len = len;
}

bool copy_exists(int rootfd, const char *path)
{
	char dir[BFO_WPATH_MAX];
	const char *base = wpath_split(path, dir, sizeof(dir));
	/* resolved as the writer resolves it: no symbolic link followed */
	int dfd = rootfd < 0 ? -1 : wpath_open_dir(rootfd, dir, false);
	struct stat st;
	bool there = dfd >= 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;

	if (dfd >= 0)
		close(dfd);
	return there;
}

bool copy_has_xattrs(int fd, const struct bfo_wentry *e)
{
	const uint8_t *x = e->xattrs, *end = x + e->xattrs_len;
	bool same = true;
	char *v;

	if (!e->xattrs_len)
		return true;
	if (fd < 0 || !(v = malloc(65536)))
		return false;
	while (same && x < end) {
		const char *name = (const char *)x;
		uint32_t vl;

		x += strlen(name) + 1;
		memcpy(&vl, x, sizeof(vl));
		x += sizeof(vl);
		same = fgetxattr(fd, name, v, 65536) == (ssize_t)vl && !memcmp(v, x, vl);
		x += vl;
	}
	free(v);
	return same;
}

/* A sender passes the source's metadata on whole: the receiver decides
 * what its copy may take. */
void copy_meta_from(struct bfo_copier *c, struct bfo_wentry *e, uint32_t mode, uint32_t uid,
		      uint32_t gid, int64_t as, uint32_t an, int64_t ms, uint32_t mn)
{
	if (c->sink->stream) {
		e->mode = mode & 07777;
		e->uid = uid;
		e->gid = gid;
		e->atime_sec = as;
		e->atime_nsec = an;
		e->mtime_sec = ms;
		e->mtime_nsec = mn;
		return;
	}
	copy_meta(&c->who, e, mode, uid, gid, as, an, ms, mn);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A copier's sources: regular files go to the read engine, directories
 * are walked (their regular files to the read engine, the rest straight
 * into the batch), anything else goes into the batch.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bfo.h"
#include "common.h"
#include "copy.h"
#include "filter.h"
#include "write_meta.h"
#include "writer.h"
#include "walk.h"
#include "write.h"

void copy_add_other(struct bfo_copier *c, const char *src, const char *dest, const struct stat *st,
		    const char *target, uint16_t srcno, uint8_t want)
{
	struct bfo_wentry *e;

	if (!(e = copy_add(c)) || !(e->path = copy_own(c, strdup(dest)))) {
		if (e)
			c->n--;
		return;
	}
	copy_meta_from(c, e, st->st_mode, st->st_uid, st->st_gid, st->st_atim.tv_sec,
		  (uint32_t)st->st_atim.tv_nsec, st->st_mtim.tv_sec, (uint32_t)st->st_mtim.tv_nsec);
	if (S_ISDIR(st->st_mode)) {
		e->type = BFO_WTYPE_DIR;
	} else if (S_ISLNK(st->st_mode)) {
		size_t cap = (size_t)st->st_size + 2 > 4096 ? (size_t)st->st_size + 2 : 4096;
		char *t = target ? strdup(target) : malloc(cap);
		ssize_t k = !t ? -1 : target ? 0 : readlink(src, t, cap - 1);

		if (k < 0) {
			copy_report(c, src, t ? -errno : -ENOMEM);
			free(t);
			c->n--;
			return;
		}
		if (!target)
			t[k] = '\0';
		e->type = BFO_WTYPE_SYMLINK;
		e->data = copy_own(c, t);
	} else if (S_ISFIFO(st->st_mode)) {
		e->type = BFO_WTYPE_FIFO;
	} else if (S_ISSOCK(st->st_mode)) {
		e->type = BFO_WTYPE_SOCK;      /* a node, as cp makes: nothing listens */
	} else {
		e->type = S_ISCHR(st->st_mode) ? BFO_WTYPE_CHR : BFO_WTYPE_BLK;
		e->rdev = (uint64_t)major(st->st_rdev) << 32 | minor(st->st_rdev);
	}
	e->flags |= sync_wflags(want, e->type == BFO_WTYPE_DIR);
	if (c->archive)
		copy_take_xattrs(c, src, e);
	copy_maybe_flush(c);
}

/* What the walk of a source leaves out: a journal (filter_journal), and
 * what the filter excludes (names are the source's name and the path below
 * it, as rsync's). */
struct skipper {
	const struct filter *f;
	const char *name;
	size_t rootlen;
};

static bool walk_skip(void *arg, const char *path, bool dir)
{
	const struct skipper *k = arg;
	const char *rel = path + k->rootlen + (path[k->rootlen] == '/');
	return filter_source_skips(k->f, k->name, rel, dir);
}

/* Directories the walk could not read, named through the error callback. */
static void report_walk_failures(struct bfo_copier *c, struct walk *wk)
{
	char *path;
	int status;

	while (walk_failure(wk, &path, &status)) {
		copy_report(c, path, status);
		free(path);
	}
}

/* Copy the tree at src (root of source srcno) to prefix. */
static void copy_tree(struct bfo_copier *c, const char *src, const char *prefix, uint16_t srcno)
{
	struct skipper k = { c->filter, c->srcs[srcno].name, strlen(src) };
	struct walk *wk = walk_start_skip(src, WALK_THREADS, WALK_BATCH,
					  WALK_SORT | WALK_NOFOLLOW | WALK_ALL,
					  walk_skip, &k);
	struct walk_file *batch;
	size_t n, slen = strlen(src);
	uint64_t skipped_n = 0, errors = 0;

	if (!wk) {
		copy_report(c, src, -ENOMEM);
		return;
	}
	while (!atomic_load(&c->cancel) && (n = walk_next(wk, &batch)) > 0) {
		for (size_t i = 0; i < n && !atomic_load(&c->cancel); i++) {
			const char *p = batch[i].path;
			char *dest;
			struct stat st;

			const char *rel = p + slen + (p[slen] == '/');

			if (batch[i].type == DT_REG) {
				if (!copy_loses(c, srcno, rel, false))
					copy_submit_file(c, p, srcno, 0);
				continue;
			}
			if (batch[i].st)
				st = *batch[i].st;   /* taken before the walk read it */
			else if (lstat(p, &st) < 0) {
				copy_report(c, p, -errno);
				continue;
			}
			if (copy_loses(c, srcno, rel, S_ISDIR(st.st_mode)))
				continue;
			if (S_ISREG(st.st_mode)) {
				copy_submit_file(c, p, srcno, 0);
				continue;
			}
			dest = copy_join(prefix, rel);
			if (dest)
				copy_add_other(c, p, dest, &st, NULL, srcno, 0);
			free(dest);
		}
		report_walk_failures(c, wk);
		copy_drain(c, 0, false);
	}
	report_walk_failures(c, wk);
	walk_end(wk, &skipped_n, &errors);
	/* Failures beyond the walk's bound were only counted: count them too. */
	if (errors) {
		pthread_mutex_lock(&c->lock);
		c->st.errors += errors;
		pthread_mutex_unlock(&c->lock);
	}
}

/* Place a is place b or lies below it ("" is the destination's top). */
static bool place_within(const char *a, const char *b)
{
	size_t l = strlen(b);

	return !*b || (!strncmp(a, b, l) && (a[l] == '\0' || a[l] == '/'));
}

bool copy_covered(const struct bfo_copier *c, size_t i)
{
	for (size_t j = 0; j < c->nsrcs; j++) {
		const char *a = c->srcs[i].prefix, *b = c->srcs[j].prefix;

		if (j != i && place_within(a, b) && (strcmp(a, b) || j < i))
			return true;
	}
	return false;
}

/* The entry of source k at place dest (below the destination's top),
 * not following any link in k's tree: 1 a directory, 0 another kind,
 * -1 none. */
static int entry_in(const struct bfo_copier *c, size_t k, const char *dest)
{
	const struct src *s = &c->srcs[k];
	size_t l = strlen(s->name);
	const char *rel;
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	struct stat st;
	int root, fd = -1;

	if (!place_within(dest, s->name))
		return -1;
	/* dest is s->name or below it: dest[l] is there to read */
	rel = dest + (*s->name ? l + (dest[l] == '/') : 0);
	if (s->file && *rel)
		return -1;
	if (!*rel)
		return S_ISDIR(s->st.st_mode);
	root = open(s->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root >= 0)
		fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof(how));
	if (fd >= 0 && fstat(fd, &st) < 0)
		st.st_mode = 0;
	if (root >= 0)
		close(root);
	if (fd < 0)
		return -1;
	close(fd);
	return S_ISDIR(st.st_mode);
}

bool copy_loses(const struct bfo_copier *c, uint16_t srcno, const char *rel, bool dir)
{
	const struct src *s = &c->srcs[srcno];
	char *dest;
	bool lost = false;

	if (!c->overlap || !(dest = copy_join(s->name, rel)))
		return false;
	for (size_t k = 0; k < c->nsrcs && !lost; k++) {
		int there = k == srcno ? -1 : entry_in(c, k, dest);

		if (there >= 0)
			lost = k < srcno ? there || !dir : there && !dir;
	}
	free(dest);
	return lost;
}

int copy_source_prep(struct bfo_copier *c, struct run *r, const char *src, const struct stat *st)
{
	uint16_t srcno = (uint16_t)c->nsrcs;   /* sources that failed have no slot */
	struct src *s = &c->srcs[srcno];
	char *sc;

	if (st) {
		s->st = *st;
	} else if (lstat(src, &s->st) < 0) {
		copy_report(c, src, -errno);
		c->list_errors = true;
		return 1;
	}
	sc = strdup(src);
	if (!sc) {
		c->oom = true;
		return -ENOMEM;
	}
	for (size_t l = strlen(sc); l > 1 && sc[l - 1] == '/'; l--)
		sc[l - 1] = '\0';
	if (r->send) {
		/* The stream names the source by number; the receiver maps it. */
		if (asprintf(&s->prefix, "%u", srcno) < 0)
			s->prefix = NULL;
	} else {
		s->prefix = r->dst_is_dir ? copy_src_name(sc) : strdup(r->single ? r->single : "");
	}
	if (!s->prefix) {
		free(sc);
		c->oom = true;
		return -ENOMEM;
	}
	s->arg = src;
	s->name = copy_src_name(sc);
	s->root = sc;
	s->len = strlen(sc);
	s->file = !S_ISDIR(s->st.st_mode);
	/* A copy that did not exist before the run has nothing to compare
	 * with: none of its entries is looked up at the destination. */
	if (!r->send)
		s->fresh = *s->prefix ? !copy_exists(c->dst_fd, s->prefix) : !r->root_existed;
	/* copies that share places: one name, one entry (copy_loses); a
	 * stream's several sources go into a directory */
	for (size_t j = 0; j < c->nsrcs && (r->dst_is_dir || r->send); j++)
		c->overlap |= place_within(s->name, c->srcs[j].name) ||
			      place_within(c->srcs[j].name, s->name);
	c->nsrcs++;
	return 0;
}

void copy_source_go(struct bfo_copier *c, struct run *r, uint16_t srcno)
{
	struct src *s = &c->srcs[srcno];
	const char *src = s->arg;

	if (c->filter && *s->name && filter_excluded(c->filter, s->name, S_ISDIR(s->st.st_mode)))
		return;                   /* excluded by name, as rsync leaves it out */
	if (S_ISDIR(s->st.st_mode) && !*s->prefix) {
		r->root_meta_src = src;   /* the root itself is the copy */
		r->root_meta_st = s->st;  /* as it was before the walk read it */
	}
	bool listed = c->listing && (!s->fresh || (c->flags & BFO_COPY_DRY_RUN));

	bool lost = copy_loses(c, srcno, "", S_ISDIR(s->st.st_mode));

	/* the sources are copied in their order: the list batches of those
	 * before still waiting go first */
	if (c->listing && !listed)
		copy_sync_flush(c);
	if (listed) {
		/* compared through the index: only what differs is read */
		copy_list_source(c, srcno, src, &s->st, copy_sync_emit);
	} else if (S_ISDIR(s->st.st_mode)) {
		if (*s->prefix && !lost)
			copy_add_other(c, src, s->prefix, &s->st, NULL, srcno, 0);
		copy_tree(c, s->root, s->prefix, srcno);
	} else if (S_ISREG(s->st.st_mode) && !lost) {
		copy_submit_file(c, s->root, srcno, 0);
	} else if (!lost) {
		copy_add_other(c, src, s->prefix, &s->st, NULL, srcno, 0);
	}
	copy_drain(c, 0, false);
}

bool copy_source(struct bfo_copier *c, struct run *r, const char *src, const struct stat *st)
{
	int ret = copy_source_prep(c, r, src, st);

	if (ret == 0)
		copy_source_go(c, r, (uint16_t)(c->nsrcs - 1));
	return ret >= 0;
}

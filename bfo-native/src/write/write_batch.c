/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bfo_writer_write: a batch in five steps.  1. validate and plan (entries
 * grouped by directory, temporaries, stem offsets); 2. the manifest,
 * durable before any data; 3. the data (stem, then directory tasks on the
 * pool or io_uring chains, pieces, hard links); 4. one durability point
 * (two with REPLACE); 5. the manifest and stem go.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "writer.h"
#include "fdlimit.h"

static void tmp_name(struct bfo_writer *w, char *buf, size_t len)
{
	pthread_mutex_lock(&w->lock);
	uint64_t s = ++w->tmp_seq;

	pthread_mutex_unlock(&w->lock);
	snprintf(buf, len, BFO_TMP_PREFIX "%x.%llu", w->id, (unsigned long long)s);
}

static int validate(struct bfo_writer *w, struct bfo_wentry *e)
{
	int ret = wpath_check(e->path);

	if (ret)
		return ret;
	switch (e->type) {
	case BFO_WTYPE_FILE:
		if (e->length && !e->data)
			return -EINVAL;
		if ((e->flags & BFO_WENTRY_MORE) || e->offset || stream_find(w, e->path) ||
		    (e->flags & BFO_WENTRY_ABORT))
			return 1;          /* a piece: handled as a stream */
		return 0;
	case BFO_WTYPE_SYMLINK:
		return e->data && *(const char *)e->data ? 0 : -EINVAL;
	case BFO_WTYPE_HARDLINK:
		return e->data ? wpath_check(e->data) : -EINVAL;
	case BFO_WTYPE_DIR:
	case BFO_WTYPE_FIFO:
	case BFO_WTYPE_CHR:
	case BFO_WTYPE_BLK:
	case BFO_WTYPE_SOCK:
		return 0;
	}
	return -EINVAL;
}

static int order_cmp(const void *a, const void *b, void *arg)
{
	const struct bfo_wentry *e = arg;
	const char *pa = e[*(const uint32_t *)a].path, *pb = e[*(const uint32_t *)b].path;
	size_t la = dir_len(pa), lb = dir_len(pb);
	int c = strncmp(pa, pb, MIN(la, lb));

	if (c)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Are a (in adir) and b (in bdir) names of one file? */
static bool same_inode(int adir, const char *a, int bdir, const char *b)
{
	struct stat sa, sb;

	return fstatat(adir, a, &sa, AT_SYMLINK_NOFOLLOW) == 0 &&
	       fstatat(bdir, b, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sa.st_mode) &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Entry i may take the name of one of the other kind (a directory for a
 * file, a file for a directory). */
static bool replaces_tree(const struct wbatch *b, uint32_t i)
{
	return (b->e[i].flags & (BFO_WENTRY_REPLACE | BFO_WENTRY_REPLACE_TREE)) ==
	       (BFO_WENTRY_REPLACE | BFO_WENTRY_REPLACE_TREE);
}

/* The temporary tmp of entry i takes its name base in dfd, atomically
 * (rename).  What has the name may be of the other kind where the entry
 * replaces a tree: the two names are exchanged, and what the entry
 * displaced waits under tmp (trash) until the batch is durable.  Where the
 * file system cannot exchange names (EINVAL), it goes first, as rsync
 * makes way.  0 or -errno. */
static int publish(struct wbatch *b, uint32_t i, int dfd, const char *tmp, const char *base)
{
	int ret;

	if (renameat(dfd, tmp, dfd, base) == 0)
		return 0;
	if ((errno != EISDIR && errno != ENOTDIR) || !replaces_tree(b, i))
		return -errno;
	if (renameat2(dfd, tmp, dfd, base, RENAME_EXCHANGE) == 0) {
		b->trash[i] = true;
		return 0;
	}
	if (errno != EINVAL)
		return -errno;
	ret = wpath_remove_tree(dfd, base, 0);
	return ret ? ret : renameat(dfd, tmp, dfd, base) < 0 ? -errno : 0;
}

/* A directory entry that replaces a tree (a non-directory at its name)
 * gets its name before any task writes below it: made empty under its
 * temporary, then given the name (what was there waits as trash).  An
 * empty directory has nothing to tear, so this needs no durability
 * first, and the batch's entries below it then go into it. */
static void tree_dirs_pass(struct wbatch *b)
{
	char dir[BFO_WPATH_MAX];
	struct stat st;

	for (uint32_t i = 0; i < b->n; i++) {
		struct bfo_wentry *e = &b->e[i];
		const char *base;
		int dfd, ret = 0;

		if (e->type != BFO_WTYPE_DIR || !b->temps[i] || e->status)
			continue;
		base = wpath_split(e->path, dir, sizeof(dir));
		dfd = wpath_open_dir_held(b->w->rootfd, dir, true);
		if (dfd < 0) {
			set_status(b, i, dfd);
			continue;
		}
		if (mkdirat(dfd, b->temps[i], 0700) < 0)
			ret = -errno;
		else if (renameat2(dfd, b->temps[i], dfd, base, RENAME_NOREPLACE) == 0)
			ret = 0;
		else if (errno == EEXIST && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			 S_ISDIR(st.st_mode))
			ret = unlinkat(dfd, b->temps[i], AT_REMOVEDIR) < 0 ? -errno : 0;   /* one is there */
		else
			ret = publish(b, i, dfd, b->temps[i], base);
		if (ret)
			unlinkat(dfd, b->temps[i], AT_REMOVEDIR);
		fdl_close(dfd);
		set_status(b, i, ret);
	}
}

/* What the batch's entries displaced goes, once the batch is durable:
 * the manifest still lists each under its temporary name, so a crash
 * before this is finished by recovery. */
static void trash_pass(struct wbatch *b)
{
	char dir[BFO_WPATH_MAX];

	for (uint32_t i = 0; b->trash && i < b->n; i++) {
		int dfd;

		if (!b->trash[i])
			continue;
		wpath_split(b->e[i].path, dir, sizeof(dir));
		dfd = wpath_open_dir_held(b->w->rootfd, dir, false);
		if (dfd < 0)
			continue;
		wpath_remove_tree(dfd, b->temps[i], 0);
		fdl_close(dfd);
	}
}

static void link_pass(struct wbatch *b)
{
	char sdir[BFO_WPATH_MAX], ddir[BFO_WPATH_MAX];

	for (uint32_t i = 0; i < b->n; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (e->type != BFO_WTYPE_HARDLINK || e->status)
			continue;
		if (batch_stopped(b)) {
			e->status = -ECANCELED;
			continue;
		}
		const char *sbase = wpath_split(e->data, sdir, sizeof(sdir));
		const char *dbase = wpath_split(e->path, ddir, sizeof(ddir));
		int sfd = wpath_open_dir_held(b->w->rootfd, sdir, false);
		int dfd = sfd < 0 ? sfd : wpath_open_dir_held(b->w->rootfd, ddir, true);
		int ret = 0;

		const char *tmp = b->temps ? b->temps[i] : NULL;

		if (sfd < 0 || dfd < 0)
			ret = sfd < 0 ? sfd : dfd;
		else if (tmp && same_inode(sfd, sbase, dfd, dbase))
			ret = 0;        /* already this link: rename(2) of one link
					 * onto another of the same file does nothing
					 * and would leave the temporary name */
		else if (linkat(sfd, sbase, dfd, tmp ? tmp : dbase, 0) < 0)
			ret = -errno;
		else if (tmp && (ret = publish(b, i, dfd, tmp, dbase)))
			/* REPLACE: the new link takes the name atomically. */
			unlinkat(dfd, tmp, 0);
		if (sfd >= 0)
			fdl_close(sfd);
		if (dfd >= 0)
			fdl_close(dfd);
		set_status(b, i, ret);
	}
}

/* REPLACE: every temporary takes its real name once the data is durable. */
static void rename_pass(struct wbatch *b)
{
	char dir[BFO_WPATH_MAX];

	for (uint32_t i = 0; i < b->n; i++) {
		struct bfo_wentry *e = &b->e[i];

		if (!b->temps[i] || e->type == BFO_WTYPE_HARDLINK || e->type == BFO_WTYPE_DIR)
			continue;
		const char *base = wpath_split(e->path, dir, sizeof(dir));
		int dfd = wpath_open_dir_held(b->w->rootfd, dir, false);

		if (dfd < 0)
			continue;
		if (e->status == 0 && (e->status = publish(b, i, dfd, b->temps[i], base)))
			unlinkat(dfd, b->temps[i], 0);
		fdl_close(dfd);
	}
}

static void run_tasks_wait(struct bfo_writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->tasks_left)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
}

static int batch_alloc(struct wbatch *b)
{
	uint32_t n = b->n;

	b->order = malloc(n * sizeof(*b->order));
	b->first_tmp = calloc(n, sizeof(*b->first_tmp));
	b->piece = calloc(n, sizeof(*b->piece));
	b->m = calloc(2 * (size_t)n, sizeof(*b->m));
	b->midx = malloc(n * sizeof(*b->midx));
	if (!b->order || !b->first_tmp || !b->piece || !b->m || !b->midx)
		return -ENOMEM;
	bool replace = b->w->o.flags & BFO_WRITE_REPLACE;

	for (uint32_t i = 0; i < n && !replace; i++)
		replace = (b->e[i].flags & BFO_WENTRY_REPLACE) &&
			  (b->e[i].type != BFO_WTYPE_DIR || replaces_tree(b, i));
	if (replace) {
		b->temps = calloc(n, sizeof(*b->temps));
		b->trash = calloc(n, sizeof(*b->trash));
		if (!b->temps || !b->trash)
			return -ENOMEM;
	}
	if (b->w->engine == BFO_WENGINE_STEM) {
		b->stem_off = malloc(n * sizeof(*b->stem_off));
		if (!b->stem_off)
			return -ENOMEM;
	}
	return 0;
}

/* A temporary's base name, strdup'ed, or NULL with the entry failed. */
static char *batch_tmp_name(struct wbatch *b, uint32_t i)
{
	char tmp[64], *s;

	tmp_name(b->w, tmp, sizeof(tmp));
	s = strdup(tmp);
	if (!s)
		b->e[i].status = -ENOMEM;
	return s;
}

/* Entry i, valid (v from validate): a piece of a file in pieces, or an
 * entry written whole, in order, with its temporary and its stem place. */
static void plan_entry(struct wbatch *b, uint32_t i, int v)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];

	if (v == 1) {
		b->piece[i] = b->pieces = true;
		/* A first piece's temporary is named now, so the manifest
		 * lists it before it exists. */
		if (e->offset == 0 && !(e->flags & BFO_WENTRY_ABORT) && !stream_find(w, e->path))
			b->first_tmp[i] = batch_tmp_name(b, i);
		return;
	}
	b->order[b->nordered++] = i;
	/* REPLACE (the writer's, or this entry's): everything but
	 * directories is made under a temporary name and renamed over its
	 * target once the data is durable; a directory that replaces a tree
	 * is made under one too (tree_dirs_pass). */
	if (b->temps && (e->type != BFO_WTYPE_DIR ? (w->o.flags & BFO_WRITE_REPLACE) ||
						    (e->flags & BFO_WENTRY_REPLACE) :
						    replaces_tree(b, i)))
		b->temps[i] = batch_tmp_name(b, i);
	if (b->stem_off && e->type == BFO_WTYPE_FILE && e->length >= w->blksz) {
		b->stem_off[i] = b->stem_len;
		b->stem_len += ALIGN_UP(e->length, w->blksz);
	}
}

/* 1. Validate, and plan: directory groups, temporaries, stem. */
static void batch_plan(struct wbatch *b)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = b->e;
	uint32_t n = b->n;

	for (uint32_t i = 0; i < n; i++) {
		int v = validate(w, &e[i]);

		e[i].status = v < 0 ? v : 0;
		e[i].owner_status = 0;
		e[i].engine = (uint16_t)w->st.engine;
		if (b->stem_off)
			b->stem_off[i] = UINT64_MAX;
		if (v >= 0)
			plan_entry(b, i, v);
	}
	qsort_r(b->order, b->nordered, sizeof(*b->order), order_cmp, e);
	/* STOP_ON_ERROR: an invalid entry ends the batch before anything is
	 * written. */
	if (w->o.flags & BFO_WRITE_STOP_ON_ERROR) {
		bool bad = false;

		for (uint32_t i = 0; i < n && !bad; i++)
			bad = e[i].status != 0;
		if (bad) {
			for (uint32_t i = 0; i < n; i++)
				if (!e[i].status)
					e[i].status = -ECANCELED;
			b->nordered = 0;
			for (uint32_t i = 0; i < n; i++)
				b->piece[i] = false;
		}
	}
}

/* Entry i's manifest record (and its temporary's, removed by recovery if
 * the batch does not finish). */
static int manifest_record(struct wbatch *b, uint32_t i)
{
	struct bfo_wentry *x = &b->e[i];
	struct mentry *me = &b->m[b->nm];
	char dir[BFO_WPATH_MAX];
	const char *temp = NULL;

	b->midx[i] = b->nm++;
	*me = (struct mentry){ .kind = M_OTHER, .wtype = (uint8_t)x->type,
			       .wflags = (uint8_t)(x->flags & (BFO_WENTRY_OWNER | BFO_WENTRY_TIMES)),
			       .mode = x->mode, .uid = x->uid, .gid = x->gid,
			       .stem_off = UINT64_MAX, .atime_sec = x->atime_sec,
			       .atime_nsec = x->atime_nsec, .mtime_sec = x->mtime_sec,
			       .mtime_nsec = x->mtime_nsec, .path = x->path };
	if (x->type == BFO_WTYPE_FILE && !b->piece[i]) {
		me->kind = M_FILE;
		me->size = x->length;
		me->hash = journal_hash(x->data, x->length);
		if (b->stem_off)
			me->stem_off = b->stem_off[i];
	} else if (x->type == BFO_WTYPE_SYMLINK) {
		me->kind = M_SYMLINK;
		me->hash = journal_hash(x->data, strlen(x->data));
	}
	if (b->temps && b->temps[i])
		temp = b->temps[i];
	struct wstream *s = b->piece[i] ? stream_find(b->w, x->path) : NULL;

	if (s)
		temp = s->temp;
	else if (b->first_tmp[i])
		temp = b->first_tmp[i];
	if (!temp)
		return 0;
	wpath_split(x->path, dir, sizeof(dir));
	char *tp = malloc(strlen(dir) + strlen(temp) + 2);

	if (!tp)
		return -ENOMEM;
	sprintf(tp, "%s%s%s", dir, *dir ? "/" : "", temp);
	b->m[b->nm++] = (struct mentry){ .kind = M_TEMP, .path = tp, .stem_off = UINT64_MAX };
	return 0;
}

/* 2. The manifest, durable before any data. */
static int batch_manifest(struct wbatch *b)
{
	struct bfo_writer *w = b->w;
	int ret;

	if (w->o.durability == BFO_DURABILITY_NONE) {
		if (b->stem_len)
			snprintf(b->stem_name, sizeof(b->stem_name), "b-%d-%x-%llu.stem", (int)getpid(),
				 w->id, (unsigned long long)++w->seq);
		return 0;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		b->midx[i] = UINT32_MAX;
		if (!b->e[i].status && (ret = manifest_record(b, i)))
			return ret;
	}
	snprintf(b->mname, sizeof(b->mname), "b-%d-%x-%llu.m", (int)getpid(), w->id,
		 (unsigned long long)++w->seq);
	if (b->stem_len)
		snprintf(b->stem_name, sizeof(b->stem_name), "%s.stem", b->mname);
	ret = journal_manifest_write(w->jfd, b->mname, b->m, b->nm, b->stem_len ? b->stem_name : NULL,
				     w->engine, &b->mfd);
	if (ret)
		return ret;
	b->ifd = journal_ids_create(w->jfd, b->mname);
	if (b->ifd < 0)
		return b->ifd;
	journal_wait_past(b->mfd);
	return 0;
}

/* The stem, or none (disk full...): then the files are written normally,
 * and the partial stem's space goes back first. */
static void batch_stem(struct wbatch *b)
{
	if (!write_stem(b, b->stem_name))
		return;
	if (b->stem_fd >= 0) {
		close(b->stem_fd);
		b->stem_fd = -1;
	}
	unlinkat(b->w->jfd, b->stem_name, 0);
	for (uint32_t i = 0; i < b->n; i++)
		b->stem_off[i] = UINT64_MAX;
}

/* The first of tasks [0, n) (in path order) whose directory is not
 * before s. */
static uint32_t task_lower_bound(const struct wtask *t, uint32_t n, const char *s)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (strcmp(t[mid].dir, s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Tasks whose directory is a non-directory entry of the batch, or below
 * one, are late (see struct wtask), and go after the others.  A task
 * directory is either such a path or begins with it and '/': one run of
 * the tasks, which are in path order. */
static int batch_mark_late(struct wbatch *b)
{
	char probe[BFO_WPATH_MAX + 1];
	uint32_t nlate = 0;

	for (uint32_t i = 0; i < b->n; i++) {
		const struct bfo_wentry *e = &b->e[i];
		size_t len;
		uint32_t g;

		/* Invalid entries (a NULL path among them) make nothing. */
		if (e->status || e->type == BFO_WTYPE_DIR || (len = strlen(e->path)) + 1 >= sizeof(probe))
			continue;
		g = task_lower_bound(b->tasks, b->ntasks, e->path);
		if (g < b->ntasks && !strcmp(b->tasks[g].dir, e->path))
			b->tasks[g].late = true;
		memcpy(probe, e->path, len);
		probe[len] = '/';
		probe[len + 1] = '\0';
		for (g = task_lower_bound(b->tasks, b->ntasks, probe);
		     g < b->ntasks && !strncmp(b->tasks[g].dir, probe, len + 1); g++)
			b->tasks[g].late = true;
	}
	for (uint32_t g = 0; g < b->ntasks; g++)
		nlate += b->tasks[g].late;
	b->nearly = b->ntasks - nlate;
	if (!nlate)
		return 0;
	/* Stable: the early ones first, then the late, each in path order. */
	struct wtask *sorted = malloc(b->ntasks * sizeof(*sorted));
	uint32_t ke = 0, kl = b->nearly;

	if (!sorted)
		return -ENOMEM;
	for (uint32_t g = 0; g < b->ntasks; g++)
		sorted[b->tasks[g].late ? kl++ : ke++] = b->tasks[g];
	free(b->tasks);
	b->tasks = sorted;
	return 0;
}

/* One pool task per directory of the ordered entries. */
static int batch_tasks(struct wbatch *b)
{
	b->tasks = calloc(b->nordered ? b->nordered : 1, sizeof(*b->tasks));
	if (!b->tasks)
		return -ENOMEM;
	for (uint32_t k = 0; k < b->nordered; k++) {
		const char *p = b->e[b->order[k]].path;
		size_t dl = dir_len(p);
		struct wtask *cur = b->ntasks ? &b->tasks[b->ntasks - 1] : NULL;

		if (!cur || strlen(cur->dir) != dl || strncmp(cur->dir, p, dl)) {
			cur = &b->tasks[b->ntasks];
			if (!(cur->dir = strndup(p, dl)))
				return -ENOMEM;
			b->ntasks++;
			cur->task.fn = group_task;
			cur->b = b;
			cur->first = k;
		}
		cur->count++;
	}
	return batch_mark_late(b);
}

/* Tasks [gfirst, gend): whole files through io_uring, the rest on the
 * pool. */
static void batch_round(struct wbatch *b, uint32_t gfirst, uint32_t gend)
{
	struct bfo_writer *w = b->w;

	if (gfirst == gend)
		return;
	if (w->uring) {
		data_uring(b, gfirst, gend, b->tasks);
		b->files_done = true;
	}
	w->tasks_left = gend - gfirst;
	for (uint32_t g = gfirst; g < gend; g++)
		pool_push(&w->pool, &b->tasks[g].task);
	run_tasks_wait(w);
}

/* 3. Data: the stem first (one sequential stream), then files,
 * directory by directory on the pool (or io_uring chains), the late
 * directories in a round of their own. */
static int batch_data(struct wbatch *b)
{
	int ret;

	if (b->stem_len)
		batch_stem(b);
	ret = batch_tasks(b);
	if (ret)
		return ret;
	if (b->temps)
		tree_dirs_pass(b);
	batch_round(b, 0, b->nearly);
	batch_round(b, b->nearly, b->ntasks);
	for (uint32_t i = 0; i < b->n; i++)
		if (b->piece[i] && !b->e[i].status) {
			set_status(b, i, batch_stopped(b) ? -ECANCELED : write_piece(b, i));
			if (!b->e[i].status)
				flusher_note(b->w, b->e[i].length);
		}
	/* Hard links after everything they may link to exists by its name:
	 * with REPLACE that is after the renames (batch_sync). */
	if (!b->temps)
		link_pass(b);
	return 0;
}

/* 4. One durability point for the batch (two with REPLACE: the new data
 * is durable before any old file is replaced).  DURABILITY_CLOSE leaves
 * plain batches to a later syncfs: their manifests stay until then, so a
 * crash before it is recovered like any unfinished batch. */
static void batch_sync(struct wbatch *b)
{
	struct bfo_writer *w = b->w;

	if (w->o.durability == BFO_DURABILITY_CLOSE && b->mfd >= 0 && !b->temps && !b->pieces &&
	    !w->nstreams && w->ndeferred < DEFER_MAX_BATCHES)
		b->defer = true;
	if (w->o.durability != BFO_DURABILITY_NONE && !b->defer) {
		/* Deferred batches lose their manifests only once durable. */
		if (syncfs(w->rootfd) < 0) {
			if (!w->first_err)
				w->first_err = -errno;
		} else {
			release_deferred(w);
		}
		stat_add(&w->st.syncs, 1);
	}
	if (b->temps) {
		rename_pass(b);
		link_pass(b);
		if (w->o.durability != BFO_DURABILITY_NONE) {
			syncfs(w->rootfd);
			stat_add(&w->st.syncs, 1);
		}
		trash_pass(b);
	}
}

static void batch_free(struct wbatch *b)
{
	for (uint32_t i = 0; i < b->nm; i++)
		if (b->m[i].kind == M_TEMP)
			free((char *)b->m[i].path);
	for (uint32_t i = 0; i < b->n; i++) {
		if (b->temps)
			free(b->temps[i]);
		if (b->first_tmp)
			free(b->first_tmp[i]);
	}
	free(b->first_tmp);
	free(b->temps);
	free(b->trash);
	free(b->stem_off);
	free(b->order);
	free(b->piece);
	free(b->midx);
	free(b->m);
	for (uint32_t g = 0; b->tasks && g < b->ntasks; g++)
		free(b->tasks[g].dir);
	free(b->tasks);
}

/* 5. The batch is durable: its manifest and stem go (a deferred manifest
 * stays until the syncfs that covers it).  ret: the batch failed as a
 * whole; every entry without a status of its own gets it. */
static int batch_end(struct wbatch *b, int ret)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = b->e;
	uint32_t failed = 0;

	if (b->stem_fd >= 0) {
		close(b->stem_fd);
		unlinkat(w->jfd, b->stem_name, 0);
	}
	if (b->ifd >= 0)
		close(b->ifd);
	if (b->mfd >= 0 && b->defer) {
		struct deferred_batch *d = &w->deferred[w->ndeferred++];

		d->mfd = b->mfd;
		snprintf(d->mname, sizeof(d->mname), "%s", b->mname);
	} else if (b->mfd >= 0) {
		journal_batch_remove(w->jfd, b->mname);
		close(b->mfd);   /* releases the lock */
	}
	if (ret) {
		for (uint32_t i = 0; i < b->n; i++)
			if (!e[i].status)
				e[i].status = ret;
	}
	for (uint32_t i = 0; i < b->n; i++) {
		if (e[i].status)
			failed++;
	}
	w->st.batches++;
	w->st.files += b->n - failed;
	w->st.failed += failed;
	batch_free(b);
	return ret ? ret : (int)failed;
}

/* Nanoseconds since *t0, which moves to now. */
static uint64_t lap(uint64_t *t0)
{
	uint64_t t = bfo_now_ns(), d = t - *t0;

	*t0 = t;
	return d;
}

/* e makes, replaces or removes a name in the root (its mtime is then the
 * kernel's); a directory already there only takes its metadata. */
static bool root_name(struct bfo_writer *w, const struct bfo_wentry *e)
{
	struct stat st;

	if (!e->path || strchr(e->path, '/'))
		return false;
	if (!*e->path || !strcmp(e->path, "."))
		return true;              /* the root's own metadata: the entry's */
	return e->type != BFO_WTYPE_DIR || (e->flags & BFO_WENTRY_REPLACE_TREE) ||
	       fstatat(w->rootfd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode);
}

BFO_API int bfo_writer_write(struct bfo_writer *w, struct bfo_wentry *e, unsigned n)
{
	struct wbatch b = { .w = w, .e = e, .n = n, .stem_fd = -1, .ifd = -1, .mfd = -1 };
	uint64_t t0 = bfo_now_ns();
	int ret;

	if (!w || (n && !e))
		return -EINVAL;
	if (n == 0)
		return 0;
	if (writer_cancelled(w)) {       /* nothing more begins */
		for (unsigned i = 0; i < n; i++)
			e[i].status = -ECANCELED;
		w->st.failed += n;
		return (int)n;
	}
	for (unsigned i = 0; i < n && !atomic_load(&w->root_touched); i++)
		if (root_name(w, &e[i]))
			atomic_store(&w->root_touched, true);
	ret = batch_alloc(&b);
	if (!ret) {
		batch_plan(&b);
		ret = batch_manifest(&b);
	}
	if (!ret) {
		w->st.ns_manifest += lap(&t0);
		ret = batch_data(&b);
	}
	if (!ret) {
		w->st.ns_data += lap(&t0);
		batch_sync(&b);
		w->st.ns_sync += lap(&t0);
	}
	return batch_end(&b, ret);
}

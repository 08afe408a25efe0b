/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Files larger than the caller's memory arrive as pieces over several
 * batches: each grows under a temporary name in its directory, known to
 * recovery through a journal record of its own, and takes its real name
 * with its last piece, after its data is durable.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "writer.h"
#include "fdlimit.h"

struct wstream *stream_find(struct bfo_writer *w, const char *path)
{
	for (size_t i = 0; i < w->nstreams; i++)
		if (!strcmp(w->streams[i].path, path))
			return &w->streams[i];
	return NULL;
}

void stream_drop(struct bfo_writer *w, struct wstream *s, bool unlink_temp)
{
	if (s->fd >= 0)
		close(s->fd);
	if (unlink_temp)
		unlinkat(s->dfd, s->temp, 0);
	if (s->jfd >= 0) {
		unlinkat(w->jfd, s->jname, 0);
		close(s->jfd);
	}
	close(s->dfd);
	free(s->path);
	free(s->temp);
	*s = w->streams[--w->nstreams];
}

/*
 * A piece of a large file (BFO_WENTRY_MORE, or a later offset).  The file
 * grows under a temporary name and takes its real name with the last
 * piece, after its data is durable: it is complete or absent.
 */
int write_piece(struct wbatch *b, uint32_t i)
{
	struct bfo_writer *w = b->w;
	struct bfo_wentry *e = &b->e[i];
	struct wstream *s = stream_find(w, e->path);
	const char *tmp = b->first_tmp[i];
	char dir[BFO_WPATH_MAX];
	int ret;

	if (e->flags & BFO_WENTRY_ABORT) {
		if (s)
			stream_drop(w, s, true);
		return 0;
	}
	if (!s) {
		if (e->offset != 0 || !tmp)
			return -EINVAL;    /* a piece without its beginning */
		if (w->nstreams == w->capstreams) {
			size_t c = w->capstreams ? w->capstreams * 2 : 8;
			struct wstream *t = realloc(w->streams, c * sizeof(*t));

			if (!t)
				return -ENOMEM;
			w->streams = t;
			w->capstreams = c;
		}
		wpath_split(e->path, dir, sizeof(dir));
		int dfd = wpath_open_dir(w->rootfd, dir, true);

		if (dfd < 0)
			return dfd;
		uint64_t gen = fdl_gen();
		int fd;

		/* Held until its last piece: not counted, but an EMFILE of
		 * libbfo's own waits like a counted open (fdlimit.h). */
		while ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0600)) < 0 && fdl_retry(errno, &gen))
			;
		if (fd < 0) {
			ret = -errno;
			close(dfd);
			return ret;
		}
		s = &w->streams[w->nstreams++];
		*s = (struct wstream){ .path = strdup(e->path), .temp = strdup(tmp), .fd = fd, .dfd = dfd,
				       .jfd = -1 };
		if (!s->path || !s->temp) {
			stream_drop(w, s, true);
			return -ENOMEM;
		}
		/* The temporary outlives this batch's manifest: its own record
		 * keeps it known to recovery until the file is complete (it is
		 * made durable by this batch's sync, like everything else). */
		if (w->o.durability != BFO_DURABILITY_NONE) {
			char tp[BFO_WPATH_MAX + 64];
			struct mentry me = { .kind = M_TEMP, .stem_off = UINT64_MAX, .path = tp };

			snprintf(tp, sizeof(tp), "%s%s%s", dir, *dir ? "/" : "", tmp);
			snprintf(s->jname, sizeof(s->jname), "s-%d-%x-%s.m", (int)getpid(), w->id,
				 tmp + sizeof(BFO_TMP_PREFIX) - 1);
			ret = journal_record_write(w->jfd, s->jname, &me, 1, &s->jfd);
			if (ret) {
				stream_drop(w, s, true);
				return ret;
			}
		}
	}
	if (e->offset != s->next) {
		stream_drop(w, s, true);
		return -EINVAL;            /* pieces must come in order */
	}
	ret = write_all(s->fd, e->data, e->length, e->offset);
	if (ret) {
		stream_drop(w, s, true);
		return ret;
	}
	s->next += e->length;
	stat_add(&w->st.bytes, e->length);
	if (e->flags & BFO_WENTRY_MORE)
		return 0;
	/* The last piece: durable data, metadata, then the real name. */
	if (w->o.durability != BFO_DURABILITY_NONE && fsync(s->fd) < 0)
		ret = -errno;
	if (!ret)
		ret = file_made(b, i, s->fd, false);
	if (!ret && close(s->fd) < 0)
		ret = -errno;
	s->fd = -1;
	if (!ret && renameat2(s->dfd, s->temp, s->dfd, base_of(e->path),
			      (w->o.flags & BFO_WRITE_REPLACE) || (e->flags & BFO_WENTRY_REPLACE) ?
			      0 : RENAME_NOREPLACE) < 0)
		ret = -errno;
	stream_drop(w, s, ret != 0);
	return ret;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A copy into itself (bfo_copier_check): a source directory whose copy
 * lands in the directory or below it would meet its own copy in its walk
 * and copy it again, a level deeper on each run, the run's own journal
 * with it.  cp refuses it ("cannot copy a directory into itself"); so does
 * the copier, unless a filter rule keeps the walk out of the copy's place.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bfo.h"
#include "common.h"
#include "copy.h"
#include "filter.h"

/* path made absolute with every link of its existing part resolved (what
 * is not there yet is appended as written, "." and ".." taken lexically). */
static char *resolve(const char *path)
{
	char *p = strdup(path), *tail = NULL, *real = NULL, *out = NULL;

	if (!p)
		return NULL;
	for (;;) {
		size_t l = strlen(p);

		while (l > 1 && p[l - 1] == '/')
			p[--l] = '\0';
		if ((real = realpath(*p ? p : ".", NULL)) || errno != ENOENT)
			break;
		char *slash = strrchr(p, '/');
		char *part = slash ? slash + 1 : p, *t = NULL;

		if (asprintf(&t, "%s%s%s", part, tail ? "/" : "", tail ? tail : "") < 0)
			break;
		free(tail);
		tail = t;
		if (slash == p)
			p[1] = '\0';      /* "/x": the root is left */
		else if (slash)
			*slash = '\0';
		else
			*p = '\0';        /* "x": the working directory */
	}
	if (real && !tail)
		out = real;
	else if (real) {
		/* the missing part, component by component */
		size_t cap = strlen(real) + strlen(tail) + 2;

		out = malloc(cap);
		if (out) {
			strcpy(out, real);
			for (char *save = NULL, *c = strtok_r(tail, "/", &save); c;
			     c = strtok_r(NULL, "/", &save)) {
				if (!strcmp(c, "."))
					continue;
				if (!strcmp(c, "..")) {
					char *s = strrchr(out, '/');

					s[s == out] = '\0';
					continue;
				}
				if (strcmp(out, "/"))
					strcat(out, "/");
				strcat(out, c);
			}
		}
		free(real);
	}
	free(p);
	free(tail);
	return out;
}

/* rel (a place below the source, "" the source itself) is kept out of the
 * source's walk: it, or a directory above it, is excluded (name: the
 * source's name for the rules, "" for its contents). */
static bool kept_out(const struct bfo_copier *c, const char *name, char *rel)
{
	bool out = false;

	for (char *end = rel; *rel && !out; end++) {
		if (*end && *end != '/')
			continue;
		char keep = *end;

		*end = '\0';
		out = filter_source_skips(c->filter, name, rel, true);
		*end = keep;
		if (!keep)
			break;
	}
	return out;
}

/* Source src (a directory) copied to landing: 1 into itself, 0 not. */
static int lands_inside(const struct bfo_copier *c, const char *src, const char *landing)
{
	char *s = resolve(src), *d = resolve(landing), *name = copy_src_name(src);
	int ret = -ENOMEM;

	if (s && d && name) {
		size_t l = strlen(s);
		bool root = !strcmp(s, "/");

		ret = 0;
		if (root || (!strncmp(d, s, l) && (d[l] == '\0' || d[l] == '/'))) {
			char *rel = d + (root ? 1 : l + (d[l] == '/'));

			ret = !*rel || !kept_out(c, name, rel);
		}
	}
	free(s);
	free(d);
	free(name);
	return ret;
}

BFO_API int bfo_copier_check(struct bfo_copier *c, const char *const *srcs, unsigned n,
			     const char *dst, unsigned *which)
{
	struct stat st;
	bool is_dir, existed;
	char *root, *single, *name;
	int ret = 0;

	if (!c || !srcs || !n || !dst || !*dst)
		return -EINVAL;
	for (unsigned i = 0; i < n && !ret; i++) {
		if (!srcs[i] || lstat(srcs[i], &st) < 0 || !S_ISDIR(st.st_mode))
			continue;     /* (a missing source is the run's to report) */
		if (!(name = copy_src_name(srcs[i])))
			return -ENOMEM;
		/* where the run puts it: cp's or rsync's rule, as copy_dest */
		ret = copy_dest(dst, n, i ? COPY_SRC_DIR : *name ? COPY_SRC_DIR : COPY_SRC_CONTENTS,
				c->flags & BFO_COPY_INTO, &is_dir, &existed, &root, &single);
		if (!ret) {
			char *landing = is_dir && *name ? copy_join(root, name) : strdup(root);

			ret = landing ? lands_inside(c, srcs[i], landing) : -ENOMEM;
			free(landing);
		}
		free(root);
		free(single);
		free(name);
		if (ret == -ENOTDIR)
			ret = 0;      /* (the run's to report) */
		if (ret == 1) {
			if (which)
				*which = i;
			return -ELOOP;
		}
	}
	return ret < 0 ? ret : 0;
}

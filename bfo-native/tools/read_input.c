/* SPDX-License-Identifier: Apache-2.0 */
/* The paths of bfo read and bfo plan: arguments, directories walked, and
 * paths on stdin (-).  See read.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "read.h"

/* Without a sort buffer the walk still hands out paths a buffer at a
 * time: a small one, so reading starts soon. */
#define UNSORTED_BUFFER 4096u
#define WALK_BUF_INITIAL (256u << 10)

/* A path of the input copied for the caller; without memory for it the
 * command stops, rather than end the input early. */
static char *path_dup(const char *p)
{
	char *d = strdup(p);

	if (!d) {
		perror("bfo");
		exit(CLI_EXIT_USAGE);
	}
	return d;
}

/* Directories the walk could not read: named on stderr, counted as errors. */
static void name_walk_failures(struct read_input *in)
{
	size_t cap = PATH_MAX;
	char *path = malloc(cap), *p;
	int status, k;

	/* One the path of which finds no memory is still counted: at the
	 * walk's end, in walk_stop(). */
	while (path && (k = bfo_walk_failure(in->walk, path, cap, &status)) != 0) {
		if (k == -ENOBUFS && (p = realloc(path, cap * 2))) {
			path = p;
			cap *= 2;
			continue;
		}
		if (k < 0)
			break;
		fprintf(stderr, "bfo: %s: %s\n", path, strerror(-status));
		in->walk_errors++;
		in->walk_taken++;
	}
	free(path);
}

/* The walk's skipped entries, and the failures it could only count. */
static void walk_stop(struct read_input *in)
{
	struct bfo_walk_stats st;

	if (bfo_walk_stats(in->walk, &st) == 0) {
		in->skipped += st.skipped;
		in->walk_errors += st.failures - in->walk_taken;
	}
	bfo_walk_destroy(in->walk);
	in->walk = NULL;
}

/* More paths of the walk into in->buf; false when the walk is over. */
static bool walk_refill(struct read_input *in)
{
	long n;

	while ((n = bfo_walk_next(in->walk, in->buf, in->buf_cap)) == -ENOBUFS) {
		char *b = realloc(in->buf, in->buf_cap * 2);

		if (!b) {
			perror("bfo");
			exit(CLI_EXIT_USAGE);
		}
		in->buf = b;
		in->buf_cap *= 2;
	}
	name_walk_failures(in);
	/* before the paths are submitted: their first window finds them */
	if (n > 0 && in->share)
		bfo_walk_share(in->walk, in->share);
	in->buf_len = n > 0 ? (size_t)n : 0;
	in->buf_pos = 0;
	return n > 0;
}

/* A named directory is walked; false when it cannot be. */
static bool walk_begin(struct read_input *in, const char *dir)
{
	size_t sort = in->sort_buffer ? in->sort_buffer : UNSORTED_BUFFER;
	unsigned flags = (in->sort_buffer ? 0 : BFO_WALK_UNSORTED) |
			 (in->nofollow ? BFO_WALK_NOFOLLOW : 0) | (in->share ? BFO_WALK_LISTINGS : 0);

	if (!in->buf) {
		in->buf = malloc(WALK_BUF_INITIAL);
		if (!in->buf)
			return false;
		in->buf_cap = WALK_BUF_INITIAL;
	}
	in->walk_taken = 0;
	return bfo_walk_start(&in->walk, dir, sort, flags) == 0;
}

/* stdin for getdelim, read only once poll() says it has bytes: poll
 * fails with EINTR on a signal even under SA_RESTART (which keeps stdout
 * whole), so an interrupt ends the input instead of waiting for the
 * writer of a pipe. */
static ssize_t stdin_read(void *cookie, char *buf, size_t len)
{
	const struct read_input *in = cookie;
	struct pollfd pf = { .fd = STDIN_FILENO, .events = POLLIN };

	for (;;) {
		if (in->stop && *in->stop)
			return 0;
		if (poll(&pf, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		ssize_t n = read(STDIN_FILENO, buf, len);

		if (n >= 0 || errno != EINTR)
			return n;
	}
}

static FILE *stdin_open(struct read_input *in)
{
	FILE *f = fopencookie(in, "r", (cookie_io_functions_t){ .read = stdin_read });

	if (!f) {
		perror("bfo");
		exit(CLI_EXIT_USAGE);
	}
	return f;
}

/* The next line of stdin, or NULL at its end. */
static char *stdin_next(struct read_input *in)
{
	ssize_t n;

	while ((n = getdelim(&in->line, &in->line_cap, in->nul ? '\0' : '\n', in->stdin_f)) > 0) {
		if (!in->nul && in->line[n - 1] == '\n')
			in->line[--n] = '\0';
		if (n > 0)
			return path_dup(in->line);
	}
	fclose(in->stdin_f);
	in->stdin_f = NULL;
	return NULL;
}

char *input_next(struct read_input *in)
{
	for (;;) {
		if (in->walk) {
			if (in->buf_pos < in->buf_len) {
				char *p = path_dup(in->buf + in->buf_pos);

				in->buf_pos += strlen(in->buf + in->buf_pos) + 1;
				return p;
			}
			if (walk_refill(in))
				continue;
			walk_stop(in);
		}
		if (in->stdin_f) {
			char *p = stdin_next(in);

			if (p)
				return p;
			continue;
		}
		if (in->argi >= in->nargs)
			return NULL;
		const char *a = in->args[in->argi++];
		struct stat st;

		if (!strcmp(a, "-")) {
			in->stdin_f = stdin_open(in);
			continue;
		}
		/* A named directory is walked (even through a symlink, like
		 * find -H); anything else named is read, or its error shown. */
		if (stat(a, &st) == 0 && S_ISDIR(st.st_mode) &&
		    !(in->nofollow && lstat(a, &st) == 0 && S_ISLNK(st.st_mode))) {
			if (!walk_begin(in, a)) {
				fprintf(stderr, "bfo: %s: cannot start the walk\n", a);
				in->walk_errors++;
			}
			continue;
		}
		return path_dup(a);
	}
}

const char *input_packed(struct read_input *in, size_t *len)
{
	if (in->walk && in->buf_pos == in->buf_len && !walk_refill(in))
		walk_stop(in);
	if (!in->walk || in->buf_pos >= in->buf_len)
		return NULL;
	*len = in->buf_len - in->buf_pos;
	return in->buf + in->buf_pos;
}

void input_taken(struct read_input *in, size_t bytes)
{
	in->buf_pos += bytes;
}

void input_end(struct read_input *in)
{
	if (in->walk)
		walk_stop(in);
	if (in->stdin_f)
		fclose(in->stdin_f);
	free(in->buf);
	free(in->line);
}

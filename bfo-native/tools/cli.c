/* SPDX-License-Identifier: Apache-2.0 */
#include "cli.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bfo.h"
#include "cli_opts.h"

uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cli_progress_init(struct cli_progress *p, const char *what, int enabled)
{
	p->enabled = enabled < 0 ? isatty(STDERR_FILENO) : enabled;
	p->what = what;
	p->whole_shown = false;
	p->t0 = p->last = cli_now_ns();
}

/* A line a quarter second at most: faster would only flicker. */
#define PROGRESS_EVERY_NS 250000000ull

bool cli_progress_due(const struct cli_progress *p)
{
	return p->enabled && cli_now_ns() - p->last >= PROGRESS_EVERY_NS;
}

void cli_progress_tick(struct cli_progress *p, uint64_t files, uint64_t bytes, bool final)
{
	uint64_t t = cli_now_ns();

	if (!p->enabled || (!final && t - p->last < PROGRESS_EVERY_NS))
		return;
	p->last = t;
	if (final) {
		fputs("\r\033[K", stderr);
		return;
	}
	double s = (double)(t - p->t0) / 1e9;

	fprintf(stderr, "\r\033[K%s%s%" PRIu64 " files, %.1f MB, %.0f MB/s", p->what ? p->what : "",
		p->what ? " " : "", files, (double)bytes / 1e6, s > 0 ? (double)bytes / 1e6 / s : 0.0);
}

/* The terminal's width (80 when it cannot be told): a line longer than it
 * wraps, and "\r" then rewrites only its last part. */
static size_t term_cols(void)
{
	struct winsize ws;

	return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20 ? ws.ws_col : 80;
}

void cli_progress_copy(struct cli_progress *p, uint64_t files, uint64_t bytes, uint64_t done,
		       uint64_t listed, bool whole)
{
	uint64_t t = cli_now_ns();
	char line[256];
	int k;

	/* the moment the totals become known is shown whatever the interval:
	 * a run too short for a timed line still shows one with them */
	if (!p->enabled || ((!whole || p->whole_shown) && t - p->last < PROGRESS_EVERY_NS))
		return;
	p->last = t;
	p->whole_shown |= whole;
	double s = (double)(t - p->t0) / 1e9;
	double rate = s > 0 ? (double)done / s : 0.0;       /* files done a second, since the start */

	k = snprintf(line, sizeof(line), "%s%s%" PRIu64 " files, %.1f MB, %.1f MB/s, %.0f files/s",
		     p->what ? p->what : "", p->what ? " " : "", files, (double)bytes / 1e6,
		     s > 0 ? (double)bytes / 1e6 / s : 0.0, s > 0 ? (double)files / s : 0.0);
	if (k < 0)
		return;
	if (whole && listed && done <= listed && (size_t)k < sizeof(line)) {
		/* the totals are known: the share done, and the time left at the rate so far */
		double left = rate > 0 ? (double)(listed - done) / rate : 0.0;
		unsigned long sec = (unsigned long)(left + 0.5);

		k += snprintf(line + k, sizeof(line) - (size_t)k, "; %.0f%% of %" PRIu64,
			      100.0 * (double)done / (double)listed, listed);
		if (rate > 0 && k > 0 && (size_t)k < sizeof(line))
			k += snprintf(line + k, sizeof(line) - (size_t)k, ", ETA %lu:%02lu:%02lu",
				      sec / 3600, sec / 60 % 60, sec % 60);
	} else if (listed && k > 0 && (size_t)k < sizeof(line)) {
		k += snprintf(line + k, sizeof(line) - (size_t)k, "; %" PRIu64 " listed so far", listed);
	}
	size_t len = (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1, cols = term_cols() - 1;

	fprintf(stderr, "\r\033[K%.*s", (int)(len < cols ? len : cols), line);
}

volatile sig_atomic_t cli_signal;
static void (*signal_hook)(int);

static void on_signal(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int saved = errno;

	if (!cli_signal)
		cli_signal = sig;
	sigaction(SIGINT, &dfl, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	if (signal_hook)
		signal_hook(sig);
	errno = saved;
}

void cli_on_signals(void (*hook)(int sig), bool restart)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = restart ? SA_RESTART : 0 };

	/* Both blocked while the handler runs: it sees one signal, whose
	 * hook runs once; the next finds the default action. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	signal_hook = hook;
	if (cli_signal)
		return;            /* the first came already: the defaults stay */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int cli_exit_signal(void)
{
	return CLI_EXIT_SIGNALED + (cli_signal ? cli_signal : SIGINT);
}

bool cli_write_opt(int opt, int choice, struct bfo_write_opts *wo)
{
	switch (opt) {
	case CO_DURABILITY: wo->durability = (uint32_t)choice; return true;
	case CO_REPLACE: wo->flags |= BFO_WRITE_REPLACE; return true;
	case CO_WENGINE: wo->engine = (uint32_t)choice; return true;
	}
	return false;
}

int cli_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

void cli_print_engines(FILE *f, const char *indent, const struct bfo_stats *st)
{
	const uint64_t *n = st->files_by_engine;
	bool any = false;

	fprintf(f, "%sfiles by engine:", indent);
	for (int e = BFO_ENGINE_RAW; e <= BFO_ENGINE_NONE; e++) {
		if (!n[e])
			continue;
		fprintf(f, "%s %s %" PRIu64, any ? "," : "", e == BFO_ENGINE_NONE ? "no data read" :
			bfo_engine_name(e), n[e]);
		if (e == BFO_ENGINE_RAW && st->files_raw_itable)
			fprintf(f, " (%" PRIu64 " with metadata from the inode tables, %" PRIu64
				" through statx and FIEMAP)", st->files_raw_itable, n[e] - st->files_raw_itable);
		else if (e == BFO_ENGINE_RAW)
			fprintf(f, " (through statx and FIEMAP)");
		if (e == BFO_ENGINE_PORTABLE && st->files_pieces)
			fprintf(f, " (%" PRIu64 " large file%s in pieces, %" PRIu64 " whole)", st->files_pieces,
				st->files_pieces == 1 ? "" : "s", n[e] - st->files_pieces);
		any = true;
	}
	if (!any)
		fprintf(f, " none");
	if (st->fallback_files)
		fprintf(f, "; %" PRIu64 " left the raw or uring path for a per-file read", st->fallback_files);
	if (st->engine != BFO_ENGINE_NONE)
		fprintf(f, "; most bytes: %s", bfo_engine_name((int)st->engine));
	fputc('\n', f);
}

/* Why a journal directory is refused (journal.c's trust rule), or NULL. */
static const char *journal_refusal(const char *dir)
{
	char j[PATH_MAX];
	struct stat st;

	if (snprintf(j, sizeof(j), "%s/.bfo-journal", dir) >= (int)sizeof(j) || lstat(j, &st) < 0)
		return NULL;
	return S_ISLNK(st.st_mode) ? "a symbolic link" : !S_ISDIR(st.st_mode) ? "not a directory" :
	       st.st_uid != geteuid() ? "owned by another user" :
	       (st.st_mode & 022) ? "writable by others" : NULL;
}

void cli_dest_error(const char *cmd, const char *dest, int err)
{
	char parent[PATH_MAX];
	const char *dir = dest, *why = NULL;

	if (err == -ELOOP || err == -ENOTDIR || err == -EPERM) {
		why = journal_refusal(dir);
		if (!why && snprintf(parent, sizeof(parent), "%s", dest) < (int)sizeof(parent)) {
			dir = dirname(parent);
			why = journal_refusal(dir);
		}
	}
	if (why)
		fprintf(stderr, "bfo: %s: %s/.bfo-journal is %s: refusing a journal this user did not "
			"make (nothing was written; remove it if it is yours)\n", cmd, dir, why);
	else
		fprintf(stderr, "bfo: %s: %s: %s\n", cmd, dest, bfo_strerror(err));
}


/* The mount point of the file system dest is (or would be made) on: its
 * nearest existing directory, then up while the device stays the same. */
static void mount_of(const char *dest, char *out, size_t len)
{
	char p[PATH_MAX], *r = NULL;
	struct stat st, up;

	snprintf(out, len, "%s", dest);
	if (snprintf(p, sizeof(p), "%s", dest) >= (int)sizeof(p))
		return;
	while (!(r = realpath(p, NULL)) && strcmp(p, "/") && strcmp(p, ".")) {
		char *parent = dirname(p);   /* (p itself, or a static string) */

		memmove(p, parent, strlen(parent) + 1);
	}
	if (!r || stat(r, &st) < 0) {
		free(r);
		return;
	}
	snprintf(p, sizeof(p), "%s", r);
	free(r);
	while (strcmp(p, "/")) {
		char q[PATH_MAX];

		snprintf(q, sizeof(q), "%s", p);
		if (stat(dirname(q), &up) < 0 || up.st_dev != st.st_dev)
			break;
		memmove(p, q, strlen(q) + 1);
	}
	snprintf(out, len, "%s", p);
}

/* A byte count for people: 1.2 MB, 340 kB, 12 B. */
const char *cli_human(uint64_t b, char *buf, size_t len)
{
	if (b >= 10000000)
		snprintf(buf, len, "%.1f MB", (double)b / 1e6);
	else if (b >= 10000)
		snprintf(buf, len, "%.1f kB", (double)b / 1e3);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

void cli_full_error(const char *cmd, const char *dest, int err, uint64_t needed)
{
	char mnt[PATH_MAX], a[32], b[32];
	struct statvfs vfs;
	uint64_t left = 0;

	mount_of(dest, mnt, sizeof(mnt));
	if (statvfs(mnt, &vfs) == 0)
		left = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	fprintf(stderr, "bfo: %s: %s on %s (the file system of %s): %s more needed by the batch "
		"being written, %s left; stopped there, every file written is whole%s\n", cmd,
		err == -EDQUOT ? "quota exceeded" : "no space left", mnt, dest, cli_human(needed, a, sizeof(a)),
		cli_human(left, b, sizeof(b)), strcmp(cmd, "write") ? ", and the same command run again with "
		"room finishes the copy" : " (run again with room and --replace)");
}

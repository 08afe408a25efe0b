/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_progress: bfo cp's progress line (tools/cli.c, tools/copy_ui.c), the
 * command run on a pseudo-terminal (forkpty) as a user at a terminal runs it.
 *  - on a terminal, a first copy of N files shows the line: each one
 *    starts "\r\033[K" (rewritten in place), says "copied K files, X MB,
 *    R MB/s, F files/s", and once the sources are listed whole "P% of N"
 *    with N the files listed (the line printed when the totals become
 *    known, whatever the interval: no timing in the test); the last
 *    write clears it; nothing else is printed; the copy equals SRC (cp -a's
 *    metadata);
 *  - a no-change rerun with --delete on a terminal: the files left as they
 *    were count as done ("100% of N"), none copied;
 *  - stderr not a terminal: nothing on stdout or stderr;
 *  - --progress and rsync's --info=progress2 with stderr not a terminal:
 *    the line, as on a terminal;
 *  - --no-progress and --info=progress0 on a terminal: nothing printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

#define NFILES 600
#define CLEAR "\r\033[K"

struct out {
	char *text;
	size_t len;
	int status;
};

/* bfo cp args... with stdin, stdout and stderr on a new pseudo-terminal
 * (200 columns: the line is not cut), everything it printed in o. */
static void run_pty(struct out *o, const char *const *args)
{
	struct winsize ws = { .ws_row = 40, .ws_col = 200 };
	char *argv[16];
	int n = 0, master, st;
	pid_t pid;

	argv[n++] = BFO_CLI;
	argv[n++] = "cp";
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	pid = forkpty(&master, NULL, NULL, &ws);
	T_ASSERT(pid >= 0, "forkpty: %s", strerror(errno));
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	o->text = NULL;
	o->len = 0;
	for (;;) {
		char buf[4096];
		ssize_t k = read(master, buf, sizeof(buf));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)          /* EIO: the child's side closed */
			break;
		o->text = realloc(o->text, o->len + (size_t)k + 1);
		T_ASSERT(o->text, "out of memory");
		memcpy(o->text + o->len, buf, (size_t)k);
		o->len += (size_t)k;
	}
	if (!o->text)
		o->text = calloc(1, 1);
	o->text[o->len] = '\0';
	close(master);
	T_ASSERT(waitpid(pid, &st, 0) == pid, "waitpid");
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The pieces between CLEARs: every one a progress line (or empty).
 * Returns the number of lines; *whole: a line said "P% of N" for the
 * expected N (with want_pct >= 0: that share); *clears_last: the output
 * ends with CLEAR. */
static int check_lines(const struct out *o, unsigned listed, int want_pct, bool *whole,
		       bool *clears_last, const char *what)
{
	char of[64];
	int lines = 0;

	snprintf(of, sizeof(of), "%% of %u", listed);
	*whole = false;
	*clears_last = o->len >= strlen(CLEAR) && !strcmp(o->text + o->len - strlen(CLEAR), CLEAR);
	TW_CHECK(!strncmp(o->text, CLEAR, strlen(CLEAR)) || o->len == 0,
		 "%s: the output starts with something else than a progress line: %.80s", what,
		 tw_esc(o->text));
	for (char *p = o->text; p && *p;) {
		char *q = strstr(p + (strncmp(p, CLEAR, strlen(CLEAR)) ? 0 : strlen(CLEAR)), CLEAR);
		size_t n = q ? (size_t)(q - p) : strlen(p);
		char *line = strndup(p + (strncmp(p, CLEAR, strlen(CLEAR)) ? 0 : strlen(CLEAR)),
				     n - (strncmp(p, CLEAR, strlen(CLEAR)) ? 0 : strlen(CLEAR)));

		if (*line) {
			lines++;
			TW_CHECK(!strncmp(line, "copied ", 7) && strstr(line, " files, ") && strstr(line, " MB/s") &&
				 strstr(line, " files/s") && !strchr(line, '\n'),
				 "%s: not a progress line: %s", what, tw_esc(line));
			char *pct = strstr(line, of);

			if (pct && (pct[strlen(of)] == ',' || pct[strlen(of)] == '\0')) {
				char *b = pct;

				while (b > line && b[-1] >= '0' && b[-1] <= '9')
					b--;
				if (want_pct < 0 || atoi(b) == want_pct)
					*whole = true;
			}
		}
		free(line);
		p = q;
	}
	return lines;
}

static void make_src(const char *src)
{
	uint64_t seed = 57;

	tw_mkdirs(src);
	for (int d = 0; d < 12; d++) {
		char *dir = t_pathf("%s/d%02d", src, d);

		tw_mkdirs(dir);
		for (int i = 0; i < NFILES / 12; i++) {
			char *f = t_pathf("%s/f%03d", dir, i);

			t_write_random(f, t_rand_range(&seed, 0, 6000), t_rand(&seed));
			free(f);
		}
		free(dir);
	}
}

static void scenario(void *arg)
{
	const char *tmp = arg;
	char *dir = t_mkdtemp_in(tmp), msg[4096];
	char *src = t_path(dir, "src"), *srcs = t_pathf("%s/src/", dir);
	char *dst = t_path(dir, "dst"), *dst2 = t_path(dir, "dst2"), *dst3 = t_path(dir, "dst3");
	struct out o;
	struct tw_run r;
	bool whole, cleared;
	int n;

	make_src(src);

	/* on a terminal: the line, with the total once listed */
	run_pty(&o, (const char *[]){ "-a", srcs, dst, NULL });
	TW_CHECK(o.status == 0, "cp on a terminal: exit %d: %s", o.status, tw_esc(o.text));
	n = check_lines(&o, NFILES, -1, &whole, &cleared, "first copy");
	t_log("first copy on a terminal: %d progress lines, %zu bytes printed", n, o.len);
	TW_CHECK(n >= 1 && whole, "first copy: no line with the listed total (%% of %d): %s", NFILES,
		 tw_esc(o.text));
	TW_CHECK(cleared, "first copy: the line is not cleared at the end: %s", tw_esc(o.text));
	TW_CHECK(tw_tree_diff(src, dst, TW_CP_A & ~TW_ATIME, NULL, msg, sizeof(msg)) == 0, "first copy: %s", msg);
	free(o.text);

	/* a rerun that copies nothing: done is what was left as it was */
	run_pty(&o, (const char *[]){ "-a", "--delete", srcs, dst, NULL });
	TW_CHECK(o.status == 0, "rerun: exit %d: %s", o.status, tw_esc(o.text));
	n = check_lines(&o, NFILES, 100, &whole, &cleared, "rerun");
	TW_CHECK(n >= 1 && whole, "rerun: no line saying 100%% of %d: %s", NFILES, tw_esc(o.text));
	TW_CHECK(!strstr(o.text, "copied 1") && strstr(o.text, "copied 0 files"),
		 "rerun: a file was copied: %s", tw_esc(o.text));
	free(o.text);

	/* not a terminal: nothing extra */
	tw_runl(&r, BFO_CLI, "cp", "-a", srcs, dst2, NULL);
	TW_CHECK(r.status == 0 && r.out_len == 0 && r.err_len == 0,
		 "not a terminal: exit %d, %zu bytes on stdout, %zu on stderr: %s", r.status, r.out_len,
		 r.err_len, tw_esc(r.err));
	TW_CHECK(tw_tree_diff(src, dst2, TW_CP_A & ~TW_ATIME, NULL, msg, sizeof(msg)) == 0, "not a terminal: %s", msg);
	tw_run_free(&r);

	/* asked for, not a terminal: --progress, and rsync's --info=progress2 */
	const char *ask[] = { "--progress", "--info=progress2" };

	for (int i = 0; i < 2; i++) {
		T_ASSERT(t_sh("rm -rf '%s'", dst3) == 0, "rm -rf %s", dst3);
		tw_runl(&r, BFO_CLI, "cp", "-a", ask[i], srcs, dst3, NULL);
		struct out e = { .text = r.err, .len = r.err_len, .status = r.status };

		n = check_lines(&e, NFILES, -1, &whole, &cleared, ask[i]);
		TW_CHECK(r.status == 0 && r.out_len == 0 && n >= 1 && whole && cleared,
			 "%s not on a terminal: exit %d, %d lines, stdout %zu bytes: %s", ask[i], r.status, n,
			 r.out_len, tw_esc(r.err));
		tw_run_free(&r);
	}

	/* refused on a terminal: nothing printed */
	const char *no[] = { "--no-progress", "--info=progress0" };

	for (int i = 0; i < 2; i++) {
		T_ASSERT(t_sh("rm -rf '%s'", dst3) == 0, "rm -rf %s", dst3);
		run_pty(&o, (const char *[]){ "-a", no[i], srcs, dst3, NULL });
		TW_CHECK(o.status == 0 && o.len == 0, "%s on a terminal: exit %d, printed %s", no[i], o.status,
			 tw_esc(o.text));
		TW_CHECK(tw_tree_diff(src, dst3, TW_CP_A & ~TW_ATIME, NULL, msg, sizeof(msg)) == 0, "%s: %s", no[i], msg);
		free(o.text);
	}
	t_cleanup_rmtree(dir);
	free(src);
	free(srcs);
	free(dst);
	free(dst2);
	free(dst3);
	free(dir);
	tw_checks_end();
}

int main(void)
{
	t_init("t_progress", 300);
	umask(022);
	t_subtest("progress line", 240, scenario, (void *)t_tmpdir());
	t_done();
	return 0;
}

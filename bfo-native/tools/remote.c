/* SPDX-License-Identifier: Apache-2.0 */
/* The far side of a copy between machines, through a remote shell (remote.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "remote.h"

extern char **environ;

bool remote_parse(const char *arg, struct remote_arg *r)
{
	const char *colon, *slash = strchr(arg, '/');

	if (arg[0] == '[') {                    /* [v6addr]:PATH, [user@v6addr]:PATH */
		const char *end = strchr(arg, ']');

		if (!end || end[1] != ':' || (slash && slash < end))
			return false;
		colon = end + 1;
	} else {
		colon = strchr(arg, ':');
		if (!colon || colon == arg || (slash && slash < colon))
			return false;
	}
	r->host = strndup(arg[0] == '[' ? arg + 1 : arg,
			  (size_t)(colon - arg) - (arg[0] == '[' ? 2 : 0));
	r->path = colon + 1;
	return r->host != NULL;
}

/* rsh as words: blanks separate them, '...' and "..." quote, nothing is
 * expanded.  NULL-terminated, each malloc'd into one block; NULL on a
 * quote left open. */
static char **split_words(const char *s, size_t *n)
{
	size_t len = strlen(s);
	char **w = calloc(len / 2 + 2, sizeof(*w));
	char *buf = malloc(len + 1), *o = buf;

	*n = 0;
	if (!w || !buf)
		goto fail;
	while (*s) {
		char q = 0;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		w[(*n)++] = o;
		for (; *s && (q || (*s != ' ' && *s != '\t')); s++) {
			if (!q && (*s == '\'' || *s == '"'))
				q = *s;
			else if (q && *s == q)
				q = 0;
			else
				*o++ = *s;
		}
		if (q)
			goto fail;
		*o++ = '\0';
	}
	if (*n)
		return w;
fail:
	free(w);
	free(buf);
	return NULL;
}

/* arg quoted for a POSIX shell: '...' with each ' as '\''. */
static char *shell_quote(const char *arg)
{
	size_t q = 0;
	char *out, *o;

	for (const char *p = arg; *p; p++)
		q += *p == '\'';
	out = malloc(strlen(arg) + 3 * q + 3);
	if (!out)
		return NULL;
	o = out;
	*o++ = '\'';
	for (const char *p = arg; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = '\0';
	return out;
}

int remote_start(struct remote *r, const char *rsh, const char *host, char *const *argv,
		 bool we_send)
{
	size_t nw, na = 0;
	char **words = split_words(rsh, &nw), **full = NULL;
	posix_spawn_file_actions_t fa;
	int p[2] = { -1, -1 }, q[2] = { -1, -1 }, ret = -ENOMEM;

	if (!words) {
		fprintf(stderr, "bfo: cp: --rsh '%s': not a command (empty, or a quote left open)\n", rsh);
		return -EINVAL;
	}
	while (argv[na])
		na++;
	full = calloc(nw + na + 3, sizeof(*full));
	if (!full)
		goto out;
	memcpy(full, words, nw * sizeof(*full));
	full[nw] = (char *)host;
	for (size_t i = 0; i < na; i++)
		if (!(full[nw + 1 + i] = shell_quote(argv[i])))
			goto out;
	/* p: the stream, q: the back channel (the other way) */
	if (pipe2(p, O_CLOEXEC) < 0 || pipe2(q, O_CLOEXEC) < 0) {
		ret = -errno;
		if (p[0] >= 0) {
			close(p[0]);
			close(p[1]);
		}
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, we_send ? p[0] : q[0], 0);
	posix_spawn_file_actions_adddup2(&fa, we_send ? q[1] : p[1], 1);
	ret = -posix_spawnp(&r->pid, full[0], &fa, NULL, full, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret) {
		fprintf(stderr, "bfo: cp: cannot run '%s': %s\n", full[0], strerror(-ret));
		for (int i = 0; i < 2; i++) {
			close(p[i]);
			close(q[i]);
		}
		goto out;
	}
	close(we_send ? p[0] : p[1]);
	close(we_send ? q[1] : q[0]);
	r->fd = we_send ? p[1] : p[0];
	r->reply = we_send ? q[0] : q[1];
	r->host = host;
out:
	for (size_t i = 0; full && i < na; i++)
		free(full[nw + 1 + i]);
	free(full);
	free(words[0]);
	free(words);
	return ret;
}

/* Interrupted: how long the far side has, once its stream ended, to end
 * by itself before it is sent SIGTERM (it may be writing the batches it
 * had already received). */
#define FAR_GRACE_MS 1000

/* The far side's wait status: with cancelled, not past FAR_GRACE_MS and
 * then SIGTERM (which *termed says). */
static int far_wait(pid_t pid, bool cancelled, bool *termed)
{
	int st = 0;

	*termed = false;
	for (int ms = 0; cancelled && ms < FAR_GRACE_MS; ms += 10) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return st;
		usleep(10000);
	}
	if (cancelled) {
		kill(pid, SIGTERM);
		*termed = true;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

int remote_finish(struct remote *r, const char *cmd, const char *rsh, const char *bfo, bool cancelled,
		  bool answered)
{
	int st, code;
	bool termed;

	if (r->fd >= 0)
		close(r->fd);
	if (r->reply >= 0)
		close(r->reply);
	r->fd = r->reply = -1;
	st = far_wait(r->pid, cancelled, &termed);
	if (termed && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)
		return CLI_EXIT_SIGNALED + SIGTERM;   /* ours, not news */
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "bfo: %s: '%s' to %s ended by signal %d\n", cmd, rsh, r->host,
			WTERMSIG(st));
		return WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM ?
		       CLI_EXIT_SIGNALED + WTERMSIG(st) : CLI_EXIT_SOME_FAILED;
	}
	code = WEXITSTATUS(st);
	/* ssh's 255 is its own failure, or the far command's death by a
	 * signal: which, the far side's answers tell */
	if (code == 255 && answered)
		fprintf(stderr, "bfo: %s: the far bfo on %s ended before the copy did (killed, or "
			"'%s' lost the connection: exit 255)\n", cmd, r->host, rsh);
	else if (code == 255)
		fprintf(stderr, "bfo: %s: '%s' could not reach %s (exit 255)\n", cmd, rsh, r->host);
	else if (code == 127)
		fprintf(stderr, "bfo: %s: '%s' is not found on %s (install bfo there, or name it with "
			"--remote-bfo PATH)\n", cmd, bfo, r->host);
	if (code == 0 || code == CLI_EXIT_SOME_FAILED || code == CLI_EXIT_DEL_LIMIT ||
	    code == CLI_EXIT_NOSPACE ||
	    code == CLI_EXIT_SIGNALED + SIGINT || code == CLI_EXIT_SIGNALED + SIGTERM)
		return code;
	return CLI_EXIT_USAGE;
}

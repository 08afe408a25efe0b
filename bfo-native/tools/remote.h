/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The far side of bfo cp [USER@]HOST:PATH, run like rsync runs its own:
 * through a remote shell (--rsh, default "ssh") that starts bfo send or
 * bfo recv there (--remote-bfo, default "bfo"), the stream on its stdin or
 * stdout, its stderr passed through.
 */
#ifndef BFO_REMOTE_H
#define BFO_REMOTE_H

#include <stdbool.h>
#include <sys/types.h>

/* An argument naming a remote path: HOST (with USER@) and PATH ("" when
 * nothing followed the colon).  rsync's rule: a colon before any slash
 * makes it remote; "[v6addr]:PATH" too.  host is malloc'd. */
struct remote_arg {
	char *host;
	const char *path;
};
bool remote_parse(const char *arg, struct remote_arg *r);

/* A running far side: its pid, our end of its stream and of the back
 * channel (its stdout when we send, its stdin when we receive). */
struct remote {
	pid_t pid;
	int fd;
	int reply;
	const char *host;
};

/*
 * Start RSH HOST 'ARGV0' 'ARGV1'... (each word quoted for the remote
 * shell) with our ends of two pipes as its stdin and stdout: the stream
 * on its stdin (we_send) or stdout, the back channel on the other.  rsh is
 * split into words as a shell would (quotes, no expansions).  Returns 0,
 * or -errno with the reason on stderr.
 */
int remote_start(struct remote *r, const char *rsh, const char *host, char *const *argv,
		 bool we_send);

/*
 * Close our end and wait for the far side.  Returns its exit status as
 * the subcommands define them (0, 1, 2, 11, 25, 130, 143), after naming on
 * stderr why the remote shell itself failed (255: could not connect, or,
 * answered (the far bfo was heard from), the far side died; 127: no bfo
 * there).  cancelled (we were interrupted): the far side, its stream
 * ended, gets a moment to end by itself, then SIGTERM (through ssh the
 * remote shell ends, and the far bfo sees its stream end).
 */
int remote_finish(struct remote *r, const char *cmd, const char *rsh, const char *bfo, bool cancelled,
		  bool answered);

#endif

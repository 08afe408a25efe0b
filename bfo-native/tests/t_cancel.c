/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_cancel: bfo_copier_cancel() against a copier waiting on its stream.
 *
 * The bfo command installs its SIGINT handler (which cancels the copier)
 * before the run starts; a signal there, or one that comes just before the
 * run blocks in read(), used to be lost and the receiver waited for ever
 * (a CI run's `bfo recv` under SIGINT).  Each case below has one outcome
 * whatever the interleaving, so none depends on timing:
 *
 *  - before: a copier cancelled before bfo_copier_recv() on a pipe that
 *    never carries a byte returns -ECANCELED and writes nothing; one
 *    cancelled before bfo_copier_send() into a pipe nobody reads returns
 *    -ECANCELED too.
 *  - during: another thread cancels while (or before) the receiver waits
 *    on such a pipe: -ECANCELED.  A sender that filled a pipe nobody
 *    reads, cancelled once the pipe is full: -ECANCELED (its write used to
 *    wait in the kernel, where no cancel reached it).
 *  - after: the cancel is forgotten when the run returns: the same copier
 *    then sends the tree to a file, and a receiver makes of that stream
 *    what cp -a makes of the tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfo.h"
#include "t_helpers.h"
#include "t_wutil.h"
#include "test_hooks.h"

static struct bfo_copier *new_copier(void)
{
	struct bfo_copier *c;

	T_ASSERT(bfo_copier_create(&c, NULL, NULL, BFO_COPY_ARCHIVE, NULL) == 0, "bfo_copier_create");
	return c;
}

static void *cancel_soon(void *arg)
{
	tw_sleep_ns(50 * 1000000ull);
	bfo_copier_cancel(arg);
	return NULL;
}

/* A receiver on a pipe whose writer stays open and silent; cancelled by
 * this thread first, or by another while it waits. */
static void recv_silent(const char *dst, bool from_thread)
{
	struct bfo_copier *c = new_copier();
	pthread_t t;
	int p[2];

	T_ASSERT(pipe(p) == 0, "pipe");
	if (from_thread)
		T_ASSERT(pthread_create(&t, NULL, cancel_soon, c) == 0, "pthread_create");
	else
		bfo_copier_cancel(c);
	int ret = bfo_copier_recv(c, p[0], dst);

	TW_CHECK(ret == -ECANCELED, "[recv, cancelled %s] returned %d (%s)",
		 from_thread ? "while it waits" : "before", ret, strerror(-ret));
	TW_CHECK(!tw_exists(dst), "[recv, cancelled] %s was made", dst);
	if (from_thread)
		pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	bfo_copier_destroy(c);
}

struct sender {
	struct bfo_copier *c;
	const char **srcs;
	int fd, ret;
	atomic_bool done;
};

static void *send_run(void *arg)
{
	struct sender *s = arg;

	s->ret = bfo_copier_send(s->c, s->srcs, 1, s->fd);
	atomic_store(&s->done, true);
	return NULL;
}

/* A sender into a pipe nobody reads (the tree is larger than the pipe),
 * cancelled once the pipe is full: whether the sender then waits in a
 * write that found room for part of its bytes, or in poll(), or is about
 * to, the run ends with -ECANCELED.  (The test's sender thread does not
 * wait for ever on its own: the sender cannot finish.) */
static void send_full_pipe(const char **srcs)
{
	struct sender s = { .c = new_copier(), .srcs = srcs };
	pthread_t t;
	int p[2], queued = 0;

	T_ASSERT(pipe(p) == 0, "pipe");
	s.fd = p[1];
	T_ASSERT(pthread_create(&t, NULL, send_run, &s) == 0, "pthread_create");
	/* full: bytes in it and no room for another write */
	while (!atomic_load(&s.done) && !(ioctl(p[0], FIONREAD, &queued) == 0 && queued > 0 &&
					  poll(&(struct pollfd){ p[1], POLLOUT, 0 }, 1, 0) == 0))
		tw_sleep_ns(1000000);
	bfo_copier_cancel(s.c);
	pthread_join(t, NULL);
	TW_CHECK(s.ret == -ECANCELED, "[send, cancelled on a full pipe] returned %d (%s)", s.ret,
		 strerror(-s.ret));
	close(p[0]);
	close(p[1]);
	bfo_copier_destroy(s.c);
}

/* Root of the machine, not of a user namespace (unshare -Ur), where
 * tw_gen_tree's foreign owners cannot be set. */
static bool initial_userns(void)
{
	char a[64] = "", b[64] = "";

	return readlink("/proc/self/ns/user", a, sizeof(a) - 1) > 0 &&
	       readlink("/proc/1/ns/user", b, sizeof(b) - 1) > 0 && strcmp(a, b) == 0;
}

int main(void)
{
	char *tmp, *src, *ref, *dst, *copy, *stream;
	const char *srcs[1];
	struct bfo_copier *c;
	struct tw_run r;
	int p[2], fd, ret;
	bool root;

	t_init("t_cancel", 300);
	root = t_is_root() && initial_userns();
	umask(022);
	tmp = (char *)t_tmpdir();
	src = t_path(tmp, "src");
	ref = t_path(tmp, "ref");
	dst = t_path(tmp, "dst");
	copy = t_path(tmp, "copy");
	stream = t_path(tmp, "stream");
	/* tw_gen_tree sets owners and xattrs only root may set everywhere;
	 * as another user, a tree of what that user can make */
	if (root)
		tw_gen_tree(src, 77);
	else
		T_ASSERT(t_sh("mkdir -p '%s/a/b' && printf one > '%s/a/f' && head -c 300000 /dev/urandom > "
			      "'%s/a/b/big' && ln -s ../f '%s/a/b/link' && chmod 0750 '%s/a'",
			      src, src, src, src, src) == 0, "a tree as this user");
	tw_runl(&r, "cp", "-a", src, ref, (char *)NULL);
	T_ASSERT(r.status == 0, "cp -a: %s", r.err);
	tw_run_free(&r);
	srcs[0] = src;

	/* the watchdog names a hang: the bug this test is for */
	t_watchdog(120, "a cancelled receiver still waits on its stream");
	recv_silent(dst, false);
	recv_silent(dst, true);

	/* a sender cancelled before its run, into a pipe nobody reads */
	c = new_copier();
	T_ASSERT(pipe(p) == 0, "pipe");
	bfo_copier_cancel(c);
	ret = bfo_copier_send(c, srcs, 1, p[1]);
	TW_CHECK(ret == -ECANCELED, "[send, cancelled before] returned %d (%s)", ret, strerror(-ret));
	close(p[0]);
	close(p[1]);
	t_watchdog(120, "a cancelled sender still waits on a full pipe");
	send_full_pipe(srcs);
	/* the same where pipes refuse RWF_NOWAIT (6.1): writes of what fits */
	t_watchdog(120, "a cancelled sender still waits on a full pipe (pipes without RWF_NOWAIT)");
	bfo_test_hooks.pipe_nowait_refused = true;
	send_full_pipe(srcs);
	bfo_test_hooks.pipe_nowait_refused = false;

	/* the cancel forgotten: the same copier sends the whole tree */
	fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_ASSERT(fd >= 0, "open %s", stream);
	ret = bfo_copier_send(c, srcs, 1, fd);
	TW_CHECK(ret == 0, "[send after a cancelled run] returned %d (%s)", ret, strerror(-ret));
	close(fd);
	bfo_copier_destroy(c);
	c = new_copier();
	fd = open(stream, O_RDONLY | O_CLOEXEC);
	T_ASSERT(fd >= 0, "open %s", stream);
	ret = bfo_copier_recv(c, fd, copy);
	TW_CHECK(ret == 0, "[recv of that stream] returned %d (%s)", ret, strerror(-ret));
	close(fd);
	bfo_copier_destroy(c);
	t_watchdog(0, NULL);
	/* (the small tree's atimes are now: the reading moves them; the
	 * generated tree's are in the future, where relatime leaves them) */
	tw_expect_copy(ref, copy, root ? TW_CP_A | TW_TOP : (TW_CP_A & ~TW_OWNER & ~TW_ATIME) | TW_TOP,
		       "send after a cancelled run, then recv");
	t_log("a cancel before or during the wait ends it; the next run is not cancelled");
	free(src);
	free(ref);
	free(dst);
	free(copy);
	free(stream);
	tw_checks_end();
	t_done();
	return 0;
}

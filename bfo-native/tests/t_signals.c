/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_signals: every front of the `bfo` command ends on SIGINT and SIGTERM
 * with its usual exit status and leaves nothing torn (issue 33, item 2).
 *
 * A tree of 3,000 files (0 to 32 KiB, and two of 20 MiB that travel in
 * pieces) is read, planned, copied (cp -a, locally and to HOST: through a
 * remote shell that runs the far side here), sent, received and written
 * (bfo write --tar of GNU tar's archive of it).  Each front runs once to
 * the end twice (exit 0, its output checked; T the shorter), then ROUNDS times
 * with SIGINT or SIGTERM after a random delay in [0, 1.2 T] (a seeded
 * generator, BFO_TEST_SEED to change it; SIGINT to the process group, as
 * a terminal's ^C; SIGTERM to the process, as kill), and some rounds with
 * a second signal right after the first.  Each round checks:
 *  - the exit status: 130 after SIGINT, 143 after SIGTERM, or 0 when the
 *    command finished first; after two signals also death by the second
 *    (the default action, which the first restores);
 *  - the process and everything it started (its process group: the far
 *    side of cp HOST: too) are gone within BOUND_S seconds of the signal
 *    (generous: the machine may be loaded; the latencies seen are logged,
 *    not asserted);
 *  - nothing torn: bfo read's lines are each a whole '<xxh128>  <path>'
 *    line equal to xxh128sum's for that file (killed by a second signal,
 *    its last line may be cut, as any killed program's); at a destination every file
 *    is byte-identical to its source (the journal aside), no .bfo-tmp.*
 *    is left (killed by a second signal: not checked, a crash); then
 *    `bfo recover DST` exits 0 and leaves no .bfo-journal and no
 *    temporary, every file still identical;
 *  - bfo send's cut stream given to bfo recv: exit 0 (whole) or 1 or 2
 *    (cut), and the same destination checks.
 * First, the commands that read stdin (read -, write, write --tar, recv,
 * and send --server: its back channel) waiting on a pipe whose writer
 * stays silent: SIGINT and SIGTERM end them (130, 143) within the bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t_wutil.h"

#if T_ASAN
#define ROUNDS 4
#else
#define ROUNDS 12
#endif
#define NFILES 3000
#define BIG ((20u << 20) + 77)
#define BOUND_S 20

static const char *bfo = BFO_CLI;
/* srcc: "SRC/", its contents (rsync's rule: DST is then the copy) */
static char *src, *srcc, *tarfile, *streamfile, *rsh, *outf, *errf, *dst, *dst2;
static uint64_t seed;

/* ------------------------------------------------------------ the sums */

struct sum {
	char *path;
	char hex[33];
};
static struct sum *sums;
static size_t nsums;

static int sum_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sum *)a)->path, ((const struct sum *)b)->path);
}

static void load_sums(void)
{
	struct tw_run r;

	tw_runl(&r, "sh", "-c", "find \"$1\" -type f -print0 | xargs -0 xxh128sum", "sh", src, (char *)NULL);
	T_ASSERT(r.status == 0, "xxh128sum: %s", r.err);
	sums = calloc(NFILES + 16, sizeof(*sums));
	for (char *p = r.out; *p; ) {
		char *e = strchr(p, '\n');

		T_ASSERT(e && e - p > 34 && nsums < NFILES + 16, "xxh128sum line");
		*e = '\0';
		memcpy(sums[nsums].hex, p, 32);
		sums[nsums].path = strdup(p + 34);
		nsums++;
		p = e + 1;
	}
	tw_run_free(&r);
	qsort(sums, nsums, sizeof(*sums), sum_cmp);
}

/* bfo read --checksum's output: whole lines, each xxh128sum's.  killed
 * (by a second signal, as by any other): its last line may be cut. */
static int check_lines(const char *out, size_t len, bool killed, const char *what)
{
	int n = 0;

	TW_CHECK(killed || len == 0 || out[len - 1] == '\n', "[%s] output ends inside a line", what);
	for (const char *p = out; p < out + len; ) {
		const char *e = memchr(p, '\n', (size_t)(out + len - p));
		struct sum key, *s;
		char path[4096];

		if (!e)
			break;
		if (e - p < 35 || p[32] != ' ' || p[33] != ' ' || (size_t)(e - p - 34) >= sizeof(path)) {
			TW_CHECK(0, "[%s] torn line '%.*s'", what, (int)(e - p), p);
			return -1;
		}
		memcpy(path, p + 34, (size_t)(e - p - 34));
		path[e - p - 34] = '\0';
		key.path = path;
		s = bsearch(&key, sums, nsums, sizeof(*sums), sum_cmp);
		TW_CHECK(s && !memcmp(s->hex, p, 32), "[%s] line '%.*s' is not xxh128sum's", what, (int)(e - p), p);
		n++;
		p = e + 1;
	}
	return n;
}

/* ------------------------------------------------------------ running */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;

	*len = 0;
	if (!f)
		return calloc(1, 1);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);

	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static pid_t start_fd(char *const argv[], const char *in, int infd);

/* argv in a process group of its own, stdin from in (or /dev/null),
 * stdout to outf, stderr to errf. */
static pid_t start(char *const argv[], const char *in)
{
	return start_fd(argv, in, -1);
}

/* The same with stdin from infd when it is not -1. */
static pid_t start_fd(char *const argv[], const char *in, int infd)
{
	sigset_t block, old;
	pid_t pid;

	/* The child takes the default actions before a signal can reach it:
	 * the test's own handlers (its cleanup) are not for it. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	fflush(stdout);
	pid = fork();
	T_ASSERT(pid >= 0, "fork");
	if (pid == 0) {
		int i = infd >= 0 ? infd : open(in ? in : "/dev/null", O_RDONLY),
		    o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644),
		    e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		setpgid(0, 0);
		if (i < 0 || o < 0 || e < 0)
			_exit(126);
		dup2(i, 0);
		dup2(o, 1);
		dup2(e, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait at most BOUND_S seconds for pid and every process of its group
 * (the far side of cp HOST: too): pid's exit status (128 + signal when
 * killed), or -1 if any is still there (then all are killed).  The test
 * is their subreaper, so orphans are reaped here, not left as zombies. */
static int wait_bounded(pid_t pid, uint64_t since, uint64_t *took)
{
	int st = 0;
	bool ended = false;

	for (;;) {
		pid_t r;

		while ((r = waitpid(-pid, ended ? NULL : &st, WNOHANG)) > 0)
			ended |= r == pid;
		T_ASSERT(r >= 0 || errno == EINTR || errno == ECHILD, "waitpid: %s", strerror(errno));
		if (ended && kill(-pid, 0) < 0 && errno == ESRCH)
			break;
		if (now_ns() - since > (uint64_t)BOUND_S * 1000000000ull) {
			kill(-pid, SIGKILL);
			while (waitpid(-pid, NULL, 0) > 0)
				;
			return -1;
		}
		tw_sleep_ns(1000000);
	}
	*took = now_ns() - since;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------------ fronts */

enum front { F_READ, F_PLAN, F_CP, F_CP_HOST, F_SEND, F_RECV, F_WRITE, F_N };
static const char *const front_names[F_N] = {
	"read --checksum", "plan", "cp -a", "cp -a HOST:", "send", "recv", "write --tar",
};

static pid_t start_front(enum front f)
{
	char host_dst[4200];

	snprintf(host_dst, sizeof(host_dst), "h:%s", dst);
	switch (f) {
	case F_READ: {
		char *a[] = { (char *)bfo, "read", "--checksum", src, NULL };
		return start(a, NULL);
	}
	case F_PLAN: {
		char *a[] = { (char *)bfo, "plan", src, NULL };
		return start(a, NULL);
	}
	case F_CP: {
		char *a[] = { (char *)bfo, "cp", "-a", srcc, dst, NULL };
		return start(a, NULL);
	}
	case F_CP_HOST: {
		char *a[] = { (char *)bfo, "cp", "-a", "--rsh", rsh, "--remote-bfo", (char *)bfo, srcc, host_dst, NULL };
		return start(a, NULL);
	}
	case F_SEND: {
		char *a[] = { (char *)bfo, "send", "-a", srcc, NULL };
		return start(a, NULL);
	}
	case F_RECV: {
		char *a[] = { (char *)bfo, "recv", "-a", dst, NULL };
		return start(a, streamfile);
	}
	case F_WRITE: {
		char *a[] = { (char *)bfo, "write", "--tar", dst, NULL };
		return start(a, tarfile);
	}
	case F_N:
		break;
	}
	abort();
}

/* A destination after an interrupted run: identical files only, no
 * temporary; bfo recover then leaves no journal.  crashed (a second signal
 * may have killed it mid-batch): only what recovery leaves is checked.
 * Returns whether a journal was there to recover. */
static bool check_dest(const char *d, const char *what, bool crashed)
{
	char msg[2048];
	bool journal = tw_exists(tw_fmt("%s/.bfo-journal", d));
	struct tw_run r;

	if (!tw_exists(d))
		return false;
	if (!crashed) {
		TW_CHECK(tw_complete_or_absent(src, d) == 0,
			 "[%s] a file at the destination differs from its source", what);
		TW_CHECK(tw_leftovers(d, false, msg, sizeof(msg)) == 0, "[%s] temporaries left: %s", what, msg);
	}
	tw_runl(&r, bfo, "recover", d, (char *)NULL);
	TW_CHECK(r.status == 0, "[%s] bfo recover: exit %d: %s", what, r.status, r.err);
	tw_run_free(&r);
	TW_CHECK(tw_leftovers(d, true, msg, sizeof(msg)) == 0, "[%s] after bfo recover: %s", what, msg);
	TW_CHECK(tw_complete_or_absent(src, d) == 0, "[%s] after bfo recover, a file differs from its source",
		 what);
	return journal;
}

/* What a run left: its output (read), its destination (cp, recv, write),
 * its stream given to bfo recv (send). */
static void check_output(enum front f, int status, bool twice, const char *what)
{
	size_t len;
	char *out = slurp(outf, &len);

	switch (f) {
	case F_READ: {
		int n = check_lines(out, len, twice, what);

		TW_CHECK(status != 0 || n == (int)nsums, "[%s] exit 0 with %d lines of %zu", what, n, nsums);
		break;
	}
	case F_PLAN:
		break;
	case F_SEND: {
		struct tw_run r;
		char *a[] = { (char *)bfo, "recv", "-a", dst2, NULL };

		t_sh("rm -rf '%s'", dst2);
		tw_run(&r, out, len, (uid_t)-1, (gid_t)-1, a);
		/* a cut stream: 1 (ended before its end frame) or 2 (inside one) */
		TW_CHECK(r.status == 0 || (status != 0 && (r.status == 1 || r.status == 2)),
			 "[%s] bfo recv of its stream: exit %d: %s", what, r.status, r.err);
		tw_run_free(&r);
		check_dest(dst2, what, false);
		break;
	}
	default:
		check_dest(dst, what, twice);
		if (status == 0)
			TW_CHECK(tw_count_regular(dst) == (int)nsums, "[%s] exit 0, %d files of %zu", what,
				 tw_count_regular(dst), nsums);
		break;
	}
	free(out);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run_front(enum front f)
{
	const char *name = front_names[f];
	uint64_t t0, took, full, lat[ROUNDS + 4];
	int nlat = 0, finished = 0, status;
	pid_t pid;

	/* to the end, twice: exit 0, output checked; T the shorter run (the
	 * first may find cold caches, and the delays would miss the work) */
	full = UINT64_MAX;
	for (int k = 0; k < 2; k++) {
		size_t n;
		char *err;

		t_sh("rm -rf '%s' '%s'", dst, dst2);
		t0 = now_ns();
		pid = start_front(f);
		status = wait_bounded(pid, t0, &took);
		T_ASSERT(status != -1, "[%s] did not end in %d s", name, BOUND_S);
		err = slurp(errf, &n);
		T_ASSERT(status == 0, "[%s] to the end: exit %d: %s", name, status, err);
		free(err);
		full = MIN(full, took);
		check_output(f, status, false, name);
	}
	for (int round = 0; round < ROUNDS + 3; round++) {
		bool twice = round >= ROUNDS;
		int sig = t_rand(&seed) % 2 ? SIGINT : SIGTERM;
		uint64_t delay = t_rand_range(&seed, 0, full + full / 5);
		char what[128];

		snprintf(what, sizeof(what), "%s, %s%s after %.0f ms", name, sig == SIGINT ? "SIGINT" : "SIGTERM",
			 twice ? " twice" : "", (double)delay / 1e6);
		t_sh("rm -rf '%s' '%s'", dst, dst2);
		pid = start_front(f);
		tw_sleep_ns(delay);
		t0 = now_ns();
		/* ^C reaches a terminal's whole foreground group; kill, the process */
		kill(sig == SIGINT ? -pid : pid, sig);
		if (twice)
			kill(sig == SIGINT ? -pid : pid, sig);
		status = wait_bounded(pid, t0, &took);
		TW_CHECK(status != -1, "[%s] it or a process it started still running %d s after the signal",
			 what, BOUND_S);
		if (status == -1)
			continue;
		if (status == 0) {
			finished++;
		} else {
			size_t n;
			char *err = slurp(errf, &n);

			/* the handler's exit, or (twice) the second signal's default action */
			TW_CHECK(status == 128 + sig, "[%s] exit %d, expected %d or 0; stderr: %s", what, status,
				 128 + sig, err);
			free(err);
			lat[nlat++] = took;
			if (took > 1000000000ull)
				t_log("[%s] %.0f ms from the signal to its end", what, (double)took / 1e6);
		}
		check_output(f, status, twice, what);
	}
	qsort(lat, (size_t)nlat, sizeof(*lat), cmp_u64);
	t_log("%-16s T %.0f ms; %d rounds interrupted, %d finished first; kill to exit: median %.0f ms, "
	      "max %.0f ms", name, (double)full / 1e6, nlat, finished, nlat ? (double)lat[nlat / 2] / 1e6 : 0.0,
	      nlat ? (double)lat[nlat - 1] / 1e6 : 0.0);
}

/*
 * The commands that read stdin, waiting on a pipe whose writer is alive
 * and silent (a stalled ssh, a producer that paused): the signal must end
 * the wait (a read that goes on after EINTR would wait for the writer).
 */
static void run_stalled(void)
{
	char *read_a[] = { (char *)bfo, "read", "--checksum", "-", NULL };
	char *write_a[] = { (char *)bfo, "write", dst, NULL };
	char *tar_a[] = { (char *)bfo, "write", "--tar", dst, NULL };
	char *recv_a[] = { (char *)bfo, "recv", dst, NULL };
	/* the far side of bfo cp HOST:, its back channel on stdin: it waits
	 * for the receiver's first answer (HELLO) */
	char *send_a[] = { (char *)bfo, "send", "--server", "-a", srcc, NULL };
	struct { const char *name; char **argv; } c[] = {
		{ "read -", read_a }, { "write", write_a }, { "write --tar", tar_a }, { "recv", recv_a },
		{ "send --server", send_a },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		for (int k = 0; k < 2; k++) {
			int sig = k ? SIGTERM : SIGINT, p[2], status;
			uint64_t t0, took;
			pid_t pid;

			t_sh("rm -rf '%s'", dst);
			T_ASSERT(pipe2(p, O_CLOEXEC) == 0, "pipe");
			pid = start_fd(c[i].argv, NULL, p[0]);
			close(p[0]);
			tw_sleep_ns(200000000);      /* only to let it reach its wait */
			t0 = now_ns();
			kill(pid, sig);
			status = wait_bounded(pid, t0, &took);
			close(p[1]);
			TW_CHECK(status == 128 + sig, "[%s waiting on a silent pipe, %s] exit %d, expected %d",
				 c[i].name, k ? "SIGTERM" : "SIGINT", status, 128 + sig);
		}
	}
	t_log("waiting on a silent pipe (read -, write, write --tar, recv, send --server): SIGINT 130, "
	      "SIGTERM 143");
}

int main(void)
{
	const char *tmp, *s = getenv("BFO_TEST_SEED");
	uint64_t gen = 3333;

	t_init("t_signals", 1500);
	/* orphans of the fronts (a far side whose cp was killed) come to us */
	T_ASSERT(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	if (access(bfo, X_OK) != 0)
		t_fail("the bfo command %s is missing", bfo);
	if (!t_have_prog("xxh128sum"))
		t_skip("xxh128sum not installed (apt-get install xxhash)");
	seed = s ? strtoull(s, NULL, 0) : 33;
	t_log("seed %llu (BFO_TEST_SEED), %d rounds per front%s", (unsigned long long)seed, ROUNDS,
	      T_ASAN ? " (sanitizer build)" : "");
	umask(022);
	tmp = t_tmpdir();
	src = t_path(tmp, "src");
	srcc = t_pathf("%s/", src);
	dst = t_path(tmp, "dst");
	dst2 = t_path(tmp, "dst2");
	outf = t_path(tmp, "out");
	errf = t_path(tmp, "err");
	tarfile = t_path(tmp, "src.tar");
	streamfile = t_path(tmp, "src.stream");
	rsh = t_path(tmp, "rsh");
	{
		/* a remote shell that runs the far side here, as its child
		 * (ssh's place): the host dropped, the rest one command line */
		static const char sh[] = "#!/bin/sh\nshift\nexec sh -c \"exec $*\"\n";

		t_write_bytes(rsh, sh, sizeof(sh) - 1);
		chmod(rsh, 0755);
	}
	for (int d = 0; d < 30; d++)
		tw_mkdirs(tw_fmt("%s/d%02d/sub", src, d));
	for (int i = 0; i < NFILES - 2; i++)
		t_write_random(tw_fmt("%s/d%02d/%sf%04d", src, i % 30, i % 3 ? "" : "sub/", i),
			       t_rand_range(&gen, 0, 32768), 1000 + (uint64_t)i);
	t_write_random(tw_fmt("%s/d07/big1", src), BIG, 1);
	t_write_random(tw_fmt("%s/d19/sub/big2", src), BIG + 4096, 2);
	load_sums();
	T_ASSERT(nsums == NFILES, "%zu files in the source", nsums);
	T_ASSERT(t_sh("tar -C '%s' -cf '%s' .", src, tarfile) == 0, "tar -cf");
	T_ASSERT(t_sh("'%s' send -a '%s' > '%s'", bfo, srcc, streamfile) == 0, "bfo send");
	t_log("source: %zu files on %s", nsums, tw_fstype(tmp));

	run_stalled();
	for (int f = 0; f < F_N; f++)
		run_front((enum front)f);
	tw_checks_end();
	t_log("PASS");
	return 0;
}

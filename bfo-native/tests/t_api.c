/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_api: the contracts written in bfo.h, one by one: options (defaults,
 * extensible size, invalid values), the batch state machine (-EINVAL,
 * -EAGAIN, -EBUSY, -ECANCELED, -ETIME, -ENOBUFS, a cancel after -ENOBUFS
 * ending with 0), second batches on one
 * context, release of bad cookies, cancel (from the caller's thread with
 * entries held, and from another thread while the caller waits),
 * metadata-only and plan-only batches, packed submission, strings,
 * describe, errno left alone, and the 160-byte layout of struct bfo_file.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_hooks.h"
#include "t_helpers.h"

/* The fixed layout bindings read from a direct buffer. */
_Static_assert(sizeof(struct bfo_file) == 160, "struct bfo_file is 160 bytes");
_Static_assert(offsetof(struct bfo_file, index) == 0, "index");
_Static_assert(offsetof(struct bfo_file, path) == 8, "path");
_Static_assert(offsetof(struct bfo_file, data) == 16, "data");
_Static_assert(offsetof(struct bfo_file, offset) == 24, "offset");
_Static_assert(offsetof(struct bfo_file, length) == 32, "length");
_Static_assert(offsetof(struct bfo_file, size) == 40, "size");
_Static_assert(offsetof(struct bfo_file, mtime_sec) == 48, "mtime_sec");
_Static_assert(offsetof(struct bfo_file, ctime_sec) == 56, "ctime_sec");
_Static_assert(offsetof(struct bfo_file, atime_sec) == 64, "atime_sec");
_Static_assert(offsetof(struct bfo_file, ino) == 72, "ino");
_Static_assert(offsetof(struct bfo_file, dev) == 80, "dev");
_Static_assert(offsetof(struct bfo_file, cookie) == 88, "cookie");
_Static_assert(offsetof(struct bfo_file, mtime_nsec) == 96, "mtime_nsec");
_Static_assert(offsetof(struct bfo_file, ctime_nsec) == 100, "ctime_nsec");
_Static_assert(offsetof(struct bfo_file, atime_nsec) == 104, "atime_nsec");
_Static_assert(offsetof(struct bfo_file, mode) == 108, "mode");
_Static_assert(offsetof(struct bfo_file, uid) == 112, "uid");
_Static_assert(offsetof(struct bfo_file, gid) == 116, "gid");
_Static_assert(offsetof(struct bfo_file, nlink) == 120, "nlink");
_Static_assert(offsetof(struct bfo_file, status) == 124, "status");
_Static_assert(offsetof(struct bfo_file, engine) == 128, "engine");
_Static_assert(offsetof(struct bfo_file, flags) == 130, "flags");

static const char *dir;

/* ------------------------------------------------------------ hooks */

static atomic_bool plan_block;       /* after_plan waits while set */
static atomic_int plan_blocked;      /* hooks currently waiting */

static void blocking_after_plan(void *arg, uint32_t n)
{
	(void)arg;
	(void)n;
	atomic_fetch_add(&plan_blocked, 1);
	while (atomic_load(&plan_block)) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	atomic_fetch_sub(&plan_blocked, 1);
}

static void hooks_block(void)
{
	atomic_store(&plan_block, true);
	bfo_test_hooks.after_plan = blocking_after_plan;
}

static void hooks_unblock(void)
{
	atomic_store(&plan_block, false);
}

static void hooks_reset(void)
{
	atomic_store(&plan_block, false);
	while (atomic_load(&plan_blocked)) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	bfo_test_hooks.after_plan = NULL;
	bfo_test_hooks.after_data = NULL;
	bfo_test_hooks.arg = NULL;
}

/* ------------------------------------------------------------ files */

static char **make_files(const char *prefix, int n, uint64_t lo, uint64_t hi)
{
	char **p = calloc((size_t)n, sizeof(*p));
	uint64_t seed = (uint64_t)n * 31 + lo;

	for (int i = 0; i < n; i++) {
		p[i] = t_pathf("%s/%s%05d", dir, prefix, i);
		t_write_random(p[i], t_rand_range(&seed, lo, hi), (uint64_t)i + lo);
	}
	return p;
}

static void free_paths(char **p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

static void expect_entry_plain(const struct bfo_file *f, const char *msg)
{
	uint8_t *b;
	uint64_t len;
	struct stat st;

	T_ASSERT(f->status == 0, "[%s] %s: status %d (%s)", msg, f->path, f->status,
		 bfo_strerror(f->status));
	T_ASSERT(t_read_plain(f->path, &b, &len) == 0 && stat(f->path, &st) == 0, "read %s", f->path);
	T_ASSERT(f->length == len && (len == 0 || memcmp(f->data, b, len) == 0),
		 "[%s] %s: bytes differ from read()", msg, f->path);
	T_ASSERT(f->size == (uint64_t)st.st_size && f->mtime_sec == st.st_mtim.tv_sec &&
		 f->mtime_nsec == (uint32_t)st.st_mtim.tv_nsec, "[%s] %s: metadata differs", msg, f->path);
	free(b);
}

/* ------------------------------------------------------------ options */

static void check_opts(void)
{
	struct bfo_opts o;
	struct bfo_ctx *ctx = NULL;

	T_EQ(bfo_version(), BFO_VERSION_NUMBER);
	memset(&o, 0xa5, sizeof(o));
	bfo_opts_init(&o);
	T_EQ(o.size, sizeof(o));
	T_EQ(o.flags, 0);
	T_EQ(o.engine, BFO_ENGINE_AUTO);
	T_EQ(o.order, BFO_ORDER_AUTO);
	T_ASSERT(o.window_files && o.queue_depth && o.threads && o.window_bytes && o.arena_bytes &&
		 o.merge_gap && o.max_io && o.large_extent && o.large_file,
		 "bfo_opts_init left a numeric default at 0");
	T_ASSERT(o.max_io % 4096 == 0, "default max_io %llu", (unsigned long long)o.max_io);
	T_EQ(o.reserved0, 0);
	for (int i = 0; i < 8; i++)
		T_EQ(o.reserved[i], 0);

	/* NULL options: the defaults */
	T_OK(bfo_ctx_create(&ctx, NULL));
	bfo_ctx_destroy(ctx);
	bfo_ctx_destroy(NULL);             /* ignored */

	/* a newer caller's larger struct */
	struct {
		struct bfo_opts o;
		uint64_t extra[4];
	} big;

	memset(&big, 0, sizeof(big));
	bfo_opts_init(&big.o);
	big.o.size = sizeof(big);
	T_EQ(bfo_ctx_create(&ctx, &big.o), 0);
	bfo_ctx_destroy(ctx);
	big.extra[3] = 1;
	ctx = NULL;
	T_EQ(bfo_ctx_create(&ctx, &big.o), -E2BIG);
	T_ASSERT(ctx == NULL, "a context was returned with -E2BIG");
	big.extra[3] = 0;
	big.extra[0] = 0x100;
	T_EQ(bfo_ctx_create(&ctx, &big.o), -E2BIG);

	/* an older caller's smaller struct: what lies past its size is not read */
	bfo_opts_init(&o);
	o.size = offsetof(struct bfo_opts, reserved);
	for (int i = 0; i < 8; i++)
		o.reserved[i] = ~0ull;
	T_EQ(bfo_ctx_create(&ctx, &o), 0);
	bfo_ctx_destroy(ctx);
	bfo_opts_init(&o);
	o.size = offsetof(struct bfo_opts, reserved);
	o.large_file = 0;                  /* zero: the default */
	o.window_files = 0;
	T_EQ(bfo_ctx_create(&ctx, &o), 0);
	bfo_ctx_destroy(ctx);

	/* invalid values */
	bfo_opts_init(&o);
	o.flags = 1u << 20;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	o.flags = 0x80000000u | BFO_READ_NOFOLLOW;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	bfo_opts_init(&o);
	o.engine = 99;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	o.engine = BFO_ENGINE_NONE;        /* not an engine one can ask for */
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	bfo_opts_init(&o);
	o.order = 17;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	bfo_opts_init(&o);
	o.max_io = 3 * 4096 + 512;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	o.max_io = 1000;
	T_EQ(bfo_ctx_create(&ctx, &o), -EINVAL);
	o.max_io = 8192;
	T_EQ(bfo_ctx_create(&ctx, &o), 0);
	bfo_ctx_destroy(ctx);
	T_EQ(bfo_ctx_create(NULL, NULL), -EINVAL);
	t_log("options: ok");
}

/* ------------------------------------------------------------ strings */

static void check_strings(void)
{
	char buf[1024], small[8];
	struct bfo_ctx *ctx = t_ctx(NULL);

	T_ASSERT(!strcmp(bfo_engine_name(BFO_ENGINE_AUTO), "auto"), "auto");
	T_ASSERT(!strcmp(bfo_engine_name(BFO_ENGINE_RAW), "raw"), "raw");
	T_ASSERT(!strcmp(bfo_engine_name(BFO_ENGINE_URING), "uring"), "uring");
	T_ASSERT(!strcmp(bfo_engine_name(BFO_ENGINE_PORTABLE), "portable"), "portable");
	T_ASSERT(!strcmp(bfo_engine_name(BFO_ENGINE_NONE), "none"), "none");
	T_ASSERT(!strcmp(bfo_engine_name(5), "?"), "5");
	T_ASSERT(!strcmp(bfo_engine_name(-1), "?"), "-1");

	const char *s = bfo_strerror(-ESTALE);

	T_ASSERT(s && *s && strcmp(s, bfo_strerror(-EIO)) != 0, "bfo_strerror(-ESTALE) = '%s'", s);
	T_ASSERT(bfo_strerror(0) && *bfo_strerror(0), "bfo_strerror(0)");
	T_ASSERT(!strcmp(bfo_strerror(-ENOENT), strerror(ENOENT)), "bfo_strerror(-ENOENT) = '%s'",
		 bfo_strerror(-ENOENT));
	T_ASSERT(bfo_strerror(-EINVAL) && *bfo_strerror(-EINVAL), "-EINVAL");
	T_ASSERT(bfo_strerror(-ELOOP) && *bfo_strerror(-ELOOP), "-ELOOP");
	T_ASSERT(bfo_strerror(-9999) && *bfo_strerror(-9999), "unknown");

	int n = bfo_ctx_describe(ctx, buf, sizeof(buf));

	T_ASSERT(n > 0 && (size_t)n < sizeof(buf), "describe returned %d", n);
	T_EQ(strlen(buf), n);
	T_ASSERT(!strchr(buf, '\n'), "describe: one line, got '%s'", buf);
	memset(small, 'x', sizeof(small));
	T_EQ(bfo_ctx_describe(ctx, small, sizeof(small)), n);   /* like snprintf */
	T_ASSERT(small[7] == '\0' && !strncmp(small, buf, 7), "describe truncation: '%.8s'", small);
	t_log("describe: %s", buf);
	bfo_ctx_destroy(ctx);
}

/* ------------------------------------------------------------ state machine */

static void drain_expect(struct bfo_ctx *ctx, char **paths, int n, const char *msg)
{
	/* drain by hand: every index once, in [0, n) */
	struct bfo_file f[16];
	uint8_t *seen = calloc((size_t)n, 1);
	int k, got = 0;

	while ((k = bfo_read_wait(ctx, f, 16, -1)) > 0) {
		for (int i = 0; i < k; i++) {
			T_ASSERT(f[i].index < (uint64_t)n, "[%s] index %llu of %d", msg,
				 (unsigned long long)f[i].index, n);
			T_ASSERT(!seen[f[i].index]++, "[%s] index %llu twice", msg,
				 (unsigned long long)f[i].index);
			T_ASSERT(!strcmp(f[i].path, paths[f[i].index]), "[%s] path", msg);
			expect_entry_plain(&f[i], msg);
			got++;
		}
		T_OK(bfo_read_release(ctx, f, (unsigned)k));
	}
	T_ASSERT(k == 0, "[%s] wait returned %d (%s)", msg, k, bfo_strerror(k));
	T_EQ(got, n);
	free(seen);
}

static void check_states(void)
{
	char **p = make_files("st", 40, 1, 3000);
	struct bfo_ctx *ctx = t_ctx(NULL);
	struct bfo_file f[8];
	struct bfo_stats st;

	/* nothing started */
	T_EQ(bfo_read_wait(ctx, f, 8, -1), -EINVAL);
	T_EQ(bfo_read_wait(ctx, f, 8, 0), -EINVAL);
	T_EQ(bfo_read_finish(ctx), -EINVAL);

	/* fewer paths than the first window: -EAGAIN, not a hang */
	t_watchdog(30, "bfo_read_wait with a partial window (must be -EAGAIN)");
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 3), 3);
	T_EQ(bfo_read_wait(ctx, f, 8, -1), -EAGAIN);
	T_EQ(bfo_read_wait(ctx, f, 8, 0), -EAGAIN);
	T_EQ(bfo_read_wait(ctx, f, 8, 100), -EAGAIN);
	T_EQ(bfo_read_submit(ctx, (const char *const *)p + 3, 2), 2);
	T_EQ(bfo_read_wait(ctx, f, 8, -1), -EAGAIN);
	T_OK(bfo_read_finish(ctx));
	/* after finish: -EBUSY until the batch ended */
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 1), -EBUSY);
	T_EQ(bfo_read_submit_packed(ctx, "x\0", 2), -EBUSY);
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 5);
	drain_expect(ctx, p, 5, "partial window");
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 5);
	T_EQ(st.files_ok, 5);

	/* a second batch on the same context: indices from 0, stats reset */
	T_EQ(bfo_read_submit(ctx, (const char *const *)p + 10, 30), 30);
	T_OK(bfo_read_finish(ctx));
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 1), -EBUSY);
	drain_expect(ctx, p + 10, 30, "second batch");
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 30);
	T_EQ(st.files_ok, 30);

	/* a batch of zero paths */
	T_EQ(bfo_read_submit(ctx, NULL, 0), 0);
	T_OK(bfo_read_finish(ctx));
	T_EQ(bfo_read_wait(ctx, f, 8, -1), 0);
	T_OK(bfo_read_stats(ctx, &st));
	T_EQ(st.files, 0);

	/* a NULL path */
	const char *withnull[3] = { p[0], NULL, p[1] };

	T_EQ(bfo_read_submit(ctx, withnull, 3), -EINVAL);

	/* a third batch through t_batch_ctx (checks everything) */
	struct t_result *r = t_results_new(40);

	t_batch_ctx(ctx, p, 40, r, &st, 0);
	for (int i = 0; i < 40; i++)
		t_expect_plain(r, p, (size_t)i, "third batch");
	t_results_free(r, 40);
	bfo_ctx_destroy(ctx);
	free_paths(p, 40);
	t_watchdog(0, NULL);
	t_log("batch states (-EINVAL, -EAGAIN, -EBUSY, second batch, empty batch): ok");
}

/* ------------------------------------------------------------ release */

static void check_release(void)
{
	char **p = make_files("rel", 4, 100, 5000);
	struct bfo_ctx *ctx = t_ctx(NULL);
	struct bfo_file f[4], bogus;
	int k, got = 0;

	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 4), 4);
	T_OK(bfo_read_finish(ctx));
	while (got < 4) {
		k = bfo_read_wait(ctx, f + got, (unsigned)(4 - got), -1);
		T_ASSERT(k > 0, "wait returned %d", k);
		got += k;
	}
	memset(&bogus, 0, sizeof(bogus));
	bogus.cookie = 0xdeadbeef12345678ull;
	T_EQ(bfo_read_release(ctx, &bogus, 1), -EINVAL);
	bogus.cookie = 0;
	T_EQ(bfo_read_release(ctx, &bogus, 1), -EINVAL);
	bogus = f[0];
	bogus.cookie ^= 1ull << 40;        /* a real slot, another generation */
	T_EQ(bfo_read_release(ctx, &bogus, 1), -EINVAL);
	T_EQ(bfo_read_release(ctx, f, 1), 0);
	T_EQ(bfo_read_release(ctx, f, 1), -EINVAL);       /* double release */
	/* a bad entry in an array: -EINVAL, the others are still released */
	struct bfo_file mix[3] = { f[1], bogus, f[2] };

	mix[1].cookie = 0xfeedull << 32 | 77777;
	T_EQ(bfo_read_release(ctx, mix, 3), -EINVAL);
	T_EQ(bfo_read_release(ctx, f + 1, 1), -EINVAL);   /* it was released */
	T_EQ(bfo_read_release(ctx, f + 2, 1), -EINVAL);
	expect_entry_plain(&f[3], "held entry");
	T_EQ(bfo_read_release(ctx, f + 3, 1), 0);
	T_EQ(bfo_read_wait(ctx, f, 4, -1), 0);
	T_EQ(bfo_read_release(ctx, f + 3, 1), -EINVAL);   /* after the batch too */
	bfo_ctx_destroy(ctx);
	free_paths(p, 4);
	t_log("release of made-up, stale and double cookies: ok");
}

/* ------------------------------------------------------------ -ETIME */

static void check_etime(void)
{
	char **p = make_files("et", 1, 100, 100);
	struct bfo_ctx *ctx = t_ctx(NULL);
	struct bfo_file f[2];

	hooks_block();                     /* the plan cannot finish */
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 1), 1);
	T_OK(bfo_read_finish(ctx));
	T_EQ(bfo_read_wait(ctx, f, 2, 0), -ETIME);
	T_EQ(bfo_read_wait(ctx, f, 2, 50), -ETIME);
	hooks_unblock();
	t_watchdog(30, "bfo_read_wait after the plan was let go");
	T_EQ(bfo_read_wait(ctx, f, 2, -1), 1);
	expect_entry_plain(&f[0], "after -ETIME");
	T_OK(bfo_read_release(ctx, f, 1));
	T_EQ(bfo_read_wait(ctx, f, 2, -1), 0);
	hooks_reset();
	bfo_ctx_destroy(ctx);
	free_paths(p, 1);
	t_watchdog(0, NULL);
	t_log("-ETIME with timeout 0 and 50 ms: ok");
}

/* ------------------------------------------------------------ cancel */

struct canceller {
	struct bfo_ctx *ctx;
	atomic_bool done;
};

static void *cancel_thread(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	nanosleep(&ts, NULL);              /* the caller is in bfo_read_wait by now */
	bfo_read_cancel(c->ctx);
	atomic_store(&c->done, true);
	hooks_unblock();
	return NULL;
}

static void check_cancel(int engine)
{
	enum { N = 2000 };
	char **p = make_files("can", N, 1, 4000);
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_file *held = calloc(N, sizeof(*held));
	int nheld = 0, k;
	size_t next = 0;
	char msg[64];

	snprintf(msg, sizeof(msg), "cancel, engine %s", t_engine(engine));
	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.window_files = 64;
	ctx = t_ctx(&o);
	t_watchdog(60, msg);
	/* hold every entry until at least 200 arrived */
	while (nheld < 200) {
		if (next < N) {
			k = bfo_read_submit(ctx, (const char *const *)p + next, (unsigned)(N - next));
			T_ASSERT(k >= 0, "submit %d", k);
			next += (size_t)k;
		}
		k = bfo_read_wait(ctx, held + nheld, (unsigned)(N - nheld), -1);
		if (k == -EAGAIN)
			continue;
		T_ASSERT(k > 0, "[%s] wait returned %d before the cancel", msg, k);
		nheld += k;
	}
	T_ASSERT(next < N, "[%s] everything was submitted before the cancel (%zu)", msg, next);
	T_OK(bfo_read_cancel(ctx));
	/* stopped, not drained: new paths are refused */
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, 1), -ECANCELED);
	T_OK(bfo_read_cancel(ctx));        /* again: harmless */
	struct bfo_file f[16];

	k = bfo_read_wait(ctx, f, 16, -1);
	T_ASSERT(k == 0, "[%s] wait after cancel returned %d, expected 0", msg, k);
	/* delivered entries stay valid until released */
	for (int i = 0; i < nheld; i++) {
		T_ASSERT(!strcmp(held[i].path, p[held[i].index]), "[%s] held path", msg);
		expect_entry_plain(&held[i], msg);
	}
	T_EQ(bfo_read_release(ctx, held, (unsigned)nheld), 0);
	/* a new batch works, indices from 0 */
	struct t_result *r = t_results_new(300);

	t_batch_ctx(ctx, p + 1000, 300, r, NULL, 0);
	for (int i = 0; i < 300; i++)
		t_expect_plain(r, p + 1000, (size_t)i, "batch after cancel");
	t_results_free(r, 300);

	/* cancel from another thread while the caller blocks in wait */
	pthread_t th;
	struct canceller c = { ctx, false };

	hooks_block();
	k = bfo_read_submit(ctx, (const char *const *)p, 1000);
	T_ASSERT(k > 0, "submit %d", k);
	T_OK(bfo_read_finish(ctx));
	T_ASSERT(pthread_create(&th, NULL, cancel_thread, &c) == 0, "pthread_create");
	k = bfo_read_wait(ctx, f, 16, -1);
	T_ASSERT(k == 0, "[%s] wait during a cancel from another thread returned %d", msg, k);
	T_ASSERT(atomic_load(&c.done), "[%s] wait returned before the cancel", msg);
	pthread_join(th, NULL);
	hooks_reset();
	r = t_results_new(100);
	t_batch_ctx(ctx, p + 500, 100, r, NULL, 0);
	for (int i = 0; i < 100; i++)
		t_expect_plain(r, p + 500, (size_t)i, "batch after a cancel from another thread");
	t_results_free(r, 100);

	/* destroy with a batch in flight and entries held */
	k = bfo_read_submit(ctx, (const char *const *)p, 500);
	T_ASSERT(k > 0, "submit %d", k);
	T_OK(bfo_read_finish(ctx));
	k = bfo_read_wait(ctx, f, 16, -1);
	T_ASSERT(k > 0, "wait %d", k);
	bfo_ctx_destroy(ctx);
	free(held);
	free_paths(p, N);
	t_watchdog(0, NULL);
	t_log("%s: ok (%d entries held across the cancel)", msg, nheld);
}

/* ------------------------------------------------------------ -ENOBUFS */

/* cancel: after -ENOBUFS the caller gives up the batch while it still
 * holds entries (as the tar plugin does); the wait must then end with 0,
 * not report -ENOBUFS again until the dispatcher has dropped its work. */
static void check_enobufs(int engine, bool cancel)
{
	enum { N = 20 };
	/* below large_file (an eighth of the 1 MiB arena): whole entries */
	char **p = make_files("nob", N, 100 << 10, 100 << 10);
	struct bfo_opts o;
	struct bfo_ctx *ctx;
	struct bfo_file held[N];
	uint8_t seen[N] = { 0 };
	int nheld = 0, k, got = 0;
	bool nobufs = false;
	char msg[64];

	snprintf(msg, sizeof(msg), "-ENOBUFS%s, engine %s", cancel ? " then cancel" : "", t_engine(engine));
	bfo_opts_init(&o);
	o.engine = (uint32_t)engine;
	o.arena_bytes = 1 << 20;           /* window_bytes and large_file shrink with it */
	ctx = t_ctx(&o);
	t_watchdog(30, msg);
	T_EQ(bfo_read_submit(ctx, (const char *const *)p, N), N);
	T_OK(bfo_read_finish(ctx));
	for (;;) {
		k = bfo_read_wait(ctx, held + nheld, 4, -1);
		if (k == -ENOBUFS) {
			nobufs = true;
			break;
		}
		T_ASSERT(k > 0, "[%s] wait returned %d with %d entries held", msg, k, nheld);
		for (int i = 0; i < k; i++) {
			T_ASSERT(!seen[held[nheld + i].index]++, "[%s] twice", msg);
			expect_entry_plain(&held[nheld + i], msg);
		}
		nheld += k;
		T_ASSERT(nheld < N, "[%s] %d files of 200 KiB held in a 1 MiB arena", msg, nheld);
	}
	T_ASSERT(nobufs && nheld > 0, "no -ENOBUFS");
	/* still -ENOBUFS while nothing is released */
	T_EQ(bfo_read_wait(ctx, held + nheld, 4, 0), -ENOBUFS);
	got = nheld;
	if (cancel) {
		T_OK(bfo_read_cancel(ctx));
		k = bfo_read_wait(ctx, held + nheld, 4, -1);
		T_ASSERT(k == 0, "[%s] wait after cancel returned %d (entries still held)", msg, k);
		for (int i = 0; i < nheld; i++)
			expect_entry_plain(&held[i], "held across cancel");
		T_OK(bfo_read_release(ctx, held, (unsigned)nheld));
		/* the context reads the next batch */
		T_EQ(bfo_read_submit(ctx, (const char *const *)p, 1), 1);
		T_OK(bfo_read_finish(ctx));
		T_EQ(bfo_read_wait(ctx, held, 4, -1), 1);
		expect_entry_plain(&held[0], msg);
		T_OK(bfo_read_release(ctx, held, 1));
		T_EQ(bfo_read_wait(ctx, held, 4, -1), 0);
		bfo_ctx_destroy(ctx);
		free_paths(p, N);
		t_watchdog(0, NULL);
		t_log("%s: ok (%d entries held across the cancel)", msg, nheld);
		return;
	}
	for (int i = 0; i < nheld; i++)
		expect_entry_plain(&held[i], "held across -ENOBUFS");
	T_OK(bfo_read_release(ctx, held, (unsigned)nheld));
	while ((k = bfo_read_wait(ctx, held, 4, -1)) > 0) {
		for (int i = 0; i < k; i++) {
			T_ASSERT(!seen[held[i].index]++, "[%s] twice", msg);
			expect_entry_plain(&held[i], msg);
		}
		got += k;
		T_OK(bfo_read_release(ctx, held, (unsigned)k));
	}
	T_ASSERT(k == 0, "[%s] wait returned %d after releasing", msg, k);
	T_EQ(got, N);
	bfo_ctx_destroy(ctx);
	free_paths(p, N);
	t_watchdog(0, NULL);
	t_log("%s: ok (-ENOBUFS with %d entries held, then all %d delivered)", msg, nheld, N);
}

/* ------------------------------------------------------------ metadata and plan only */

static void check_meta_plan(void)
{
	char **p = make_files("mp", 30, 0, 70000);
	char *big = t_path(dir, "big-sparse");
	char *paths[34];
	int fd = open(big, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd < 0 || ftruncate(fd, 20 << 20) < 0 || pwrite(fd, "x", 1, 10 << 20) != 1)
		t_fail("big file");
	close(fd);
	for (int i = 0; i < 30; i++)
		paths[i] = p[i];
	paths[30] = big;
	paths[31] = (char *)dir;
	paths[32] = t_path(dir, "missing");
	paths[33] = p[3];
	for (int mode = 0; mode < 2; mode++) {
		struct bfo_opts o;
		struct bfo_stats st;
		struct t_result *r = t_results_new(34);
		const char *msg = mode ? "plan-only" : "metadata-only";

		bfo_opts_init(&o);
		o.flags = mode ? BFO_READ_PLAN_ONLY : BFO_READ_METADATA_ONLY;
		t_batch(&o, paths, 34, r, &st);
		for (int i = 0; i < 34; i++) {
			struct stat sb;

			if (i == 31) {
				t_expect_status(r, paths, 31, -EISDIR, msg);
				continue;
			}
			if (i == 32) {
				t_expect_status(r, paths, 32, -ENOENT, msg);
				continue;
			}
			T_ASSERT(stat(paths[i], &sb) == 0, "stat");
			T_ASSERT(r[i].status == 0 && r[i].len == 0 && r[i].data == NULL &&
				 r[i].entries == 1, "[%s] %s: status %d, %llu bytes, %u entries", msg,
				 paths[i], r[i].status, (unsigned long long)r[i].len, r[i].entries);
			T_ASSERT(r[i].size == (uint64_t)sb.st_size && r[i].mtime_sec == sb.st_mtim.tv_sec &&
				 r[i].mtime_nsec == (uint32_t)sb.st_mtim.tv_nsec && r[i].mode == sb.st_mode &&
				 r[i].ino == sb.st_ino && r[i].uid == sb.st_uid && r[i].gid == sb.st_gid &&
				 r[i].nlink == sb.st_nlink && r[i].ctime_sec == sb.st_ctim.tv_sec &&
				 r[i].ctime_nsec == (uint32_t)sb.st_ctim.tv_nsec,
				 "[%s] %s: metadata differs from stat()", msg, paths[i]);
			T_ASSERT(r[i].engine == BFO_ENGINE_NONE, "[%s] %s: engine %s", msg, paths[i],
				 t_engine(r[i].engine));
		}
		T_EQ(st.bytes, 0);
		T_EQ(st.files_ok, 32);
		if (mode)
			T_ASSERT(st.extents > 0, "[plan-only] no extents mapped on %s", dir);
		t_log("%s: ok (%llu extents, %llu regions)", msg, (unsigned long long)st.extents,
		      (unsigned long long)st.regions);
		t_results_free(r, 34);
	}
	free(paths[32]);
	free(big);
	free_paths(p, 30);
}

/* ------------------------------------------------------------ packed */

static void check_packed(void)
{
	enum { N = 300 };
	char **p = make_files("pk", N, 1, 2000);
	size_t len = 0;
	struct bfo_opts o;

	for (int i = 0; i < N; i++)
		len += strlen(p[i]) + 1;

	char *buf = malloc(len), *q = buf;

	for (int i = 0; i < N; i++) {
		size_t l = strlen(p[i]) + 1;

		memcpy(q, p[i], l);
		q += l;
	}
	bfo_opts_init(&o);
	o.window_files = 32;               /* the input queue takes fewer than N at once */

	struct bfo_ctx *ctx = t_ctx(&o);

	T_EQ(bfo_read_submit_packed(ctx, buf, len - 1), -EINVAL);   /* no final NUL */
	T_EQ(bfo_read_submit_packed(ctx, "abc", 3), -EINVAL);

	size_t pos = 0;
	int got = 0, k;
	uint8_t seen[N] = { 0 };
	struct bfo_file f[32];
	bool finished = false;

	for (;;) {
		if (pos < len) {
			long c = bfo_read_submit_packed(ctx, buf + pos, len - pos);

			T_ASSERT(c >= 0 && (size_t)c <= len - pos, "packed submit returned %ld", c);
			T_ASSERT(c == 0 || buf[pos + (size_t)c - 1] == '\0', "not at a path boundary");
			pos += (size_t)c;
		}
		if (pos == len && !finished) {
			T_OK(bfo_read_finish(ctx));
			finished = true;
		}
		k = bfo_read_wait(ctx, f, 32, -1);
		if (k == -EAGAIN && !finished)
			continue;
		T_ASSERT(k >= 0, "wait %d", k);
		if (!k)
			break;
		for (int i = 0; i < k; i++) {
			T_ASSERT(f[i].index < N && !seen[f[i].index]++, "index %llu",
				 (unsigned long long)f[i].index);
			T_ASSERT(!strcmp(f[i].path, p[f[i].index]), "packed path %s vs %s", f[i].path,
				 p[f[i].index]);
			expect_entry_plain(&f[i], "packed");
		}
		got += k;
		T_OK(bfo_read_release(ctx, f, (unsigned)k));
	}
	T_EQ(got, N);
	bfo_ctx_destroy(ctx);
	free(buf);
	free_paths(p, N);
	t_log("bfo_read_submit_packed: ok");
}

/* ------------------------------------------------------------ errno */

static void check_errno(void)
{
	char **p = make_files("er", 10, 1, 100);
	char *missing = t_path(dir, "missing-errno");
	const char *paths[2] = { p[0], missing };
	struct bfo_ctx *ctx = NULL;
	struct bfo_opts o;
	struct bfo_file f[4];
	struct bfo_stats st;
	char buf[256];
	int k;

#define KEEP(call) do { errno = 4242; (void)(call); \
	T_ASSERT(errno == 4242, "%s changed errno to %d (%s)", #call, errno, strerror(errno)); } while (0)
	KEEP(bfo_opts_init(&o));
	KEEP(bfo_ctx_create(&ctx, &o));
	T_ASSERT(ctx, "no ctx");
	KEEP(bfo_ctx_describe(ctx, buf, sizeof(buf)));
	KEEP(bfo_read_wait(ctx, f, 4, 0));
	KEEP(bfo_read_submit(ctx, paths, 2));
	KEEP(bfo_read_finish(ctx));
	for (;;) {
		errno = 4242;
		k = bfo_read_wait(ctx, f, 4, -1);
		T_ASSERT(errno == 4242, "bfo_read_wait changed errno to %d", errno);
		if (k <= 0)
			break;
		KEEP(bfo_read_release(ctx, f, (unsigned)k));
	}
	KEEP(bfo_read_stats(ctx, &st));
	KEEP(bfo_strerror(-ENOENT));
	KEEP(bfo_engine_name(2));
	KEEP(bfo_ctx_destroy(ctx));
	bfo_opts_init(&o);
	o.flags = 1u << 30;
	KEEP(bfo_ctx_create(&ctx, &o));
#undef KEEP
	free(missing);
	free_paths(p, 10);
	t_log("errno untouched: ok");
}

/* ------------------------------------------------------------ no io_uring */

/* Where io_uring is refused (old kernels, seccomp'd containers) the uring
 * engines say so at create or open and auto reads portable.  Run in a child, whose
 * seccomp filter refuses io_uring_setup. */
static void check_no_uring_child(void *arg)
{
	char **p = make_files("nu", 20, 1, 9000);
	struct bfo_opts o;
	struct bfo_ctx *ctx = NULL;
	struct bfo_stats st;
	char buf[512];

	t_deny_io_uring();
	bfo_opts_init(&o);
	o.engine = BFO_ENGINE_URING;
	T_EQ(bfo_ctx_create(&ctx, &o), -EOPNOTSUPP);
	o.engine = BFO_ENGINE_AUTO;
	ctx = t_ctx(&o);
	T_ASSERT(bfo_ctx_describe(ctx, buf, sizeof(buf)) > 0, "describe");
	struct t_result *r = t_results_new(20);

	t_batch_ctx(ctx, p, 20, r, &st, 0);
	for (int i = 0; i < 20; i++) {
		t_expect_plain(r, p, (size_t)i, "no io_uring");
		T_EQ(r[i].engine, BFO_ENGINE_PORTABLE);
	}
	t_results_free(r, 20);
	bfo_ctx_destroy(ctx);
	free_paths(p, 20);

	/* The writer's uring engine, asked for by name, fails at open too. */
	struct bfo_write_opts wo = { .size = sizeof(wo), .engine = BFO_WENGINE_URING };
	struct bfo_writer *w = NULL;
	char *root = t_path(dir, "nu-w");

	T_EQ(bfo_writer_open(&w, root, &wo), -EOPNOTSUPP);
	free(root);
	t_log("without io_uring: uring refused with -EOPNOTSUPP, auto reads portable (%s)", buf);
}

static void check_no_uring(void)
{
	T_ASSERT(t_subtest("no io_uring", 120, check_no_uring_child, NULL), "no io_uring");
}

int main(void)
{
	t_init("t_api", 300);
	dir = t_tmpdir();
	check_opts();
	check_strings();
	check_states();
	check_release();
	check_etime();
	for (int ei = 0; ei < 3; ei++)
		check_cancel(t_engines_nonraw[ei]);
	for (int ei = 0; ei < 3; ei++) {
		check_enobufs(t_engines_nonraw[ei], false);
		check_enobufs(t_engines_nonraw[ei], true);
	}
	check_meta_plan();
	check_packed();
	check_errno();
	check_no_uring();
	t_log("PASS");
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_crashpoints: a SIGKILL before every syscall that changes the journal or
 * the tree, then `bfo recover`, then every file old or new and whole.
 *
 * For each front (bfo cp, a first copy; bfo cp --delete over an older
 * copy, with files rewritten, removed, added, and entries changing kind;
 * bfo send | bfo recv --delete; bfo write --replace in several batches) a
 * clean run, counted by `strace -c`, gives how many times each syscall of
 * the set below is made, and its result is the new state.  Then for each
 * syscall S of the set and each N from 1 to its count, the destination
 * goes back to its old state and the command runs under
 * `strace -e inject=S:signal=KILL:when=N` (strace counts per thread: the
 * N-th S of whichever thread makes it first).  A run that was not killed
 * (no thread made N of them) ends S's points.  After each kill,
 * `bfo recover DST` runs once killed at a point of its own (a seeded
 * random S and N; it may finish first), then again to the end, and then:
 *  - every path of the old state that the new one has too is there, whole,
 *    as old or as new (content or link target, type, mode, mtime): never
 *    lost, never torn, never a mix (lost, torn, meta);
 *  - a path only the new state has is absent or new; one only the old
 *    state has is old, or (a front that deletes) absent;
 *  - nothing else is there: no .bfo-tmp.*, no .bfo-journal, no stray
 *    entry (extra);
 *  - a file beside DST is untouched (outside).
 * The counts per front and invariant are printed; any violation fails.
 *
 * `t_crashpoints --run NAME OLD DST [--stdin FILE] [--deletes] -- CMD...`
 * runs one such front for another module's command (the tar plugin's
 * `tar --use-bfo -x`): OLD is DST's old state ("-": DST does not exist).
 * BFO_CRASH_SEED=N replays the recovery points of a run; BFO_CRASH_MAX=N
 * caps the points per syscall (a sample: said so); BFO_CRASH_RUNS=N runs
 * each front on N trees (one by default).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "t_wutil.h"

/* What changes the journal or the tree (and writes: a data write is a
 * point too), as strace 6.1 names them on x86_64. */
static const char *const mutating[] = {
	"openat", "open", "creat", "mkdirat", "mkdir", "unlinkat", "unlink", "rmdir", "renameat",
	"renameat2", "rename", "linkat", "link", "symlinkat", "symlink", "mknodat", "mknod", "fchmod",
	"fchmodat", "chmod", "fchown", "fchownat", "lchown", "chown", "utimensat", "futimesat",
	"utimes", "write", "pwrite64", "pwritev", "pwritev2", "writev", "ftruncate", "truncate",
	"fallocate", "fsync", "fdatasync", "syncfs", "sync", "sync_file_range", "setxattr",
	"lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "copy_file_range",
	"ioctl", "io_uring_enter",
};
#define NMUT (sizeof(mutating) / sizeof(mutating[0]))

/* ------------------------------------------------------------ a tree's state */

struct ent {
	char *path;             /* below the tree's top */
	mode_t mode;            /* type and permissions */
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t size, hash;    /* a file's bytes, a link's target */
};

struct tree {
	struct ent *e;
	size_t n, cap;
};

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

static void tree_add(struct tree *t, const char *path, const struct stat *st, uint64_t hash)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->e = realloc(t->e, t->cap * sizeof(*t->e));
		T_ASSERT(t->e, "realloc");
	}
	t->e[t->n++] = (struct ent){ .path = strdup(path), .mode = st->st_mode,
				     .mtime_sec = st->st_mtim.tv_sec, .mtime_nsec = st->st_mtim.tv_nsec,
				     .size = (uint64_t)st->st_size, .hash = hash };
}

static uint64_t hash_at(int dfd, const char *name, const struct stat *st)
{
	char buf[65536];
	XXH3_state_t *s;
	uint64_t h;
	ssize_t k;
	int fd;

	if (S_ISLNK(st->st_mode)) {
		k = readlinkat(dfd, name, buf, sizeof(buf));
		return k < 0 ? 0 : XXH3_64bits(buf, (size_t)k);
	}
	if (!S_ISREG(st->st_mode))
		return 0;
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 1;
	s = XXH3_createState();
	XXH3_64bits_reset(s);
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		XXH3_64bits_update(s, buf, (size_t)k);
	h = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	close(fd);
	return h;
}

static void tree_walk(struct tree *t, int dfd, const char *rel)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	T_ASSERT(d, "fdopendir %s", rel);
	while ((de = readdir(d))) {
		char p[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		tree_add(t, p, &st, hash_at(dirfd(d), de->d_name, &st));
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0)
				tree_walk(t, fd, p);
		}
	}
	closedir(d);
}

/* The state below top (none when it does not exist). */
static void tree_read(struct tree *t, const char *top)
{
	int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*t = (struct tree){ 0 };
	if (fd >= 0)
		tree_walk(t, fd, "");
	if (t->n)
		qsort(t->e, t->n, sizeof(*t->e), ent_cmp);
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	*t = (struct tree){ 0 };
}

static const struct ent *tree_get(const struct tree *t, const char *path)
{
	struct ent k = { .path = (char *)path };

	return t->n ? bsearch(&k, t->e, t->n, sizeof(k), ent_cmp) : NULL;
}

/* Is a the same entry as b: kind, and for a file its bytes, mode and
 * mtime, for a link its target (a directory's times move with what is
 * written into it: its kind alone). */
static bool same_ent(const struct ent *a, const struct ent *b)
{
	if ((a->mode & S_IFMT) != (b->mode & S_IFMT))
		return false;
	if (S_ISDIR(a->mode))
		return true;
	if (S_ISLNK(a->mode))
		return a->hash == b->hash;
	return a->size == b->size && a->hash == b->hash && a->mode == b->mode &&
	       a->mtime_sec == b->mtime_sec && a->mtime_nsec == b->mtime_nsec;
}

/* Same bytes, other metadata: a file neither old nor new but a mix. */
static bool same_bytes(const struct ent *a, const struct ent *b)
{
	return S_ISREG(a->mode) && S_ISREG(b->mode) && a->size == b->size && a->hash == b->hash;
}

/* ------------------------------------------------------------ invariants */

enum { V_LOST, V_TORN, V_META, V_EXTRA, V_OUTSIDE, V_RECOVER, V_N };
static const char *const vname[V_N] = {
	"lost (a shared path gone)", "torn (neither old nor new bytes)",
	"meta (the bytes of one version, the metadata of none)", "extra (a temporary, the journal, "
	"a stray entry)", "outside (something beside DST changed)", "recover (bfo recover failed)",
};

struct front {
	const char *name;
	char *old;              /* the old state, or NULL: none */
	char *dst;
	char **argv;            /* the command */
	char *in;               /* its stdin's bytes, or NULL */
	size_t in_len;
	bool deletes;           /* it may delete what only the old state has */
	/* counted */
	uint64_t points, killed, recover_killed, checked, v[V_N];
};

static char vmsg[V_N][512];

static void violation(struct front *f, int kind, const char *fmt, const char *path)
{
	if (!f->v[kind]++)
		snprintf(vmsg[kind], sizeof(vmsg[kind]), fmt, tw_esc(path));
}

/* DST now against the old and the new state. */
static void check(struct front *f, const struct tree *old, const struct tree *new_)
{
	struct tree now;

	tree_read(&now, f->dst);
	for (size_t i = 0; i < now.n; i++) {
		const struct ent *e = &now.e[i], *o = tree_get(old, e->path), *n = tree_get(new_, e->path);

		f->checked++;
		if (!o && !n)
			violation(f, V_EXTRA, "%s: neither old nor new has it", e->path);
		else if ((o && same_ent(e, o)) || (n && same_ent(e, n)))
			;
		else if ((o && same_bytes(e, o)) || (n && same_bytes(e, n)))
			violation(f, V_META, "%s: whole, but its mode or mtime is neither version's", e->path);
		else
			violation(f, V_TORN, "%s: neither the old nor the new version", e->path);
	}
	for (size_t i = 0; i < old->n; i++) {
		const struct ent *o = &old->e[i];

		f->checked++;
		/* (below an entry now of another kind it may be gone with it) */
		char up[PATH_MAX], *s;
		bool parent_changed = false;

		snprintf(up, sizeof(up), "%s", o->path);
		while (!parent_changed && (s = strrchr(up, '/'))) {
			const struct ent *p;

			*s = '\0';
			p = tree_get(&now, up);
			parent_changed = !p || !S_ISDIR(p->mode);
		}
		if (tree_get(&now, o->path) || parent_changed)
			continue;
		if (tree_get(new_, o->path))
			violation(f, V_LOST, "%s: old and new have it, it is gone", o->path);
		else if (!f->deletes)
			violation(f, V_LOST, "%s: only the old state has it, and nothing deletes", o->path);
	}
	tree_free(&now);
}

/* ------------------------------------------------------------ runs */

static void restore(const struct front *f)
{
	T_ASSERT(t_sh("rm -rf '%s'", f->dst) == 0, "rm %s", f->dst);
	if (f->old)
		T_ASSERT(t_sh("cp -a '%s' '%s'", f->old, f->dst) == 0, "cp -a %s", f->old);
}

/* argv under strace with args before it; its exit status. */
static int strace_run(struct front *f, char *const *args, char *const *argv, const char *in, size_t in_len)
{
	char *v[64];
	int n = 0, st;
	struct tw_run r;

	v[n++] = "strace";
	v[n++] = "-f";
	v[n++] = "-qq";
	for (int i = 0; args[i]; i++)
		v[n++] = args[i];
	for (int i = 0; argv[i] && n < 63; i++)
		v[n++] = argv[i];
	v[n] = NULL;
	(void)f;
	tw_run(&r, in, in_len, (uid_t)-1, (gid_t)-1, v);
	st = r.status;
	tw_run_free(&r);
	return st;
}

/* How many times the clean run makes each syscall (strace -c). */
static void census(struct front *f, const char *tmp, unsigned counts[NMUT])
{
	char set[2048] = "trace=", *out = t_path(tmp, "census");
	char *args[] = { "-c", "-o", out, "-e", set, NULL };
	char line[512];
	FILE *fp;
	int st;

	for (size_t i = 0; i < NMUT; i++)
		snprintf(set + strlen(set), sizeof(set) - strlen(set), "%s%s", i ? "," : "", mutating[i]);
	restore(f);
	st = strace_run(f, args, f->argv, f->in, f->in_len);
	T_ASSERT(st == 0, "[%s] the clean run under strace exited %d", f->name, st);
	memset(counts, 0, NMUT * sizeof(*counts));
	fp = fopen(out, "r");
	T_ASSERT(fp, "%s", out);
	while (fgets(line, sizeof(line), fp)) {
		char *w[8];
		int k = 0;

		for (char *s = strtok(line, " \t\n"); s && k < 8; s = strtok(NULL, " \t\n"))
			w[k++] = s;
		/* % time, seconds, usecs/call, calls, [errors,] syscall */
		for (size_t i = 0; k >= 5 && i < NMUT; i++)
			if (!strcmp(w[k - 1], mutating[i]))
				counts[i] = (unsigned)strtoul(w[3], NULL, 10);
	}
	fclose(fp);
	free(out);
}

/* bfo recover DST: once killed at a point of its own (it may finish
 * first), then to the end. */
static void recover(struct front *f, uint64_t *rng)
{
	char inject[128], *args[] = { "-o", "/dev/null", "-e", inject, NULL };
	char *argv[] = { BFO_CLI, "recover", f->dst, NULL };
	struct tw_run r;

	snprintf(inject, sizeof(inject), "inject=%s:signal=KILL:when=%u",
		 (const char *[]){ "unlinkat", "renameat", "fchmod", "utimensat", "syncfs", "openat",
				   "fsync", "fchown" }[t_rand(rng) % 8],
		 (unsigned)t_rand_range(rng, 1, 6));
	if (strace_run(f, args, argv, NULL, 0) == 128 + 9)
		f->recover_killed++;
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	if (r.status != 0)
		violation(f, V_RECOVER, "bfo recover %s failed", f->dst);
	tw_run_free(&r);
}

static void run_front(struct front *f, const char *tmp, uint64_t seed, unsigned cap)
{
	unsigned counts[NMUT];
	struct tree old, new_;
	char *outside = t_pathf("%s.beside", f->dst), *newdir = t_pathf("%s.new", f->dst);
	uint64_t rng = seed, h0, h1, l0, l1;

	t_write_random(outside, 1000, seed);
	T_ASSERT(t_hash_file(outside, &h0, &l0) == 0, "%s", outside);
	census(f, tmp, counts);
	T_ASSERT(t_sh("rm -rf '%s' && cp -a '%s' '%s'", newdir, f->dst, newdir) == 0, "keep new");
	tree_read(&new_, newdir);
	tree_read(&old, f->old ? f->old : "/nonexistent/");
	for (size_t i = 0; i < NMUT; i++) {
		unsigned max = cap && counts[i] > cap ? cap : counts[i];

		for (unsigned k = 0; k < max; k++) {
			/* (a sample spreads over the whole count) */
			unsigned when = max == counts[i] ? k + 1 : 1 + (unsigned)((uint64_t)k * counts[i] / max);
			char inject[96], *args[] = { "-o", "/dev/null", "-e", inject, NULL };
			int st;

			snprintf(inject, sizeof(inject), "inject=%s:signal=KILL:when=%u", mutating[i], when);
			restore(f);
			f->points++;
			st = strace_run(f, args, f->argv, f->in, f->in_len);
			if (st != 128 + 9)
				break;          /* no thread made that many */
			f->killed++;
			/* (a first copy killed before DST was made: nothing to recover) */
			if (f->old || tw_exists(f->dst))
				recover(f, &rng);
			check(f, &old, &new_);
		}
	}
	T_ASSERT(t_hash_file(outside, &h1, &l1) == 0 && h1 == h0 && l1 == l0, "outside");
	if (h1 != h0)
		violation(f, V_OUTSIDE, "%s changed", outside);
	uint64_t bad = 0;

	for (int v = 0; v < V_N; v++)
		bad += f->v[v];
	t_log("%s: %llu points, %llu killed (recovery killed too in %llu), %llu entries checked; "
	      "violations: lost %llu, torn %llu, meta %llu, extra %llu, outside %llu, recover %llu",
	      f->name, (unsigned long long)f->points, (unsigned long long)f->killed,
	      (unsigned long long)f->recover_killed, (unsigned long long)f->checked,
	      (unsigned long long)f->v[V_LOST], (unsigned long long)f->v[V_TORN],
	      (unsigned long long)f->v[V_META], (unsigned long long)f->v[V_EXTRA],
	      (unsigned long long)f->v[V_OUTSIDE], (unsigned long long)f->v[V_RECOVER]);
	for (int v = 0; v < V_N; v++)
		TW_CHECK(!f->v[v], "[%s] %llu x %s, the first: %s", f->name, (unsigned long long)f->v[v],
			 vname[v], vmsg[v]);
	TW_CHECK(f->killed > 0, "[%s] no run was killed: nothing was checked", f->name);
	TW_CHECK(f->checked > 0, "[%s] no entry was checked", f->name);
	tree_free(&old);
	tree_free(&new_);
	memset(vmsg, 0, sizeof(vmsg));
	free(outside);
	free(newdir);
}

/* ------------------------------------------------------------ workloads */

/* A small tree: files in three directories (0 B to 200 KiB), a symbolic
 * link, a hard link, an empty directory; times in the past. */
static void gen_src(const char *src, uint64_t seed)
{
	static const char *const files[] = { "a", "b", "d1/c", "d1/d", "d1/sub/e", "d2/f", "d2/g" };
	uint64_t rng = seed;

	tw_mkdirs(tw_fmt("%s/d1/sub", src));
	tw_mkdirs(tw_fmt("%s/d2", src));
	tw_mkdirs(tw_fmt("%s/empty", src));
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		uint64_t size = (uint64_t[]){ 0, 10, 4096, 5000, 200000 }[t_rand(&rng) % 5];

		t_write_random(tw_fmt("%s/%s", src, files[i]), size, seed + i);
		tw_gen_times(tw_fmt("%s/%s", src, files[i]), (int)i);
	}
	T_ASSERT(symlink("d1/c", tw_fmt("%s/lnk", src)) == 0, "symlink");
	T_ASSERT(link(tw_fmt("%s/a", src), tw_fmt("%s/a.hard", src)) == 0, "link");
}

/* The source after a change: files rewritten, removed, added; a file
 * becomes a directory and a directory a file; a link retargeted. */
static void change_src(const char *src, uint64_t seed)
{
	t_write_random(tw_fmt("%s/b", src), 7000, seed + 100);
	t_write_random(tw_fmt("%s/d1/d", src), 11, seed + 101);
	T_ASSERT(unlink(tw_fmt("%s/d2/g", src)) == 0, "unlink");
	t_write_random(tw_fmt("%s/d2/new", src), 3000, seed + 102);
	T_ASSERT(t_sh("rm -rf '%s/d1/sub' && echo now-a-file > '%s/d1/sub'", src, src) == 0, "dir->file");
	T_ASSERT(unlink(tw_fmt("%s/d2/f", src)) == 0, "unlink f");
	tw_mkdirs(tw_fmt("%s/d2/f", src));
	t_write_random(tw_fmt("%s/d2/f/inside", src), 500, seed + 103);
	T_ASSERT(unlink(tw_fmt("%s/lnk", src)) == 0 && symlink("d2/new", tw_fmt("%s/lnk", src)) == 0,
		 "relink");
}

static char *file_bytes(const char *path, size_t *len)
{
	uint8_t *b;
	uint64_t l;

	T_ASSERT(t_read_plain(path, &b, &l) == 0, "read %s", path);
	*len = (size_t)l;
	return (char *)b;
}

/* The simple stream format: files, a directory, a link; some at paths
 * the destination has (replaced), in batches of three entries. */
static char *gen_stream(uint64_t seed, size_t *len)
{
	char *s = NULL;
	size_t cap = 0;
	FILE *f = open_memstream(&s, &cap);
	uint64_t rng = seed;

	T_ASSERT(f, "open_memstream");
	fprintf(f, "d 755 1600000000 w\n");
	for (int i = 0; i < 8; i++) {
		size_t size = (size_t)(uint64_t[]){ 0, 9, 4096, 70000 }[t_rand(&rng) % 4];
		char *buf = malloc(size + 1);

		t_fill_random(buf, size, seed + (uint64_t)i);
		fprintf(f, "f 644 %d %zu %s\n", 1600000000 + i, size, i % 3 ? tw_fmt("w/f%d", i) : tw_fmt("top%d", i));
		fwrite(buf, 1, size, f);
		free(buf);
	}
	fprintf(f, "l 777 1600000000 4 w/lnk\nw/f1");
	fclose(f);
	*len = cap;
	return s;
}

static struct front *front_new(const char *name, const char *tmp, const char *old, bool deletes)
{
	struct front *f = calloc(1, sizeof(*f));

	T_ASSERT(f, "calloc");
	f->name = name;
	f->old = old ? strdup(old) : NULL;
	f->dst = t_pathf("%s/%s.dst", tmp, name);
	f->deletes = deletes;
	return f;
}

static void front_free(struct front *f)
{
	for (int i = 0; f->argv && f->argv[i]; i++)
		free(f->argv[i]);
	free(f->argv);
	free(f->old);
	free(f->dst);
	free(f->in);
	free(f);
}

static char **argv_of(const char *a0, ...)
{
	char **v = calloc(16, sizeof(*v));
	va_list ap;
	int n = 0;

	T_ASSERT(v, "calloc");
	va_start(ap, a0);
	for (const char *s = a0; s && n < 15; s = va_arg(ap, const char *))
		v[n++] = strdup(s);
	va_end(ap);
	return v;
}

static unsigned cap_of(void)
{
	const char *s = getenv("BFO_CRASH_MAX");

	/* under ASan a sample: every syscall, a few points of each (the
	 * release build takes every point) */
	return s ? (unsigned)strtoul(s, NULL, 10) : T_ASAN ? 4 : 0;
}

static uint64_t seed_of(void)
{
	const char *s = getenv("BFO_CRASH_SEED");
	struct timespec ts;

	if (s && *s)
		return strtoull(s, NULL, 10);
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec ^ (uint64_t)ts.tv_nsec) % 1000000007u + 1;
}

/* The fronts of this module, on one source seed. */
static void bfo_fronts(const char *tmp, uint64_t tree_seed, uint64_t seed, unsigned cap)
{
	char *src = t_pathf("%s/src%llu", tmp, (unsigned long long)tree_seed);
	char *old = t_pathf("%s/old%llu", tmp, (unsigned long long)tree_seed);
	char *srcdot = t_pathf("%s/.", src), *stream = t_pathf("%s/stream%llu", tmp,
								      (unsigned long long)tree_seed);
	struct tw_run r;
	struct front *f;

	gen_src(src, tree_seed);
	tw_runl(&r, BFO_CLI, "cp", "-a", srcdot, old, NULL);
	T_ASSERT(r.status == 0, "bfo cp: %s", r.err);
	tw_run_free(&r);

	/* a first copy */
	f = front_new("cp", tmp, NULL, false);
	f->argv = argv_of(BFO_CLI, "cp", "-a", srcdot, f->dst, NULL);
	run_front(f, tmp, seed, cap);
	tw_expect_copy(src, tw_fmt("%s.new", f->dst), TW_MODE | TW_MTIME | TW_LINKS, "cp, the clean run");
	front_free(f);

	/* a sync with --delete over the old copy */
	change_src(src, tree_seed);
	f = front_new("cp --delete", tmp, old, true);
	f->argv = argv_of(BFO_CLI, "cp", "-a", "--delete", srcdot, f->dst, NULL);
	run_front(f, tmp, seed + 1, cap);
	tw_expect_copy(src, tw_fmt("%s.new", f->dst), TW_MODE | TW_MTIME | TW_LINKS,
		       "cp --delete, the clean run");
	front_free(f);

	/* the same through a stream */
	T_ASSERT(t_sh("'%s' send -a '%s' > '%s'", BFO_CLI, srcdot, stream) == 0, "bfo send");
	f = front_new("recv --delete", tmp, old, true);
	f->argv = argv_of(BFO_CLI, "recv", "-a", "--delete", f->dst, NULL);
	f->in = file_bytes(stream, &f->in_len);
	run_front(f, tmp, seed + 2, cap);
	tw_expect_copy(src, tw_fmt("%s.new", f->dst), TW_MODE | TW_MTIME | TW_LINKS,
		       "recv --delete, the clean run");
	front_free(f);

	/* bfo write, several batches, replacing some of what is there */
	T_ASSERT(t_sh("mkdir -p '%s.w/w' && echo old > '%s.w/w/f1' && echo old > '%s.w/top0' && "
		      "echo mine > '%s.w/other'", old, old, old, old) == 0, "write's old state");
	f = front_new("write --replace", tmp, tw_fmt("%s.w", old), false);
	f->argv = argv_of(BFO_CLI, "write", "--replace", "--batch-files", "3", f->dst, NULL);
	f->in = gen_stream(tree_seed, &f->in_len);
	run_front(f, tmp, seed + 3, cap);
	front_free(f);

	t_sh("rm -rf '%s' '%s' '%s.w' '%s'", src, old, old, stream);
	free(src);
	free(old);
	free(srcdot);
	free(stream);
}

/* --run NAME OLD DST [--stdin FILE] [--deletes] -- CMD... */
static int run_one(int argc, char **argv, const char *tmp, uint64_t seed, unsigned cap)
{
	struct front *f;
	int i = 2, k = 0;

	T_ASSERT(argc > 6, "usage: t_crashpoints --run NAME OLD DST [--stdin FILE] [--deletes] -- CMD...");
	f = calloc(1, sizeof(*f));
	f->name = argv[i++];
	f->old = strcmp(argv[i], "-") ? strdup(argv[i]) : NULL;
	i++;
	f->dst = strdup(argv[i++]);
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--stdin") && i + 1 < argc)
			f->in = file_bytes(argv[++i], &f->in_len);
		else if (!strcmp(argv[i], "--deletes"))
			f->deletes = true;
	}
	T_ASSERT(i + 1 < argc, "no command after --");
	f->argv = calloc((size_t)(argc - i), sizeof(*f->argv));
	for (i++; i < argc; i++)
		f->argv[k++] = strdup(argv[i]);
	run_front(f, tmp, seed, cap);
	front_free(f);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t seed = seed_of();
	unsigned cap = cap_of();
	const char *tmp;

	t_init("t_crashpoints", 1500);
#if T_ASAN
	/* LeakSanitizer cannot run under ptrace: every bfo here runs under
	 * strace, so its leak check is off (the rest of the suite has it). */
	setenv("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1", 1);
#endif
	if (!t_have_prog("strace"))
		t_skip("strace is not installed: no crash point can be injected");
	if (system("strace -f -qq -o /dev/null -e inject=getpid:retval=1 true 2>/dev/null") != 0)
		t_skip("strace cannot inject here (ptrace refused?)");
	umask(022);
	tmp = t_tmpdir();
	t_log("seed %llu (replay: BFO_CRASH_SEED=%llu)%s", (unsigned long long)seed,
	      (unsigned long long)seed, cap ? tw_fmt(", at most %u points per syscall", cap) : "");
	if (argc > 1 && !strcmp(argv[1], "--run")) {
		run_one(argc, argv, tmp, seed, cap);
	} else {
		/* BFO_CRASH_RUNS=N: N workloads (trees) per front; CI runs one */
		const char *n = getenv("BFO_CRASH_RUNS");
		unsigned runs = n && *n ? (unsigned)strtoul(n, NULL, 10) : 1;

		for (unsigned i = 0; i < runs; i++)
			bfo_fronts(tmp, 7 + i, seed + 10 * i, cap);
	}
	tw_checks_end();
	t_done();
	return 0;
}

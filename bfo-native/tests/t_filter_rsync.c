/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t_filter_rsync: --exclude, --include and --delete, decided as rsync
 * decides them, checked against rsync itself.  Each case makes a random
 * source tree and a random destination tree (names drawn from a small set,
 * so that the two overlap: the same names, and the same names of another
 * type), a random list of rules ('*', '?', "**", "***", brackets, classes,
 * anchored, directory-only, escaped), a source named as "SRC" or "SRC/.",
 * and runs `rsync -a --delete RULES` and `bfo cp -a --delete RULES` on two
 * copies of the destination.  The two trees must then be the same (names,
 * types, bytes, modes, link targets: what each kept, deleted and copied),
 * and both runs must agree on success (rsync's 23 is bfo's 1: something
 * could not be done, such as a directory holding excluded files in the
 * way of a file).
 *
 * T_FILTER_CASES fixed seeds run every time, then T_FILTER_FRESH cases
 * from a seed of this run's, printed (BFO_FILTER_SEED=N replays one
 * seed's cases; BFO_FILTER_CASES=N sets how many).  A case that fails
 * prints its rules and trees.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "t_helpers.h"
#include "t_wutil.h"

#if T_ASAN     /* (the sanitizers' run: a sample) */
#define T_FILTER_CASES 80u
#define T_FILTER_FRESH 20u
#else
#define T_FILTER_CASES 400u
#define T_FILTER_FRESH 100u
#endif
#define RULES_MAX 5

static const char *const names[] = {
	"a", "b", "c", "ab", "x.log", "y.conf", "d1", "keep", "[x]", "a b", "q?", "st*r", "back\\sl",
	".h", "sub", "src",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

/* A random entry tree below dir (which exists), depth levels deep, its
 * files' times from t0 on.  (The source's and the destination's times
 * differ, so that every file both have is copied: rsync's quick check
 * leaves a file of the same size and time even when its mode differs,
 * bfo's rewrites it; the rules, not that, are what is compared.) */
static void gen_tree(const char *where, unsigned depth, uint64_t *rng, time_t t0)
{
	unsigned n = (unsigned)t_rand_range(rng, depth ? 0 : 2, 5);
	char *dir = strdup(where);      /* (tw_fmt's buffers rotate) */

	T_ASSERT(dir, "strdup");

	for (unsigned i = 0; i < n; i++) {
		const char *p = tw_fmt("%s/%s", dir, names[t_rand(rng) % NNAMES]);
		uint64_t k = t_rand(rng) % 10;
		struct timespec ts[2] = { { t0 + (time_t)(t_rand(rng) % 4), 0 } };

		ts[1] = ts[0];
		if (tw_exists(p))
			continue;
		if (k < 3 && depth < 3) {
			char *sub = strdup(p);

			T_ASSERT(sub && mkdir(sub, 0755) == 0, "mkdir %s", p);
			gen_tree(sub, depth + 1, rng, t0);
			free(sub);
			continue;
		}
		if (k == 9) {
			T_ASSERT(symlink(names[t_rand(rng) % NNAMES], p) == 0, "symlink %s", p);
			continue;
		}
		/* a few sizes only: the quick check meets equal sizes and times */
		t_write_random(p, t_rand(rng) % 3 * 7, t_rand(rng) % 4);
		chmod(p, t_rand(rng) % 2 ? 0644 : 0600);
		T_ASSERT(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0, "utimes %s", p);
	}
	free(dir);
}

/* One component of a random pattern. */
static void gen_part(char *out, size_t len, uint64_t *rng)
{
	static const char *const wild[] = {
		"*", "?", "**", "***", "*.log", "*.conf", "a*", "*b", "[ab]", "[!a]", "[a-c]*",
		"[[:alpha:]]", "[[:digit:]]*", "?b", "\\[x]", "st\\*r", "q\\?", "[", "a[", "x.*",
		"**b", "d?", "[]x]*",
	};
	uint64_t k = t_rand(rng) % 3;

	if (k == 0)
		snprintf(out, len, "%s", wild[t_rand(rng) % (sizeof(wild) / sizeof(wild[0]))]);
	else
		snprintf(out, len, "%s", names[t_rand(rng) % NNAMES]);
}

/* A random pattern: one to three components, maybe anchored, maybe
 * directory-only, maybe starting with "**" or ending with "***". */
static void gen_pattern(char *p, size_t len, uint64_t *rng)
{
	unsigned parts = (unsigned)t_rand_range(rng, 1, 3);
	char part[64];
	size_t at = 0;

	p[0] = '\0';
	if (t_rand(rng) % 4 == 0)
		at += (size_t)snprintf(p + at, len - at, "/");
	else if (t_rand(rng) % 6 == 0)
		at += (size_t)snprintf(p + at, len - at, "**/");
	for (unsigned i = 0; i < parts && at < len; i++) {
		gen_part(part, sizeof(part), rng);
		at += (size_t)snprintf(p + at, len - at, "%s%s", i ? "/" : "", part);
	}
	if (at < len && t_rand(rng) % 6 == 0)
		at += (size_t)snprintf(p + at, len - at, "/***");
	else if (at < len && t_rand(rng) % 5 == 0)
		snprintf(p + at, len - at, "/");
}

struct tally {
	unsigned cases, same, differ, both_failed;
};

static int run_tool(bool rsync, char *const *rules, unsigned nrules, const char *src, const char *dst,
		    char **err)
{
	char *argv[8 + 2 * RULES_MAX];
	struct tw_run r;
	int n = 0, st;

	argv[n++] = rsync ? "rsync" : BFO_CLI;
	if (!rsync)
		argv[n++] = "cp";
	argv[n++] = "-a";
	argv[n++] = "--delete";
	for (unsigned i = 0; i < nrules; i++)
		argv[n++] = rules[i];
	argv[n++] = (char *)src;
	argv[n++] = (char *)dst;
	argv[n] = NULL;
	tw_run(&r, NULL, 0, (uid_t)-1, (gid_t)-1, argv);
	st = r.status;
	*err = strdup(r.err ? r.err : "");
	tw_run_free(&r);
	return st;
}

/* rsync's exit status as bfo's: 0 all done, 1 some entries could not be. */
static int as_bfo(int rsync_status)
{
	return rsync_status == 23 || rsync_status == 24 ? 1 : rsync_status;
}

static void one_case(const char *tmp, uint64_t seed, struct tally *t)
{
	uint64_t rng = seed * 0x9e3779b97f4a7c15ull + 1;
	char *dir = t_mkdtemp_in(tmp), msg[4096], *rules[2 * RULES_MAX], pats[RULES_MAX][256];
	char *src = t_path(dir, "src"), *rdst = t_path(dir, "r"), *bdst = t_path(dir, "b");
	bool named = t_rand(&rng) % 3 == 0;
	unsigned nr = (unsigned)t_rand_range(&rng, 1, RULES_MAX), nargs = 0;
	char *rerr = NULL, *berr = NULL;

	tw_mkdirs(src);
	gen_tree(src, 0, &rng, 1500000000);
	/* the destination as it was: below dst/src for a named source */
	tw_mkdirs(tw_fmt("%s/r%s", dir, named ? "/src" : ""));
	gen_tree(tw_fmt("%s/r%s", dir, named ? "/src" : ""), 0, &rng, 1400000000);
	T_ASSERT(t_sh("cp -a '%s/r' '%s/b'", dir, dir) == 0, "cp -a");
	for (unsigned i = 0; i < nr; i++) {
		gen_pattern(pats[i], sizeof(pats[i]), &rng);
		rules[nargs++] = t_rand(&rng) % 3 == 0 ? "--include" : "--exclude";
		rules[nargs++] = pats[i];
	}
	char *sarg = named ? strdup(src) : t_path(src, ".");
	int rs = as_bfo(run_tool(true, rules, nargs, sarg, rdst, &rerr));
	int bs = run_tool(false, rules, nargs, sarg, bdst, &berr);
	int nd = tw_tree_diff(rdst, bdst, TW_MODE, NULL, msg, sizeof(msg));

	t->cases++;
	if (nd == 0 && rs == bs) {
		t->same++;
		t->both_failed += rs != 0;
		t_sh("rm -rf '%s'", dir);
	} else {
		char rl[2048] = "";

		t->differ++;
		for (unsigned i = 0; i < nargs; i += 2)
			snprintf(rl + strlen(rl), sizeof(rl) - strlen(rl), " %s='%s'", rules[i], rules[i + 1]);
		/* (kept where the test's cleanup leaves it) */
		t_sh("rm -rf /tmp/t_filter_rsync.%llu && cp -a '%s' /tmp/t_filter_rsync.%llu",
		     (unsigned long long)seed, dir, (unsigned long long)seed);
		TW_CHECK(0, "[seed %llu] %s:%s: %d differences from rsync (rsync %d, bfo %d): %s\n"
			 "  rsync said: %s\n  bfo said: %s\n  (trees kept in /tmp/t_filter_rsync.%llu)",
			 (unsigned long long)seed, named ? "src" : "src/.", rl, nd, rs, bs, msg, rerr,
			 berr, (unsigned long long)seed);
	}
	free(sarg);
	free(src);
	free(rdst);
	free(bdst);
	free(rerr);
	free(berr);
	free(dir);
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 10) : dflt;
}

int main(void)
{
	struct tally t = { 0 };
	const char *tmp;
	uint64_t fresh, fixed, nfresh;

	t_init("t_filter_rsync", 1500);
	if (!t_have_prog("rsync"))
		t_skip("rsync is not installed: nothing to compare the rules with");
	umask(022);
	tmp = t_tmpdir();
	fixed = env_u64("BFO_FILTER_CASES", T_FILTER_CASES);
	nfresh = env_u64("BFO_FILTER_CASES", T_FILTER_FRESH);
	fresh = env_u64("BFO_FILTER_SEED", 0);
	if (fresh) {
		fixed = 0;          /* a replay: that seed's cases only */
	} else {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		fresh = ((uint64_t)now.tv_sec * 1000003u ^ (uint64_t)now.tv_nsec ^ (uint64_t)getpid()) % 1000000007u + 1;
	}
	t_log("fixed seeds 1..%llu, then %llu cases of seed %llu (replay: BFO_FILTER_SEED=%llu)",
	      (unsigned long long)fixed, (unsigned long long)nfresh, (unsigned long long)fresh,
	      (unsigned long long)fresh);
	for (uint64_t s = 1; s <= fixed; s++)
		one_case(tmp, s, &t);
	for (uint64_t i = 0; i < nfresh; i++)
		one_case(tmp, fresh * 1000003u + i, &t);
	t_log("%u rule sets: %u as rsync (%u of them refused by both), %u not", t.cases, t.same,
	      t.both_failed, t.differ);
	T_ASSERT(t.cases > 0, "no case ran: nothing was compared");
	tw_checks_end();
	t_done();
	return 0;
}

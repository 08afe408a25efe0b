/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BFO_TAR_* environment (read once, at load) and the stats line
 * BFO_TAR_STATS appends at exit.  tar-plugin/README.md says why a user
 * would set each.
 */
#include "bfo_tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct settings settings = {
	.arena_bytes = 128ull << 20,
	.durability = 1,
	.extract = 1,
};

struct counters counters;

/*
 * A BFO_TAR_* setting that is not one of its values is named on stderr (once,
 * before tar starts) and its default is kept: a typo must not silently
 * change memory use or durability, nor stop tar.
 */
static void setting_ignored(const char *name, const char *val, const char *why)
{
	char msg[512];
	int n = snprintf(msg, sizeof(msg), "bfo-tar: ignoring %s=%s (%s)\n", name, val, why);

	if (n > 0 && real_write)
		real_write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
}

/* name's value as a whole number of MiB in [lo, hi], else dflt (named on stderr when set). */
static uint64_t setting_mib(const char *name, uint64_t lo, uint64_t hi, uint64_t dflt)
{
	const char *v = getenv(name);
	char *end, why[96];
	unsigned long long x;
	int saved = errno, range;

	if (!v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	range = errno;
	errno = saved;
	if (*v >= '0' && *v <= '9' && !*end && !range && x >= lo && x <= hi)
		return (uint64_t)x << 20;
	snprintf(why, sizeof(why), "not a number of MiB from %llu to %llu; %llu kept",
		 (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)(dflt >> 20));
	setting_ignored(name, v, why);
	return dflt;
}

/* name's value if it is one of the words in vals (NULL-terminated, the
 * default first), else NULL (named on stderr when set). */
static const char *setting_word(const char *name, const char *const *vals)
{
	const char *v = getenv(name);
	char why[96];

	if (!v)
		return NULL;
	for (const char *const *w = vals; *w; w++)
		if (strcmp(v, *w) == 0)
			return v;
	snprintf(why, sizeof(why), "not one of its values; %s kept", vals[0]);
	setting_ignored(name, v, why);
	return NULL;
}

void settings_read(void)
{
	/* each list's default first */
	static const char *const engines[] = { "auto", "raw", "uring", "portable", NULL };
	static const char *const durabilities[] = { "batch", "none", NULL };
	static const char *const onoff[] = { "on", "off", NULL };
	const char *dur, *x;

	settings.engine = setting_word("BFO_TAR_ENGINE", engines);
	settings.arena_bytes = setting_mib("BFO_TAR_ARENA_MB", 16, 65536, settings.arena_bytes);
	dur = setting_word("BFO_TAR_DURABILITY", durabilities);
	x = setting_word("BFO_TAR_EXTRACT", onoff);
	settings.durability = !(dur && strcmp(dur, "none") == 0);
	settings.extract = !(x && strcmp(x, "off") == 0);
}

void stats_write(void)
{
	const char *path = getenv("BFO_TAR_STATS");
	const struct counters *c = &counters;
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "a")))
		return;
	fprintf(f, "bfo-tar: served=%llu served_bytes=%llu fallback=%llu "
		"skipped=%llu batches=%llu ios=%llu direct_ios=%llu device_bytes=%llu dirs_ahead=%llu "
		"xfiles=%llu xbytes=%llu xflushes=%llu xbehind=%llu xdetached=%llu syncfs=%llu early_syncfs=%llu "
		"xread_ahead=%llu xqueue_files=%llu xfd_waits=%llu dirs_handed=%llu "
		"xlinked=%llu xreplaced=%llu xrenamed=%llu\n",
		(unsigned long long)c->served, (unsigned long long)c->served_bytes,
		(unsigned long long)c->fallback, (unsigned long long)c->skipped,
		(unsigned long long)c->batches, (unsigned long long)c->ios,
		(unsigned long long)c->direct_ios, (unsigned long long)c->device_bytes,
		(unsigned long long)c->dirs_ahead,
		(unsigned long long)c->xfiles, (unsigned long long)c->xbytes,
		(unsigned long long)c->xflushes, (unsigned long long)c->xbehind,
		(unsigned long long)c->xdetached, (unsigned long long)c->syncfs,
		(unsigned long long)c->early_syncfs,
		(unsigned long long)__atomic_load_n(&c->xread_ahead, __ATOMIC_RELAXED),
		(unsigned long long)c->xqueue_files, (unsigned long long)c->xfd_waits,
		(unsigned long long)c->dirs_handed,
		(unsigned long long)__atomic_load_n(&c->xlinked, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->xreplaced, __ATOMIC_RELAXED),
		(unsigned long long)__atomic_load_n(&c->xrenamed, __ATOMIC_RELAXED));
	fclose(f);
}

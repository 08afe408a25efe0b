/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interposition: the real libc functions (real.h's table, resolved once),
 * the re-entrancy guard, and the plugin's life: load, fork, exit.
 */
#include "bfo_tar.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REAL_DEFINE(name, ret, params, need) ret (*real_##name) params;
REAL_CALLS(REAL_DEFINE)
#undef REAL_DEFINE

struct plugin plugin;
TLS int in_hook;

static int resolved;

void resolve(void)
{
	if (resolved)
		return;
#define REAL_RESOLVE(name, ret, params, need) real_##name = dlsym(RTLD_NEXT, #name);
	REAL_CALLS(REAL_RESOLVE)
#undef REAL_RESOLVE
	resolved = 1;
}

int real_complete(int need)
{
	int missing = 0;

#define REAL_MISSING(name, ret, params, n) missing |= (n) == need && !real_##name;
	REAL_CALLS(REAL_MISSING)
#undef REAL_MISSING
	return !missing;
}

void plugin_off(void)
{
	create_stop();
	plugin.active = 0;
}

/*
 * Descriptors tar's soft RLIMIT_NOFILE leaves free now: the limit less
 * the entries of /proc/self/fd (less the one listing them).  The plugin
 * sizes what it holds from this and never raises the limit: tar's
 * children (compressors, --to-command) inherit it, and tar's own errors
 * must stay those plain tar meets under the same limit.
 */
unsigned fds_left(void)
{
	struct rlimit rl;
	char buf[4096];
	long n, used = 0;
	int fd;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > UINT_MAX)
		return UINT_MAX;
	fd = real_openat(AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return (unsigned)(rl.rlim_cur / 2);     /* no /proc: assume half is tar's */
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			const struct dirent64 *d = (const struct dirent64 *)(buf + off);

			used += d->d_name[0] != '.';
			off += d->d_reclen;
		}
	}
	real_close(fd);
	used = used > 0 ? used - 1 : 0;
	return rl.rlim_cur > (rlim_t)used ? (unsigned)(rl.rlim_cur - (rlim_t)used) : 0;
}

/* Children (compressors, --to-command...) do not load the plugin again. */
static void strip_preload(void)
{
	const char *pre = getenv("LD_PRELOAD");
	char *out, *copy, *save = NULL;
	size_t ol = 0;

	if (!pre || !(copy = strdup(pre)) || !(out = calloc(1, strlen(pre) + 1))) {
		return;
	}
	for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
		const char *base = strrchr(t, '/');
		const char *b = base ? base + 1 : t;

		/* libbfo_tar.so, or its soname or real name (libbfo_tar.so.0...) */
		if (strncmp(b, "libbfo_tar.so", 13) == 0 && (b[13] == '\0' || b[13] == '.'))
			continue;
		if (ol)
			out[ol++] = ':';
		memcpy(out + ol, t, strlen(t));
		ol += strlen(t);
	}
	if (ol)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
	free(copy);
	free(out);
}

/* The threads (libbfo's, the flusher, the archive read-ahead)
 * did not come along: the child uses libc. */
static void after_fork_child(void)
{
	plugin.active = 0;
	create_forget();
	extract_forget();
	archive_ahead_forget();
}

__attribute__((constructor)) static void bfo_tar_init(void)
{
	resolve();
	strip_preload();
	if (!real_complete(REAL_CREATE))
		return;
	settings_read();
	create_init();
	plugin.tar_thread = pthread_self();
	plugin.owner_pid = getpid();
	/* BFO_TAR_EXTRACT=off: tar -x is plain tar (the escape hatch). */
	plugin.extract_ok = settings.extract && real_complete(REAL_EXTRACT);
	if (pthread_atfork(NULL, NULL, after_fork_child) != 0)
		return;
	plugin.active = 1;
}

/*
 * The stats line.  The context stays: tar's exit does not wait for our
 * threads to be joined, and fds being served at exit still point into its
 * arena.
 */
__attribute__((destructor)) static void bfo_tar_fini(void)
{
	if (!pthread_equal(pthread_self(), plugin.tar_thread) || getpid() != plugin.owner_pid ||
	    (!plugin.active && !create_started() && !extracting()))
		return;
	in_hook = 1;
	if (plugin.active)
		plugin_off();
	stats_write();
	in_hook = 0;
}

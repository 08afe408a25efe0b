/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The --sort order tar was given (its command line and TAR_OPTIONS): tar
 * archives a directory's entries in that order, and the plugin reads them
 * ahead in the same one.
 */
#include "bfo_tar.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

static enum sort_mode parse_sort(const char *v)
{
	size_t n = strlen(v);

	if (n && strncmp(v, "name", n) == 0)
		return SORT_NAME;
	if (n && strncmp(v, "inode", n) == 0)
		return SORT_INODE;
	return SORT_NONE;
}

/* --sort=X (or an unambiguous abbreviation like --sor=X, or "--sort X"). */
static void scan_sort(char **argv, int argc, enum sort_mode *mode)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *eq;
		size_t kl;

		if (strcmp(a, "--") == 0)
			return;
		if (strncmp(a, "--so", 4) != 0)
			continue;
		eq = strchr(a, '=');
		kl = eq ? (size_t)(eq - a) : strlen(a);
		if (kl > 6 || strncmp(a, "--sort", kl) != 0)
			continue;
		if (eq)
			*mode = parse_sort(eq + 1);
		else if (i + 1 < argc)
			*mode = parse_sort(argv[++i]);
	}
}

enum sort_mode tar_sort_mode(void)
{
	enum sort_mode mode = SORT_NONE;
	char buf[65536], *argv[4096];
	int argc = 0, fd;
	ssize_t n, len = 0;
	const char *env = getenv("TAR_OPTIONS");

	if (env) {
		char *copy = strdup(env), *save = NULL;

		for (char *t = copy ? strtok_r(copy, " \t", &save) : NULL; t && argc < 4096;
		     t = strtok_r(NULL, " \t", &save))
			argv[argc++] = t;
		scan_sort(argv, argc, &mode);
		free(copy);
		argc = 0;
	}
	fd = real_openat(AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mode;
	while (len < (ssize_t)sizeof(buf) - 1 &&
	       (n = real_read(fd, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += n;
	real_close(fd);
	buf[len] = '\0';
	for (ssize_t i = 0; i < len && argc < 4096; i += (ssize_t)strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	scan_sort(argv, argc, &mode);
	return mode;
}

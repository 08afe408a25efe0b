/* SPDX-License-Identifier: Apache-2.0 */
/* libarchive through dlopen (see archive_lib.h). */
#define ARCHIVE_LIB_IMPL
#include "archive_lib.h"

#include <dlfcn.h>
#include <stdio.h>

/* The soname Debian 12's libarchive13 and libarchive-dev ship. */
#define ARCHIVE_SONAME "libarchive.so.13"

struct archive_lib archive_lib;

const char *archive_lib_load(void)
{
	static char why[256];
	static int state;     /* 0 not tried, 1 loaded, -1 failed (why) */
	void *h;

	if (state)
		return state > 0 ? NULL : why;
	state = -1;
	h = dlopen(ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sizeof(why), "cannot load %s (install libarchive13): %s", ARCHIVE_SONAME, dlerror());
		return why;
	}
#define ARCHIVE_LIB_RESOLVE(name)                                                               \
	if (!(archive_lib.name = (__typeof__(name) *)dlsym(h, #name))) {                         \
		snprintf(why, sizeof(why), "%s has no %s", ARCHIVE_SONAME, #name);                 \
		dlclose(h);                                                                       \
		return why;                                                                       \
	}
	ARCHIVE_LIB_FUNCTIONS(ARCHIVE_LIB_RESOLVE)
#undef ARCHIVE_LIB_RESOLVE
	state = 1;
	return NULL;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: --exclude/--include rules (filter.c) on names.  The
 * input's lines up to an empty one are rules ("- PATTERN", "+ PATTERN",
 * anything else refused); the lines after it are names, a directory's
 * starting with '/' (taken off).  Every rule the parser takes is matched
 * against every name: no crash, no read outside the pattern or the name,
 * no time beyond pattern times name (libFuzzer's timeout).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *line, *save = NULL;
	struct filter *f = NULL;
	bool rules = true;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (rules && !strcmp(line, "=")) {
			rules = false;          /* (strtok_r skips empty lines: "=" ends the rules) */
			continue;
		}
		if (rules) {
			filter_add(&f, line);
			continue;
		}
		bool dir = *line == '/';

		filter_excluded(f, line + dir, dir);
		filter_glob(line, strlen(line), line + dir, strlen(line + dir));
	}
	for (size_t i = 0; i < filter_count(f); i++)
		if (!filter_rule(f, i))
			abort();            /* every rule taken can be given back */
	filter_free(f);
	free(text);
	return 0;
}

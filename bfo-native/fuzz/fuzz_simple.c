/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: bfo write's simple format (stream_simple) on a buffer. */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_sink s = { 0 };
	struct stream st = { .entry = fuzz_entry, .ctx = &s };
	FILE *f;
	int ret;

	if (!size)          /* fmemopen() refuses an empty buffer */
		return 0;
	f = fmemopen((void *)data, size, "r");
	FUZZ_REQUIRE(f);
	ret = stream_simple(&st, f);
	fuzz_end(&s, &st, ret);
	fclose(f);
	return 0;
}

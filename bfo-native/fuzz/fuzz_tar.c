/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: bfo write --tar's member parsing (stream_tar) over
 * libarchive's tar reader, on a buffer, as root would run it (owners
 * applied, so their checks run).  Compression is left out (see
 * stream_tar_reader).
 */
#include <archive.h>

#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_sink s = { 0 };
	struct stream st = { .entry = fuzz_entry, .ctx = &s, .owner = true };
	struct archive *a = stream_tar_reader(false);
	int ret;

	FUZZ_REQUIRE(a);
	if (archive_read_open_memory(a, data, size) == ARCHIVE_OK) {
		ret = stream_tar(&st, a);
		fuzz_end(&s, &st, ret);
	}
	free(s.open_path);
	archive_read_free(a);
	return 0;
}

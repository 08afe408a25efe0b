/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The journal's manifest decoder (src/write/journal.c) on hostile bytes.  The
 * first four bytes of an input say where the manifest ends and its
 * identity records (NAME.m.ids) begin, so both are fuzzed together.
 */
#include <stdint.h>
#include <string.h>

#include "write.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest mf;
	uint32_t cut = 0;

	if (size >= 4) {
		memcpy(&cut, data, 4);
		data += 4;
		size -= 4;
	}
	cut = (uint32_t)(cut % (size + 1));
	if (journal_manifest_decode(data, cut, data + cut, size - cut, &mf) == 0) {
		/* Everything decoded is there to be read. */
		for (uint32_t i = 0; i < mf.n; i++)
			if (strlen(mf.m[i].path) > BFO_WPATH_MAX || (mf.ids[i].type & ~0170000u))
				__builtin_trap();
		journal_manifest_free(&mf);
	}
	return 0;
}

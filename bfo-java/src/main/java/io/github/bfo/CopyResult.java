/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.util.List;

/**
 * The outcome of {@link BatchCopier#copy}. Immutable.
 *
 * @param stats    what the copy did
 * @param failures one exception per entry that failed (its path is the source, or the destination for writer
 *                 failures), in the order they were reported; empty when everything was copied
 */
public record CopyResult(CopyStats stats, List<IOException> failures) {

    public CopyResult {
        failures = List.copyOf(failures);
    }

    /** True when every entry was copied. */
    public boolean isOk() {
        return failures.isEmpty() && stats.errors() == 0;
    }

    /** This result, or the first failure thrown (with the others suppressed). */
    public CopyResult orThrow() throws IOException {
        if (!failures.isEmpty()) {
            IOException first = failures.get(0);
            IOException e = new IOException(failures.size() + " entries failed to copy; first: " + first.getMessage(),
                    first);
            for (int i = 1; i < Math.min(failures.size(), 20); i++) {
                e.addSuppressed(failures.get(i));
            }
            throw e;
        }
        if (stats.errors() != 0) {
            throw new IOException(stats.errors() + " entries failed to copy");
        }
        return this;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Progress and errors of a {@link BatchCopier} run, called on the thread
 * that runs {@link BatchCopier#copy} (from inside the native call for the
 * native engine: keep the methods short, and do not call the copier from
 * them). An exception thrown here cancels the copy and is rethrown by
 * {@code copy}.
 */
public interface CopyListener {
    /** A few times a second, and once at the end. */
    default void progress(CopyStats stats) {
    }

    /** Once per entry that failed: path is the source, or the destination for writer failures. */
    default void error(Path path, IOException failure) {
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;

/**
 * The outcome of one {@link WriteEntry} of a batch. Immutable.
 *
 * @param entry   the entry written (or not)
 * @param status  0, or the negative errno value of the failure (-EEXIST: the target exists and replace is off;
 *                -EINVAL: the path is absolute, empty, has '.' or '..' components or names the journal;
 *                -ELOOP: a symbolic link in the destination path; -ENOSPC, -EDQUOT; -ECANCELED: not attempted
 *                after an earlier failure with stopOnError...)
 * @param failure the matching exception (FileAlreadyExistsException, AccessDeniedException, NoSuchFileException,
 *                NotDirectoryException, FileSystemException with the text), or null when written
 * @param engine  the writer engine that wrote it: "stem", "batched" or "java"
 */
public record WriteResult(WriteEntry entry, int status, IOException failure, String engine) {

    public boolean isOk() {
        return status == 0;
    }

    /** The path as given in the entry. */
    public String path() {
        return entry.path();
    }

    /** This result, or its failure thrown (the strict accessor). */
    public WriteResult orThrow() throws IOException {
        if (failure != null) {
            throw failure;
        }
        return this;
    }
}

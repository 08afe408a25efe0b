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
 * @param ownerStatus 0, or, for an entry written (status 0) with {@link WriteEntry#owner}, -EINVAL (-22): the
 *                user namespace does not map the uid or gid (unshare -r, a rootless container), and the
 *                entry was kept as {@code cp -a} keeps it then, the caller's, its
 *                permissions the owner's only (mode &amp; 0700: no set-id bit). The native engine only: the Java
 *                engine fails such an entry ({@code status} the chown's error).
 */
public record WriteResult(WriteEntry entry, int status, IOException failure, String engine, int ownerStatus) {

    /** A result whose owner, if one was asked for, was given. */
    public WriteResult(WriteEntry entry, int status, IOException failure, String engine) {
        this(entry, status, failure, engine, 0);
    }

    public boolean isOk() {
        return status == 0;
    }

    /** False when the entry was written but its owner could not be given ({@link #ownerStatus}). */
    public boolean ownerKept() {
        return ownerStatus == 0;
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

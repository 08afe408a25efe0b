/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.Map;

/**
 * Linux errno values as libbfo reports them (negative statuses), their text,
 * and the mapping of a status to the java.nio.file exception that fits.
 */
final class Errno {
    static final int EPERM = 1, ENOENT = 2, EIO = 5, E2BIG = 7, EAGAIN = 11, ENOMEM = 12, EACCES = 13, EBUSY = 16,
            EEXIST = 17, EXDEV = 18, ENOTDIR = 20, EISDIR = 21, EINVAL = 22, EMFILE = 24, EFBIG = 27, ENOSPC = 28,
            EROFS = 30, ENAMETOOLONG = 36, ELOOP = 40, ETIME = 62, EOPNOTSUPP = 95, ENOBUFS = 105, ESTALE = 116,
            EDQUOT = 122, ECANCELED = 125;

    /** glibc's texts, used when the native library (bfo_strerror) is not loaded. */
    private static final Map<Integer, String> TEXT = Map.ofEntries(
            Map.entry(0, "Success"),
            Map.entry(EPERM, "Operation not permitted"),
            Map.entry(ENOENT, "No such file or directory"),
            Map.entry(EIO, "Input/output error"),
            Map.entry(E2BIG, "Argument list too long"),
            Map.entry(EAGAIN, "Resource temporarily unavailable"),
            Map.entry(ENOMEM, "Cannot allocate memory"),
            Map.entry(EACCES, "Permission denied"),
            Map.entry(EBUSY, "Device or resource busy"),
            Map.entry(EEXIST, "File exists"),
            Map.entry(EXDEV, "Invalid cross-device link"),
            Map.entry(ENOTDIR, "Not a directory"),
            Map.entry(EISDIR, "Is a directory"),
            Map.entry(EINVAL, "Invalid argument"),
            Map.entry(EMFILE, "Too many open files"),
            Map.entry(EFBIG, "File too large"),
            Map.entry(ENOSPC, "No space left on device"),
            Map.entry(EROFS, "Read-only file system"),
            Map.entry(ENAMETOOLONG, "File name too long"),
            Map.entry(ELOOP, "Too many levels of symbolic links"),
            Map.entry(ETIME, "Timer expired"),
            Map.entry(EOPNOTSUPP, "Operation not supported"),
            Map.entry(ENOBUFS, "No buffer space available"),
            Map.entry(ESTALE, "file changed while it was being read"),
            Map.entry(EDQUOT, "Disk quota exceeded"),
            Map.entry(ECANCELED, "Operation canceled"));

    private Errno() {
    }

    /** The text of a status (0 or -errno): bfo_strerror when the library is loaded. */
    static String text(int status) {
        int s = status > 0 ? -status : status;
        if (BfoNative.available()) {
            return BfoNative.strerror(s);
        }
        String t = TEXT.get(-s);
        return t != null ? t : "error " + (-s);
    }

    /** A status from the reason text of a FileSystemException the JDK made from an errno. */
    static int fromReason(String reason) {
        if (reason == null) {
            return -EIO;
        }
        for (Map.Entry<Integer, String> e : TEXT.entrySet()) {
            if (e.getKey() != 0 && e.getKey() != ESTALE && reason.startsWith(e.getValue())) {
                return -e.getKey();
            }
        }
        if (reason.startsWith("Stale file handle")) {
            return -ESTALE;
        }
        return -EIO;
    }

    /** The status that fits an exception the JDK threw (for the portable engines). */
    static int fromException(IOException e) {
        if (e instanceof SafeTree.Refused) {
            return -EPERM;
        }
        if (e instanceof NoSuchFileException) {
            return -ENOENT;
        }
        if (e instanceof AccessDeniedException) {
            return -EACCES;
        }
        if (e instanceof NotDirectoryException) {
            return -ENOTDIR;
        }
        if (e instanceof FileAlreadyExistsException) {
            return -EEXIST;
        }
        if (e instanceof FileSystemException) {
            return fromReason(((FileSystemException) e).getReason());
        }
        return -EIO;
    }

    private static String typeName(int mode) {
        switch (mode & 0170000) {
            case 0040000: return "a directory";
            case 0010000: return "a FIFO";
            case 0020000: return "a character device";
            case 0060000: return "a block device";
            case 0140000: return "a socket";
            case 0120000: return "a symbolic link";
            case 0100000: return "a regular file";
            default: return "of unknown type";
        }
    }

    /** The exception of a failed read entry. */
    static IOException forRead(int status, String path, int mode, boolean noFollow) {
        switch (-status) {
            case EINVAL:
                return new FileSystemException(path, null, "not a regular file (it is " + typeName(mode) + ")");
            case ELOOP:
                if (noFollow) {
                    return new FileSystemException(path, null, "is a symbolic link (not followed: noFollow)");
                }
                return generic(status, path, null);
            case ESTALE:
                return new FileSystemException(path, null, "file changed while it was being read");
            case EISDIR:
                return new FileSystemException(path, null, "Is a directory");
            default:
                return generic(status, path, null);
        }
    }

    /** The exception of a failed writer entry. */
    static IOException forWrite(int status, String path, String other) {
        switch (-status) {
            case EINVAL:
                return new FileSystemException(path, other, "invalid destination path (absolute, empty, with an "
                        + "empty, '.' or '..' component, or the writer's journal): it would escape the root or is invalid"
                        + " (or the entry's link target is)");
            case ELOOP:
                return new FileSystemException(path, other,
                        "a symbolic link in the destination path (never followed by the writer)");
            case EXDEV:
                return new FileSystemException(path, other, "the destination path crosses a mount point");
            case ECANCELED:
                return new FileSystemException(path, other,
                        "not written: the batch stopped at an earlier failure (stopOnError)");
            default:
                return generic(status, path, other);
        }
    }

    /** The exception of an entry a copy reported (path: the source, or the destination for writer failures). */
    static IOException forCopy(int status, String path) {
        switch (-status) {
            case EINVAL:
                return new FileSystemException(path, null, "invalid argument (not a file that can be copied, or an "
                        + "invalid destination path)");
            case ELOOP:
            case EXDEV:
            case ECANCELED:
                return forWrite(status, path, null);
            case EOPNOTSUPP:
                return new FileSystemException(path, null, "cannot be copied (a socket, or a special file this "
                        + "engine cannot create)");
            default:
                return generic(status, path, null);
        }
    }

    /** NoSuchFileException, AccessDeniedException, NotDirectoryException, FileAlreadyExistsException or FileSystemException. */
    static IOException generic(int status, String path, String other) {
        String text = text(status);
        switch (-status) {
            case ENOENT:
                return new NoSuchFileException(path, other, null);
            case EACCES:
            case EPERM:
                return new AccessDeniedException(path, other, text);
            case ENOTDIR:
                return new NotDirectoryException(path);
            case EEXIST:
                return new FileAlreadyExistsException(path, other, null);
            default:
                return new FileSystemException(path, other, text);
        }
    }
}

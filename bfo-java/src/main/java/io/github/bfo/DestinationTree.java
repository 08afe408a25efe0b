/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * A destination directory that other users may be able to write, worked on
 * by name relative to directories held open (openat, renameat, unlinkat):
 * every directory beneath the root is reached one component at a time
 * without following a symbolic link, so nothing is created, moved or
 * deleted outside the root however its entries are swapped meanwhile. A
 * symbolic link (or a non-directory) where a directory is expected is an
 * {@link IOException} naming the path. The root itself is the caller's path
 * (a link naming it is followed, as cp and tar follow their DST).
 *
 * <p>For callers that publish files into a shared directory, such as a
 * job commit: {@link #createPrivateDir} for a staging directory,
 * {@link #mkdirs}, {@link #move} and {@link #deleteTree}. Relative paths use
 * '/' and must not contain "." or ".." components. Needs a file system
 * with {@link SecureDirectoryStream} (Linux and other Unix systems). Not
 * thread-safe.
 */
public final class DestinationTree implements Closeable {
    private static final Set<PosixFilePermission> OWNER_ONLY = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);

    private final SafeTree tree;
    private final Path root;

    private DestinationTree(SafeTree tree) {
        this.tree = tree;
        this.root = tree.realRoot();
    }

    /** Opens the existing directory dir. */
    public static DestinationTree open(Path dir) throws IOException {
        return new DestinationTree(SafeTree.open(dir.toAbsolutePath(), false));
    }

    /** The real path of the root. */
    public Path root() {
        return root;
    }

    private Path rel(String rel) {
        if (rel == null || rel.isEmpty() || rel.startsWith("/")) {
            throw new IllegalArgumentException("not a relative path: '" + rel + "'");
        }
        Path p = Path.of(rel);
        for (Path c : p) {
            String s = c.toString();
            if (s.equals(".") || s.equals("..")) {
                throw new IllegalArgumentException("'.' or '..' in a relative path: '" + rel + "'");
            }
        }
        return p;
    }

    /** e, naming the absolute path (SafeTree names paths relative to the root). */
    private IOException named(IOException e, Path rel) {
        if (e instanceof FileSystemException) {
            FileSystemException f = (FileSystemException) e;
            String file = f.getFile() == null ? rel.toString() : f.getFile();
            if (Path.of(file).isAbsolute()) {
                return e;
            }
            String reason = f.getReason() == null ? e.getClass().getSimpleName() : f.getReason();
            if (e instanceof NotDirectoryException || reason.startsWith("Too many levels")) {
                reason += " (a symbolic link or non-directory is in the way; it is not followed)";
            }
            FileSystemException x;
            if (e instanceof NoSuchFileException) {
                x = new NoSuchFileException(root.resolve(file).toString(), f.getOtherFile(), f.getReason());
            } else if (e instanceof FileAlreadyExistsException) {
                x = new FileAlreadyExistsException(root.resolve(file).toString(), f.getOtherFile(), f.getReason());
            } else {
                x = new FileSystemException(root.resolve(file).toString(), f.getOtherFile(), reason);
            }
            x.initCause(e);
            return x;
        }
        return e;
    }

    private SecureDirectoryStream<Path> dirOf(Path rel, boolean create) throws IOException {
        try {
            return tree.dir(rel, create);
        } catch (IOException e) {
            throw named(e, rel == null ? Path.of("") : rel);
        }
    }

    /**
     * True when rel exists (a symbolic link counts, it is not followed);
     * false when it or one of its directories is missing. A symbolic link or
     * file in place of one of its directories is an IOException.
     */
    public boolean exists(String rel) throws IOException {
        Path r = rel(rel);
        try {
            return tree.stat(r) != null;
        } catch (IOException e) {
            throw named(e, r);
        }
    }

    /** The names in the directory rel ("" for the root), reached without following a link. */
    public List<String> list(String rel) throws IOException {
        SecureDirectoryStream<Path> d = dirOf(rel.isEmpty() ? null : rel(rel), false);
        List<String> out = new ArrayList<>();
        try (SecureDirectoryStream<Path> s = d.newDirectoryStream(Path.of("."), SafeTree.NOFOLLOW)) {
            for (Path p : s) {
                out.add(p.getFileName().toString());
            }
        }
        return out;
    }

    /** Makes the directory rel and its missing parents (as mkdir -p; never through a symbolic link). */
    public void mkdirs(String rel) throws IOException {
        dirOf(rel(rel), true);
    }

    /**
     * Makes the directory name (one component) in the root, exclusively
     * (an existing entry is FileAlreadyExistsException), owner-only (0700);
     * returns its identity for {@link #checkPrivateDir}.
     */
    public String createPrivateDir(String name) throws IOException {
        Path r = rel(name);
        if (r.getNameCount() != 1) {
            throw new IllegalArgumentException("not a single name: '" + name + "'");
        }
        // The JDK has no mkdirat: made by the root's path (the caller's), then checked through the root's
        // descriptor; at worst an empty directory lands where the other user can write.
        Files.createDirectory(root.resolve(r), PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        return checkPrivateDir(name, null);
    }

    /**
     * Checks that rel, reached without following a link, is a directory owned
     * by the effective uid that no one else can use (no group or other
     * permission) and, when key is not null, the one {@link #createPrivateDir}
     * made; returns its identity.
     */
    public String checkPrivateDir(String rel, String key) throws IOException {
        Path r = rel(rel);
        SecureDirectoryStream<Path> parent = dirOf(r.getParent(), false);
        try (SecureDirectoryStream<Path> d = parent.newDirectoryStream(r.getFileName(), SafeTree.NOFOLLOW)) {
            PosixFileAttributes a = d.getFileAttributeView(PosixFileAttributeView.class).readAttributes();
            Set<PosixFilePermission> p = EnumSet.noneOf(PosixFilePermission.class);
            p.addAll(a.permissions());
            p.removeAll(OWNER_ONLY);
            String k = String.valueOf(a.fileKey());
            if (!a.isDirectory() || !p.isEmpty() || !mine(a)
                    || (key != null && !key.equals(k))) {
                throw new FileSystemException(root.resolve(r).toString(), null,
                        "the private directory was replaced (not the directory this writer made, or not owner-only)");
            }
            return k;
        } catch (IOException e) {
            throw named(e, r);
        }
    }

    private static boolean mine(PosixFileAttributes a) throws IOException {
        int uid = SafeTree.euid();
        return uid < 0 || a.owner().equals(FileSystems.getDefault().getUserPrincipalLookupService()
                .lookupPrincipalByName(Integer.toString(uid)));
    }

    /**
     * Renames src to dst (both relative, their directories reached without
     * following a link; dst's directory must exist, see {@link #mkdirs}) with
     * renameat: atomic, an existing file at dst is replaced, a link at src is
     * moved, not followed.
     */
    public void move(String src, String dst) throws IOException {
        Path s = rel(src);
        Path t = rel(dst);
        SecureDirectoryStream<Path> from = dirOf(s.getParent(), false);
        SecureDirectoryStream<Path> to = dirOf(t.getParent(), false);
        BasicFileAttributes a = SafeTree.attrsIn(to, t.getFileName());
        if (a != null && a.isDirectory()) {
            tree.forget(t);
        }
        try {
            from.move(s.getFileName(), to, t.getFileName());
        } catch (AtomicMoveNotSupportedException e) {
            throw new FileSystemException(root.resolve(t).toString(), root.resolve(s).toString(),
                    "Invalid cross-device link");
        } catch (IOException e) {
            throw named(e, t);
        }
    }

    /**
     * Removes rel and, when it is a directory, everything beneath it, without
     * following a symbolic link (a link is removed, never its target);
     * nothing when rel is missing.
     */
    public void deleteTree(String rel) throws IOException {
        Path r = rel(rel);
        SecureDirectoryStream<Path> parent;
        try {
            parent = tree.dir(r.getParent(), false);
        } catch (NoSuchFileException e) {
            return;
        } catch (IOException e) {
            throw named(e, r);
        }
        tree.forget(r);
        try {
            delete(parent, r.getFileName(), r);
        } catch (IOException e) {
            throw named(e, r);
        }
    }

    private static void delete(SecureDirectoryStream<Path> parent, Path name, Path shown) throws IOException {
        BasicFileAttributes a = SafeTree.attrsIn(parent, name);
        if (a == null) {
            return;
        }
        if (a.isDirectory()) {
            SecureDirectoryStream<Path> d;
            try {
                d = parent.newDirectoryStream(name, SafeTree.NOFOLLOW);
            } catch (NoSuchFileException e) {
                return;
            } catch (IOException e) {
                // swapped for a link or a file meanwhile: remove that entry itself
                deleteFile(parent, name);
                return;
            }
            try (d) {
                List<Path> names = new ArrayList<>();
                for (Path p : d) {
                    names.add(p.getFileName());
                }
                for (Path n : names) {
                    delete(d, n, shown.resolve(n));
                }
            }
            try {
                parent.deleteDirectory(name);
            } catch (NoSuchFileException e) {
                // gone meanwhile
            } catch (DirectoryNotEmptyException e) {
                throw new DirectoryNotEmptyException(shown.toString());
            }
        } else {
            deleteFile(parent, name);
        }
    }

    private static void deleteFile(SecureDirectoryStream<Path> parent, Path name) throws IOException {
        try {
            parent.deleteFile(name);
        } catch (NoSuchFileException e) {
            // gone meanwhile
        }
    }

    /** Closes every directory held open (and removes the private directories this tree used to make ones). */
    @Override
    public void close() throws IOException {
        tree.close();
    }
}

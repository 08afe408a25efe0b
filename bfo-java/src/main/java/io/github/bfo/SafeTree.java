/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.Closeable;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The destination tree of the pure-Java writer and copier, worked on so that
 * another user who can write in it gains nothing (the threat model of
 * bfo-native's README): no symbolic link is followed, nothing is made
 * outside the tree, and no mode, owner or time is applied to a file this
 * tree did not make.
 *
 * <p>The JDK cannot chmod, chown or mkdir through a descriptor it returns,
 * but a {@link SecureDirectoryStream} works on names relative to a directory
 * it holds open (openat, fstatat, renameat, unlinkat; fchmod, fchown and
 * futimens on a file it opens with O_NOFOLLOW, or on the directory itself).
 * So every directory is reached from the root one component at a time with
 * O_NOFOLLOW, and every file, link and directory is made in a private
 * directory (the "stage": owned by the effective uid, mode 0700, held open),
 * given its owner, permission bits and times there, where no other user can
 * put anything in its place, and then renamed into its directory.
 *
 * <p>What the JDK can only do by path: create a directory, a symbolic link or
 * a hard link (done in the stage by path, then checked through the stage's
 * descriptor; at worst a stray entry lands in a directory the other user
 * controls), chmod set-id and sticky bits (PosixFilePermission has no such
 * bits) and chown or set the times of a symbolic link (the descriptor
 * methods open the file, which a link refuses with O_NOFOLLOW). The first
 * two are done only where the path from / is trusted: every directory on it
 * owned by root or the effective uid and writable by no one else (or
 * sticky), so that nobody else can swap a component; elsewhere they are
 * refused ({@link Refused}, -EPERM). A link's times are set by path after a
 * fileKey check (a residual race can change the times, nothing else, of a
 * file the other user put in a directory of theirs). Times of files and
 * directories go through the descriptor where the path is not trusted, and
 * the JDK 17 call there (futimes) keeps microseconds only; where it is
 * trusted they are set by path, to the nanosecond.
 *
 * <p>Not thread-safe: one engine run at a time.
 */
final class SafeTree implements Closeable {
    static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final boolean UNIX = FileSystems.getDefault().supportedFileAttributeViews().contains("unix");
    private static final FileAttribute<Set<PosixFilePermission>> PRIVATE =
            PosixFilePermissions.asFileAttribute(EnumSet.of(PosixFilePermission.OWNER_READ,
                    PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE));
    private static final FileAttribute<Set<PosixFilePermission>> PRIVATE_FILE =
            PosixFilePermissions.asFileAttribute(EnumSet.of(PosixFilePermission.OWNER_READ,
                    PosixFilePermission.OWNER_WRITE));
    private static final Set<OpenOption> CREATE = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
            NOFOLLOW);
    /** Directories held open at once (least recently used closed first), within the descriptor budget. */
    private static final int OPEN_DIRS = 64;
    /** At least: an operation uses a path's directories while it walks them (a deep path, a stage). */
    private static final int OPEN_DIRS_MIN = 16;
    private static final String STAGE_PREFIX = ".bfo-stage.";

    /** A metadata call the Java engine cannot make safely here (-EPERM; the native engine can). */
    static final class Refused extends AccessDeniedException {
        private static final long serialVersionUID = 1L;

        Refused(String path, String what) {
            super(path, null, "Operation not permitted: " + what + " not applied, because another user can write "
                    + "the destination's path and the Java engine cannot apply it through a descriptor "
                    + "(use the native engine)");
        }
    }

    /** What to apply: -1 / null for unset. */
    static final class Meta {
        final int mode, uid, gid;
        final FileTime mtime, atime;

        Meta(int mode, int uid, int gid, FileTime mtime, FileTime atime) {
            this.mode = mode;
            this.uid = uid;
            this.gid = gid;
            this.mtime = mtime;
            this.atime = atime;
        }
    }

    /** A private directory (owner-only, held open) where entries are made before they are renamed into place. */
    private static final class Stage {
        final SecureDirectoryStream<Path> parent;  // null for the root's, whose parent is the tree's top
        final Path name, path;                     // path: real, for the calls the JDK makes by path only
        final SecureDirectoryStream<Path> dir;
        final boolean trusted;
        long next;

        Stage(SecureDirectoryStream<Path> parent, Path name, Path path, SecureDirectoryStream<Path> dir,
              boolean trusted) {
            this.parent = parent;
            this.name = name;
            this.path = path;
            this.dir = dir;
            this.trusted = trusted;
        }

        Path fresh() {
            return Path.of(".t" + Long.toHexString(next++));
        }
    }

    /** A regular file being made in the stage. */
    final class Temp implements Closeable {
        final Path rel;
        final FileChannel ch;
        private final Stage stage;
        private final Path name;
        private boolean gone;
        /** The file's fileKey, once finished. */
        Object key;

        private Temp(Path rel, Stage stage, Path name, FileChannel ch) {
            this.rel = rel;
            this.stage = stage;
            this.name = name;
            this.ch = ch;
        }

        /** Closes the data, applies m and renames the file to its path (replacing a file there when replace). */
        void finish(Meta m, boolean replace) throws IOException {
            try {
                ch.close();
                shedding(() -> {
                    applyInStage(stage, name, m, false, rel);
                    key = attrs(stage.dir, name).fileKey();
                    place(stage, name, rel, replace);
                    return null;
                });
                gone = true;
            } finally {
                close();
            }
        }

        /** Drops the file if it was not placed. Idempotent. */
        @Override
        public void close() {
            try {
                ch.close();
            } catch (IOException ignored) {
                // dropped anyway
            }
            if (!gone) {
                gone = true;
                deleteQuietly(stage.dir, name);
            }
        }
    }

    private static volatile int euid = -2;
    private final Path real;
    private final SecureDirectoryStream<Path> top;
    private final long topDev;
    private final boolean topTrusted;
    private Stage rootStage;
    private final Map<Long, Stage> stages = new HashMap<>();        // device -> stage, for mounts in the tree
    private final Map<Path, Object> made = new HashMap<>();         // relative directory -> fileKey
    private final Map<Integer, UserPrincipal> users = new HashMap<>();
    private final Map<Integer, GroupPrincipal> groups = new HashMap<>();
    /**
     * The cache's bound: a directory stream holds two descriptors (the JDK's, and the dup it lists through);
     * halved (down to OPEN_DIRS_FLOOR) each time the tree meets EMFILE/ENFILE, so it closes earlier from then
     * on instead of filling the table again.
     */
    private int openDirs = Descriptors.share(2 * OPEN_DIRS, 2 * OPEN_DIRS_MIN) / 2;
    private static final int OPEN_DIRS_FLOOR = 4;
    /** Times a tree closed cached directories for an open that met EMFILE/ENFILE (tests read it). */
    static final java.util.concurrent.atomic.AtomicLong SHEDS = new java.util.concurrent.atomic.AtomicLong();
    private final LinkedHashMap<Path, SecureDirectoryStream<Path>> open =
            new LinkedHashMap<>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Path, SecureDirectoryStream<Path>> e) {
                    if (size() > openDirs) {
                        closeQuietly(e.getValue());
                        return true;
                    }
                    return false;
                }
            };

    private SafeTree(Path real, SecureDirectoryStream<Path> top) throws IOException {
        this.real = real;
        this.top = top;
        this.topDev = dev(real);
        this.topTrusted = trusted(real);
    }

    /**
     * Opens root (the caller's path: a symbolic link naming it is followed, as
     * cp and tar follow their DST), creating it and its parents if asked.
     */
    static SafeTree open(Path root, boolean create) throws IOException {
        if (create) {
            Files.createDirectories(root);
        }
        Path real = root.toRealPath();
        DirectoryStream<Path> ds = Files.newDirectoryStream(real);
        if (!(ds instanceof SecureDirectoryStream)) {
            ds.close();
            throw new IOException("the Java engine needs a file system with SecureDirectoryStream (openat): " + root);
        }
        return new SafeTree(real, (SecureDirectoryStream<Path>) ds);
    }

    /** True when nobody but root and the effective uid can change the root's path (see {@link #trusted}). */
    boolean trusted() {
        return topTrusted;
    }

    /** The real path of the root. */
    Path realRoot() {
        return real;
    }

    /** The effective uid (owner of /proc/self, else of a file this process makes). */
    static int euid() {
        int u = euid;
        if (u != -2) {
            return u;
        }
        try {
            u = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        } catch (IOException | RuntimeException e) {
            try {
                Path t = Files.createTempFile("bfo-euid", null);
                try {
                    u = (Integer) Files.getAttribute(t, "unix:uid", NOFOLLOW);
                } finally {
                    Files.deleteIfExists(t);
                }
            } catch (IOException | RuntimeException e2) {
                u = -1;
            }
        }
        euid = u;
        return u;
    }

    private static long dev(Path p) throws IOException {
        return UNIX ? ((Number) Files.getAttribute(p, "unix:dev", NOFOLLOW)).longValue() : 0;
    }

    /**
     * True when nobody but root and the effective uid can change which file
     * a path beneath dir (a real path) names: every directory from / to dir
     * is owned by one of them and writable by no one else, or sticky.
     */
    static boolean trusted(Path dir) {
        if (!UNIX || !dir.isAbsolute()) {
            return false;
        }
        int me = euid();
        Path p = dir.getRoot();
        for (int i = -1; i < dir.getNameCount(); i++) {
            if (i >= 0) {
                p = p.resolve(dir.getName(i));
            }
            try {
                Map<String, Object> a = Files.readAttributes(p, "unix:uid,mode", NOFOLLOW);
                int uid = (Integer) a.get("uid");
                int mode = (Integer) a.get("mode");
                if ((mode & 0170000) != 0040000 || (uid != 0 && uid != me)
                        || ((mode & 022) != 0 && (mode & 01000) == 0)) {
                    return false;
                }
            } catch (IOException | RuntimeException e) {
                return false;
            }
        }
        return true;
    }

    private static IOException loop(Path rel) {
        return new FileSystemException(rel.toString(), null, "Too many levels of symbolic links");
    }

    private static BasicFileAttributes attrs(SecureDirectoryStream<Path> d, Path name) throws IOException {
        return d.getFileAttributeView(name, BasicFileAttributeView.class, NOFOLLOW).readAttributes();
    }

    private static BasicFileAttributes attrsOrNull(SecureDirectoryStream<Path> d, Path name) throws IOException {
        try {
            return attrs(d, name);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    private static BasicFileAttributes self(SecureDirectoryStream<Path> d) throws IOException {
        return d.getFileAttributeView(BasicFileAttributeView.class).readAttributes();
    }

    private static void closeQuietly(Closeable c) {
        try {
            c.close();
        } catch (IOException ignored) {
            // nothing to do
        }
    }

    private static void deleteQuietly(SecureDirectoryStream<Path> d, Path name) {
        try {
            d.deleteFile(name);
        } catch (IOException e) {
            try {
                d.deleteDirectory(name);
            } catch (IOException ignored) {
                // best effort
            }
        }
    }

    /** The attributes of rel, not following a link, or null when it does not exist; its directories must exist. */
    BasicFileAttributes stat(Path rel) throws IOException {
        if (rel.getParent() == null) {
            return attrsOrNull(top, rel);
        }
        try {
            return attrsOrNull(dir(rel.getParent(), false), rel.getFileName());
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    /**
     * The directory rel (relative, null for the root), reached one component
     * at a time without following a symbolic link (-ELOOP), each missing one
     * made when create.
     */
    SecureDirectoryStream<Path> dir(Path rel, boolean create) throws IOException {
        if (rel == null || rel.toString().isEmpty()) {
            return top;
        }
        SecureDirectoryStream<Path> cur = top;
        for (int i = 0; i < rel.getNameCount(); i++) {
            Path pre = rel.subpath(0, i + 1);
            SecureDirectoryStream<Path> d = open.get(pre);
            if (d == null) {
                d = child(cur, pre, create, false);
                open.put(pre, d);
            }
            cur = d;
        }
        return cur;
    }

    /** Makes the directory rel (owner-only until {@link #applyDir}); false when a directory was there already. */
    boolean mkdir(Path rel) throws IOException {
        return shedding(() -> mkdirOnce(rel));
    }

    private boolean mkdirOnce(Path rel) throws IOException {
        SecureDirectoryStream<Path> parent = dir(rel.getParent(), true);
        BasicFileAttributes a = attrsOrNull(parent, rel.getFileName());
        if (a != null) {
            if (a.isSymbolicLink()) {
                throw loop(rel);
            }
            if (!a.isDirectory()) {
                throw new FileAlreadyExistsException(rel.toString(), null, "not a directory");
            }
            return false;
        }
        SecureDirectoryStream<Path> d = child(parent, rel, true, true);
        open.put(rel, d);
        return true;
    }

    private SecureDirectoryStream<Path> child(SecureDirectoryStream<Path> parent, Path rel, boolean create,
                                              boolean privately) throws IOException {
        Path name = rel.getFileName();
        for (int attempt = 0; ; attempt++) {
            BasicFileAttributes a = attrsOrNull(parent, name);
            if (a == null && create && attempt < 2) {
                SecureDirectoryStream<Path> d = makeDir(parent, rel, privately);
                if (d != null) {
                    return d;
                }
                continue;   // someone made it meanwhile: use theirs (its metadata is left alone)
            }
            if (a == null) {
                throw new NoSuchFileException(rel.toString());
            }
            if (a.isSymbolicLink()) {
                throw loop(rel);
            }
            if (!a.isDirectory()) {
                throw new NotDirectoryException(rel.toString());
            }
            // A FIFO swapped in after the check would block this open (denial of service only: never followed).
            SecureDirectoryStream<Path> d = opening(rel.getParent(), () -> parent.newDirectoryStream(name, NOFOLLOW));
            if (!self(d).isDirectory()) {
                d.close();
                throw new NotDirectoryException(rel.toString());
            }
            return d;
        }
    }

    /** A new directory made in the stage and renamed to rel; null when something else took rel meanwhile. */
    private SecureDirectoryStream<Path> makeDir(SecureDirectoryStream<Path> parent, Path rel, boolean privately)
            throws IOException {
        Stage s = stageFor(parent, rel.getParent());
        Path tmp = s.fresh();
        if (privately) {
            Files.createDirectory(s.path.resolve(tmp), PRIVATE);
        } else {
            Files.createDirectory(s.path.resolve(tmp));
        }
        SecureDirectoryStream<Path> d;
        try {
            // Made by path: the stage's descriptor says whether it landed in the stage (it did unless the
            // path was redirected, and then an empty directory was made where the other user can write).
            d = opening(rel.getParent(), () -> s.dir.newDirectoryStream(tmp, NOFOLLOW));
        } catch (IOException e) {
            if (Descriptors.exhausted(e)) {
                deleteQuietly(s.dir, tmp);
                throw e;
            }
            throw new FileSystemException(rel.toString(), null, "the directory was not made in the writer's "
                    + "private directory (its path changed)");
        }
        try {
            Object key = self(d).fileKey();
            s.dir.move(tmp, parent, rel.getFileName());
            made.put(rel, key);
            return d;
        } catch (IOException e) {
            d.close();
            deleteQuietly(s.dir, tmp);
            if (e instanceof FileAlreadyExistsException || e instanceof java.nio.file.DirectoryNotEmptyException
                    || (e instanceof FileSystemException && String.valueOf(((FileSystemException) e).getReason())
                    .startsWith("Directory not empty"))) {
                return null;
            }
            throw e;
        }
    }

    /** True when this tree made the directory rel (by its fileKey) and it is still at rel. */
    boolean made(Path rel, SecureDirectoryStream<Path> d) throws IOException {
        Object k = made.get(rel);
        return k != null && k.equals(self(d).fileKey());
    }

    private Stage stageFor(SecureDirectoryStream<Path> parent, Path parentRel) throws IOException {
        long d = parentRel == null ? topDev : dev(real.resolve(parentRel));
        if (d == topDev) {
            if (rootStage == null) {
                rootStage = newStage(top, null, real, topTrusted);
            }
            return rootStage;
        }
        Stage s = stages.get(d);
        if (s == null) {
            Path at = real.resolve(parentRel);
            s = newStage(parent, parentRel, at, trusted(at));
            stages.put(d, s);
        }
        return s;
    }

    private Stage newStage(SecureDirectoryStream<Path> parent, Path parentRel, Path at, boolean trusted)
            throws IOException {
        Path name = Path.of(STAGE_PREFIX + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 1));
        Files.createDirectory(at.resolve(name), PRIVATE);
        SecureDirectoryStream<Path> d = null;
        try {
            d = parent.newDirectoryStream(name, NOFOLLOW);
            PosixFileAttributes a = d.getFileAttributeView(PosixFileAttributeView.class).readAttributes();
            Set<PosixFilePermission> p = a.permissions();
            p.removeAll(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                    PosixFilePermission.OWNER_EXECUTE));
            // Only the effective uid can change an owner-only directory of its own: whatever stands at
            // this name now, what we make in it through its descriptor stays ours.
            if (!a.isDirectory() || !p.isEmpty() || !a.owner().equals(me())) {
                throw new FileSystemException(at.resolve(name).toString(), null,
                        "the writer's private directory was replaced");
            }
            return new Stage(parent, name, at.resolve(name), d, trusted);
        } catch (IOException e) {
            if (d != null) {
                d.close();
            }
            throw e;
        }
    }

    private UserPrincipal me() throws IOException {
        return user(euid());
    }

    private UserPrincipal user(int uid) throws IOException {
        UserPrincipal u = users.get(uid);
        if (u == null) {
            UserPrincipalLookupService l = FileSystems.getDefault().getUserPrincipalLookupService();
            u = l.lookupPrincipalByName(Integer.toString(uid));
            users.put(uid, u);
        }
        return u;
    }

    private GroupPrincipal group(int gid) throws IOException {
        GroupPrincipal g = groups.get(gid);
        if (g == null) {
            UserPrincipalLookupService l = FileSystems.getDefault().getUserPrincipalLookupService();
            g = l.lookupPrincipalByGroupName(Integer.toString(gid));
            groups.put(gid, g);
        }
        return g;
    }

    static Set<PosixFilePermission> perms(int mode) {
        Set<PosixFilePermission> ps = EnumSet.noneOf(PosixFilePermission.class);
        for (PosixFilePermission x : PosixFilePermission.values()) {
            if ((mode & (1 << (8 - x.ordinal()))) != 0) {
                ps.add(x);
            }
        }
        return ps;
    }

    /** A new regular file for rel, made in the stage (owner-only until finished); its directories are made. */
    Temp newFile(Path rel) throws IOException {
        return shedding(() -> newFileOnce(rel));
    }

    private Temp newFileOnce(Path rel) throws IOException {
        SecureDirectoryStream<Path> parent = dir(rel.getParent(), true);
        Stage s = stageFor(parent, rel.getParent());
        Path name = s.fresh();
        FileChannel ch = opening(rel.getParent(), () -> (FileChannel) s.dir.newByteChannel(name, CREATE, PRIVATE_FILE));
        return new Temp(rel, s, name, ch);
    }

    /** A symbolic link at rel to target, with m's owner and times (never its mode: links have none). */
    void symlink(Path rel, Path target, Meta m, boolean replace) throws IOException {
        shedding(() -> {
            symlinkOnce(rel, target, m, replace);
            return null;
        });
    }

    private void symlinkOnce(Path rel, Path target, Meta m, boolean replace) throws IOException {
        SecureDirectoryStream<Path> parent = dir(rel.getParent(), true);
        Stage s = stageFor(parent, rel.getParent());
        Path name = s.fresh();
        Files.createSymbolicLink(s.path.resolve(name), target);
        try {
            BasicFileAttributes a = attrsOrNull(s.dir, name);
            if (a == null || !a.isSymbolicLink()) {
                throw new FileSystemException(rel.toString(), null, "the link was not made in the writer's "
                        + "private directory (its path changed)");
            }
            applyInStage(s, name, m, true, rel);
            place(s, name, rel, replace);
        } catch (IOException e) {
            deleteQuietly(s.dir, name);
            throw e;
        }
    }

    /**
     * A hard link at rel to existing (relative, reached without following a
     * link); when key is not null, existing must be that file.
     */
    void hardlink(Path rel, Path existing, Object key, boolean replace) throws IOException {
        shedding(() -> {
            hardlinkOnce(rel, existing, key, replace);
            return null;
        });
    }

    private void hardlinkOnce(Path rel, Path existing, Object key, boolean replace) throws IOException {
        BasicFileAttributes e = stat(existing);
        if (e == null) {
            throw new NoSuchFileException(existing.toString());
        }
        if (e.isDirectory() || (key != null && !key.equals(e.fileKey()))) {
            throw new FileSystemException(existing.toString(), null, "the link target changed");
        }
        SecureDirectoryStream<Path> parent = dir(rel.getParent(), true);
        Stage s = stageFor(parent, rel.getParent());
        Path name = s.fresh();
        Files.createLink(s.path.resolve(name), real.resolve(existing));
        try {
            BasicFileAttributes a = attrsOrNull(s.dir, name);
            if (a == null || !e.fileKey().equals(a.fileKey())) {
                throw new FileSystemException(rel.toString(), existing.toString(), "the link target changed");
            }
            place(s, name, rel, replace);
        } catch (IOException x) {
            deleteQuietly(s.dir, name);
            throw x;
        }
    }

    /** Renames the stage's name to rel; without replace an existing rel is -EEXIST. */
    private void place(Stage s, Path name, Path rel, boolean replace) throws IOException {
        SecureDirectoryStream<Path> parent = dir(rel.getParent(), true);
        if (!replace && attrsOrNull(parent, rel.getFileName()) != null) {
            throw new FileAlreadyExistsException(rel.toString());
        }
        try {
            s.dir.move(name, parent, rel.getFileName());
        } catch (AtomicMoveNotSupportedException e) {
            throw new FileSystemException(rel.toString(), null, "Invalid cross-device link");
        }
    }

    /**
     * Applies m to the file the stage holds under name: owner, permission bits
     * and times through a descriptor opened in the stage (nobody else can
     * put a file there); set-id and sticky bits, and a link's owner, by path,
     * only where that path is trusted.
     */
    private void applyInStage(Stage s, Path name, Meta m, boolean link, Path rel) throws IOException {
        Path p = s.path.resolve(name);
        if (link) {
            if (m.uid >= 0) {
                if (!s.trusted) {
                    throw new Refused(rel.toString(), "the owner of a symbolic link");
                }
                checkKey(s, name, p, rel);
                Files.setAttribute(p, "unix:uid", m.uid, NOFOLLOW);
                Files.setAttribute(p, "unix:gid", m.gid, NOFOLLOW);
            }
            if (m.mtime != null) {
                checkKey(s, name, p, rel);
                Files.getFileAttributeView(p, BasicFileAttributeView.class, NOFOLLOW).setTimes(m.mtime, m.atime, null);
            }
            return;
        }
        PosixFileAttributeView v = s.dir.getFileAttributeView(name, PosixFileAttributeView.class, NOFOLLOW);
        if (m.uid >= 0) {
            v.setOwner(user(m.uid));
            v.setGroup(group(m.gid));
        }
        if (m.mode >= 0) {
            v.setPermissions(perms(m.mode));
            if ((m.mode & 07000) != 0) {
                if (!s.trusted) {
                    throw new Refused(rel.toString(), "set-id and sticky bits (mode "
                            + Integer.toOctalString(m.mode) + ")");
                }
                checkKey(s, name, p, rel);
                Files.setAttribute(p, "unix:mode", m.mode, NOFOLLOW);
            }
        }
        if (m.mtime != null) {
            if (s.trusted) {
                // by path for nanoseconds (the JDK's descriptor call is futimes: microseconds)
                checkKey(s, name, p, rel);
                Files.getFileAttributeView(p, BasicFileAttributeView.class, NOFOLLOW).setTimes(m.mtime, m.atime, null);
            } else {
                v.setTimes(m.mtime, m.atime, null);
            }
        }
    }

    /** The file at path p is the one the stage holds under name (before a call the JDK makes by path only). */
    private static void checkKey(Stage s, Path name, Path p, Path rel) throws IOException {
        Object k = attrs(s.dir, name).fileKey();
        Object q = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW).fileKey();
        if (k == null || !k.equals(q)) {
            throw new FileSystemException(rel.toString(), null, "the path of the writer's private directory changed");
        }
    }

    /**
     * Applies m to the directory rel through its descriptor: only to one this
     * tree made (same fileKey), or one whose path nobody else can change;
     * set-id and sticky bits only where the path is trusted.
     */
    void applyDir(Path rel, Meta m) throws IOException {
        shedding(() -> {
            applyDirOnce(rel, m);
            return null;
        });
    }

    private void applyDirOnce(Path rel, Meta m) throws IOException {
        SecureDirectoryStream<Path> d = dir(rel, false);
        Path abs = real.resolve(rel);
        boolean trustedPath = trusted(abs.getParent());
        if (!made(rel, d) && !trustedPath) {
            throw new Refused(rel.toString(), "the metadata of a directory this run did not make");
        }
        PosixFileAttributeView v = d.getFileAttributeView(PosixFileAttributeView.class);
        if (m.uid >= 0) {
            v.setOwner(user(m.uid));
            v.setGroup(group(m.gid));
        }
        if (m.mode >= 0) {
            v.setPermissions(perms(m.mode));
            if ((m.mode & 07000) != 0) {
                if (!trustedPath) {
                    throw new Refused(rel.toString(), "set-id and sticky bits (mode "
                            + Integer.toOctalString(m.mode) + ")");
                }
                Object k = self(d).fileKey();
                if (!k.equals(Files.readAttributes(abs, BasicFileAttributes.class, NOFOLLOW).fileKey())) {
                    throw new FileSystemException(rel.toString(), null, "the directory was moved");
                }
                Files.setAttribute(abs, "unix:mode", m.mode, NOFOLLOW);
            }
        }
        if (m.mtime != null) {
            if (trustedPath && self(d).fileKey().equals(
                    Files.readAttributes(abs, BasicFileAttributes.class, NOFOLLOW).fileKey())) {
                Files.getFileAttributeView(abs, BasicFileAttributeView.class, NOFOLLOW).setTimes(m.mtime, m.atime, null);
            } else {
                v.setTimes(m.mtime, m.atime, null);
            }
        }
    }

    /** fsync of the directory rel (of its entries), through its descriptor. */
    void syncDir(Path rel) throws IOException {
        shedding(() -> {
            syncDirOnce(rel);
            return null;
        });
    }

    private void syncDirOnce(Path rel) throws IOException {
        SecureDirectoryStream<Path> d = dir(rel, false);
        try (FileChannel ch = (FileChannel) d.newByteChannel(Path.of("."), Set.of(StandardOpenOption.READ))) {
            ch.force(true);
        }
    }

    /** Opens something holding a descriptor. */
    private interface Opening<T> {
        T open() throws IOException;
    }

    /**
     * o's open; when it meets EMFILE/ENFILE, once again after the cached directories that are not on keep's
     * path (the ones the operation is using) are closed: the tree holds fewer open from then on.
     */
    private <T> T opening(Path keep, Opening<T> o) throws IOException {
        try {
            return o.open();
        } catch (IOException e) {
            if (!Descriptors.exhausted(e) || !shed(keep)) {
                throw e;
            }
            return o.open();
        }
    }

    /**
     * An operation of the tree; when it meets EMFILE/ENFILE, once more after every cached directory is
     * closed (between operations none is in use; what a failed try left in a stage goes with the stage).
     */
    private <T> T shedding(Opening<T> op) throws IOException {
        try {
            return op.open();
        } catch (IOException e) {
            if (!Descriptors.exhausted(e) || !shed(null)) {
                throw e;
            }
            return op.open();
        }
    }

    /**
     * Closes the cached directories not on keep's path (null: all), for an open elsewhere that met
     * EMFILE/ENFILE; whether any was (then that open is worth trying again).
     */
    boolean shed(Path keep) {
        boolean any = false;
        SHEDS.incrementAndGet();
        openDirs = Math.max(OPEN_DIRS_FLOOR, Math.min(openDirs, open.size() / 2));
        Iterator<Map.Entry<Path, SecureDirectoryStream<Path>>> it = open.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Path, SecureDirectoryStream<Path>> e = it.next();
            if (keep == null || !keep.startsWith(e.getKey())) {
                closeQuietly(e.getValue());
                it.remove();
                any = true;
            }
        }
        return any;
    }

    /** Closes and forgets the open directories at rel and beneath (before rel is removed or replaced). */
    void forget(Path rel) {
        Iterator<Map.Entry<Path, SecureDirectoryStream<Path>>> it = open.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Path, SecureDirectoryStream<Path>> e = it.next();
            if (e.getKey().startsWith(rel)) {
                closeQuietly(e.getValue());
                it.remove();
            }
        }
        made.keySet().removeIf(k -> k.startsWith(rel));
    }

    /** The attributes of the stream's own directory. */
    static BasicFileAttributes attrsOf(SecureDirectoryStream<Path> d) throws IOException {
        return self(d);
    }

    /** The attributes of name in d, not following a link; null when it does not exist. */
    static BasicFileAttributes attrsIn(SecureDirectoryStream<Path> d, Path name) throws IOException {
        return attrsOrNull(d, name);
    }

    /** Removes the stages (and anything left in them) and closes every directory. */
    @Override
    public void close() throws IOException {
        List<Stage> all = new ArrayList<>(stages.values());
        if (rootStage != null) {
            all.add(rootStage);
        }
        for (Stage s : all) {
            Iterator<Path> it = s.dir.iterator();
            while (it.hasNext()) {
                deleteQuietly(s.dir, it.next().getFileName());
            }
            closeQuietly(s.dir);
            try {
                // by name: at worst the other user's own empty directory, in a directory of theirs
                s.parent.deleteDirectory(s.name);
            } catch (IOException ignored) {
                // best effort
            }
        }
        stages.clear();
        rootStage = null;
        for (SecureDirectoryStream<Path> d : open.values()) {
            closeQuietly(d);
        }
        open.clear();
        top.close();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The portable pure-Java writer: each file goes to a temporary name in its
 * directory, gets its metadata, and is renamed into place (so a file is
 * complete or absent); durability BATCH and EACH fsync every file written
 * (BATCH after the whole batch) and their directories. No crash manifest,
 * no stem engine, no FIFOs ({@code -EOPNOTSUPP}). Destination paths follow
 * the native rules: relative, no '.'/'..', not the journal, no symbolic link
 * followed in the directories of a path.
 */
final class JavaWriter implements BatchFileWriter.Impl {
    private static final boolean UNIX = FileSystems.getDefault().supportedFileAttributeViews().contains("unix");
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private final Path root;
    private final BatchFileWriter.Durability durability;
    private final boolean replace, stopOnError;
    private final List<Dir> dirs = new ArrayList<>();
    private final Map<String, Stream> streams = new HashMap<>();
    private long batches, files, failed, bytes, syncs;
    private long nsData, nsMeta, nsSync;
    private boolean closed;

    private static final class Dir {
        final Path path;
        final WriteEntry e;
        final int depth;

        Dir(Path path, WriteEntry e, int depth) {
            this.path = path;
            this.e = e;
            this.depth = depth;
        }
    }

    private static final class Stream {
        Path tmp, dest;
        FileChannel ch;
        long next;
    }

    JavaWriter(BatchFileWriter.Builder b) throws IOException {
        this.root = b.root.toAbsolutePath();
        this.durability = b.durability;
        this.replace = b.replace;
        this.stopOnError = b.stopOnError;
        Files.createDirectories(root);
        if (!Files.isDirectory(root)) {
            throw new NotDirectoryException(root.toString());
        }
        if (b.engine == BatchFileWriter.Engine.STEM) {
            throw new IOException("the stem engine needs libbfo");
        }
    }

    @Override
    public String engineName() {
        return "java";
    }

    @Override
    public WriteStats stats() {
        return new WriteStats("java", batches, files, failed, bytes, syncs, 0, Duration.ZERO, Duration.ofNanos(nsData),
                Duration.ofNanos(nsMeta), Duration.ofNanos(nsSync));
    }

    /** The native wpath_check: 0, -EINVAL or -ENAMETOOLONG. */
    static int checkPath(byte[] rel) {
        int n = rel.length;
        if (n == 0 || rel[0] == '/' || n >= 4096) {
            return -Errno.EINVAL;
        }
        int start = 0;
        for (int i = 0; i <= n; i++) {
            if (i == n || rel[i] == '/') {
                int len = i - start;
                if (len == 0 || (len == 1 && rel[start] == '.') || (len == 2 && rel[start] == '.' && rel[start + 1] == '.')) {
                    return -Errno.EINVAL;
                }
                if (len > 255) {
                    return -Errno.ENAMETOOLONG;
                }
                start = i + 1;
            }
        }
        byte[] j = ".bfo-journal".getBytes();
        if (n >= j.length) {
            boolean same = true;
            for (int i = 0; i < j.length; i++) {
                if (rel[i] != j[i]) {
                    same = false;
                    break;
                }
            }
            if (same && (n == j.length || rel[j.length] == '/')) {
                return -Errno.EINVAL;
            }
        }
        return 0;
    }

    private Path dest(WriteEntry e) {
        Path rel = e.pathObj != null ? e.pathObj : root.getFileSystem().getPath(e.display);
        return root.resolve(rel);
    }

    /** Parent directories beneath root: created if missing, never through a symbolic link (-ELOOP). */
    private int parents(Path dest, Set<Path> checked) throws IOException {
        Path parent = dest.getParent();
        List<Path> chain = new ArrayList<>();
        for (Path p = parent; p != null && !p.equals(root); p = p.getParent()) {
            chain.add(p);
        }
        for (int i = chain.size() - 1; i >= 0; i--) {
            Path p = chain.get(i);
            if (checked.contains(p)) {
                continue;
            }
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
            } catch (java.nio.file.NoSuchFileException x) {
                try {
                    Files.createDirectory(p);
                } catch (FileAlreadyExistsException raced) {
                    // fine if it is a directory: checked below
                }
                a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
            }
            if (a.isSymbolicLink()) {
                return -Errno.ELOOP;
            }
            if (!a.isDirectory()) {
                return -Errno.ENOTDIR;
            }
            checked.add(p);
        }
        return 0;
    }

    private static Path temp(Path dest) {
        return dest.resolveSibling(".bfo-tmp." + Long.toHexString(ThreadLocalRandom.current().nextLong()));
    }

    private void meta(Path p, WriteEntry e, boolean symlink) throws IOException {
        long t0 = System.nanoTime();
        if (UNIX && e.uid != WriteEntry.UNSET) {
            Files.setAttribute(p, "unix:uid", e.uid, NOFOLLOW);
            Files.setAttribute(p, "unix:gid", e.gid, NOFOLLOW);
        }
        if (!symlink) {
            int mode = e.mode != WriteEntry.UNSET ? e.mode : NativeWriter.defaultMode(e.type);
            if (UNIX) {
                Files.setAttribute(p, "unix:mode", mode, NOFOLLOW);
            } else if (POSIX) {
                Set<PosixFilePermission> ps = EnumSet.noneOf(PosixFilePermission.class);
                for (PosixFilePermission x : PosixFilePermission.values()) {
                    if ((mode & (1 << (8 - x.ordinal()))) != 0) {
                        ps.add(x);
                    }
                }
                Files.setPosixFilePermissions(p, ps);
            }
        }
        if (e.hasTimes()) {
            Files.getFileAttributeView(p, BasicFileAttributeView.class, NOFOLLOW)
                    .setTimes(time(e.effMtime()), time(e.effAtime()), null);
        }
        nsMeta += System.nanoTime() - t0;
    }

    private static FileTime time(long nanos) {
        return FileTime.from(Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L),
                Math.floorMod(nanos, 1_000_000_000L)));
    }

    /** Moves tmp to dest: atomically replacing, or refusing (-EEXIST) without replace. */
    private void place(Path tmp, Path dest, WriteEntry e) throws IOException {
        try {
            if (!replace && Files.exists(dest, NOFOLLOW)) {
                throw new FileAlreadyExistsException(e.display);
            }
            try {
                Files.move(tmp, dest, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException x) {
                Files.move(tmp, dest, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException x) {
            Files.deleteIfExists(tmp);
            throw x;
        }
    }

    private static void writeAll(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            pos += ch.write(b, pos);
        }
    }

    private int writeOne(WriteEntry e, Set<Path> checked, List<Path> toSync) throws IOException {
        int c = checkPath(e.pathBytes);
        if (c < 0) {
            return c;
        }
        if (e.type == WriteEntry.Type.HARDLINK && checkPath(e.target) < 0) {
            return -Errno.EINVAL;
        }
        if (streams.containsKey(e.display)) {
            return -Errno.EBUSY;
        }
        Path dest = dest(e);
        c = parents(dest, checked);
        if (c < 0) {
            return c;
        }
        switch (e.type) {
            case FILE: {
                Path tmp = temp(dest);
                long t0 = System.nanoTime();
                try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                        NOFOLLOW)) {
                    ByteBuffer d = e.buffer != null ? e.buffer.duplicate()
                            : ByteBuffer.wrap(e.array, e.arrayOff, e.arrayLen);
                    writeAll(ch, d, 0);
                    if (durability == BatchFileWriter.Durability.EACH) {
                        ch.force(true);
                        syncs++;
                    }
                } catch (IOException x) {
                    Files.deleteIfExists(tmp);
                    throw x;
                }
                nsData += System.nanoTime() - t0;
                try {
                    meta(tmp, e, false);
                } catch (IOException x) {
                    Files.deleteIfExists(tmp);
                    throw x;
                }
                place(tmp, dest, e);
                bytes += e.length();
                toSync.add(dest);
                return 0;
            }
            case DIRECTORY: {
                if (Files.isSymbolicLink(dest)) {
                    return -Errno.ELOOP;
                }
                if (!Files.isDirectory(dest, NOFOLLOW)) {
                    Files.createDirectory(dest);
                }
                dirs.add(new Dir(dest, e, dest.getNameCount()));
                toSync.add(dest);
                return 0;
            }
            case SYMLINK: {
                Path target = e.targetObj != null ? e.targetObj : root.getFileSystem().getPath(e.targetDisplay);
                Path tmp = temp(dest);
                Files.createSymbolicLink(tmp, target);
                try {
                    meta(tmp, e, true);
                } catch (IOException x) {
                    Files.deleteIfExists(tmp);
                    throw x;
                }
                place(tmp, dest, e);
                toSync.add(dest);
                return 0;
            }
            case HARDLINK: {
                Path existing = root.resolve(e.targetObj != null ? e.targetObj
                        : root.getFileSystem().getPath(e.targetDisplay));
                Path tmp = temp(dest);
                Files.createLink(tmp, existing);
                place(tmp, dest, e);
                toSync.add(dest);
                return 0;
            }
            default:
                return -Errno.EOPNOTSUPP;
        }
    }

    private void sync(List<Path> paths) {
        long t0 = System.nanoTime();
        Set<Path> parents = new HashSet<>();
        for (Path p : paths) {
            force(p);
            if (p.getParent() != null) {
                parents.add(p.getParent());
            }
        }
        for (Path d : parents) {
            force(d);
        }
        syncs++;
        nsSync += System.nanoTime() - t0;
    }

    private static void force(Path p) {
        if (Files.isSymbolicLink(p)) {
            return;
        }
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | UnsupportedOperationException e) {
            // best effort: a directory cannot be opened on some platforms
        }
    }

    @Override
    public int writeBatch(List<WriteEntry> entries, int from, int to, WriteResult[] out) {
        batches++;
        Set<Path> checked = new HashSet<>();
        List<Path> toSync = new ArrayList<>();
        int nfailed = 0;
        boolean stop = false;
        for (int i = from; i < to; i++) {
            WriteEntry e = entries.get(i);
            int st;
            IOException ex = null;
            if (stop) {
                st = -Errno.ECANCELED;
            } else {
                try {
                    st = writeOne(e, checked, toSync);
                } catch (IOException x) {
                    st = Errno.fromException(x);
                    ex = x;
                }
            }
            if (st < 0) {
                nfailed++;
                failed++;
                if (ex == null || st != -Errno.EIO) {
                    ex = Errno.forWrite(st, e.display, e.targetDisplay);
                }
                // as in libbfo: an invalid entry is refused up front and does not stop the batch
                stop |= stopOnError && st != -Errno.EINVAL && st != -Errno.ENAMETOOLONG;
            } else {
                files++;
            }
            out[i] = new WriteResult(e, st, st == 0 ? null : ex, "java");
        }
        if (durability == BatchFileWriter.Durability.BATCH && !toSync.isEmpty()) {
            sync(toSync);
        }
        return nfailed;
    }

    @Override
    public ByteBuffer pieceBuffer(int bytes) {
        return ByteBuffer.allocate(bytes);
    }

    @Override
    public int piece(WriteEntry t, ByteBuffer data, long offset, boolean more, boolean abort) throws IOException {
        Stream s = streams.get(t.display);
        if (abort) {
            if (s != null) {
                drop(s);
            }
            return 0;
        }
        try {
            if (s == null) {
                if (offset != 0) {
                    return -Errno.EINVAL;
                }
                int c = checkPath(t.pathBytes);
                if (c < 0) {
                    return c;
                }
                Path dest = dest(t);
                c = parents(dest, new HashSet<>());
                if (c < 0) {
                    return c;
                }
                s = new Stream();
                s.dest = dest;
                s.tmp = temp(dest);
                s.ch = FileChannel.open(s.tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, NOFOLLOW);
                streams.put(t.display, s);
            }
            if (offset != s.next) {
                drop(s);
                return -Errno.EINVAL;
            }
            int len = data.remaining();
            writeAll(s.ch, data, offset);
            s.next += len;
            bytes += len;
            if (more) {
                return 0;
            }
            if (durability != BatchFileWriter.Durability.NONE) {
                s.ch.force(true);
                syncs++;
            }
            s.ch.close();
            streams.remove(t.display);
            meta(s.tmp, t, false);
            place(s.tmp, s.dest, t);
            files++;
            return 0;
        } catch (IOException x) {
            if (s != null) {
                drop(s);
            }
            failed++;
            return Errno.fromException(x);
        }
    }

    private void drop(Stream s) {
        streams.values().remove(s);
        try {
            s.ch.close();
        } catch (IOException ignored) {
            // dropping anyway
        }
        try {
            Files.deleteIfExists(s.tmp);
        } catch (IOException ignored) {
            // best effort
        }
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        for (Stream s : new ArrayList<>(streams.values())) {
            drop(s);
        }
        IOException first = null;
        dirs.sort(Comparator.comparingInt((Dir d) -> d.depth).reversed());
        for (Dir d : dirs) {
            try {
                meta(d.path, d.e, false);
            } catch (IOException x) {
                if (first == null) {
                    first = x;
                }
            }
        }
        if (durability != BatchFileWriter.Durability.NONE && !dirs.isEmpty()) {
            List<Path> ps = new ArrayList<>();
            for (Dir d : dirs) {
                ps.add(d.path);
            }
            sync(ps);
        }
        if (first != null) {
            throw first;
        }
    }
}

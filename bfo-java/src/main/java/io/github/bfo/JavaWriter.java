/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The portable pure-Java writer: each file is made in a private directory of
 * the root (see {@link SafeTree}), gets its metadata there through a
 * descriptor, and is renamed into place (so a file is complete or absent);
 * durability other than NONE fsyncs every file written (BATCH also its
 * directories after the batch, CLOSE those of all batches at close). No
 * crash manifest, no stem engine, no FIFOs ({@code -EOPNOTSUPP}). Destination paths follow the native rules:
 * relative, no '.'/'..', not the journal, no symbolic link followed in the
 * directories of a path. Set-id and sticky bits and the owner of a symbolic
 * link are applied only where no other user can write the root's path
 * (else the entry fails with -EPERM, {@link SafeTree.Refused}).
 */
final class JavaWriter implements BatchFileWriter.Impl {
    private final SafeTree tree;
    private final BatchFileWriter.Durability durability;
    private final boolean replace, stopOnError;
    private final List<Dir> dirs = new ArrayList<>();
    private final Map<String, Stream> streams = new HashMap<>();
    private final Set<Path> syncAtClose = new HashSet<>();   // durability CLOSE: directories of the batches
    private long batches, files, failed, bytes, syncs;
    private long nsData, nsMeta, nsSync;
    private boolean closed;

    private static final class Dir {
        final Path rel;
        final WriteEntry e;
        final int depth;

        Dir(Path rel, WriteEntry e, int depth) {
            this.rel = rel;
            this.e = e;
            this.depth = depth;
        }
    }

    private static final class Stream {
        SafeTree.Temp tmp;
        long next;
    }

    JavaWriter(BatchFileWriter.Builder b) throws IOException {
        if (b.engine == BatchFileWriter.Engine.STEM || b.engine == BatchFileWriter.Engine.URING) {
            throw new IOException("the " + b.engine.name().toLowerCase(java.util.Locale.ROOT) + " engine needs libbfo");
        }
        this.durability = b.durability;
        this.replace = b.replace;
        this.stopOnError = b.stopOnError;
        this.tree = SafeTree.open(b.root.toAbsolutePath(), b.createRoot);
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

    private static Path rel(Path obj, String display) {
        return obj != null ? obj : Path.of(display);
    }

    private static SafeTree.Meta meta(WriteEntry e) {
        int mode = e.mode != WriteEntry.UNSET ? e.mode : WriteEntry.defaultMode(e.type);
        return new SafeTree.Meta(e.type == WriteEntry.Type.SYMLINK ? -1 : mode, e.uid, e.gid,
                e.hasTimes() ? time(e.effMtime()) : null, e.hasTimes() ? time(e.effAtime()) : null);
    }

    private static FileTime time(long nanos) {
        return FileTime.from(Instant.ofEpochSecond(Math.floorDiv(nanos, 1_000_000_000L),
                Math.floorMod(nanos, 1_000_000_000L)));
    }

    private static void writeAll(FileChannel ch, ByteBuffer b, long pos) throws IOException {
        while (b.hasRemaining()) {
            pos += ch.write(b, pos);
        }
    }

    private void finish(SafeTree.Temp t, WriteEntry e) throws IOException {
        long t0 = System.nanoTime();
        t.finish(meta(e), replace);
        nsMeta += System.nanoTime() - t0;
    }

    private int writeOne(WriteEntry e, Set<Path> toSync) throws IOException {
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
        Path rel = rel(e.pathObj, e.display);
        switch (e.type) {
            case FILE: {
                long t0 = System.nanoTime();
                try (SafeTree.Temp t = tree.newFile(rel)) {
                    ByteBuffer d = e.buffer != null ? e.buffer.duplicate()
                            : ByteBuffer.wrap(e.array, e.arrayOff, e.arrayLen);
                    writeAll(t.ch, d, 0);
                    if (durability != BatchFileWriter.Durability.NONE) {
                        // through the descriptor, before the file has a name anyone else can change
                        t.ch.force(true);
                        if (durability == BatchFileWriter.Durability.EACH) {
                            syncs++;
                        }
                    }
                    nsData += System.nanoTime() - t0;
                    finish(t, e);
                }
                bytes += e.length();
                toSync.add(rel.getParent() == null ? Path.of("") : rel.getParent());
                return 0;
            }
            case DIRECTORY: {
                tree.mkdir(rel);
                dirs.add(new Dir(rel, e, rel.getNameCount()));
                toSync.add(rel.getParent() == null ? Path.of("") : rel.getParent());
                return 0;
            }
            case SYMLINK: {
                Path target = e.targetObj != null ? e.targetObj : Path.of(e.targetDisplay);
                long t0 = System.nanoTime();
                tree.symlink(rel, target, meta(e), replace);
                nsMeta += System.nanoTime() - t0;
                toSync.add(rel.getParent() == null ? Path.of("") : rel.getParent());
                return 0;
            }
            case HARDLINK: {
                tree.hardlink(rel, rel(e.targetObj, e.targetDisplay), null, replace);
                toSync.add(rel.getParent() == null ? Path.of("") : rel.getParent());
                return 0;
            }
            default:
                return -Errno.EOPNOTSUPP;
        }
    }

    private void sync(Set<Path> dirs) {
        long t0 = System.nanoTime();
        for (Path d : dirs) {
            try {
                tree.syncDir(d.toString().isEmpty() ? null : d);
            } catch (IOException | RuntimeException e) {
                // best effort, as fsync of a directory is on some file systems
            }
        }
        syncs++;
        nsSync += System.nanoTime() - t0;
    }

    @Override
    public int writeBatch(List<WriteEntry> entries, int from, int to, WriteResult[] out) {
        batches++;
        Set<Path> toSync = new HashSet<>();
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
                    st = writeOne(e, toSync);
                } catch (IOException x) {
                    st = Errno.fromException(x);
                    ex = x;
                }
            }
            if (st < 0) {
                nfailed++;
                failed++;
                if (ex == null || (st != -Errno.EIO && !(ex instanceof SafeTree.Refused))) {
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
        } else if (durability == BatchFileWriter.Durability.CLOSE) {
            syncAtClose.addAll(toSync);
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
                SafeTree.Temp tmp = tree.newFile(rel(t.pathObj, t.display));
                s = new Stream();
                s.tmp = tmp;
                streams.put(t.display, s);
            }
            if (offset != s.next) {
                drop(s);
                return -Errno.EINVAL;
            }
            int len = data.remaining();
            writeAll(s.tmp.ch, data, offset);
            s.next += len;
            bytes += len;
            if (more) {
                return 0;
            }
            if (durability != BatchFileWriter.Durability.NONE) {
                s.tmp.ch.force(true);
                syncs++;
            }
            streams.remove(t.display);
            finish(s.tmp, t);
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
        s.tmp.close();
    }

    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        IOException first = null;
        try {
            for (Stream s : new ArrayList<>(streams.values())) {
                drop(s);
            }
            dirs.sort(Comparator.comparingInt((Dir d) -> d.depth).reversed());
            for (Dir d : dirs) {
                long t0 = System.nanoTime();
                try {
                    tree.applyDir(d.rel, meta(d.e));
                } catch (IOException x) {
                    if (first == null) {
                        first = x;
                    }
                }
                nsMeta += System.nanoTime() - t0;
            }
            Set<Path> ps = new HashSet<>(syncAtClose);
            for (Dir d : dirs) {
                ps.add(d.rel);
            }
            if (durability != BatchFileWriter.Durability.NONE && !ps.isEmpty()) {
                sync(ps);
            }
        } finally {
            try {
                tree.close();
            } catch (IOException x) {
                if (first == null) {
                    first = x;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}

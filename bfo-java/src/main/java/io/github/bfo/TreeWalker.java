/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.LastErrorException;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The files of a tree in inode order, a sort buffer at a time, for
 * {@link BatchFileReader#readTree}: directories are listed in parallel with
 * getdents64 (their entries' inode numbers and types come with the listing:
 * no stat per entry), files are collected until the buffer is full (or the
 * walk is over), sorted by inode and handed out. Inode order is close to
 * disk order on ext4 and XFS, so the engine's metadata phase reads the inode
 * tables sequentially (what {@code bfo read DIR} does with its own walk).
 *
 * <p>Regular files, symbolic links (the engine follows them; links to
 * directories come back as -EISDIR and are skipped) and entries of unknown
 * type are handed out; subdirectories are walked; special files skipped.
 * Memory: at most two buffers of entries. Not thread-safe (one consumer).
 */
final class TreeWalker implements Iterator<Path>, AutoCloseable {
    private static final int DT_UNKNOWN = 0, DT_DIR = 4, DT_REG = 8, DT_LNK = 10;
    private static final int BUF = 64 << 10;
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final Charset JNU = jnu();
    private static final ThreadLocal<Memory> DENTS = ThreadLocal.withInitial(() -> new Memory(BUF));

    /** A listed entry. */
    private static final class Entry {
        final long ino;
        final Path path;

        Entry(long ino, Path path) {
            this.ino = ino;
            this.path = path;
        }
    }

    /** A directory that could not be listed. */
    static final class Failure {
        final Path dir;
        final int status;

        Failure(Path dir, int status) {
            this.dir = dir;
            this.status = status;
        }
    }

    private final int chunk;
    private final boolean skipLinks;
    private final ExecutorService pool;
    private final Object lock = new Object();
    private final ArrayDeque<Entry> found = new ArrayDeque<>();      // lock
    private final List<Failure> failures = new ArrayList<>();        // lock
    private int pendingDirs;                                          // lock
    private volatile boolean closed;
    private Entry[] sorted = new Entry[0];
    private int pos, len;

    TreeWalker(List<Path> dirs, List<Path> files, int chunk, int threads, boolean skipLinks) {
        this.chunk = chunk;
        this.skipLinks = skipLinks;
        int id = SEQ.incrementAndGet();
        AtomicInteger n = new AtomicInteger();
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "bfo-walk-" + id + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        for (Path f : files) {
            found.add(new Entry(0, f));
        }
        for (Path d : dirs) {
            addDir(d);
        }
    }

    private static Charset jnu() {
        try {
            return Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));
        } catch (RuntimeException e) {
            return StandardCharsets.UTF_8;
        }
    }

    private void addDir(Path d) {
        synchronized (lock) {
            if (closed) {
                return;
            }
            pendingDirs++;
        }
        try {
            pool.execute(() -> list(d));
        } catch (RejectedExecutionException e) {
            synchronized (lock) {
                pendingDirs--;
                lock.notifyAll();
            }
        }
    }

    /** Directories that could not be listed (taken once). */
    List<Failure> takeFailures() {
        synchronized (lock) {
            List<Failure> f = new ArrayList<>(failures);
            failures.clear();
            return f;
        }
    }

    private void list(Path dir) {
        Pointer d = null;
        try {
            byte[] pb = PathBytes.of(dir);
            Memory name = BfoNative.cString(pb);
            try {
                d = BfoNative.Libc.opendir(name);
            } catch (LastErrorException e) {
                synchronized (lock) {
                    failures.add(new Failure(dir, -e.getErrorCode()));
                }
                return;
            }
            int fd = BfoNative.Libc.dirfd(d);
            Memory buf = DENTS.get();
            CharsetDecoder dec = JNU.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT);
            for (;;) {
                if (closed) {
                    return;
                }
                long n;
                try {
                    n = BfoNative.Libc.getdents64(fd, buf, BUF);
                } catch (LastErrorException e) {
                    synchronized (lock) {
                        failures.add(new Failure(dir, -e.getErrorCode()));
                    }
                    return;
                }
                if (n <= 0) {
                    return;
                }
                ByteBuffer b = buf.getByteBuffer(0, n).order(BfoNative.ORDER);
                List<Entry> files = new ArrayList<>();
                List<Path> subdirs = new ArrayList<>();
                int off = 0;
                while (off < n) {
                    long ino = b.getLong(off);
                    int reclen = b.getShort(off + 16) & 0xffff;
                    int type = b.get(off + 18) & 0xff;
                    int start = off + 19, end = start;
                    while (end < off + reclen && b.get(end) != 0) {
                        end++;
                    }
                    off += reclen;
                    int len = end - start;
                    if ((len == 1 && b.get(start) == '.') || (len == 2 && b.get(start) == '.' && b.get(start + 1) == '.')) {
                        continue;
                    }
                    if (type != DT_DIR && type != DT_REG && type != DT_UNKNOWN && !(type == DT_LNK && !skipLinks)) {
                        continue;   // special files (and links under noFollow)
                    }
                    byte[] nb = new byte[len];
                    b.get(start, nb);
                    Path child = child(dir, pb, nb, dec);
                    if (type == DT_DIR) {
                        subdirs.add(child);
                    } else {
                        files.add(new Entry(ino, child));
                    }
                }
                for (Path s : subdirs) {
                    addDir(s);
                }
                synchronized (lock) {
                    found.addAll(files);
                    lock.notifyAll();
                    while (found.size() >= chunk && !closed) {
                        lock.wait();   // bounded: the consumer takes a buffer at a time
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            if (d != null) {
                BfoNative.Libc.closedir(d);
            }
            synchronized (lock) {
                pendingDirs--;
                lock.notifyAll();
            }
        }
    }

    /** dir/name as a Path: through the string form when the name decodes, else from the raw bytes. */
    private static Path child(Path dir, byte[] dirBytes, byte[] name, CharsetDecoder dec) {
        boolean ascii = true;
        for (byte x : name) {
            if (x < 0) {
                ascii = false;
                break;
            }
        }
        if (ascii) {
            return dir.resolve(new String(name, StandardCharsets.ISO_8859_1));
        }
        try {
            CharBuffer cb = dec.reset().decode(ByteBuffer.wrap(name));
            return dir.resolve(cb.toString());
        } catch (CharacterCodingException e) {
            byte[] abs = dirBytes.length > 0 && dirBytes[0] == '/' ? dirBytes : PathBytes.of(dir.toAbsolutePath());
            byte[] all = Arrays.copyOf(abs, abs.length + 1 + name.length);
            all[abs.length] = '/';
            System.arraycopy(name, 0, all, abs.length + 1, name.length);
            return PathBytes.toPath(all);
        }
    }

    @Override
    public boolean hasNext() {
        if (pos < len) {
            return true;
        }
        synchronized (lock) {
            try {
                while (found.size() < chunk && pendingDirs > 0 && !closed) {
                    lock.wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while walking", e);
            }
            if (found.isEmpty() || closed) {
                return false;
            }
            int k = Math.min(chunk, found.size());
            if (sorted.length < k) {
                sorted = new Entry[k];
            }
            for (int i = 0; i < k; i++) {
                sorted[i] = found.poll();
            }
            len = k;
            pos = 0;
            lock.notifyAll();
        }
        Arrays.sort(sorted, 0, len, Comparator.comparingLong(e -> e.ino));
        return true;
    }

    @Override
    public Path next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        Path p = sorted[pos].path;
        sorted[pos++] = null;
        return p;
    }

    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
            found.clear();
            lock.notifyAll();
        }
        pool.shutdownNow();
    }
}

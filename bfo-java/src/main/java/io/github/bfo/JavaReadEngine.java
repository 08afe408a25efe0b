/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The portable pure-Java read engine: the same API and semantics as the
 * native engines (completion order, pieces above largeFile, per-file
 * statuses, change detection, bounded memory), with NIO reads on a small
 * pool of daemon threads. Used where libbfo cannot load, or on request.
 *
 * <p>Bounds: at most {@code maxInFlight} files submitted and not yet
 * delivered, and at most {@code arenaBytes} of file data read and not yet
 * passed by the iterator (a piece is at most arenaBytes / 8).
 */
final class JavaReadEngine implements BatchFileReader.Impl {
    static final long DEF_ARENA = 64L << 20;
    static final long DEF_LARGE_FILE = 16L << 20;
    private static final boolean UNIX = FileSystems.getDefault().supportedFileAttributeViews().contains("unix");
    private static final boolean POSIX = FileSystems.getDefault().supportedFileAttributeViews().contains("posix");
    private static final String UNIX_ATTRS = "unix:size,lastModifiedTime,lastAccessTime,ctime,mode,ino,dev,nlink,uid,gid";
    private static final AtomicInteger POOL_SEQ = new AtomicInteger();

    private final boolean noFollow, stopOnError, metadataOnly;
    private final long arena, largeFile;
    private final int threads, maxInFlight;
    private final String why;
    private volatile boolean closed;
    private ExecutorService pool;
    private JavaBatch batch;
    private ReadStats last = ReadStats.empty("java");

    JavaReadEngine(BatchFileReader.Builder b, String why) {
        this.noFollow = b.noFollow;
        this.stopOnError = b.failurePolicy == FailurePolicy.STOP_ON_FIRST_FAILURE;
        this.metadataOnly = b.metadataOnly;
        this.arena = b.arenaBytes != 0 ? b.arenaBytes : DEF_ARENA;
        this.largeFile = Math.max(4096, Math.min(b.largeFile != 0 ? b.largeFile : DEF_LARGE_FILE, arena / 8));
        // a thread holds one file open at a time: as many as the descriptor budget allows
        this.threads = Descriptors.share(b.threads != 0 ? b.threads
                : Math.max(4, Math.min(8, 2 * Runtime.getRuntime().availableProcessors())), 1);
        int window = b.windowFiles != 0 ? b.windowFiles : 65536;
        this.maxInFlight = Math.max(16, Math.min(window, threads * 8));
        this.why = why;
    }

    @Override
    public String engineName() {
        return "java";
    }

    @Override
    public String describe() {
        return "engine java (portable NIO reads, " + threads + " threads, arena " + (arena >> 20) + " MiB): " + why;
    }

    @Override
    public boolean isNative() {
        return false;
    }

    /** Packed paths as Paths, one chunk at a time: this engine opens files by Path. */
    @Override
    public FileBatch readChunks(BatchFileReader.PackedPaths paths) {
        return read(() -> new Iterator<Path>() {
            private PathChunk chunk;
            private int pos;
            private boolean done;

            @Override
            public boolean hasNext() {
                while (!done && (chunk == null || pos >= chunk.length())) {
                    chunk = paths.nextChunk();
                    pos = 0;
                    done = chunk == null;
                }
                return !done;
            }

            @Override
            public Path next() {
                if (!hasNext()) {
                    throw new java.util.NoSuchElementException();
                }
                int end = chunk.end(pos);
                Path p = chunk.path(pos, end - pos);
                pos = end + 1;
                return p;
            }
        });
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public synchronized FileBatch read(Iterable<? extends Path> paths) {
        if (batch != null) {
            if (batch.busyElsewhere()) {
                throw new IllegalStateException("another thread is iterating this reader's batch: a reader serves "
                        + "one thread at a time (use one reader per thread)");
            }
            batch.close();
        }
        if (pool == null) {
            int id = POOL_SEQ.incrementAndGet();
            AtomicInteger n = new AtomicInteger();
            pool = Executors.newFixedThreadPool(threads, r -> {
                Thread t = new Thread(r, "bfo-java-read-" + id + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }
        batch = new JavaBatch(Objects.requireNonNull(paths.iterator(), "paths.iterator()"), pool);
        return batch;
    }

    @Override
    public ReadStats lastStats() {
        JavaBatch b = batch;
        return b != null ? b.stats() : last;
    }

    @Override
    public void close() {
        JavaBatch b;
        ExecutorService p;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            b = batch;
            p = pool;
        }
        if (b != null) {
            synchronized (b) {
                b.cancel();
            }
        }
        if (p != null) {
            p.shutdownNow();
        }
    }

    // ------------------------------------------------------------ metadata

    /** What one stat returns. */
    static final class Meta {
        long size, mtimeSec, ctimeSec, atimeSec, ino, dev;
        int mtimeNsec, ctimeNsec, atimeNsec, mode, uid, gid, nlink;

        boolean sameAs(Meta o) {
            return size == o.size && mtimeSec == o.mtimeSec && mtimeNsec == o.mtimeNsec && ctimeSec == o.ctimeSec
                    && ctimeNsec == o.ctimeNsec && ino == o.ino && dev == o.dev;
        }

        boolean regular() {
            return (mode & 0170000) == 0100000;
        }

        boolean symlink() {
            return (mode & 0170000) == 0120000;
        }
    }

    static Meta stat(Path p, boolean follow) throws IOException {
        LinkOption[] lo = follow ? new LinkOption[0] : new LinkOption[] {LinkOption.NOFOLLOW_LINKS};
        Meta m = new Meta();
        if (UNIX) {
            Map<String, Object> a = Files.readAttributes(p, UNIX_ATTRS, lo);
            m.size = (Long) a.get("size");
            setTime(m, 0, (FileTime) a.get("lastModifiedTime"));
            setTime(m, 1, (FileTime) a.get("ctime"));
            setTime(m, 2, (FileTime) a.get("lastAccessTime"));
            m.ino = (Long) a.get("ino");
            m.dev = linuxDev((Long) a.get("dev"));
            m.mode = (Integer) a.get("mode");
            m.uid = (Integer) a.get("uid");
            m.gid = (Integer) a.get("gid");
            m.nlink = (Integer) a.get("nlink");
            return m;
        }
        BasicFileAttributes a = POSIX ? Files.readAttributes(p, PosixFileAttributes.class, lo)
                : Files.readAttributes(p, BasicFileAttributes.class, lo);
        m.size = a.size();
        setTime(m, 0, a.lastModifiedTime());
        setTime(m, 1, a.lastModifiedTime());
        setTime(m, 2, a.lastAccessTime());
        m.ino = a.fileKey() != null ? a.fileKey().hashCode() : 0;
        int type = a.isRegularFile() ? 0100000 : a.isDirectory() ? 0040000 : a.isSymbolicLink() ? 0120000 : 0010000;
        int perm = 0;
        if (a instanceof PosixFileAttributes) {
            Set<PosixFilePermission> ps = ((PosixFileAttributes) a).permissions();
            for (PosixFilePermission x : ps) {
                perm |= 1 << (8 - x.ordinal());
            }
        }
        m.mode = type | perm;
        m.nlink = 1;
        return m;
    }

    /** Linux's dev_t (major in bits 8-19 and 32-43) as major << 32 | minor, like bfo_file.dev. */
    private static long linuxDev(long d) {
        long major = ((d >>> 8) & 0xfff) | ((d >>> 32) & ~0xfffL);
        long minor = (d & 0xff) | ((d >>> 12) & ~0xffL);
        return (major << 32) | (minor & 0xffffffffL);
    }

    private static void setTime(Meta m, int which, FileTime t) {
        Instant i = t.toInstant();
        switch (which) {
            case 0:
                m.mtimeSec = i.getEpochSecond();
                m.mtimeNsec = i.getNano();
                break;
            case 1:
                m.ctimeSec = i.getEpochSecond();
                m.ctimeNsec = i.getNano();
                break;
            default:
                m.atimeSec = i.getEpochSecond();
                m.atimeNsec = i.getNano();
        }
    }

    // ------------------------------------------------------------ memory budget

    /** Bytes of data read and not yet given back; a request larger than the cap runs alone. */
    static final class Budget {
        private final long cap;
        private long used;
        private boolean cancelled;

        Budget(long cap) {
            this.cap = cap;
        }

        synchronized boolean acquire(long n) throws InterruptedException {
            while (!cancelled && used > 0 && used + n > cap) {
                wait();
            }
            if (cancelled) {
                return false;
            }
            used += n;
            return true;
        }

        synchronized void release(long n) {
            used -= n;
            notifyAll();
        }

        synchronized void cancel() {
            cancelled = true;
            notifyAll();
        }
    }

    /** One result on its way to the iterator. */
    static final class Item {
        final long index;
        final Path path;
        final Meta meta;
        final long offset;
        final ByteBuffer data;     // null for failures and metadata-only
        final int status;
        final IOException failure;
        final boolean last;
        final long budget;         // bytes to give back when passed

        Item(long index, Path path, Meta meta, long offset, ByteBuffer data, int status, IOException failure,
             boolean last, long budget) {
            this.index = index;
            this.path = path;
            this.meta = meta;
            this.offset = offset;
            this.data = data;
            this.status = status;
            this.failure = failure;
            this.last = last;
            this.budget = budget;
        }
    }

    // ------------------------------------------------------------ a batch

    final class JavaBatch extends FileBatch {
        private final Iterator<? extends Path> src;
        private final ExecutorService pool;
        private final LinkedBlockingQueue<Item> results = new LinkedBlockingQueue<>();
        private final Budget budget = new Budget(arena);
        private volatile boolean stopped;
        private boolean srcDone;
        private long nextIndex;
        private int inFlight;
        private Item held;
        private final long t0 = System.nanoTime();
        private long tEnd;
        private long files, filesOk, filesFailed, bytes;
        private final AtomicLong ios = new AtomicLong();
        private volatile ReadStats finalStats;

        JavaBatch(Iterator<? extends Path> src, ExecutorService pool) {
            this.src = src;
            this.pool = pool;
        }

        @Override
        long submitted() {
            return nextIndex;
        }

        @Override
        boolean readerClosed() {
            return JavaReadEngine.this.closed;
        }

        void cancel() {
            stopped = true;
            budget.cancel();
        }

        @Override
        FileData advance() {
            if (held != null) {
                budget.release(held.budget);
                held = null;
            }
            for (;;) {
                if (JavaReadEngine.this.closed) {
                    throw new IllegalStateException("BatchFileReader closed");
                }
                if (stopped) {
                    return finish();
                }
                while (!srcDone && inFlight < maxInFlight) {
                    if (!src.hasNext()) {
                        srcDone = true;
                        break;
                    }
                    Path p = src.next();
                    if (p == null) {
                        throw new NullPointerException("null path at index " + nextIndex + " of the batch");
                    }
                    PathBytes.checkDefault(p);
                    long idx = nextIndex++;
                    files++;
                    inFlight++;
                    try {
                        pool.execute(() -> readOne(p, idx));
                    } catch (RejectedExecutionException e) {
                        throw new IllegalStateException("BatchFileReader closed", e);
                    }
                }
                if (inFlight == 0) {
                    return finish();
                }
                Item it;
                try {
                    it = results.poll(200, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for files", e);
                }
                if (it == null) {
                    continue;
                }
                if (it.last) {
                    inFlight--;
                    if (it.status == 0) {
                        filesOk++;
                    } else {
                        filesFailed++;
                    }
                }
                int len = it.data == null ? 0 : it.data.remaining();
                bytes += len;
                held = it;
                Meta m = it.meta;
                FileData fd = new FileData(this, it.path, it.index, it.offset, len, m.size, m.mtimeSec, m.mtimeNsec,
                        m.ctimeSec, m.ctimeNsec, m.atimeSec, m.atimeNsec, m.ino, m.dev, m.mode, m.uid, m.gid, m.nlink,
                        it.status, it.status == 0 && !metadataOnly ? "java" : "none", it.last, noFollow, 0,
                        it.data == null ? ByteBuffer.allocate(0) : it.data, it.failure);
                if (it.status != 0 && stopOnError) {
                    cancel();   // the failed entry is delivered; nothing after it
                }
                return fd;
            }
        }

        private FileData finish() {
            if (finalStats == null) {
                tEnd = System.nanoTime();
                finalStats = snapshot();
                last = finalStats;
            }
            return null;
        }

        private ReadStats snapshot() {
            long total = (tEnd != 0 ? tEnd : System.nanoTime()) - t0;
            long ok, failed;
            synchronized (this) {
                ok = filesOk;
                failed = filesFailed;
            }
            return new ReadStats("java", Set.of("java"), files, ok, failed, bytes, bytes, ios.get(), 0, 0, 0, 0, 0,
                    Duration.ZERO, Duration.ofNanos(total), Duration.ofNanos(total),
                    files == 0 ? Map.of() : Map.of("java", ok + failed), 0);
        }

        @Override
        public ReadStats stats() {
            ReadStats f = finalStats;
            return f != null ? f : snapshot();
        }

        @Override
        void cancelAsync() {
            cancel();
        }

        @Override
        void doClose() {
            cancel();
            held = null;
            results.clear();
            if (batch == this) {
                synchronized (JavaReadEngine.this) {
                    if (batch == this) {
                        batch = null;
                    }
                }
            }
            finish();
        }

        private void put(Item it) {
            if (stopped) {
                if (it.budget > 0) {
                    budget.release(it.budget);
                }
                return;
            }
            results.add(it);
        }

        private void fail(long idx, Path p, Meta m, IOException e, int status) {
            put(new Item(idx, p, m != null ? m : new Meta(), 0, null, status, e, true, 0));
        }

        /** Runs on a pool thread: stat, then the bytes (whole or in pieces), with change detection. */
        private void readOne(Path p, long idx) {
            if (stopped) {
                return;
            }
            Meta m = null;
            try {
                m = stat(p, !noFollow);
                if (noFollow && m.symlink()) {
                    fail(idx, p, m, null, -Errno.ELOOP);
                    return;
                }
                if (!m.regular()) {
                    fail(idx, p, m, null, (m.mode & 0170000) == 0040000 ? -Errno.EISDIR : -Errno.EINVAL);
                    return;
                }
                if (metadataOnly) {
                    put(new Item(idx, p, m, 0, null, 0, null, true, 0));
                    return;
                }
                OpenOption[] oo = noFollow ? new OpenOption[] {StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS}
                        : new OpenOption[] {StandardOpenOption.READ};
                if (m.size <= largeFile) {
                    readWhole(p, idx, m, oo);
                } else {
                    readPieces(p, idx, m, oo);
                }
            } catch (IOException e) {
                int st = Errno.fromException(e);
                fail(idx, p, m, st == -Errno.EIO ? e : null, st);
            } catch (InterruptedException e) {
                // closed: nothing is delivered any more
            } catch (RuntimeException e) {
                fail(idx, p, m, new IOException(e.toString(), e), -Errno.EIO);
            }
        }

        private void readWhole(Path p, long idx, Meta m, OpenOption[] oo) throws IOException, InterruptedException {
            for (int attempt = 0; ; attempt++) {
                long want = m.size;
                if (!budget.acquire(want)) {
                    return;
                }
                boolean handed = false;
                try {
                    ByteBuffer buf = ByteBuffer.allocate((int) want);
                    boolean changed;
                    try (Descriptors.Held<FileChannel> h = Descriptors.open(() -> FileChannel.open(p, oo))) {
                        FileChannel ch = h.get();
                        while (buf.hasRemaining()) {
                            ios.incrementAndGet();
                            if (ch.read(buf) < 0) {
                                break;
                            }
                        }
                        changed = buf.hasRemaining() || ch.read(ByteBuffer.allocate(1)) > 0;
                    }
                    Meta after = changed ? null : stat(p, !noFollow);
                    if (!changed && after.sameAs(m)) {
                        buf.flip();
                        handed = true;
                        put(new Item(idx, p, m, 0, buf, 0, null, true, want));
                        return;
                    }
                    if (attempt >= 2) {
                        fail(idx, p, m, null, -Errno.ESTALE);
                        return;
                    }
                    m = stat(p, !noFollow);
                    if (!m.regular()) {
                        fail(idx, p, m, null, -Errno.EINVAL);
                        return;
                    }
                    if (m.size > largeFile) {
                        budget.release(want);
                        handed = true;
                        readPieces(p, idx, m, oo);
                        return;
                    }
                } finally {
                    if (!handed) {
                        budget.release(want);
                    }
                }
            }
        }

        private void readPieces(Path p, long idx, Meta m, OpenOption[] oo) throws IOException, InterruptedException {
            try (Descriptors.Held<FileChannel> h = Descriptors.open(() -> FileChannel.open(p, oo))) {
                FileChannel ch = h.get();
                long off = 0;
                long size = m.size;
                while (off < size) {
                    if (stopped) {
                        return;
                    }
                    int n = (int) Math.min(largeFile, size - off);
                    if (!budget.acquire(n)) {
                        return;
                    }
                    ByteBuffer buf = ByteBuffer.allocate(n);
                    boolean handed = false;
                    try {
                        while (buf.hasRemaining()) {
                            ios.incrementAndGet();
                            if (ch.read(buf, off + buf.position()) < 0) {
                                break;
                            }
                        }
                        boolean lastPiece = off + n >= size;
                        if (buf.hasRemaining()) {
                            fail(idx, p, m, null, -Errno.ESTALE);   // shrank while read: the pieces so far are void
                            return;
                        }
                        if (lastPiece) {
                            Meta after = stat(p, !noFollow);
                            if (!after.sameAs(m) || ch.size() != size) {
                                fail(idx, p, m, null, -Errno.ESTALE);
                                return;
                            }
                        }
                        buf.flip();
                        handed = true;
                        put(new Item(idx, p, m, off, buf, 0, null, lastPiece, n));
                        off += n;
                    } finally {
                        if (!handed) {
                            budget.release(n);
                        }
                    }
                }
            }
        }
    }
}

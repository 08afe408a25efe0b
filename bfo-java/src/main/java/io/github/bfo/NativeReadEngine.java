/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Objects;

/**
 * A reader on a native context. All native calls of a context go through
 * {@link #enter()}/{@link #exit()} so that {@link #close()} can cancel, wait
 * for the call in progress and only then give the context back to the
 * {@link ContextPool} (which resets or destroys it).
 */
final class NativeReadEngine implements BatchFileReader.Impl {
    /** Entries fetched per bfo_read_wait (and given back per bfo_read_release). */
    static final int WAIT_MAX = 512;
    /**
     * Path bytes per bfo_read_submit_packed, at most (grows for one longer path); a
     * walk's buffer is this size too (the command's), so it goes in one call.
     */
    static final int PATH_BUF = 256 << 10;
    /**
     * Bytes of paths given as Paths in a batch's first submission; each next one may
     * take twice as many, up to PATH_BUF. The library forms its first window (512
     * files) from the first submission, and before the JIT has compiled the packing
     * loop, packing a whole PATH_BUF (10,000 paths) took 10-20 ms, all before the
     * first read. (Packed paths, a walk's or readPacked's, go in whole: no loop.)
     */
    static final int FIRST_SUBMIT = 16 << 10;
    /**
     * Wait timeout: none. bfo_read_cancel (from close()) wakes a waiting
     * thread, and a wait only happens when something is in flight or the
     * batch is finished. (Before libbfo's condition variable waited on
     * CLOCK_MONOTONIC, as its deadline is computed, a positive timeout
     * returned -ETIME at once; t_read_flush now covers timed waits.)
     */
    static final int WAIT_MS = -1;
    /** struct bfo_file in 64-bit words, as entry() reads it. */
    static final int ENTRY_WORDS = BfoNative.FILE_SIZE / 8;
    private static final boolean LITTLE = BfoNative.ORDER == java.nio.ByteOrder.LITTLE_ENDIAN;

    /** The int at byte offset off of the entry at words[base]. */
    static int int32(long[] w, int base, int off) {
        int shift = LITTLE ? (off & 7) * 8 : (4 - (off & 7)) * 8;
        return (int) (w[base + (off >> 3)] >>> shift);
    }

    /** The unsigned short at byte offset off of the entry at words[base]. */
    static int u16(long[] w, int base, int off) {
        int shift = LITTLE ? (off & 7) * 8 : (6 - (off & 7)) * 8;
        return (int) (w[base + (off >> 3)] >>> shift) & 0xffff;
    }

    private final boolean noFollow;
    private final int windowFiles;
    private final String engineAsked;
    private final Object lock = new Object();
    private int active;
    private volatile boolean closed;
    private final ContextPool pool = ContextPool.shared();
    /** Taken from the pool or made; back to the pool on close. */
    private NativeContext context;
    private Pointer ctx;
    private NativeBatch batch;
    private ReadStats last;
    private final ByteBuffer statsBuf = BfoNative.direct(BfoNative.STATS_SIZE);
    private final Pointer statsPtr = BfoNative.pointer(statsBuf);

    NativeReadEngine(BatchFileReader.Builder b) throws IOException {
        Memory o = opts(b);
        NativeContext.Key key = new NativeContext.Key(o.getByteArray(0, BfoNative.OPTS_SIZE));
        NativeContext c = pool.take(key);
        if (c == null) {
            c = create(b, o, key);
        }
        this.context = c;
        this.ctx = c.ptr;
        this.noFollow = b.noFollow;
        this.windowFiles = c.windowFiles;
        this.engineAsked = b.engine.name().toLowerCase();
        this.last = ReadStats.empty("none");
    }

    /** The pool key of a reader made with b. */
    static NativeContext.Key keyOf(BatchFileReader.Builder b) {
        return new NativeContext.Key(opts(b).getByteArray(0, BfoNative.OPTS_SIZE));
    }

    /** struct bfo_opts for b (libbfo's defaults where b leaves 0). */
    private static Memory opts(BatchFileReader.Builder b) {
        Memory o = new Memory(BfoNative.OPTS_SIZE);
        o.clear();
        BfoNative.bfo_opts_init(o);
        int flags = 0;
        if (b.noFollow) {
            flags |= BfoNative.READ_NOFOLLOW;
        }
        if (b.failurePolicy == FailurePolicy.STOP_ON_FIRST_FAILURE) {
            flags |= BfoNative.READ_STOP_ON_ERROR;
        }
        if (b.metadataOnly) {
            flags |= BfoNative.READ_METADATA_ONLY;
        }
        o.setInt(BfoNative.OPTS_flags, flags);
        o.setInt(BfoNative.OPTS_engine, BfoNative.code(b.engine));
        o.setInt(BfoNative.OPTS_order, BfoNative.code(b.order));
        setInt(o, BfoNative.OPTS_window_files, b.windowFiles);
        setInt(o, BfoNative.OPTS_queue_depth, b.queueDepth);
        setInt(o, BfoNative.OPTS_threads, b.threads);
        setLong(o, BfoNative.OPTS_window_bytes, b.windowBytes);
        setLong(o, BfoNative.OPTS_arena_bytes, b.arenaBytes);
        setLong(o, BfoNative.OPTS_merge_gap, b.mergeGap);
        setLong(o, BfoNative.OPTS_max_io, b.maxIo);
        setLong(o, BfoNative.OPTS_large_extent, b.largeExtent);
        setLong(o, BfoNative.OPTS_large_file, b.largeFile);
        return o;
    }

    private static NativeContext create(BatchFileReader.Builder b, Memory o, NativeContext.Key key)
            throws IOException {
        PointerByReference ref = new PointerByReference();
        int r = BfoNative.bfo_ctx_create(ref, o);
        if (r < 0) {
            String what = "cannot start the " + b.engine.name().toLowerCase() + " read engine: " + Errno.text(r);
            if (r == -Errno.EINVAL) {
                throw new IllegalArgumentException(what + " (an option is out of range)");
            }
            if (r == -Errno.EOPNOTSUPP) {
                what += " (io_uring is unavailable here; the portable or auto engine works everywhere)";
            }
            throw new IOException(what);
        }
        return new NativeContext(key, ref.getValue(), o.getInt(BfoNative.OPTS_window_files));
    }

    private static void setInt(Memory m, int off, int v) {
        if (v != 0) {
            m.setInt(off, v);
        }
    }

    private static void setLong(Memory m, int off, long v) {
        if (v != 0) {
            m.setLong(off, v);
        }
    }

    // ------------------------------------------------------------ call guard

    /** Marks a native call on ctx in progress; throws when the reader is closed. */
    Pointer enter() {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("BatchFileReader closed");
            }
            active++;
            return ctx;
        }
    }

    void exit() {
        synchronized (lock) {
            if (--active == 0 && closed) {
                lock.notifyAll();
            }
        }
    }

    @Override
    public boolean isNative() {
        return true;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        Pointer c;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            c = ctx;
        }
        // A thread blocked in bfo_read_wait returns once the batch is cancelled.
        BfoNative.bfo_read_cancel(c);
        boolean interrupted = false;
        synchronized (lock) {
            while (active > 0) {
                try {
                    lock.wait(100);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
                if (active > 0) {
                    BfoNative.bfo_read_cancel(c);   // a batch started meanwhile: cancel it too
                }
            }
        }
        NativeBatch b = batch;
        if (b != null) {
            synchronized (b) {   // no data() view is being made while the memory goes away
                b.closedByReader();
                b.clearRing();
            }
        }
        NativeContext nc;
        synchronized (lock) {
            nc = context;
            context = null;
            ctx = null;
        }
        pool.give(nc);   // reset (the batch drained, held entries released) and kept, or destroyed
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------ reader

    @Override
    public FileBatch read(Iterable<? extends Path> paths) {
        Iterator<? extends Path> it = Objects.requireNonNull(paths.iterator(), "paths.iterator()");
        return start(new NativeBatch(it, null));
    }

    @Override
    public NativeBatch readChunks(BatchFileReader.PackedPaths paths) {
        return start(new NativeBatch(null, paths));
    }

    private NativeBatch start(NativeBatch b) {
        NativeBatch prev = batch;
        if (prev != null) {
            if (prev.busyElsewhere()) {
                throw new IllegalStateException("another thread is iterating this reader's batch: a reader serves "
                        + "one thread at a time (use one reader per thread)");
            }
            prev.close();
        }
        batch = b;
        return b;
    }

    @Override
    public ReadStats lastStats() {
        NativeBatch b = batch;
        return b != null ? b.stats() : last;
    }

    @Override
    public String engineName() {
        return engineAsked;
    }

    @Override
    public String describe() {
        Pointer c = enter();
        try {
            Memory m = new Memory(2048);
            int n = BfoNative.bfo_ctx_describe(c, m, 2048);
            return n < 0 ? "?" : m.getString(0, "UTF-8");
        } finally {
            exit();
        }
    }

    ReadStats fetchStats(Pointer c) {
        synchronized (statsBuf) {
            BfoNative.bfo_read_stats(c, statsPtr);
            return ReadStats.fromNative(statsBuf);
        }
    }

    // ------------------------------------------------------------ a batch

    /**
     * The paths of one chunk of packed paths in a batch: indices [first, first + taken).
     * An entry finds its path here by its index (the chunk's (index - first)-th path),
     * so nothing is recorded per path when the chunk goes to the library.
     */
    private static final class Span {
        final PathChunk chunk;
        final long first;
        int taken;       // paths the library took so far
        int open;        // of those, paths whose last entry was not delivered yet
        boolean whole;   // every path of the chunk taken

        Span(PathChunk chunk, long first) {
            this.chunk = chunk;
            this.first = first;
        }
    }

    final class NativeBatch extends FileBatch {
        private final Iterator<? extends Path> src;       // or
        private final BatchFileReader.PackedPaths packedSrc;
        /** packedSrc's chunks with paths in flight, by first index; the last one is being submitted. */
        private final java.util.ArrayList<Span> spans = new java.util.ArrayList<>();
        private Span current;            // of packedSrc, submitted up to chunkPos
        private int chunkPos;
        /** src's paths in flight: slot index % capacity, from packing until their last entry is delivered. */
        private final Object[] ring;
        private final int mask;
        private long packed;             // paths packed (src) or taken by the library (packedSrc): the next index
        private boolean srcDone;
        private boolean started;         // a batch was begun in the library
        private boolean finished;        // bfo_read_finish called
        private boolean stopped;         // submission refused (-ECANCELED): stop-on-error or cancel
        private boolean ended;           // bfo_read_wait returned 0
        private ByteBuffer pathBuf;
        private Pointer pathPtr;
        private int pathLen;
        private int[] ends = new int[1024];   // end offset (after the NUL) of each packed, unaccepted path
        private int pending;
        private final ByteBuffer entries;
        private final Pointer entriesPtr;
        /** The waited entries copied at once: entry() reads array elements, not a buffer call per field. */
        private final long[] words;
        private final java.nio.LongBuffer entryWords;
        private final ByteBuffer submitStats;
        private final Pointer submitStatsPtr;
        private int count;               // entries in the buffer (held until released)
        private int cursor;
        private ReadStats finalStats;
        private boolean readerGone;

        NativeBatch(Iterator<? extends Path> src, BatchFileReader.PackedPaths packedSrc) {
            this.src = src;
            this.packedSrc = packedSrc;
            // The context's buffers: one batch at a time uses them (a new batch of the reader
            // closes the previous one before it runs).
            NativeContext c = context;
            this.ring = c.ring;
            this.mask = ring.length - 1;
            this.pathBuf = c.pathBuf;
            this.pathPtr = BfoNative.pointer(pathBuf);
            this.entries = c.entries;
            this.entriesPtr = BfoNative.pointer(entries);
            this.words = c.words;
            this.entryWords = entries.asLongBuffer();
            this.submitStats = c.submitStats;
            this.submitStatsPtr = BfoNative.pointer(submitStats);
        }

        /** Paths taken from the input so far (all of it once the batch ended, unless it stopped). */
        @Override
        long submitted() {
            return packed;
        }

        void closedByReader() {
            readerGone = true;
        }

        @Override
        boolean readerClosed() {
            return NativeReadEngine.this.closed;
        }

        @Override
        FileData advance() {
            for (;;) {
                if (NativeReadEngine.this.closed) {
                    throw new IllegalStateException("BatchFileReader closed");
                }
                if (cursor < count) {
                    return entry(cursor++);
                }
                Pointer c = enter();
                try {
                    if (count > 0) {
                        BfoNative.bfo_read_release(c, entriesPtr, count);
                        count = 0;
                        cursor = 0;
                    }
                    if (ended) {
                        return null;
                    }
                    fill(c);
                    int k = BfoNative.bfo_read_wait(c, entriesPtr, WAIT_MAX, WAIT_MS);
                    if (k > 0) {
                        entryWords.get(0, words, 0, k * ENTRY_WORDS);
                        count = k;
                        cursor = 0;
                        continue;
                    }
                    if (k == 0) {
                        end(c);
                        if (NativeReadEngine.this.closed) {
                            throw new IllegalStateException("BatchFileReader closed during the read");
                        }
                        return null;
                    }
                    if (k == -Errno.ETIME) {
                        continue;
                    }
                    if (k == -Errno.EAGAIN) {
                        if (!canSubmit()) {
                            throw new IllegalStateException("internal: the engine waits for paths that cannot be "
                                    + "submitted (" + packed + " packed, ring " + ring.length + ")");
                        }
                        continue;
                    }
                    if (k == -Errno.EINVAL && !started) {
                        throw new IllegalStateException("internal: no batch started");
                    }
                    throw new UncheckedIOException(new IOException("bfo_read_wait: " + Errno.text(k)
                            + (k == -Errno.ENOBUFS ? " (the read arena is full of entries still held)" : "")));
                } finally {
                    exit();
                }
            }
        }

        private boolean canSubmit() {
            if (packedSrc != null) {
                return !finished && !stopped;   // fillPacked submits until the queue is full or the input ends
            }
            return !finished && !stopped && (pending > 0 || ((!srcDone || stash != null)
                    && ring[(int) (packed & mask)] == null));
        }

        /** Packs paths and submits them until the library's queue is full, the ring is full or the input ends. */
        private void fill(Pointer c) {
            if (packedSrc != null) {
                fillPacked(c);
                return;
            }
            while (!finished && !stopped) {
                // pack, in the input's order (a path that did not fit waits in the stash)
                while ((stash != null || !srcDone) && pathLen < packLimit
                        && ring[(int) (packed & mask)] == null) {
                    Path p;
                    byte[] b;
                    if (stash != null) {
                        p = stash;
                        b = stashBytes;
                        stash = null;
                        stashBytes = null;
                    } else {
                        if (!src.hasNext()) {
                            srcDone = true;
                            break;
                        }
                        p = src.next();
                        if (p == null) {
                            throw new NullPointerException("null path at index " + packed + " of the batch");
                        }
                        PathBytes.checkDefault(p);
                        b = PathBytes.of(p);
                        for (byte x : b) {
                            if (x == 0) {
                                throw new IllegalArgumentException("path contains NUL: " + p);
                            }
                        }
                    }
                    if (pathLen + b.length + 1 > pathBuf.capacity()) {
                        if (pending > 0) {
                            stash = p;   // submit what is packed first
                            stashBytes = b;
                            break;
                        }
                        grow(b.length + 1);
                    }
                    put(p, b);
                }
                if (pending == 0) {
                    if (srcDone && stash == null) {
                        finishInput(c);
                    }
                    return;   // ring full or finished
                }
                long r = BfoNative.bfo_read_submit_packed(c, pathPtr, pathLen);
                started = true;
                packLimit = Math.min(PATH_BUF, packLimit * 2);
                if (r == -Errno.ECANCELED) {
                    dropPending();
                    stopped = true;
                    return;
                }
                if (r < 0) {
                    throw new UncheckedIOException(new IOException("bfo_read_submit_packed: " + Errno.text((int) r)));
                }
                int before = pending;
                if (accepted((int) r) < before) {
                    return;   // the library's queue is full: consume results first
                }
            }
        }

        private Path stash;
        private byte[] stashBytes;
        private int packLimit = FIRST_SUBMIT;   // bytes packed before the next submission

        /** No more paths: the batch (begun, if the input had none) is finished. */
        private void finishInput(Pointer c) {
            if (!started) {
                BfoNative.bfo_read_submit(c, Pointer.NULL, 0);   // a batch of no paths
                started = true;
            }
            int r = BfoNative.bfo_read_finish(c);
            if (r < 0 && r != -Errno.EINVAL) {
                throw new UncheckedIOException(new IOException("bfo_read_finish: " + Errno.text(r)));
            }
            finished = true;
        }

        /**
         * fill() for packedSrc: each chunk's bytes go to the library as they are, a
         * buffer at a time, until its queue is full or the input ends. Nothing is done
         * per path here (before, each path was copied and recorded in the ring: for a
         * walk of 100,000 files 30 ms cold before the library had its windows); an
         * entry finds its path through its chunk's Span.
         */
        private void fillPacked(Pointer c) {
            while (!finished && !stopped) {
                if (current == null || current.whole) {
                    PathChunk next = srcDone ? null : packedSrc.nextChunk();
                    if (next == null) {
                        srcDone = true;
                        finishInput(c);
                        return;
                    }
                    packedSrc.shareWith(c);   // the walk's listings before the paths they hold
                    current = new Span(next, packed);
                    current.whole = next.length() == 0;
                    spans.add(current);
                    chunkPos = 0;
                    continue;
                }
                PathChunk ch = current.chunk;
                int end = ch.wholePathsEnd(chunkPos, pathBuf.capacity());
                if (end == chunkPos) {
                    grow(ch.end(chunkPos) + 1 - chunkPos);   // one path longer than the buffer
                    continue;
                }
                pathBuf.put(0, ch.bytes, chunkPos, end - chunkPos);
                long r = BfoNative.bfo_read_submit_packed(c, pathPtr, end - chunkPos);
                started = true;
                if (r == -Errno.ECANCELED) {
                    stopped = true;
                    return;
                }
                if (r < 0) {
                    throw new UncheckedIOException(new IOException("bfo_read_submit_packed: " + Errno.text((int) r)));
                }
                taken(c, (int) r);
                if (chunkPos < end) {
                    return;   // the library's queue is full: consume results first
                }
            }
        }

        /** The library took the next `bytes` bytes of the current chunk: its paths are in flight. */
        private void taken(Pointer c, int bytes) {
            chunkPos += bytes;
            // how many paths those bytes held: the batch's count of paths submitted, not a scan here
            BfoNative.bfo_read_stats(c, submitStatsPtr);
            long total = submitStats.getLong(BfoNative.STATS_files);
            int n = (int) (total - packed);
            packed = total;
            current.taken += n;
            current.open += n;
            if (chunkPos == current.chunk.length()) {
                current.whole = true;
                retireIfDone(current);
            }
        }

        /** The span holding index (the last whose first is at most index), or null. */
        private Span spanOf(long index) {
            int lo = 0, hi = spans.size() - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                if (spans.get(mid).first <= index) {
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            Span sp = hi >= 0 ? spans.get(hi) : null;
            return sp != null && index < sp.first + sp.taken ? sp : null;
        }

        /** Forgets a chunk once all of its paths went in and were delivered (entries keep what they need). */
        private void retireIfDone(Span sp) {
            if (sp.whole && sp.open == 0) {
                spans.remove(sp);
            }
        }

        private void put(Path p, byte[] b) {
            pathBuf.put(pathLen, b);
            pathBuf.put(pathLen + b.length, (byte) 0);
            record((int) (packed & mask), p, b.length + 1);
        }

        /** The path p of slot packed as the buffer's next `bytes` bytes. */
        private void record(int slot, Path p, int bytes) {
            pathLen += bytes;
            if (pending == ends.length) {
                ends = Arrays.copyOf(ends, pending * 2);
            }
            ends[pending++] = pathLen;
            ring[slot] = p;
            packed++;
        }

        private void grow(int need) {
            int cap = Math.max(pathBuf.capacity() * 2, pathLen + need);
            ByteBuffer nb = BfoNative.direct(cap);
            pathBuf.position(0).limit(pathLen);
            nb.put(pathBuf);
            pathBuf.clear();
            pathBuf = nb;
            pathPtr = BfoNative.pointer(nb);
            context.pathBuf = nb;   // kept grown for the context's next batches
        }

        /** The library took `bytes` bytes (whole paths): drop them from the buffer; returns how many paths. */
        private int accepted(int bytes) {
            int k = 0;
            while (k < pending && ends[k] <= bytes) {
                k++;
            }
            if (k == 0) {
                return 0;
            }
            int rest = pathLen - bytes;
            pathBuf.limit(pathLen).position(bytes);
            pathBuf.compact();   // moves [bytes, pathLen) to the front
            pathBuf.clear();
            pathLen = rest;
            for (int i = k; i < pending; i++) {
                ends[i - k] = ends[i] - bytes;
            }
            int taken = k;
            pending -= k;
            return taken;
        }

        /** Paths packed but never accepted: they will not be delivered. */
        private void dropPending() {
            for (int i = 0; i < pending; i++) {
                ring[(int) ((packed - pending + i) & mask)] = null;
            }
            pending = 0;
            pathLen = 0;
        }

        private FileData entry(int i) {
            long[] w = words;
            int base = i * ENTRY_WORDS;
            long index = w[base + BfoNative.FILE_index / 8];
            boolean last = (u16(w, base, BfoNative.FILE_flags) & BfoNative.FILE_LAST) != 0;
            Path p = null;
            PathChunk raw = null;
            int ordinal = 0;
            if (packedSrc != null) {
                Span sp = spanOf(index);
                if (sp != null) {
                    raw = sp.chunk;
                    ordinal = (int) (index - sp.first);
                    if (last) {
                        sp.open--;
                        retireIfDone(sp);
                    }
                }
            } else {
                int slot = (int) (index & mask);
                p = (Path) ring[slot];
                if (last) {
                    ring[slot] = null;
                }
            }
            if (p == null && raw == null) {
                // cannot happen: every delivered index was submitted and is in flight
                Pointer np = new Pointer(w[base + BfoNative.FILE_path / 8]);
                p = PathBytes.toPath(np.getByteArray(0, (int) np.indexOf(0, (byte) 0)));
            }
            int engine = u16(w, base, BfoNative.FILE_engine);
            return new FileData(this, p, raw, ordinal, index, w[base + BfoNative.FILE_offset / 8],
                    w[base + BfoNative.FILE_length / 8], w[base + BfoNative.FILE_size / 8],
                    w[base + BfoNative.FILE_mtime_sec / 8], int32(w, base, BfoNative.FILE_mtime_nsec),
                    w[base + BfoNative.FILE_ctime_sec / 8], int32(w, base, BfoNative.FILE_ctime_nsec),
                    w[base + BfoNative.FILE_atime_sec / 8], int32(w, base, BfoNative.FILE_atime_nsec),
                    w[base + BfoNative.FILE_ino / 8], w[base + BfoNative.FILE_dev / 8],
                    int32(w, base, BfoNative.FILE_mode), int32(w, base, BfoNative.FILE_uid),
                    int32(w, base, BfoNative.FILE_gid), int32(w, base, BfoNative.FILE_nlink),
                    int32(w, base, BfoNative.FILE_status),
                    BfoNative.engineName(engine), last, noFollow,
                    w[base + BfoNative.FILE_data / 8], null, null);
        }

        private void end(Pointer c) {
            ended = true;
            finalStats = fetchStats(c);
            last = finalStats;
            clearRing();
            spans.clear();   // the iterating thread's (clearRing may run on another)
        }

        /** Empties the slots this batch used (at most the ring), for the context's next batch. */
        void clearRing() {
            for (long i = Math.max(0, packed - ring.length); i < packed; i++) {
                ring[(int) (i & mask)] = null;
            }
        }

        @Override
        public ReadStats stats() {
            if (finalStats != null) {
                return finalStats;
            }
            Pointer c;
            try {
                c = enter();
            } catch (IllegalStateException e) {
                return last;
            }
            try {
                return fetchStats(c);
            } finally {
                exit();
            }
        }

        @Override
        void cancelAsync() {
            Pointer c;
            try {
                c = enter();
            } catch (IllegalStateException e) {
                return;
            }
            try {
                if (batch == this && started && !ended) {
                    BfoNative.bfo_read_cancel(c);   // thread-safe; the iterating thread drains
                }
            } finally {
                exit();
            }
        }

        @Override
        void doClose() {
            if (batch == this) {
                batch = null;
            }
            if (readerGone || NativeReadEngine.this.closed) {
                return;
            }
            Pointer c;
            try {
                c = enter();
            } catch (IllegalStateException e) {
                return;
            }
            try {
                if (count > 0) {
                    BfoNative.bfo_read_release(c, entriesPtr, count);
                    count = 0;
                    cursor = 0;
                }
                if (started && !ended) {
                    BfoNative.bfo_read_cancel(c);
                    for (;;) {
                        int k = BfoNative.bfo_read_wait(c, entriesPtr, WAIT_MAX, WAIT_MS);
                        if (k > 0) {
                            BfoNative.bfo_read_release(c, entriesPtr, k);
                        } else if (k == -Errno.ETIME) {
                            continue;
                        } else {
                            break;
                        }
                    }
                    end(c);
                }
            } finally {
                exit();
                clearRing();
                spans.clear();
            }
        }
    }
}

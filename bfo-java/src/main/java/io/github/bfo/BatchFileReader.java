/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * Reads many files as batches with few large, sorted I/Os (libbfo's BFO_r):
 * the metadata of a window of files first, then their data in an order
 * chosen for the device, windows pipelined.
 *
 * <pre>{@code
 * try (BatchFileReader reader = BatchFileReader.builder().build();
 *      FileBatch batch = reader.read(paths)) {
 *     for (FileData f : batch) {
 *         if (f.isOk()) consume(f.path(), f.data());      // valid until the next hasNext()/next()
 *         else log(f.failure());                           // NoSuchFileException, AccessDeniedException...
 *     }
 *     System.out.println(batch.stats());
 * }
 * }</pre>
 *
 * <p>{@link #read(Iterable)} streams the paths in: it submits them in
 * windows as the engine accepts them and keeps only the paths in flight, so
 * a batch of 1,000,000 paths (or an endless iterator) runs in bounded heap
 * and native memory. Entries come back in completion order. Files above
 * {@code largeFile} bytes come as pieces (see {@link FileData}).
 *
 * <p>Engines: the native ones (auto, raw, uring, portable) need libbfo;
 * where it cannot load, {@link Engine#AUTO} and {@link Engine#PORTABLE} fall
 * back to the pure-Java engine (NIO reads on a small thread pool, bounded
 * memory), whose statistics say engine "java" (see {@link Bfo}).
 *
 * <p><b>Thread safety:</b> one batch at a time per reader, driven by one
 * thread: {@code read} is not to be called concurrently from several threads
 * (use one reader per thread), and starting a new {@code read} ends the
 * previous batch. {@link #close()} is safe from any thread at any time, also
 * while another thread is blocked in the iteration: the read is cancelled,
 * the in-flight native call is waited for, then the native context is freed;
 * the iterating thread then gets {@link IllegalStateException}, and
 * {@link FileData#data()} of entries obtained earlier throws it too.
 */
public final class BatchFileReader implements AutoCloseable {

    /** The data engine (native {@code enum bfo_engine}, plus the pure-Java one). */
    public enum Engine {
        /** The best available: raw where the block device is readable, else uring, else portable; Java without libbfo. */
        AUTO,
        /** O_DIRECT reads of merged regions from the block device (needs read access to it); native only. */
        RAW,
        /** Per-file reads through io_uring at high queue depth; native only. */
        URING,
        /** libbfo's thread pool of pread() calls; the Java engine without libbfo. */
        PORTABLE,
        /** The pure-Java engine (NIO), even where libbfo is available. */
        JAVA
    }

    /** The order in which the uring and portable engines read files (native {@code enum bfo_order}). */
    public enum Order {
        /** Physical order (FIEMAP) on rotational devices, inode order elsewhere. */
        AUTO,
        INODE,
        PHYSICAL
    }

    /** Builder; every numeric option left at 0 means the library's default. Not thread-safe. */
    public static final class Builder {
        Engine engine = Engine.AUTO;
        Order order = Order.AUTO;
        int windowFiles, queueDepth, threads;
        long windowBytes, arenaBytes, mergeGap, maxIo, largeExtent, largeFile;
        boolean noFollow, metadataOnly;
        FailurePolicy failurePolicy = FailurePolicy.PERFORM_ALL;

        Builder() {
        }

        public Builder engine(Engine e) {
            this.engine = Objects.requireNonNull(e, "engine");
            return this;
        }

        public Builder order(Order o) {
            this.order = Objects.requireNonNull(o, "order");
            return this;
        }

        /** Files planned together (phase 1); default 65,536, at most 1,048,576. */
        public Builder windowFiles(int n) {
            this.windowFiles = range("windowFiles", n, 0, 1 << 20);
            return this;
        }

        /** Data bytes dispatched together (phase 2); default 16 MiB, at most a quarter of arenaBytes. */
        public Builder windowBytes(long n) {
            this.windowBytes = nonNegative("windowBytes", n);
            return this;
        }

        /** Memory that holds delivered data; default 64 MiB, at least 1 MiB. */
        public Builder arenaBytes(long n) {
            if (n != 0 && n < (1 << 20)) {
                throw new IllegalArgumentException("arenaBytes must be at least 1 MiB (or 0 for the default): " + n);
            }
            this.arenaBytes = nonNegative("arenaBytes", n);
            return this;
        }

        /** Raw engine: read through gaps up to this size (1: adjacent extents only); default 64 KiB. */
        public Builder mergeGap(long n) {
            this.mergeGap = nonNegative("mergeGap", n);
            return this;
        }

        /** Raw engine: largest single read, a multiple of 4096 between 4 KiB and 64 MiB; default 1 MiB. */
        public Builder maxIo(long n) {
            if (n != 0 && (n < 4096 || n > (64L << 20) || n % 4096 != 0)) {
                throw new IllegalArgumentException("maxIo must be a multiple of 4096 between 4 KiB and 64 MiB: " + n);
            }
            this.maxIo = nonNegative("maxIo", n);
            return this;
        }

        /** Raw engine: extents above this are read on their own; default 1 MiB. */
        public Builder largeExtent(long n) {
            this.largeExtent = nonNegative("largeExtent", n);
            return this;
        }

        /**
         * Files above this are delivered in pieces of this size; default 16 MiB, at least 4 KiB, at most 1 GiB
         * (a piece is one ByteBuffer) and arenaBytes/8.
         */
        public Builder largeFile(long n) {
            if (n != 0 && (n < 4096 || n > (1L << 30))) {
                throw new IllegalArgumentException("largeFile must be between 4096 and 1 GiB (or 0 for the default): "
                        + n);
            }
            this.largeFile = nonNegative("largeFile", n);
            return this;
        }

        /** Reads in flight in phase 2; default 128, at most 4096. */
        public Builder queueDepth(int n) {
            this.queueDepth = range("queueDepth", n, 0, 4096);
            return this;
        }

        /** Metadata and portable-engine threads; default 16 (Java engine: 8), at most 256. */
        public Builder threads(int n) {
            this.threads = range("threads", n, 0, 256);
            return this;
        }

        /** Refuse symbolic links (their entries fail with "is a symbolic link") instead of following them. */
        public Builder noFollow(boolean b) {
            this.noFollow = b;
            return this;
        }

        public Builder failurePolicy(FailurePolicy p) {
            this.failurePolicy = Objects.requireNonNull(p, "failurePolicy");
            return this;
        }

        /** Phase 1 only: entries carry metadata (size, times, owner...) and no data. */
        public Builder metadataOnly(boolean b) {
            this.metadataOnly = b;
            return this;
        }

        /**
         * Makes the reader: a native context (threads, io_uring instance,
         * arena) or the Java engine.
         *
         * @throws IOException when the engine asked for cannot run here
         *                     (RAW or URING without libbfo or io_uring...)
         */
        public BatchFileReader build() throws IOException {
            if (engine == Engine.JAVA) {
                return new BatchFileReader(new JavaReadEngine(this, "java engine requested"), noFollow);
            }
            if (!BfoNative.available()) {
                if (engine == Engine.RAW || engine == Engine.URING) {
                    throw new IOException("the " + engine.name().toLowerCase() + " engine needs libbfo, which is not "
                            + "available: " + BfoNative.unavailableReason());
                }
                Bfo.logFallbackOnce();
                return new BatchFileReader(new JavaReadEngine(this, BfoNative.unavailableReason()), noFollow);
            }
            return new BatchFileReader(new NativeReadEngine(this), noFollow);
        }

        private static int range(String what, int n, int min, int max) {
            if (n < min || n > max) {
                throw new IllegalArgumentException(what + " must be between " + min + " and " + max + ": " + n);
            }
            return n;
        }

        private static long nonNegative(String what, long n) {
            if (n < 0) {
                throw new IllegalArgumentException(what + " must not be negative: " + n);
            }
            return n;
        }
    }

    /**
     * Paths already in the kernel's bytes, NUL-terminated and packed (libbfo's
     * walk hands them out so, and {@link #readPacked} takes them so): the
     * native engine gives them to the library as they are, and a delivered
     * entry makes its Path only when asked (a listing of 100,000 files then
     * builds no Path and encodes nothing per file in Java).
     */
    interface PackedPaths {
        /** The next whole paths, each NUL-terminated, none empty; null at the end. */
        PathChunk nextChunk();

        /**
         * Hands what the source learnt of the paths given so far (the tree walk's directory listings) to the
         * native context ctx that is to read them; called before they are submitted.
         */
        default void shareWith(com.sun.jna.Pointer ctx) {
        }
    }

    /** The engines behind a reader. */
    interface Impl {
        FileBatch read(Iterable<? extends Path> paths);

        /** A batch over packed paths; its {@link FileBatch#submitted()} counts those taken. */
        FileBatch readChunks(PackedPaths paths);

        boolean isNative();

        ReadStats lastStats();

        String describe();

        String engineName();

        void close();

        boolean isClosed();
    }

    private final Impl impl;
    private final boolean noFollow;

    private BatchFileReader(Impl impl, boolean noFollow) {
        this.impl = impl;
        this.noFollow = noFollow;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts a batch over paths (read lazily, as the engine takes them) and
     * returns its entries as they complete. Starting a batch ends the
     * previous one of this reader.
     *
     * @throws NullPointerException  paths is null (a null element is reported when reached)
     * @throws IllegalStateException the reader is closed
     */
    public FileBatch read(Iterable<? extends Path> paths) {
        Objects.requireNonNull(paths, "paths");
        if (impl.isClosed()) {
            throw new IllegalStateException("BatchFileReader closed");
        }
        return impl.read(paths);
    }

    /** {@link #read(Iterable)} over a stream of paths (consumed lazily; closed with the batch's stream only by you). */
    public FileBatch read(Stream<? extends Path> paths) {
        Objects.requireNonNull(paths, "paths");
        return read((Iterable<Path>) () -> paths.map(p -> (Path) p).iterator());
    }

    /**
     * Reads every regular file beneath roots (a root that is a file is read
     * itself) without a stat per entry in Java (unlike {@code Files.walk},
     * which costs a serial lstat per entry on a cold tree). With libbfo the
     * tree is listed by libbfo's parallel walk (inode numbers and types
     * come with the listing) and files go to the engine in inode order, a
     * sort buffer of 262,144 at a time, in one batch: the order
     * {@code bfo read DIR} uses, close to disk order on ext4 and XFS. With
     * the Java engine, level by level (each level one batch; the engine
     * tells files from directories). Directories, special files, dangling
     * links and links to directories are skipped (links to files are read
     * unless {@code noFollow}); a directory that cannot be listed is a
     * failed entry. {@link FileData#index()} counts over the whole walk.
     *
     * @throws IllegalStateException the reader is closed
     */
    public FileBatch readTree(Path... roots) {
        Objects.requireNonNull(roots, "roots");
        List<Path> rs = new java.util.ArrayList<>();
        for (Path r : roots) {
            PathBytes.checkDefault(Objects.requireNonNull(r, "root"));
            rs.add(r);
        }
        if (impl.isClosed()) {
            throw new IllegalStateException("BatchFileReader closed");
        }
        return new TreeBatch(this, rs, noFollow);
    }

    /**
     * Starts a batch over paths given as the bytes the kernel sees, each
     * NUL-terminated, laid end to end in packed (as {@code find -print0}
     * writes them, and as libbfo takes them): no Path is made or encoded per
     * file, so a batch of many small files costs little besides its I/O.
     * {@link FileData#index()} is the position of the path in packed, and
     * {@link FileData#path()} is made only when asked. packed is read as the
     * engine takes paths: do not change it until the batch ends.
     *
     * @throws NullPointerException     packed is null
     * @throws IllegalArgumentException packed is not whole paths (an empty path, or no NUL after the last)
     * @throws IllegalStateException    the reader is closed
     */
    public FileBatch readPacked(byte[] packed) {
        PathChunk chunk = new PathChunk(Objects.requireNonNull(packed, "packed"));
        int empty = chunk.firstEmpty();
        if (empty >= 0) {
            throw new IllegalArgumentException("empty path at index " + chunk.countBefore(empty) + " (byte " + empty
                    + ")");
        }
        if (packed.length > 0 && packed[packed.length - 1] != 0) {
            throw new IllegalArgumentException("the last path (index " + chunk.countBefore(packed.length)
                    + ") is not NUL-terminated");
        }
        if (impl.isClosed()) {
            throw new IllegalStateException("BatchFileReader closed");
        }
        boolean[] taken = {packed.length == 0};
        return impl.readChunks(() -> {
            if (taken[0]) {
                return null;
            }
            taken[0] = true;
            return chunk;
        });
    }

    /** A batch over chunks of packed paths (TreeBatch's walk). */
    FileBatch readChunks(PackedPaths paths) {
        if (impl.isClosed()) {
            throw new IllegalStateException("BatchFileReader closed");
        }
        return impl.readChunks(paths);
    }

    boolean isClosedInternal() {
        return impl.isClosed();
    }

    /** Statistics of the last (or current) batch. */
    public ReadStats lastStats() {
        return impl.lastStats();
    }

    /** "raw", "uring", "portable", "auto" (the engine asked for; see ReadStats for what ran) or "java". */
    public String engine() {
        return impl.engineName();
    }

    /** True when the native library serves this reader. */
    public boolean isNative() {
        return impl.isNative();
    }

    /** A human-readable line about the engines this reader can use (bfo_ctx_describe), or why it runs in Java. */
    public String describe() {
        return impl.describe();
    }

    /**
     * Cancels a batch in flight (from any thread), waits for the native call
     * in progress to return, and frees everything. Idempotent.
     */
    @Override
    public void close() {
        impl.close();
    }
}

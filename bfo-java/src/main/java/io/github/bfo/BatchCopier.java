/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.CallbackReference;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;

/**
 * Copies trees ({@code bfo cp}, libbfo's BFO_m): the read engine on the
 * sources piped into a writer on the destination, both at once, with
 * bounded memory; regular files stream out of the read engine in disk
 * order, directories, links and special files come from the walk.
 *
 * <pre>{@code
 * try (BatchCopier c = BatchCopier.builder().archive(true).build()) {
 *     CopyResult r = c.copy(List.of(src), dst);   // like cp -a src dst
 *     r.orThrow();
 * }
 * }</pre>
 *
 * <p>Destination rules are cp's: with several sources, or when the target
 * is an existing directory, each source is copied to
 * {@code target/basename(source)}; otherwise the one source becomes the
 * target. {@code archive} keeps what {@code cp -a} keeps (mode bits, owner
 * and group as root, atime/mtime, symbolic links, hard links, empty
 * directories, FIFOs, sockets' nodes and device nodes, xattrs where both
 * sides can); without it the copy is like {@code cp -r} (symbolic links stay
 * links, modes less the umask, current times). An existing destination file is an error
 * (FileAlreadyExistsException) unless {@code replace}.
 *
 * <p>Without libbfo a pure-Java engine (a walk of the sources, each entry
 * made as the Java writer makes it; no FIFOs, sockets or device nodes, no xattrs)
 * serves the same API; its stats say "java".
 *
 * <p><b>A destination other users can write.</b> No symbolic link in the
 * destination is followed and no mode, owner or time is applied to a file
 * the copy did not make. The Java engine restores owners (as root),
 * permission bits and times through descriptors, but set-id and sticky bits
 * only where no other user can write the destination's path: elsewhere such
 * a file is a failure (AccessDeniedException, "Operation not permitted",
 * nothing at its path), a symbolic link keeps the owner it was made with,
 * and a directory that existed before the copy keeps its metadata (a
 * failure too). For {@code cp -a} of set-id files as root into such a
 * directory, use the native engine. See the bfo-java README.
 *
 * <p><b>Thread safety:</b> thread-safe; runs are serialised (one at a time
 * per copier). {@link #cancel()} and {@link #close()} may be called from any
 * thread: close cancels a running copy, waits for it to return (its
 * {@code copy} throws {@link CancellationException}) and frees the copier.
 */
public final class BatchCopier implements AutoCloseable {

    /** Builder. Not thread-safe. */
    public static final class Builder {
        boolean archive, replace;
        BatchFileWriter.Durability durability = BatchFileWriter.Durability.BATCH;
        BatchFileReader.Engine readEngine = BatchFileReader.Engine.AUTO;
        BatchFileWriter.Engine writeEngine = BatchFileWriter.Engine.AUTO;
        long arenaBytes;
        int threads;
        CopyListener listener;

        Builder() {
        }

        /** Like cp -a (see the class comment); default off (cp -r). */
        public Builder archive(boolean b) {
            this.archive = b;
            return this;
        }

        /** Replace existing destination files; default off. */
        public Builder replace(boolean b) {
            this.replace = b;
            return this;
        }

        public Builder durability(BatchFileWriter.Durability d) {
            this.durability = Objects.requireNonNull(d, "durability");
            return this;
        }

        /** The read engine on the sources; JAVA selects the pure-Java copier. */
        public Builder readEngine(BatchFileReader.Engine e) {
            this.readEngine = Objects.requireNonNull(e, "readEngine");
            return this;
        }

        /** The writer engine on the destination; JAVA selects the pure-Java copier. */
        public Builder writeEngine(BatchFileWriter.Engine e) {
            this.writeEngine = Objects.requireNonNull(e, "writeEngine");
            return this;
        }

        /** The read arena (a writer batch holds at most a quarter of it); 0: default (64 MiB), else at least 1 MiB. */
        public Builder arenaBytes(long n) {
            if (n != 0 && n < (1 << 20)) {
                throw new IllegalArgumentException("arenaBytes must be at least 1 MiB (or 0): " + n);
            }
            this.arenaBytes = n;
            return this;
        }

        /** Read and write worker threads (0: defaults), at most 256. */
        public Builder threads(int n) {
            if (n < 0 || n > 256) {
                throw new IllegalArgumentException("threads must be between 0 and 256: " + n);
            }
            this.threads = n;
            return this;
        }

        /** Progress and error listener (may be null). */
        public Builder listener(CopyListener l) {
            this.listener = l;
            return this;
        }

        /**
         * @throws IOException a native engine asked for cannot run here
         */
        public BatchCopier build() throws IOException {
            boolean java = readEngine == BatchFileReader.Engine.JAVA || writeEngine == BatchFileWriter.Engine.JAVA;
            if (!java && !BfoNative.available()) {
                if (readEngine == BatchFileReader.Engine.RAW || readEngine == BatchFileReader.Engine.URING
                        || writeEngine == BatchFileWriter.Engine.STEM || writeEngine == BatchFileWriter.Engine.URING) {
                    throw new IOException("the engines asked for need libbfo, which is not available: "
                            + BfoNative.unavailableReason());
                }
                Bfo.logFallbackOnce();
                java = true;
            }
            return new BatchCopier(this, java);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    private final Builder cfg;
    private final CopyListener listener;
    private final Object lock = new Object();
    private boolean running, closed;
    private volatile boolean cancelRequested;
    // native
    private Pointer copier;
    private final BfoNative.ErrorCallback errorCb;
    private final BfoNative.ProgressCallback progressCb;
    private Memory callbacks;
    private Memory nativeRo, nativeWo;
    private int nativeFlags;
    private IOException replaceFailure;   // the copier could not be made again after a cancel
    // per run (native callbacks land here)
    private List<IOException> runFailures;
    private Throwable listenerFailure;
    // java
    private final JavaCopier javaCopier;

    private BatchCopier(Builder b, boolean java) throws IOException {
        this.cfg = b;
        this.listener = b.listener;
        if (java) {
            this.javaCopier = new JavaCopier(b);
            this.errorCb = null;
            this.progressCb = null;
            return;
        }
        this.javaCopier = null;
        this.errorCb = this::onError;
        this.progressCb = this::onProgress;
        Memory ro = new Memory(BfoNative.OPTS_SIZE);
        ro.clear();
        BfoNative.bfo_opts_init(ro);
        ro.setInt(BfoNative.OPTS_engine, BfoNative.code(b.readEngine));
        if (b.arenaBytes != 0) {
            ro.setLong(BfoNative.OPTS_arena_bytes, b.arenaBytes);
        }
        if (b.threads != 0) {
            ro.setInt(BfoNative.OPTS_threads, b.threads);
        }
        Memory wo = new Memory(BfoNative.WOPTS_SIZE);
        wo.clear();
        wo.setInt(BfoNative.WOPTS_size, BfoNative.WOPTS_SIZE);
        wo.setInt(BfoNative.WOPTS_engine, BfoNative.code(b.writeEngine));
        wo.setInt(BfoNative.WOPTS_durability, BfoNative.code(b.durability));
        wo.setInt(BfoNative.WOPTS_threads, b.threads);
        // The callbacks are referenced from native memory: this object keeps them (and their thunks) alive.
        callbacks = new Memory(BfoNative.CB_SIZE);
        callbacks.clear();
        callbacks.setPointer(BfoNative.CB_error, CallbackReference.getFunctionPointer(errorCb));
        callbacks.setPointer(BfoNative.CB_progress, CallbackReference.getFunctionPointer(progressCb));
        nativeRo = ro;
        nativeWo = wo;
        nativeFlags = (b.archive ? BfoNative.COPY_ARCHIVE : 0) | (b.replace ? BfoNative.COPY_REPLACE : 0);
        copier = newCopier();
    }

    private Pointer newCopier() throws IOException {
        PointerByReference ref = new PointerByReference();
        int r = BfoNative.bfo_copier_create(ref, nativeRo, nativeWo, nativeFlags, callbacks);
        if (r < 0) {
            throw new IOException("cannot create a copier: " + Errno.text(r));
        }
        return ref.getValue();
    }

    /*
     * A cancel that lands after the native run returned stays with the
     * native copier for its next run (libbfo keeps a cancel made between
     * runs, so that a signal before a run is not lost); this copier's
     * cancel() means the run that was going on, so such a copier is
     * replaced.  Under lock, the run over.
     */
    private void replaceCancelledCopier() {
        if (!cancelRequested || copier == null || closed) {
            return;
        }
        BfoNative.bfo_copier_destroy(copier);
        copier = null;
        try {
            copier = newCopier();
        } catch (IOException e) {
            replaceFailure = e;
        }
    }

    /** True when libbfo serves this copier. */
    public boolean isNative() {
        return javaCopier == null;
    }

    private void onError(Pointer arg, Pointer path, int status) {
        try {
            byte[] b = path == null ? new byte[0] : path.getByteArray(0, (int) path.indexOf(0, (byte) 0));
            Path p = PathBytes.toPath(b);
            IOException e = Errno.forCopy(status, p.toString());
            runFailures.add(e);
            if (listener != null && listenerFailure == null) {
                listener.error(p, e);
            }
        } catch (Throwable t) {
            failListener(t);
        }
    }

    private void onProgress(Pointer arg, Pointer stats) {
        if (listener == null || listenerFailure != null) {
            return;
        }
        try {
            listener.progress(CopyStats.fromNative(stats));
        } catch (Throwable t) {
            failListener(t);
        }
    }

    private void failListener(Throwable t) {
        if (listenerFailure == null) {
            listenerFailure = t;
            BfoNative.bfo_copier_cancel(copier);
        }
    }

    /**
     * Copies sources to target (cp's rules, see the class comment) and makes
     * the copy durable as configured. Blocks until done.
     *
     * @return statistics and one exception per failed entry
     * @throws IOException           the copy could not run at all (several sources and the target is not a
     *                               directory: NotDirectoryException; the destination is not writable...)
     * @throws CancellationException {@link #cancel()} or {@link #close()} stopped it (files already written stay,
     *                               none is left torn)
     */
    public CopyResult copy(List<Path> sources, Path target) throws IOException {
        Objects.requireNonNull(sources, "sources");
        Objects.requireNonNull(target, "target");
        if (sources.isEmpty()) {
            throw new IllegalArgumentException("no sources");
        }
        if (sources.size() > 65535) {
            throw new IllegalArgumentException("at most 65,535 sources per copy: " + sources.size());
        }
        for (int i = 0; i < sources.size(); i++) {
            Path s = Objects.requireNonNull(sources.get(i), "source " + i);
            PathBytes.checkDefault(s);
        }
        PathBytes.checkDefault(target);
        synchronized (lock) {
            while (running && !closed) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CancellationException("interrupted while waiting for another copy");
                }
            }
            if (closed) {
                throw new IllegalStateException("BatchCopier closed");
            }
            running = true;
            cancelRequested = false;
        }
        try {
            if (javaCopier != null) {
                return javaCopier.copy(sources, target, listener, () -> cancelRequested);
            }
            return runNative(sources, target);
        } finally {
            synchronized (lock) {
                if (javaCopier == null) {
                    replaceCancelledCopier();
                }
                running = false;
                lock.notifyAll();
            }
        }
    }

    private CopyResult runNative(List<Path> sources, Path target) throws IOException {
        int n = sources.size();
        List<byte[]> bs = new ArrayList<>(n);
        long bytes = 8L * n;
        for (Path s : sources) {
            byte[] b = PathBytes.of(s);
            bs.add(b);
            bytes += b.length + 1;
        }
        Memory srcs = new Memory(bytes);
        long off = 8L * n;
        for (int i = 0; i < n; i++) {
            byte[] b = bs.get(i);
            srcs.write(off, b, 0, b.length);
            srcs.setByte(off + b.length, (byte) 0);
            srcs.setPointer(8L * i, srcs.share(off));
            off += b.length + 1;
        }
        Memory dst = BfoNative.cString(PathBytes.of(target));
        if (copier == null) {
            throw new IOException("cannot create a copier after a cancel", replaceFailure);
        }
        runFailures = new ArrayList<>();
        listenerFailure = null;
        if (cancelRequested) {
            throw new CancellationException("copy cancelled");
        }
        int r = BfoNative.bfo_copier_run(copier, srcs, n, dst);
        Memory st = new Memory(BfoNative.CSTATS_SIZE);
        st.clear();
        BfoNative.bfo_copier_stats(copier, st);
        CopyStats stats = CopyStats.fromNative(st);
        List<IOException> failures = runFailures;
        runFailures = null;
        if (listenerFailure != null) {
            Throwable t = listenerFailure;
            listenerFailure = null;
            if (t instanceof RuntimeException) {
                throw (RuntimeException) t;
            }
            if (t instanceof Error) {
                throw (Error) t;
            }
            throw new IOException("copy listener failed", t);
        }
        if (r == -Errno.ECANCELED) {
            throw new CancellationException("copy cancelled (" + stats.files() + " files copied)");
        }
        if (r < 0) {
            if (r == -Errno.ENOTDIR && n > 1) {
                throw new java.nio.file.NotDirectoryException(target.toString());
            }
            throw Errno.generic(r, target.toString(), null);
        }
        return new CopyResult(stats, failures);
    }

    /** Makes a running copy stop soon (it throws CancellationException); no effect when none runs. */
    public void cancel() {
        synchronized (lock) {
            if (!running) {
                return;
            }
            cancelRequested = true;
            if (copier != null) {
                BfoNative.bfo_copier_cancel(copier);
            }
        }
    }

    /**
     * Cancels a running copy, waits for it to return, and frees the copier.
     * Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            lock.notifyAll();
            boolean interrupted = false;
            while (running) {
                cancelRequested = true;
                if (copier != null) {
                    // repeated: a cancel that lands just before the run starts is reset by it
                    BfoNative.bfo_copier_cancel(copier);
                }
                try {
                    lock.wait(50);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (copier != null) {
                BfoNative.bfo_copier_destroy(copier);
                copier = null;
            }
            callbacks = null;
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Writes batches of files beneath a root directory (libbfo's BFO_w): data
 * first in one large stream, metadata after, one durability point per
 * batch, and a manifest that makes a crash recoverable (every file of a
 * batch is then complete or absent, never torn).
 *
 * <pre>{@code
 * try (BatchFileWriter w = BatchFileWriter.builder(root).durability(Durability.BATCH).build()) {
 *     List<WriteResult> rs = w.write(List.of(
 *             WriteEntry.directory("d").mode(0750),
 *             WriteEntry.file("d/a.txt", bytes).mode(0640).lastModifiedTime(t),
 *             WriteEntry.symlink("d/link", "a.txt")));
 *     for (WriteResult r : rs) r.orThrow();
 *     try (OutputStream out = w.openStream(WriteEntry.stream("big.bin"))) {   // any size, in pieces
 *         in.transferTo(out);
 *     }
 * }
 * }</pre>
 *
 * <p>Per-entry results: a failed entry never fails the batch (unless
 * {@code stopOnError}); {@link WriteResult#failure()} maps the status to
 * FileAlreadyExistsException (-EEXIST), AccessDeniedException (-EACCES,
 * -EPERM), NoSuchFileException, NotDirectoryException, or
 * FileSystemException with the text (-ENOSPC, -EDQUOT...; -EINVAL: the path
 * escapes the root or is invalid; -ELOOP: a symbolic link in the destination
 * path).
 *
 * <p>Memory: heap data ({@code byte[]}, heap buffers) is copied into native
 * memory per batch, at most {@code stagingBytes} (default 64 MiB) at a time:
 * a larger list is written as several native batches, in order, each its own
 * durability point, and a single heap entry larger than that is written in
 * pieces. Direct buffers are passed to the library as they are.
 * {@link #openStream(WriteEntry)} writes a file of any size through a
 * bounded buffer (the native pieces protocol: the file grows under a
 * temporary name and appears at its path complete, with its last piece).
 *
 * <p>Engines: "batched" (the default everywhere) or, by name, "stem" (XFS
 * with reflink, btrfs) in libbfo; without libbfo a pure-Java engine
 * (engine "java": temporary file, then an atomic rename, fsync per file
 * unless durability is NONE; no crash manifest, no FIFOs) serves the same
 * API.
 *
 * <p><b>A root other users can write.</b> No engine follows a symbolic link
 * or applies a mode, owner or time to a file it did not make. The Java
 * engine makes each entry in a private directory of the root and applies
 * its owner, permission bits and times there through a descriptor, but the
 * JDK applies set-id and sticky bits, and a symbolic link's owner, only by
 * path: it does so only where no other user can write the path from / to
 * the root, and elsewhere fails that entry with -EPERM
 * (AccessDeniedException, nothing written at its path). Use the native
 * engine to restore set-id files (as root, {@code -a} style) into a
 * directory other users can write. A DIRECTORY entry's metadata is applied
 * at close only to a directory this writer made, or one whose path nobody
 * else can write ({@link #close()} reports the others). See the bfo-java
 * README ("The Java engines in a directory other users can write").
 *
 * <p><b>Thread safety:</b> thread-safe; calls are serialised (one native
 * call at a time per writer). {@link #close()} from another thread waits for
 * a write in progress (the native writer has no cancel). Open streams must
 * be closed before the writer: a stream not closed is dropped (its file
 * never appears).
 */
public final class BatchFileWriter implements AutoCloseable {

    /** When written data is durable (native {@code enum bfo_durability}; codes in BfoNative). */
    public enum Durability {
        /** Page cache only, like cp; no manifest. */
        NONE,
        /** Durable when {@link #write} returns: one durability point per batch (the default). */
        BATCH,
        /**
         * Each file durable as soon as it is written, before the next one is
         * (fsync per file, like {@code rsync --fsync}): for a destination
         * consumed file by file while the writing goes on, where a reader
         * may act on a file that a crash must not take back. Costs a device
         * flush per file.
         */
        EACH,
        /**
         * Durable when {@link #close()} returns: each file is complete or
         * absent after a crash, as with BATCH, but batches share durability
         * points (native: up to 64 consecutive batches share one syncfs, so
         * a long stream of batches, a copy, does not wait on the disk once
         * per batch; batches that replace files or continue a file in
         * pieces are synced at once; the Java engine forces each file before
         * its rename and syncs the directories at close). After a crash,
         * batches not yet synced are recovered like unfinished ones.
         */
        CLOSE
    }

    /** The writer's engine (native {@code enum bfo_wengine}, plus the pure-Java one). */
    public enum Engine {
        /** Batched with libbfo (on every file system); Java without libbfo. */
        AUTO,
        /** One stem file, shared into each file with FICLONERANGE (XFS with reflink, btrfs); native only. */
        STEM,
        /** Files created and written directory by directory on worker threads; one syncfs per batch. */
        BATCHED,
        /** The batched engine's plan with each whole file as one io_uring open/write/close chain; native only. */
        URING,
        /** The pure-Java engine, even where libbfo is available. */
        JAVA
    }

    /** Builder. Not thread-safe. */
    public static final class Builder {
        final Path root;
        Durability durability = Durability.BATCH;
        Engine engine = Engine.AUTO;
        boolean replace, stopOnError;
        boolean createRoot = true;
        int threads;
        long stagingBytes = 64L << 20;
        int pieceBytes = 8 << 20;

        Builder(Path root) {
            this.root = Objects.requireNonNull(root, "root");
            PathBytes.checkDefault(root);
        }

        public Builder durability(Durability d) {
            this.durability = Objects.requireNonNull(d, "durability");
            return this;
        }

        public Builder engine(Engine e) {
            this.engine = Objects.requireNonNull(e, "engine");
            return this;
        }

        /** Replace existing targets (atomically: a replaced file is old or new, never torn); default off (-EEXIST). */
        public Builder replace(boolean b) {
            this.replace = b;
            return this;
        }

        /**
         * Whether build() makes a missing root, with its parents (the default); false: a missing root is
         * NoSuchFileException, for a writer inside a directory another process may remove meanwhile (a job's
         * staging directory), which must not come back.
         */
        public Builder createRoot(boolean b) {
            this.createRoot = b;
            return this;
        }

        /** After a failure the rest of the batch fails with -ECANCELED. */
        public Builder stopOnError(boolean b) {
            this.stopOnError = b;
            return this;
        }

        /** Worker threads of the batched engine (0: the library's default), at most 256. */
        public Builder threads(int n) {
            if (n < 0 || n > 256) {
                throw new IllegalArgumentException("threads must be between 0 and 256: " + n);
            }
            this.threads = n;
            return this;
        }

        /** Heap bytes copied into native memory per native batch, 1 MiB to 1 GiB (default 64 MiB). */
        public Builder stagingBytes(long n) {
            if (n < (1 << 20) || n > (1L << 30)) {
                throw new IllegalArgumentException("stagingBytes must be between 1 MiB and 1 GiB: " + n);
            }
            this.stagingBytes = n;
            return this;
        }

        /** Buffer size of {@link #openStream} (bytes per piece), at least 64 KiB (default 8 MiB). */
        public Builder pieceBytes(int n) {
            if (n < (64 << 10)) {
                throw new IllegalArgumentException("pieceBytes must be at least 64 KiB: " + n);
            }
            this.pieceBytes = n;
            return this;
        }

        /**
         * Opens the writer: creates the root (with its parents) if missing,
         * unless {@link #createRoot}(false), and runs recovery of unfinished
         * batches found there.
         *
         * @throws IOException the root cannot be made or opened (NotDirectoryException, AccessDeniedException...),
         *                     or the STEM engine cannot run on its file system
         */
        public BatchFileWriter build() throws IOException {
            if (engine == Engine.JAVA) {
                return new BatchFileWriter(new JavaWriter(this), this);
            }
            if (!BfoNative.available()) {
                if (engine == Engine.STEM || engine == Engine.URING) {
                    throw new IOException("the " + engine.name().toLowerCase(java.util.Locale.ROOT)
                            + " engine needs libbfo, which is not available: "
                            + BfoNative.unavailableReason());
                }
                Bfo.logFallbackOnce();
                return new BatchFileWriter(new JavaWriter(this), this);
            }
            return new BatchFileWriter(new NativeWriter(this), this);
        }
    }

    /** A writer engine. Calls are serialised by BatchFileWriter. */
    interface Impl {
        /** Writes entries[from, to) as one batch into out; returns the number that failed, or -errno. */
        int writeBatch(List<WriteEntry> entries, int from, int to, WriteResult[] out) throws IOException;

        /** Writes one piece of a streamed file; returns 0 or -errno. */
        int piece(WriteEntry template, ByteBuffer data, long offset, boolean more, boolean abort) throws IOException;

        /** The last piece written (more false) of the last {@link #piece} call: its owner status. */
        default int lastOwnerStatus() {
            return 0;
        }

        /** A buffer for pieces of this engine (direct for the native one). */
        ByteBuffer pieceBuffer(int bytes);

        WriteStats stats();

        /** "stem", "batched", "uring" or "java". */
        String engineName();

        void close() throws IOException;
    }

    private final Impl impl;
    private final long staging;
    private final int pieceBytes;
    private final boolean stopOnError;
    private final Path root;
    private final List<PieceStream> streams = new ArrayList<>();
    private boolean closed;

    private BatchFileWriter(Impl impl, Builder b) {
        this.impl = impl;
        this.staging = b.stagingBytes;
        this.pieceBytes = b.pieceBytes;
        this.stopOnError = b.stopOnError;
        this.root = b.root;
    }

    /** A builder for a writer on root (created if missing). */
    public static Builder builder(Path root) {
        return new Builder(root);
    }

    /** The root directory. */
    public Path root() {
        return root;
    }

    /** The engine in use: "stem", "batched", "uring" or "java". */
    public String engine() {
        return impl.engineName();
    }

    /** True when libbfo serves this writer. */
    public boolean isNative() {
        return impl instanceof NativeWriter;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("BatchFileWriter closed");
        }
    }

    /**
     * Writes entries as one batch (or several, see the class comment) and
     * returns one result per entry, in the same order. Per-entry failures are
     * in the results; an exception only when the writer itself failed.
     *
     * @throws IOException          a batch could not run at all (its manifest could not be made durable...);
     *                              the entries of earlier native batches of this list were written
     * @throws NullPointerException entries or an element is null
     */
    public synchronized List<WriteResult> write(List<WriteEntry> entries) throws IOException {
        Objects.requireNonNull(entries, "entries");
        for (int i = 0; i < entries.size(); i++) {
            Objects.requireNonNull(entries.get(i), "entry " + i);
        }
        checkOpen();
        int n = entries.size();
        WriteResult[] out = new WriteResult[n];
        boolean stop = false;
        int i = 0;
        while (i < n) {
            if (stop) {
                out[i] = cancelled(entries.get(i));
                i++;
                continue;
            }
            WriteEntry big = entries.get(i);
            if (big.type == WriteEntry.Type.FILE && big.stagedBytes() > staging) {
                out[i] = writeInPieces(big);
                stop = stopOnError && !out[i].isOk();
                i++;
                continue;
            }
            int j = i;
            long bytes = 0;
            while (j < n) {
                WriteEntry e = entries.get(j);
                long s = e.stagedBytes();
                if (e.type == WriteEntry.Type.FILE && s > staging) {
                    break;
                }
                if (j > i && bytes + s > staging) {
                    break;
                }
                bytes += s;
                j++;
            }
            int r = impl.writeBatch(entries, i, j, out);
            if (r < 0) {
                throw new IOException("batch of " + (j - i) + " entries not written (" + Errno.text(r) + ")"
                        + (i > 0 ? "; the first " + i + " entries of the list were written" : ""),
                        Errno.generic(r, root.toString(), null));
            }
            if (stopOnError) {
                for (int k = i; k < j; k++) {
                    int st = out[k].status();
                    stop |= st != 0 && st != -Errno.EINVAL && st != -Errno.ENAMETOOLONG;
                }
            }
            i = j;
        }
        return Collections.unmodifiableList(Arrays.asList(out));
    }

    /** {@link #write(List)}, then the first failure thrown (the strict form). */
    public List<WriteResult> writeAll(List<WriteEntry> entries) throws IOException {
        List<WriteResult> rs = write(entries);
        for (WriteResult r : rs) {
            r.orThrow();
        }
        return rs;
    }

    private static WriteResult cancelled(WriteEntry e) {
        return new WriteResult(e, -Errno.ECANCELED, Errno.forWrite(-Errno.ECANCELED, e.display, null), "none");
    }

    private WriteResult writeInPieces(WriteEntry e) throws IOException {
        PieceStream s = new PieceStream(e, true);
        try {
            if (e.buffer != null) {
                ByteBuffer d = e.buffer.duplicate();
                byte[] chunk = new byte[Math.min(pieceBytes, d.remaining())];
                while (d.hasRemaining()) {
                    int k = Math.min(chunk.length, d.remaining());
                    d.get(chunk, 0, k);
                    s.write(chunk, 0, k);
                }
            } else {
                s.write(e.array, e.arrayOff, e.arrayLen);
            }
            s.close();
            return new WriteResult(e, 0, null, s.engine, s.ownerStatus);
        } catch (PieceException x) {
            return new WriteResult(e, x.status, x.failure, s.engine);
        }
    }

    /**
     * Opens a stream that writes the file described by template (path and
     * attributes; its data, if any, is ignored) in pieces of
     * {@code pieceBytes}: the file appears at its path, complete, when the
     * stream is closed; {@link PieceStream#abort()} (or a failure) drops it.
     * Other writes may go on while the stream is open.
     *
     * @throws IllegalArgumentException the template is not a FILE entry
     */
    public synchronized PieceStream openStream(WriteEntry template) {
        Objects.requireNonNull(template, "template");
        if (template.type != WriteEntry.Type.FILE) {
            throw new IllegalArgumentException("openStream needs a FILE entry: " + template);
        }
        checkOpen();
        PieceStream s = new PieceStream(template, false);
        streams.add(s);
        return s;
    }

    /** {@code openStream(WriteEntry.stream(path))}. */
    public PieceStream openStream(String path) {
        return openStream(WriteEntry.stream(path));
    }

    /** What this writer did so far. */
    public synchronized WriteStats stats() {
        checkOpen();
        return impl.stats();
    }

    /**
     * Applies the metadata of the directories written (deepest first, times
     * last), drops files of streams never closed, makes that durable and
     * frees the writer. Idempotent.
     *
     * @throws IOException the first error met (the writer is closed anyway)
     */
    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        for (PieceStream s : new ArrayList<>(streams)) {
            s.dropped = true;
        }
        streams.clear();
        impl.close();
    }

    /** Thrown inside by a piece that failed (carries the per-file status). */
    static final class PieceException extends IOException {
        final int status;
        final IOException failure;

        PieceException(int status, IOException failure) {
            super(failure.getMessage(), failure);
            this.status = status;
            this.failure = failure;
        }
    }

    /**
     * A file written in pieces through a bounded buffer. Not thread-safe
     * (one writing thread per stream); several streams of one writer may be
     * open at once.
     */
    public final class PieceStream extends OutputStream {
        private final WriteEntry template;
        private final ByteBuffer buf;
        private final boolean internal;
        private long offset;
        private boolean done;
        private boolean sentAny;
        volatile boolean dropped;
        String engine = "none";
        int ownerStatus;            // of the last piece: WriteResult.ownerStatus

        PieceStream(WriteEntry template, boolean internal) {
            this.template = template;
            this.internal = internal;
            synchronized (BatchFileWriter.this) {
                this.buf = impl.pieceBuffer(pieceBytes);
            }
        }

        /** Bytes written to the stream so far. */
        public long size() {
            return offset + buf.position();
        }

        @Override
        public void write(int b) throws IOException {
            check();
            if (!buf.hasRemaining()) {
                send(true);
            }
            buf.put((byte) b);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            check();
            while (len > 0) {
                if (!buf.hasRemaining()) {
                    send(true);
                }
                int k = Math.min(len, buf.remaining());
                buf.put(b, off, k);
                off += k;
                len -= k;
            }
        }

        private void check() throws IOException {
            if (done) {
                throw new IOException("stream closed: " + template.display);
            }
            if (dropped) {
                throw new IOException("the writer was closed: " + template.display + " was dropped");
            }
        }

        private void send(boolean more) throws IOException {
            buf.flip();
            int len = buf.remaining();
            int r;
            synchronized (BatchFileWriter.this) {
                checkOpen();
                r = impl.piece(template, buf, offset, more, false);
                engine = impl.engineName();
                ownerStatus = more ? 0 : impl.lastOwnerStatus();
            }
            buf.clear();
            sentAny = true;
            if (r < 0) {
                done = true;
                forget();
                IOException f = Errno.forWrite(r, template.display, null);
                throw new PieceException(r, f);
            }
            offset += len;
        }

        /** Writes the last piece: the file appears at its path. */
        @Override
        public void close() throws IOException {
            if (done) {
                return;
            }
            check();
            try {
                send(false);
            } finally {
                done = true;
                forget();
            }
        }

        /** Drops the file: nothing appears at its path. Idempotent. */
        public void abort() throws IOException {
            if (done) {
                return;
            }
            done = true;
            forget();
            if (sentAny && !dropped) {
                synchronized (BatchFileWriter.this) {
                    if (!closed) {
                        buf.clear().flip();
                        impl.piece(template, buf, offset, false, true);
                    }
                }
            }
        }

        private void forget() {
            if (!internal) {
                synchronized (BatchFileWriter.this) {
                    streams.remove(this);
                }
            }
        }
    }

    /**
     * Finishes or removes every file of the unfinished batches recorded in
     * root's journal (after a crash), like {@code bfo recover}. A writer does
     * this itself when it opens.
     *
     * @return what recovery did (all zero when there was nothing to do)
     * @throws IOException root cannot be opened, or a journal exists and libbfo is not available
     */
    public static RecoverStats recover(Path root) throws IOException {
        Objects.requireNonNull(root, "root");
        PathBytes.checkDefault(root);
        if (!BfoNative.available()) {
            if (Files.exists(root.resolve(".bfo-journal"))) {
                throw new IOException("recovering " + root + " needs libbfo: " + BfoNative.unavailableReason());
            }
            return new RecoverStats(0, 0, 0, 0);
        }
        return NativeWriter.recover(root);
    }

    /**
     * What {@link #recover(Path)} did. Immutable.
     *
     * @param batches  unfinished batches found
     * @param complete files found complete
     * @param finished files completed from a stem
     * @param removed  torn files and leftovers removed
     */
    public record RecoverStats(long batches, long complete, long finished, long removed) {
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * The entries of one read batch, in completion order (not submission order:
 * use {@link FileData#index()} or {@link FileData#path()}), streamed while
 * the engine reads ahead. Returned by {@link BatchFileReader#read(Iterable)}.
 *
 * <p>Single use: iterate it once, with {@link #hasNext()}/{@link #next()},
 * a for-each loop or {@link #stream()}. Each entry's data is valid until the
 * next {@code hasNext()} or {@code next()} call (see {@link FileData}).
 * {@link #close()} ends the batch early (files not yet delivered are
 * dropped); closing after the last entry is harmless. Use try-with-resources
 * when you may stop before the end.
 *
 * <p>Per-file failures are entries with a failure, not exceptions. The
 * iteration itself throws {@link IllegalStateException} when the reader was
 * closed underneath it, {@link java.io.UncheckedIOException} when the engine
 * failed as a whole, and whatever the submitted {@code Iterable} throws
 * (a null element: NullPointerException; a path of another file system:
 * {@link java.nio.file.ProviderMismatchException}).
 *
 * <p><b>Thread safety:</b> one thread iterates. Any thread may
 * {@link #close()} the batch (or the reader) at any time: the iterating
 * thread's next {@code hasNext()} then returns false (batch closed) or
 * throws IllegalStateException (reader closed). {@link #stats()} is
 * thread-safe.
 */
public abstract class FileBatch implements Iterator<FileData>, Iterable<FileData>, AutoCloseable {
    private FileData current;
    private FileData lookahead;
    private boolean done;
    private boolean iterated;
    private boolean cleaned;
    volatile boolean closed;
    private volatile Thread busy;      // the thread inside hasNext(), if any
    private volatile Thread owner;     // the thread that iterates (its first hasNext())

    FileBatch() {
    }

    /** The next entry, or null when the batch has ended. May block. */
    abstract FileData advance();

    /** Ends the batch early and gives its resources back; called once, never concurrently with advance(). */
    abstract void doClose();

    /** Makes an advance() in progress on another thread end soon (thread-safe). */
    abstract void cancelAsync();

    /** True when another thread is inside hasNext()/next() of this batch. */
    final boolean busyElsewhere() {
        Thread t = busy;
        return t != null && t != Thread.currentThread();
    }

    private synchronized boolean claimCleanup() {
        if (cleaned) {
            return false;
        }
        cleaned = true;
        return true;
    }

    /** True when the reader that made the batch is closed. */
    abstract boolean readerClosed();

    /** Paths taken from the batch's source so far (the engines' batches; a tree's walk asks). */
    long submitted() {
        throw new UnsupportedOperationException();
    }

    /**
     * Statistics of this batch so far (final once {@link #hasNext()}
     * returned false). Safe while the batch runs, for progress.
     */
    public abstract ReadStats stats();

    /**
     * Entries of a tree read ({@link BatchFileReader#readTree}) that were
     * neither delivered nor directories: special files, symbolic links to
     * directories, dangling links, and links under {@code noFollow}. A caller
     * whose own listing treats such entries differently (as Hadoop's local
     * file system does) can tell that the tree held some. Counted as the
     * walk meets them: final once {@link #hasNext()} returned false. Always
     * 0 for a batch of paths.
     */
    public long skippedEntries() {
        return 0;
    }

    final boolean isClosed() {
        return closed || readerClosed();
    }

    @Override
    public final boolean hasNext() {
        if (lookahead != null) {
            return true;
        }
        if (done) {
            return false;
        }
        if (owner == null) {
            owner = Thread.currentThread();
        }
        busy = Thread.currentThread();
        try {
            if (closed) {
                finishClosed();   // ended by its owner (possibly from another thread): nothing more
                return false;
            }
            invalidateCurrent();
            FileData f;
            try {
                f = advance();
            } catch (RuntimeException | Error e) {
                done = true;
                throw e;
            }
            if (closed) {
                if (f != null) {
                    f.invalidate();
                }
                finishClosed();
                return false;
            }
            if (f == null) {
                done = true;
                return false;
            }
            lookahead = f;
            return true;
        } finally {
            busy = null;
        }
    }

    private void finishClosed() {
        done = true;
        if (claimCleanup()) {
            doClose();
        }
    }

    @Override
    public final FileData next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the batch has ended");
        }
        invalidateCurrent();
        current = lookahead;
        lookahead = null;
        return current;
    }

    private void invalidateCurrent() {
        if (current != null) {
            synchronized (this) {
                current.invalidate();
            }
            current = null;
        }
    }

    /** This batch itself (it can be iterated once). */
    @Override
    public final Iterator<FileData> iterator() {
        if (iterated) {
            throw new IllegalStateException("a FileBatch can be iterated only once");
        }
        iterated = true;
        return this;
    }

    /**
     * The entries as a sequential stream; closing the stream closes the
     * batch. The stream does not split: {@code parallel()} gains nothing and
     * would break the one-entry-at-a-time validity, so it stays sequential.
     * Copy bytes out ({@link FileData#bytes()}) before collecting.
     */
    public final Stream<FileData> stream() {
        Spliterator<FileData> s = new Spliterators.AbstractSpliterator<FileData>(Long.MAX_VALUE,
                Spliterator.ORDERED | Spliterator.NONNULL) {
            @Override
            public boolean tryAdvance(Consumer<? super FileData> action) {
                if (!hasNext()) {
                    return false;
                }
                action.accept(next());
                return true;
            }

            @Override
            public Spliterator<FileData> trySplit() {
                return null;
            }
        };
        return StreamSupport.stream(s, false).onClose(this::close);
    }

    /**
     * Ends the batch: the current entry becomes invalid, files not yet
     * delivered are dropped, the engine's memory is given back. Safe from
     * any thread: while another thread iterates, the batch is cancelled and
     * that thread's next {@code hasNext()} returns false (and finishes the
     * cleanup). Idempotent.
     */
    @Override
    public final void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            // read once: the iterating thread moves these fields without this lock (next())
            FileData c = current, l = lookahead;
            if (c != null) {
                c.invalidate();
            }
            if (l != null) {
                l.invalidate();
            }
        }
        if (busyElsewhere()) {
            cancelAsync();
            return;
        }
        // Only the iterating thread moves its entries: one closing from
        // another thread between that thread's hasNext() and next() must
        // not take away the entry hasNext() promised (next() would throw
        // NoSuchElementException); it stays, invalidated above.
        if (owner == null || owner == Thread.currentThread()) {
            current = null;
            lookahead = null;
        }
        if (claimCleanup()) {
            doClose();
        }
    }
}

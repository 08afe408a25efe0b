/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A task's files written to a Hadoop file system several at a time: each
 * file costs round trips (on HDFS a create, a block allocation and a close
 * with the NameNode and a pipeline to the DataNodes; on S3 a request or
 * two), which a task writing one file after another waits out in turn.
 *
 * <p>At most {@code inFlight} files are being written at once, and no new
 * one starts while those in flight hold {@code maxBytes} or more (one file
 * alone may exceed it). The first failure is kept: the next
 * {@link #submit} or {@link #finish} throws it, so a task fails at most
 * {@code inFlight} files after the one that failed. Results (what a write
 * returns, e.g. its upload handles) are kept in submission order for the
 * task's commit, or for {@link #cancel} to undo.
 *
 * @param <R> what one file's write returns
 */
public final class WritePool<R> implements AutoCloseable {
    /** One file's write. */
    public interface Job<R> {
        R run() throws IOException;
    }

    private final int inFlight;
    private final long maxBytes;
    private final String threadName;
    private final Object lock = new Object();
    private final List<R> results = new ArrayList<>();
    private ThreadPoolExecutor pool;   // made at the first file
    private int running;
    private long bytes;
    private IOException failure;

    public WritePool(int inFlight, long maxBytes, String threadName) {
        this.inFlight = Math.max(1, inFlight);
        this.maxBytes = Math.max(1, maxBytes);
        this.threadName = threadName;
    }

    /**
     * Starts job, a write of size bytes, once the bounds allow; throws the first failure of an earlier write
     * instead. With one write in flight, job runs here, on the task's thread.
     */
    public void submit(long size, Job<R> job) throws IOException {
        if (inFlight == 1) {
            R r = job.run();
            synchronized (lock) {
                results.add(r);
            }
            return;
        }
        synchronized (lock) {
            try {
                while (failure == null && running > 0 && (running >= inFlight || bytes >= maxBytes)) {
                    lock.wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("bfo write: interrupted");
            }
            if (failure != null) {
                throw failure;
            }
            running++;
            bytes += size;
        }
        if (pool == null) {
            pool = new ThreadPoolExecutor(inFlight, inFlight, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                    r -> {
                        Thread t = new Thread(r, threadName);
                        t.setDaemon(true);
                        return t;
                    });
            pool.allowCoreThreadTimeOut(true);
        }
        pool.execute(() -> {
            R r = null;
            IOException failed = null;
            try {
                r = job.run();
            } catch (IOException e) {
                failed = e;
            } catch (RuntimeException | Error e) {
                failed = new IOException(e.toString(), e);
            }
            synchronized (lock) {
                running--;
                bytes -= size;
                if (failed == null) {
                    results.add(r);
                } else if (failure == null) {
                    failure = failed;
                }
                lock.notifyAll();
            }
        });
    }

    /** Waits for every write; their results, or the first failure. */
    public List<R> finish() throws IOException {
        awaitIdle();
        synchronized (lock) {
            if (failure != null) {
                throw failure;
            }
            return new ArrayList<>(results);
        }
    }

    /** Waits for the writes running (none is left half done), and returns what completed, for its undoing. */
    public List<R> cancel() {
        try {
            awaitIdle();
        } catch (InterruptedIOException e) {
            // the caller undoes what it can see now
        }
        synchronized (lock) {
            return new ArrayList<>(results);
        }
    }

    private void awaitIdle() throws InterruptedIOException {
        synchronized (lock) {
            try {
                while (running > 0) {
                    lock.wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("bfo write: interrupted");
            }
        }
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
            pool = null;
        }
    }
}

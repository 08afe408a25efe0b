/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.hadoop.fs.ReadFileSystems;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;

/**
 * The files of one partition that live on Hadoop file systems other than
 * the local one (hdfs:, s3a:, abfs:, viewfs: ...), read through Hadoop's
 * FileSystem API as binaryFile reads them (open, read to the end, close),
 * but several at a time: on a remote store each file costs round trips
 * (an open RPC, a block lookup, a connection to a DataNode or an HTTP
 * request) that a task reading one file after another waits out in turn.
 *
 * <p>At most {@code readsInFlight} files are open and being read at once,
 * and no new file is started while the files ahead of it hold
 * {@code windowBytes} or more; files come back in the partition's order. A
 * file above {@code largeFile} bytes is not read ahead: when its turn
 * comes the task's own thread streams it in pieces of at most largeFile,
 * so memory stays bounded whatever the sizes. A metadata-only read opens
 * nothing: the listing's length and modification time are the row (what
 * the listing said is what pruning and filters already used).
 *
 * <p>The task never waits forever on the read-ahead: when none of the files
 * in flight has come back and none has started for {@code readTimeout}
 * (Spark's {@code spark.network.timeout} unless set), the read fails naming
 * the file it waits for. The file systems' clients have their own timeouts
 * and retries (HDFS's socket timeout, S3A's request timeouts); this bound is
 * for what they leave unbounded (a NameNode that stops answering without
 * closing its connections holds an RPC without end).
 */
final class BfoHadoopReads implements AutoCloseable {
    private final Configuration conf;
    private final BfoInputPartition part;
    private final int[] files;          // partition file indexes, in the order they are delivered
    private final boolean readsData;
    private final int inFlight;
    private final long windowBytes;
    private final int largeFile;
    private final long timeoutNanos;    // 0: wait as long as the file system's client does
    private volatile long lastProgress; // System.nanoTime() of the last read started or finished
    private final ArrayDeque<Future<BfoPiece>> ahead = new ArrayDeque<>();
    private final ReadFileSystems fileSystems;
    private ThreadPoolExecutor pool;    // made when the first file is read ahead
    private int next;                   // files[next] is the next to start
    private int delivered;              // files[delivered] is the next to hand out
    private long bytesAhead;
    private Stream stream;              // the large file being streamed, if any

    BfoHadoopReads(Configuration conf, BfoInputPartition part, int[] files, boolean readsData, int inFlight,
                   long windowBytes, long largeFile, long timeoutMillis) {
        this.conf = conf;
        this.part = part;
        this.files = files;
        this.readsData = readsData;
        this.inFlight = Math.max(1, inFlight);
        this.windowBytes = Math.max(1, windowBytes);
        this.largeFile = (int) Math.max(4096, Math.min(largeFile, Integer.MAX_VALUE - 16));
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMillis));
        this.fileSystems = new ReadFileSystems(conf, this.inFlight);
    }

    /** The next piece in file order, or null when every file was delivered. */
    BfoPiece next() throws IOException {
        if (!readsData) {
            if (delivered == files.length) {
                return null;
            }
            int i = files[delivered++];
            return new Whole(i, null, part.lengths[i], part.modificationTimes[i], null);
        }
        if (stream != null) {
            BfoPiece p = stream.next();
            if (p.isLast()) {
                stream.close();
                stream = null;
                delivered++;
            }
            return p;
        }
        fill();
        if (ahead.isEmpty()) {
            if (delivered == files.length) {
                return null;
            }
            next++;   // a large file: streamed now, by this thread
            stream = new Stream(files[delivered]);
            return next();
        }
        BfoPiece p = take(ahead.poll(), files[delivered]);
        bytesAhead -= part.lengths[files[delivered++]];   // ahead holds files[delivered, next), in order
        fill();
        return p;
    }

    /** Starts files in order while the bounds allow; stops at a large file (it is streamed in its turn). */
    private void fill() {
        while (next < files.length && ahead.size() < inFlight && (ahead.isEmpty() || bytesAhead < windowBytes)) {
            int i = files[next];
            long len = part.lengths[i];
            if (len > largeFile) {
                return;
            }
            if (pool == null) {
                pool = new ThreadPoolExecutor(inFlight, inFlight, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                        r -> {
                            Thread t = new Thread(r, "bfo-hadoop-read");
                            t.setDaemon(true);
                            return t;
                        });
                pool.allowCoreThreadTimeOut(true);
            }
            lastProgress = System.nanoTime();
            ahead.add(pool.submit(() -> {
                try {
                    return readWhole(i);
                } finally {
                    lastProgress = System.nanoTime();
                }
            }));
            bytesAhead += len;
            next++;
        }
    }

    /** File i opened for reading whole, with what the listing said (its length and modification time). */
    private FSDataInputStream open(int i) throws IOException {
        return fileSystems.open(new Path(part.path(i)), part.lengths[i], part.modificationTimes[i]);
    }

    /**
     * The piece of file i, read ahead by f, once it is there; an IOException (failing the task, not skipping
     * the file) when nothing in flight has moved for the timeout.
     */
    private BfoPiece take(Future<BfoPiece> f, int i) throws IOException {
        try {
            while (true) {
                if (timeoutNanos == 0 || f.isDone()) {
                    return f.get();
                }
                long left = timeoutNanos - (System.nanoTime() - lastProgress);
                if (left <= 0) {
                    throw new IOException("bfo: no answer from the file system for "
                            + TimeUnit.NANOSECONDS.toSeconds(timeoutNanos) + " s while reading " + part.path(i)
                            + " (" + ahead.size() + " more files in flight; option readTimeout, default "
                            + "spark.network.timeout)");
                }
                try {
                    return f.get(left, TimeUnit.NANOSECONDS);
                } catch (TimeoutException e) {
                    // another read may have moved meanwhile: look again
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("bfo: interrupted while reading");
        } catch (ExecutionException e) {
            throw new IOException("bfo: " + e.getCause(), e.getCause());   // readWhole returns its failures
        }
    }

    /** File i whole, or its failure (a failure is the file's, not the read's: the caller decides). */
    private BfoPiece readWhole(int i) {
        try (FSDataInputStream in = open(i)) {
            byte[] b = readAll(in, (int) part.lengths[i], largeFile);
            return new Whole(i, null, b.length, part.modificationTimes[i], b);
        } catch (IOException e) {
            return new Whole(i, e, 0, part.modificationTimes[i], null);
        } catch (RuntimeException e) {
            return new Whole(i, new IOException(e.toString(), e), 0, part.modificationTimes[i], null);
        }
    }

    /** The stream to its end; more than max bytes is an error (the file grew past what is read ahead). */
    private static byte[] readAll(InputStream in, int expected, int max) throws IOException {
        byte[] b = new byte[expected + 1];   // one more, to see the end without a second pass
        int n = in.readNBytes(b, 0, b.length);
        if (n <= expected) {
            return n == b.length ? b : java.util.Arrays.copyOf(b, n);
        }
        byte[] rest = in.readNBytes(max + 1 - n);
        if (n + rest.length > max) {
            throw new IOException("file grew beyond " + max + " bytes while it was being read");
        }
        byte[] all = java.util.Arrays.copyOf(b, n + rest.length);
        System.arraycopy(rest, 0, all, n, rest.length);
        return all;
    }

    @Override
    public void close() {
        if (stream != null) {
            stream.close();
            stream = null;
        }
        for (Future<BfoPiece> f : ahead) {
            f.cancel(true);
        }
        ahead.clear();
        if (pool != null) {
            pool.shutdownNow();
            pool = null;
        }
        fileSystems.close();
    }

    /** A whole file (data null: metadata only, or failed). */
    private record Whole(int file, IOException failure, long size, long modificationMillis, byte[] content)
            implements BfoPiece {
        @Override public long offset() { return 0; }
        @Override public long length() { return content == null ? 0 : content.length; }
        @Override public ByteBuffer data() { return content == null ? ByteBuffer.allocate(0) : ByteBuffer.wrap(content); }
        @Override public boolean isWhole() { return true; }
        @Override public boolean isLast() { return true; }
        @Override public byte[] bytes() { return content; }
    }

    /**
     * A large file read in pieces by the task's thread. Its size is the listing's: a file that turns out
     * longer or shorter fails (the pieces already handed out are dropped by the caller with the file).
     */
    private final class Stream {
        private final int file;
        private final long size;
        private final long millis;
        private FSDataInputStream in;
        private long offset;

        Stream(int file) {
            this.file = file;
            this.size = part.lengths[file];
            this.millis = part.modificationTimes[file];
        }

        BfoPiece next() {
            try {
                if (in == null) {
                    in = open(file);
                }
                byte[] b = new byte[(int) Math.min(largeFile, Math.max(0, size - offset) + 1)];
                int n = in.readNBytes(b, 0, b.length);
                if (offset + n > size) {
                    throw new IOException("changed while it was being read (now longer than the listed "
                            + size + " bytes)");
                }
                boolean last = n < b.length;
                if (last && offset + n < size) {
                    throw new IOException("changed while it was being read (now shorter than the listed "
                            + size + " bytes)");
                }
                Piece p = new Piece(file, size, millis, offset, ByteBuffer.wrap(b, 0, n), last);
                offset += n;
                return p;
            } catch (IOException e) {
                return failed(e);
            } catch (RuntimeException e) {
                return failed(new IOException(e.toString(), e));
            }
        }

        private BfoPiece failed(IOException e) {
            close();
            return new Whole(file, e, 0, millis, null);
        }

        void close() {
            if (in != null) {
                try {
                    in.close();
                } catch (IOException e) {
                    // the file was read, or has already failed
                }
                in = null;
            }
        }
    }

    /** A piece of a streamed file. */
    private record Piece(int file, long size, long modificationMillis, long offset, ByteBuffer data, boolean isLast)
            implements BfoPiece {
        @Override public IOException failure() { return null; }
        @Override public long length() { return data.remaining(); }
        @Override public boolean isWhole() { return false; }
        @Override public byte[] bytes() {
            ByteBuffer d = data.duplicate();
            byte[] b = new byte[d.remaining()];
            d.get(b);
            return b;
        }
    }
}

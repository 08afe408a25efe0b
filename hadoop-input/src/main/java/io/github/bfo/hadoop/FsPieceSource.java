/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.fs.ReadFileSystems;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The files of a split read through the Hadoop FileSystem API (hdfs:,
 * s3a:, abfs:, ... or file: when asked), so jobs are correct on every file
 * system: a small pool ({@code bfo.read.fs.threads}) reads whole files, or
 * pieces of {@code bfo.read.large.file} bytes of large ones, ahead of the
 * consumer, with at most {@code bfo.read.fs.bytes.in.flight} bytes read
 * but not yet consumed. Pieces are delivered in the split's order.
 * FileSystem checksums (HDFS, ChecksumFileSystem) are the file system's.
 *
 * <p>The task never waits forever on the read-ahead: when none of the
 * pieces in flight has come back and none has started for
 * {@code bfo.read.fs.timeout}, the read fails naming the file it waits for
 * (the file systems' clients have their own timeouts and retries; this
 * bounds what they leave unbounded, such as a NameNode that stops answering
 * without closing its connections).
 *
 * <p>BYTES_READ: MapTask's own accounting (FileSystem statistics sampled
 * around each record reader call) does not see the prefetch threads' reads
 * (measured: it adds next to nothing), so this source adds the bytes it
 * read itself, as the native path does.
 */
final class FsPieceSource implements PieceSource {
    private static final AtomicInteger POOL_ID = new AtomicInteger();

    private final BatchFileSplit split;
    private final int[] files;
    private final Configuration conf;
    private final ExecutorService pool;
    private final int maxTasks;
    private final long maxBytes;
    private final long pieceSize;
    private final long timeoutNanos;     // 0: wait as long as the file system's client does
    private volatile long lastProgress;  // System.nanoTime() of the last read started or finished
    private final ArrayDeque<Pending> inFlight = new ArrayDeque<>();
    private final List<FileSystem.Statistics> stats = new ArrayList<>();
    private final Piece piece = new Piece();
    private final ReadFileSystems fileSystems;
    private final long started = System.nanoTime();
    private long ended;
    private long bytesInFlight;
    private long lastSize;
    // the generator: next file (index into files) and next offset in it
    private int genFile;
    private long genOffset;
    // counters
    private long filesRead;
    private long bytesRead;
    private long requests;
    private boolean reported;
    private long lastCall;

    private record Pending(Future<byte[]> future, int file, long offset, long size, int length, boolean last) {
    }

    FsPieceSource(BatchFileSplit split, int[] files, Configuration conf) throws IOException {
        this.split = split;
        this.files = files;
        this.conf = conf;
        int threads = Math.max(1, conf.getInt(BfoInputConfig.FS_THREADS, BfoInputConfig.DEFAULT_FS_THREADS));
        this.maxTasks = threads * 2;
        this.fileSystems = new ReadFileSystems(conf, threads);
        this.maxBytes = Math.max(1, conf.getLongBytes(BfoInputConfig.FS_BYTES_IN_FLIGHT,
                BfoInputConfig.DEFAULT_FS_BYTES_IN_FLIGHT));
        this.pieceSize = Math.min(BfoInputConfig.largeFile(conf), Integer.MAX_VALUE - 64);
        this.timeoutNanos = TimeUnit.SECONDS.toNanos(Math.max(0, conf.getTimeDuration(BfoInputConfig.FS_TIMEOUT,
                BfoInputConfig.DEFAULT_FS_TIMEOUT_SECONDS, TimeUnit.SECONDS)));
        int id = POOL_ID.incrementAndGet();
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "bfo-fs-read-" + id);
            t.setDaemon(true);
            return t;
        });
        Set<String> schemes = new HashSet<>();
        for (int f : files) {
            String s = new Path(split.getPathString(f)).toUri().getScheme();
            if (s != null) {
                schemes.add(s);
            }
        }
        for (FileSystem.Statistics st : FileSystem.getAllStatistics()) {
            if (schemes.contains(st.getScheme())) {
                stats.add(st);
            }
        }
        topUp();
    }

    private long fsBytes() {
        long n = 0;
        for (FileSystem.Statistics st : stats) {
            n += st.getBytesRead();
        }
        return n;
    }

    private void topUp() {
        while (genFile < files.length && inFlight.size() < maxTasks) {
            int file = files[genFile];
            long size = split.getLength(file);
            long offset = genOffset;
            int len = (int) Math.min(pieceSize, size - offset);
            if (!inFlight.isEmpty() && bytesInFlight + len > maxBytes) {
                return;
            }
            boolean last = offset + len >= size;
            Path path = new Path(split.getPathString(file));
            lastProgress = System.nanoTime();
            Future<byte[]> fut = pool.submit(() -> {
                try {
                    return read(path, size, offset, len);
                } finally {
                    lastProgress = System.nanoTime();
                }
            });
            inFlight.add(new Pending(fut, file, offset, size, len, last));
            bytesInFlight += len;
            if (last) {
                genFile++;
                genOffset = 0;
            } else {
                genOffset += len;
            }
        }
    }

    /** Bytes [offset, offset + len) of a file of the listed size, opened with what the listing said. */
    private byte[] read(Path path, long size, long offset, int len) throws IOException {
        byte[] b = new byte[len];
        try (FSDataInputStream in = fileSystems.open(path, size, 0)) {
            if (len > 0) {
                in.readFully(offset, b, 0, len);
            }
        }
        return b;
    }

    @Override
    public Piece next() throws IOException {
        try {
            bytesInFlight -= lastSize;
            lastSize = 0;
            topUp();
            Pending p = inFlight.poll();
            if (p == null) {
                if (ended == 0) {
                    ended = System.nanoTime();
                }
                return null;
            }
            byte[] b;
            try {
                b = await(p);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted reading " + split.getPathString(p.file));
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof IOException) {
                    throw (IOException) c;
                }
                throw new IOException("cannot read " + split.getPathString(p.file) + ": " + c, c);
            }
            lastSize = p.length;
            requests++;
            bytesRead += b.length;
            if (p.last) {
                filesRead++;
            }
            piece.file = p.file;
            piece.offset = p.offset;
            piece.size = p.size;
            piece.data = ByteBuffer.wrap(b);
            piece.last = p.last;
            topUp();
            return piece;
        } finally {
            lastCall = System.nanoTime();
        }
    }

    /** p's bytes once read; an IOException when nothing in flight has moved for the timeout. */
    private byte[] await(Pending p) throws IOException, InterruptedException, ExecutionException {
        while (true) {
            if (timeoutNanos == 0 || p.future.isDone()) {
                return p.future.get();
            }
            long left = timeoutNanos - (System.nanoTime() - lastProgress);
            if (left <= 0) {
                throw new IOException("bfo: no answer from the file system for "
                        + TimeUnit.NANOSECONDS.toSeconds(timeoutNanos) + " s while reading "
                        + split.getPathString(p.file) + " (" + inFlight.size() + " more pieces in flight; "
                        + BfoInputConfig.FS_TIMEOUT + ")");
            }
            try {
                return p.future.get(left, TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                // another read may have moved meanwhile: look again
            }
        }
    }

    @Override
    public void report(CounterSink c) {
        if (reported) {
            return;
        }
        reported = true;
        c.add(FileInputFormatCounter.BYTES_READ, bytesRead);
        c.add(BfoCounter.FILES, filesRead);
        c.add(BfoCounter.BYTES, bytesRead);
        c.add(BfoCounter.DEVICE_BYTES, bytesRead);
        c.add(BfoCounter.IO_REQUESTS, requests);
        c.add(BfoCounter.READ_MILLIS, ((ended == 0 ? System.nanoTime() : ended) - started) / 1_000_000);
        if (filesRead > 0) {
            c.add(BfoCounter.ENGINE_GROUP, "hadoop-fs", filesRead);
        }
    }

    @Override
    public void close() {
        for (Pending p : inFlight) {
            p.future.cancel(true);
        }
        inFlight.clear();
        pool.shutdownNow();
        fileSystems.close();
    }
}

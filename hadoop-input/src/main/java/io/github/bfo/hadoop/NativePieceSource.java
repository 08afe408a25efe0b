/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FailurePolicy;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;
import io.github.bfo.ReadStats;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * The files of a split read as ONE bfo-java batch (the native engine where
 * libbfo loads, its pure-Java engine elsewhere): pieces come in the order
 * the engine delivers them, which is device order, not the split's order.
 *
 * <p>Checksums: when the job's {@code file:} file system is a
 * ChecksumFileSystem (LocalFileSystem, the default) and
 * {@code bfo.input.verify.checksum} is on, the {@code .NAME.crc} files the
 * planner saw are read first, in one small batch of their own, and every
 * file is verified chunk by chunk as its pieces go by, exactly as
 * LocalFileSystem would (CRC32 per {@code bytesPerChecksum} bytes); a
 * mismatch fails the task with a ChecksumException. A checksum file that is
 * gone or shorter than its data file stops verification of that file, also
 * as LocalFileSystem does. Without a ChecksumFileSystem (fs.file.impl set to
 * RawLocalFileSystem) or with the key off, the raw bytes are read.
 */
final class NativePieceSource implements PieceSource {
    private final BatchFileSplit split;
    private final int[] files;
    private final BatchFileReader reader;
    private final FileBatch batch;
    private final Map<Integer, ChecksumVerifier> verifiers = new HashMap<>();
    private final Piece piece = new Piece();
    private long crcBytes;
    private int crcFiles;
    private ReadStats crcStats;
    private boolean reported;
    private final long started = System.nanoTime();
    private long ended;

    NativePieceSource(BatchFileSplit split, int[] files, Configuration conf, boolean verifyChecksums)
            throws IOException {
        this.split = split;
        this.files = files;
        this.reader = BfoInputConfig.readerBuilder(conf).build();
        try {
            if (verifyChecksums) {
                readChecksums();
            }
            this.batch = reader.read(paths(files));
        } catch (IOException | RuntimeException e) {
            reader.close();
            throw e;
        }
    }

    private Iterable<java.nio.file.Path> paths(int[] which) {
        return () -> new Iterator<>() {
            int i;

            @Override
            public boolean hasNext() {
                return i < which.length;
            }

            @Override
            public java.nio.file.Path next() {
                if (i >= which.length) {
                    throw new NoSuchElementException();
                }
                return SplitPlanner.localPath(split.getPathString(which[i++]));
            }
        };
    }

    private void readChecksums() throws IOException {
        int n = 0;
        for (int f : files) {
            if (split.hasChecksumFile(f)) {
                n++;
            }
        }
        if (n == 0) {
            return;
        }
        int[] withCrc = new int[n];
        n = 0;
        for (int f : files) {
            if (split.hasChecksumFile(f)) {
                withCrc[n++] = f;
            }
        }
        Iterable<java.nio.file.Path> crcPaths = () -> new Iterator<>() {
            int i;

            @Override
            public boolean hasNext() {
                return i < withCrc.length;
            }

            @Override
            public java.nio.file.Path next() {
                java.nio.file.Path p = SplitPlanner.localPath(split.getPathString(withCrc[i++]));
                return p.resolveSibling("." + p.getFileName() + ".crc");
            }
        };
        // A separate reader: the crc batch may have missing files (perform-all), the data batch stops at the first.
        try (BatchFileReader r = BatchFileReader.builder().engine(engineOf(reader))
                .failurePolicy(FailurePolicy.PERFORM_ALL).build();
             FileBatch b = r.read(crcPaths)) {
            for (FileData d : b) {
                if (!d.isOk()) {
                    continue;   // gone since planning: no verification, as LocalFileSystem
                }
                if (!d.isWhole()) {
                    throw new IOException("checksum file too large: " + d.path());
                }
                int file = withCrc[(int) d.index()];
                ChecksumVerifier v = ChecksumVerifier.parse(split.getPathString(file), d.path().toString(),
                        d.data());
                verifiers.put(file, v);
                crcBytes += d.length();
                crcFiles++;
            }
            crcStats = b.stats();
        }
    }

    private static BatchFileReader.Engine engineOf(BatchFileReader r) {
        return r.isNative() ? BatchFileReader.Engine.AUTO : BatchFileReader.Engine.JAVA;
    }

    @Override
    public Piece next() throws IOException {
        if (!batch.hasNext()) {
            if (ended == 0) {
                ended = System.nanoTime();
            }
            return null;
        }
        FileData d = batch.next();
        int file = files[(int) d.index()];
        if (!d.isOk()) {
            IOException e = d.failure();
            if (e instanceof NoSuchFileException) {
                FileNotFoundException fnf = new FileNotFoundException("File " + split.getPathString(file)
                        + " does not exist");
                fnf.initCause(e);
                throw fnf;
            }
            throw new IOException("cannot read " + split.getPathString(file) + ": " + e.getMessage(), e);
        }
        piece.file = file;
        piece.offset = d.offset();
        piece.size = d.size();
        piece.data = d.data();
        piece.last = d.isLast();
        ChecksumVerifier v = verifiers.get(file);
        if (v != null) {
            v.update(piece.data.duplicate(), piece.offset);
            if (piece.last) {
                v.finish();
                verifiers.remove(file);
            }
        }
        return piece;
    }

    @Override
    public void report(CounterSink c) {
        if (reported) {
            return;
        }
        reported = true;
        ReadStats s = batch.stats();
        long bytes = s.bytes() + crcBytes;
        c.add(FileInputFormatCounter.BYTES_READ, bytes);
        c.add(BfoCounter.FILES, s.filesOk());
        c.add(BfoCounter.BYTES, s.bytes());
        c.add(BfoCounter.DEVICE_BYTES, s.deviceBytes() + (crcStats == null ? 0 : crcStats.deviceBytes()));
        c.add(BfoCounter.IO_REQUESTS, s.ios() + (crcStats == null ? 0 : crcStats.ios()));
        c.add(BfoCounter.MERGED_REGIONS, s.regions() + (crcStats == null ? 0 : crcStats.regions()));
        c.add(BfoCounter.FALLBACK_FILES, s.fallbackFiles());
        c.add(BfoCounter.RAW_INODE_FILES, s.filesRawmeta());
        c.add(BfoCounter.CHECKSUM_FILES, crcFiles);
        c.add(BfoCounter.READ_MILLIS, ((ended == 0 ? System.nanoTime() : ended) - started) / 1_000_000);
        if (s.filesByEngine().isEmpty()) {
            if (s.filesOk() > 0) {
                c.add(BfoCounter.ENGINE_GROUP, s.engine(), s.filesOk());
            }
        } else {
            for (Map.Entry<String, Long> e : s.filesByEngine().entrySet()) {
                c.add(BfoCounter.ENGINE_GROUP, e.getKey(), e.getValue());
            }
        }
    }

    @Override
    public void close() {
        try {
            batch.close();
        } finally {
            reader.close();
        }
    }
}

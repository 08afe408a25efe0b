/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.LineSplitter;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.compress.CodecPool;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.hadoop.io.compress.Decompressor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The line records of a {@link BatchFileSplit}, whichever MapReduce API
 * asks: one batch over the split's files ({@link PieceSource}), records in
 * the order the batch delivers the files, each file's lines in order (see
 * {@link LineSplitter} for the exact semantics). Compressed files (any codec
 * of CompressionCodecFactory) up to {@code bfo.input.compressed.inmemory.max}
 * are read in the batch and decompressed from memory; larger ones are
 * streamed through the FileSystem API after it. Before each record whose
 * file differs from the previous record's, {@code mapreduce.map.input.file}
 * (and {@code .start}, {@code .length}; their old {@code map.input.*} names
 * follow through Hadoop's deprecation table) are set in the task's
 * configuration, as CombineFileRecordReader does.
 */
public final class TextCursor implements SplitCursor<LongWritable, Text> {
    private static final Logger LOG = LoggerFactory.getLogger(TextCursor.class);
    private static final int STREAM_CHUNK = 64 * 1024;

    private final BatchFileSplit split;
    private final Configuration conf;
    private final CounterSink counters;
    private final byte[] delimiter;
    private final int maxLineLength;
    private final CompressionCodec[] codecs;
    private final PieceSource source;
    private final ArrayDeque<Integer> deferred = new ArrayDeque<>();
    private final Map<Integer, LineSplitter> openFiles = new HashMap<>();
    private final Map<Integer, Growable> compressed = new HashMap<>();
    private final long total;

    // the chunk being scanned
    private byte[] chunk = new byte[64 * 1024];
    private int chunkPos;
    private int chunkEnd;
    private boolean chunkLast;
    private boolean chunkActive;
    private int chunkFile = -1;
    private LineSplitter lines;
    private final LineSplitter shared;

    // a decompressing stream being read
    private InputStream stream;
    private Decompressor decompressor;
    private int streamFile = -1;

    private int currentFile = -1;
    private long consumed;
    private boolean sourceDone;

    private static final class Growable {
        byte[] b;
        int n;
    }

    /** For the {@code mapred} API: counters go to the reporter. */
    public static TextCursor open(BatchFileSplit split, Configuration conf, org.apache.hadoop.mapred.Reporter reporter)
            throws IOException {
        return new TextCursor(split, conf, TaskCounters.of(reporter));
    }

    TextCursor(BatchFileSplit split, Configuration conf, CounterSink counters) throws IOException {
        this.split = split;
        this.conf = conf;
        this.counters = counters;
        String d = conf.get(BfoInputConfig.RECORD_DELIMITER);
        this.delimiter = d == null ? null : d.getBytes(StandardCharsets.UTF_8);
        this.maxLineLength = conf.getInt(BfoInputConfig.MAX_LINE_LENGTH, Integer.MAX_VALUE);
        this.shared = new LineSplitter(delimiter, maxLineLength);
        this.total = split.getLength();
        CompressionCodecFactory factory = new CompressionCodecFactory(conf);
        long inMemoryMax = conf.getLongBytes(BfoInputConfig.COMPRESSED_INMEMORY_MAX,
                BfoInputConfig.DEFAULT_COMPRESSED_INMEMORY_MAX);
        int n = split.getNumPaths();
        codecs = new CompressionCodec[n];
        int[] batch = new int[n];
        int nb = 0;
        for (int i = 0; i < n; i++) {
            codecs[i] = factory.getCodec(new Path(split.getPathString(i)));
            if (codecs[i] != null && split.getLength(i) > Math.min(inMemoryMax, Integer.MAX_VALUE - 64)) {
                deferred.add(i);
            } else {
                batch[nb++] = i;
            }
        }
        this.source = PieceSource.open(split, Arrays.copyOf(batch, nb), conf);
    }

    /** The next record, or false at the end of the split. */
    public boolean next(LongWritable key, Text value) throws IOException {
        while (true) {
            if (chunkActive) {
                if (!lines.ended()) {
                    while (chunkPos < chunkEnd) {
                        chunkPos = lines.scan(chunk, chunkPos, chunkEnd);
                        if (lines.ready() && take(key, value)) {
                            select(chunkFile);
                            return true;
                        }
                        if (lines.ended()) {
                            break;
                        }
                    }
                    if (chunkLast && !lines.ended() && lines.finish() && take(key, value)) {
                        select(chunkFile);
                        chunkActive = false;
                        endFile();
                        return true;
                    }
                }
                chunkActive = false;
                if (chunkLast) {
                    endFile();
                }
            }
            if (stream != null) {
                int got = stream.read(chunk, 0, chunk.length);
                if (got > 0) {
                    activate(streamFile, got, false);
                } else {
                    closeStream();
                    activate(streamFile, 0, true);
                    streamFile = -1;
                }
                continue;
            }
            if (!sourceDone) {
                PieceSource.Piece p = source.next();
                if (p == null) {
                    sourceDone = true;
                    source.report(counters);
                    continue;
                }
                int len = p.data.remaining();
                consumed += len;
                if (codecs[p.file] != null) {
                    Growable g = compressed.get(p.file);
                    if (g == null) {
                        g = new Growable();
                        g.b = new byte[(int) Math.max(len, Math.min(p.size, Integer.MAX_VALUE - 64))];
                        compressed.put(p.file, g);
                    }
                    if (g.n + len > g.b.length) {
                        g.b = Arrays.copyOf(g.b, g.n + len);
                    }
                    p.data.get(g.b, g.n, len);
                    g.n += len;
                    if (p.last) {
                        compressed.remove(p.file);
                        openStream(p.file, new ByteArrayInputStream(g.b, 0, g.n));
                    }
                    continue;
                }
                if (chunk.length < len) {
                    chunk = new byte[Math.max(len, chunk.length * 2)];
                }
                p.data.get(chunk, 0, len);
                activate(p.file, len, p.last);
                continue;
            }
            if (!deferred.isEmpty()) {
                int f = deferred.poll();
                Path path = new Path(split.getPathString(f));
                openStream(f, path.getFileSystem(conf).open(path));
                consumed += split.getLength(f);
                continue;
            }
            return false;
        }
    }

    /** The completed line as the record, unless LineRecordReader would skip it (logged as it does) or it ends the file. */
    private boolean take(LongWritable key, Text value) {
        if (lines.take()) {
            key.set(lines.lineStart());
            value.set(lines.lineBytes(), lines.lineOffset(), lines.lineLength());
            return true;
        }
        if (lines.skippedLength() > 0) {
            LOG.info("Skipped line of size {} at pos {}", lines.skippedLength(),
                    lines.position() - lines.skippedLength());
        }
        return false;
    }

    private void activate(int file, int len, boolean last) {
        LineSplitter l = openFiles.get(file);
        if (l == null) {
            if (last && chunkFileIsFresh(file)) {
                l = shared;
            } else {
                l = new LineSplitter(delimiter, maxLineLength);
                openFiles.put(file, l);
            }
            l.reset();
        }
        lines = l;
        chunkFile = file;
        chunkPos = 0;
        chunkEnd = len;
        chunkLast = last;
        chunkActive = true;
    }

    /** A whole file in one chunk (no earlier chunk of it): the shared splitter will do. */
    private boolean chunkFileIsFresh(int file) {
        return !openFiles.containsKey(file);
    }

    private void endFile() {
        openFiles.remove(chunkFile);
    }

    private void openStream(int file, InputStream raw) throws IOException {
        CompressionCodec codec = codecs[file];
        decompressor = CodecPool.getDecompressor(codec);
        try {
            stream = codec.createInputStream(raw, decompressor);
        } catch (IOException | RuntimeException e) {
            raw.close();
            CodecPool.returnDecompressor(decompressor);
            decompressor = null;
            throw e;
        }
        streamFile = file;
        // the file's lines: a splitter of its own (its chunks are all read before the next piece)
        LineSplitter l = new LineSplitter(delimiter, maxLineLength);
        l.reset();
        openFiles.put(file, l);
    }

    private void closeStream() throws IOException {
        try {
            if (stream != null) {
                stream.close();
            }
        } finally {
            stream = null;
            if (decompressor != null) {
                CodecPool.returnDecompressor(decompressor);
                decompressor = null;
            }
        }
    }

    /** Makes file the current one: the task's configuration names it. */
    private void select(int file) {
        if (file != currentFile) {
            currentFile = file;
            conf.set(BfoInputConfig.MAP_INPUT_FILE, split.getPathString(file));
            conf.setLong(BfoInputConfig.MAP_INPUT_START, 0);
            conf.setLong(BfoInputConfig.MAP_INPUT_LENGTH, split.getLength(file));
        }
    }

    /** The current record's file (index in the split), -1 before the first. */
    int currentFile() {
        return currentFile;
    }

    public float progress() {
        return total <= 0 ? (sourceDone && deferred.isEmpty() ? 1f : 0f) : Math.min(1f, consumed / (float) total);
    }

    public long bytesConsumed() {
        return consumed;
    }

    @Override
    public void close() throws IOException {
        try {
            closeStream();
        } finally {
            try {
                source.report(counters);
            } finally {
                source.close();
            }
        }
    }
}

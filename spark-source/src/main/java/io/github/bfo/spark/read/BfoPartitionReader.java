/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.BfoTable;
import io.github.bfo.BatchFileReader;
import io.github.bfo.FileBatch;
import io.github.bfo.LineSplitter;
import io.github.bfo.ReadStats;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.unsafe.types.UTF8String;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads one input partition: its local files with ONE windowed batch read
 * of bfo-java (the engine orders the files for the device), its files on
 * other Hadoop file systems through {@link BfoHadoopReads}, turning each
 * delivered file (or piece of a large file) into rows. Local files come
 * back in completion order, then the others in the partition's order.
 * Closed by Spark and, in any case, by a task completion listener.
 */
final class BfoPartitionReader implements PartitionReader<InternalRow> {
    private static final Logger LOG = LoggerFactory.getLogger(BfoPartitionReader.class);

    private static final int PATH = -1, TIME = -2, LENGTH = -3, CONTENT = -4, VALUE = -5;

    private final BfoReaderFactory f;
    private final BfoInputPartition part;
    private final int[] columns;                  // per output column: a kind above, or a partition column index
    private final DataType[] partitionTypes;
    private final ArrayDeque<InternalRow> ready = new ArrayDeque<>();
    private final Map<Integer, Pending> pending = new HashMap<>();   // files arriving in pieces
    private final boolean[] dropped;              // filtered out or failed at read time: ignore further pieces
    private final int[] batchToFile;              // local batch index -> partition file index
    private final FileSystem.Statistics fsStats;  // where Spark's input metrics look for bytes read
    private Map<String, FileSystem.Statistics> remoteStats;   // the same, per remote scheme
    private BfoHadoopReads hadoopReads;           // the files on other Hadoop file systems, or null
    private BatchFileReader reader;
    private FileBatch batch;
    private InternalRow current;
    private final LineSplitter shared;              // format=text: the lines of files that come whole
    private byte[] scratch = new byte[64 * 1024];  // a piece in native memory, copied for the line scan
    private boolean closed;
    private long files, dataBytes, metadataOnlyFiles, skipped, batches;

    /** The bytes (or lines) of a file delivered in pieces, until its last piece. */
    private static final class Pending {
        byte[] content;
        LineSplitter lines;
    }

    @SuppressWarnings("deprecation")
    BfoPartitionReader(BfoReaderFactory f, BfoInputPartition part) {
        this.f = f;
        this.part = part;
        StructField[] out = f.readSchema.fields();
        columns = new int[out.length];
        List<String> partitionNames = java.util.Arrays.asList(f.partitionSchema.fieldNames());
        for (int i = 0; i < out.length; i++) {
            String n = out[i].name();
            int p = partitionNames.indexOf(n);
            if (p >= 0) {
                columns[i] = p;
            } else {
                columns[i] = switch (n) {
                    case BfoTable.PATH -> PATH;
                    case BfoTable.MODIFICATION_TIME -> TIME;
                    case BfoTable.LENGTH -> LENGTH;
                    case BfoTable.CONTENT -> CONTENT;
                    case BfoTable.VALUE -> VALUE;
                    default -> throw new IllegalArgumentException("bfo: unknown column " + n);
                };
            }
        }
        partitionTypes = new DataType[f.partitionSchema.size()];
        for (int i = 0; i < partitionTypes.length; i++) {
            partitionTypes[i] = f.partitionSchema.fields()[i].dataType();
        }
        dropped = new boolean[part.size()];
        shared = f.options.text && !f.options.wholeText ? f.options.newLineSplitter() : null;
        fsStats = FileSystem.getStatistics("file", RawLocalFileSystem.class);
        TaskContext ctx = TaskContext.get();
        if (ctx != null) {
            ctx.addTaskCompletionListener((org.apache.spark.util.TaskCompletionListener) c -> close());
        }
        int[] local = new int[part.size()];
        int[] remote = new int[part.size()];
        int n = 0, r = 0;
        for (int i = 0; i < part.size(); i++) {
            if (f.readsData && part.lengths[i] > f.options.maxLength) {
                // binaryFile's guard, checked on the listing before reading
                tooLong(i, part.lengths[i]);
                continue;
            }
            if (part.isLocal(i)) {
                local[n++] = i;
            } else {
                remote[r++] = i;
            }
        }
        batchToFile = local;
        if (r > 0) {
            hadoopReads = new BfoHadoopReads(f.hadoopConf(), part, java.util.Arrays.copyOf(remote, r), f.readsData,
                    f.options.readsInFlight, f.options.readMemoryBytes(), f.options.largeFile,
                    f.options.readTimeoutMillis);
        }
        if (n > 0) {
            startBatch(local, n);
        }
    }

    /** The local files local[0, n) as ONE libbfo batch read. */
    private void startBatch(int[] local, int n) {
        try {
            reader = f.options.newReader(!f.readsData);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("bfo: cannot start a batch read: " + e.getMessage(), e);
        }
        byte[] packed = part.packedLocalPaths(local, n);
        if (packed != null) {
            batch = reader.readPacked(packed);
        } else {
            List<Path> paths = new ArrayList<>(n);
            for (int k = 0; k < n; k++) {
                paths.add(part.localPath(local[k]));
            }
            batch = reader.read(paths);
        }
        batches = 1;
    }

    @Override
    public boolean next() throws IOException {
        while (ready.isEmpty()) {
            if (batch != null && batch.hasNext()) {
                handle(BfoPiece.of(batch.next(), batchToFile));
                continue;
            }
            BfoPiece p = hadoopReads == null ? null : hadoopReads.next();
            if (p == null) {
                finishBatch();
                return false;
            }
            handle(p);
        }
        current = ready.poll();
        return true;
    }

    @Override
    public InternalRow get() {
        return current;
    }

    private void handle(BfoPiece e) throws IOException {
        int i = e.file();
        if (dropped[i]) {
            return;
        }
        if (e.failure() != null) {
            pending.remove(i);
            dropped[i] = true;
            failed(i, e.failure());
            return;
        }
        long size = e.size();
        long micros = e.modificationMillis() * 1000L;   // binaryFile: Hadoop's millisecond mtime
        if (e.offset() == 0) {
            files++;
            if (!f.readsData) {
                metadataOnlyFiles++;
            }
            // the pushed filters again, on the stat of this read (the file may have changed since the listing)
            if (!f.filters.isEmpty() && !f.filters.accept(part.path(i), size, micros, part.partitionValues(i))) {
                dropped[i] = true;
                return;
            }
            if (f.readsData && size > f.options.maxLength) {
                dropped[i] = true;
                tooLong(i, size);
                return;
            }
        }
        long n = e.length();
        dataBytes += n;
        if (n > 0) {
            statistics(i).incrementBytesRead(n);
        }
        if (!f.readsData) {
            ready.add(row(i, size, micros, null));
            return;
        }
        if (f.options.text && !f.options.wholeText) {
            LineSplitter s;
            if (e.isWhole()) {
                s = shared;
            } else {
                Pending p = pending.computeIfAbsent(i, k -> new Pending());
                if (p.lines == null) {
                    p.lines = f.options.newLineSplitter();
                }
                s = p.lines;
            }
            if (e.offset() == 0) {
                s.reset();
            }
            lines(s, e.data(), e.isLast(), i, size, micros);
            if (e.isLast()) {
                pending.remove(i);
            }
            return;
        }
        if (e.isWhole()) {
            ready.add(row(i, size, micros, e.bytes()));
            return;
        }
        Pending p = pending.computeIfAbsent(i, k -> new Pending());
        if (p.content == null) {
            p.content = new byte[(int) size];
        }
        ByteBuffer d = e.data();
        if (e.offset() + d.remaining() > p.content.length) {
            pending.remove(i);
            dropped[i] = true;
            failed(i, new IOException("file grew while it was being read: " + part.path(i)));
            return;
        }
        d.get(p.content, (int) e.offset(), d.remaining());
        if (e.isLast()) {
            ready.add(row(i, size, micros, p.content));
            pending.remove(i);
        }
    }

    /** The lines of a piece of file i, as rows; each line is copied into its row, which outlives the piece. */
    private void lines(LineSplitter s, ByteBuffer d, boolean last, int i, long size, long micros) {
        byte[] a;
        int off, end;
        if (d.hasArray()) {
            a = d.array();
            off = d.arrayOffset() + d.position();
            end = d.arrayOffset() + d.limit();
        } else {
            // the batch's native memory: one bulk copy, then the scan runs over a Java array
            int n = d.remaining();
            if (scratch.length < n) {
                scratch = new byte[(int) Math.max(n, Math.min(Integer.MAX_VALUE - 64, 2L * scratch.length))];
            }
            d.get(d.position(), scratch, 0, n);
            a = scratch;
            off = 0;
            end = n;
        }
        while (off < end && !s.ended()) {
            off = s.scan(a, off, end);
            if (s.ready() && s.take()) {
                ready.add(row(i, size, micros, line(s)));
            }
        }
        if (last && !s.ended() && s.finish() && s.take()) {
            ready.add(row(i, size, micros, line(s)));
        }
    }

    private static byte[] line(LineSplitter s) {
        return Arrays.copyOfRange(s.lineBytes(), s.lineOffset(), s.lineOffset() + s.lineLength());
    }

    private InternalRow row(int i, long size, long micros, byte[] data) {
        Object[] v = new Object[columns.length];
        for (int c = 0; c < columns.length; c++) {
            int k = columns[c];
            switch (k) {
                case PATH -> v[c] = UTF8String.fromString(part.path(i));
                case TIME -> v[c] = micros;
                case LENGTH -> v[c] = size;
                case CONTENT -> v[c] = data;
                case VALUE -> v[c] = data == null ? null : UTF8String.fromBytes(data);
                default -> {
                    InternalRow pv = part.partitionValues(i);
                    v[c] = pv.isNullAt(k) ? null : pv.get(k, partitionTypes[k]);
                }
            }
        }
        return new GenericInternalRow(v);
    }

    /**
     * Where Spark's input metrics (the task thread's Hadoop statistics) look for file i's bytes. Remote files
     * are read on other threads, whose counts Spark does not see: they are counted again here, on the task's.
     */
    private FileSystem.Statistics statistics(int i) throws IOException {
        if (part.isLocal(i)) {
            return fsStats;
        }
        String path = part.path(i);
        String scheme = path.substring(0, Math.max(0, path.indexOf(':')));
        if (remoteStats == null) {
            remoteStats = new HashMap<>();
        }
        FileSystem.Statistics s = remoteStats.get(scheme);
        if (s == null) {
            FileSystem fs = new org.apache.hadoop.fs.Path(path).getFileSystem(f.hadoopConf());
            s = FileSystem.getStatistics(fs.getUri().getScheme(), fs.getClass());
            remoteStats.put(scheme, s);
        }
        return s;
    }

    private void tooLong(int i, long size) {
        String msg = "bfo: the length of " + part.path(i) + " is " + size
                + ", which exceeds the max length allowed: " + f.options.maxLength + " (option maxLength, conf "
                + BfoOptions.MAX_LENGTH_CONF + ")";
        if (f.options.ignoreCorruptFiles) {
            LOG.warn("Skipped the file (ignoreCorruptFiles): {}", msg);
            skipped++;
            return;
        }
        throw new IllegalStateException(msg);
    }

    private void failed(int i, IOException cause) throws IOException {
        String path = part.path(i);
        // binaryFile opens through Hadoop's local file system, whose FileInputStream reports a denied open as
        // FileNotFoundException: Spark then treats the file as missing (skipped only under ignoreMissingFiles,
        // even with ignoreCorruptFiles). The same here, so that switching sources changes no result.
        boolean denied = cause instanceof AccessDeniedException;
        boolean missing = denied || cause instanceof NoSuchFileException || cause instanceof NotDirectoryException
                || cause instanceof FileNotFoundException;   // Hadoop's "missing", as binaryFile sees it
        if (missing && f.options.ignoreMissingFiles) {
            LOG.warn("Skipped {} file (ignoreMissingFiles): {}", denied ? "unreadable" : "missing", path);
            skipped++;
            return;
        }
        // Spark's file scans never skip these as corrupt: a lost block or a refused access is not bad data
        boolean corrupt = !missing && !(cause instanceof org.apache.hadoop.hdfs.BlockMissingException)
                && !(cause instanceof org.apache.hadoop.security.AccessControlException);
        if (corrupt && f.options.ignoreCorruptFiles) {
            LOG.warn("Skipped unreadable file (ignoreCorruptFiles): {}: {}", path, cause.toString());
            skipped++;
            return;
        }
        if (missing) {
            FileNotFoundException fnf = new FileNotFoundException("bfo: " + (denied
                    ? "permission denied: " + path + ". As with binaryFile, an unreadable file counts as missing: "
                    : "file does not exist: " + path + ". It is possible the underlying files have been updated; ")
                    + "set ignoreMissingFiles=true (or spark.sql.files.ignoreMissingFiles) to skip missing files.");
            fnf.initCause(cause);
            throw fnf;
        }
        throw new IOException("bfo: cannot read " + path + ": " + cause.getMessage()
                + " (set ignoreCorruptFiles=true to skip unreadable files)", cause);
    }

    private void finishBatch() {
        if (batch != null) {
            ReadStats s = batch.stats();
            if (LOG.isDebugEnabled()) {
                LOG.debug("bfo partition read: {}", s);
            }
        }
        close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
        return new CustomTaskMetric[] {
            BfoReadMetrics.task(BfoReadMetrics.FILES, files),
            BfoReadMetrics.task(BfoReadMetrics.DATA_BYTES, dataBytes),
            BfoReadMetrics.task(BfoReadMetrics.METADATA_ONLY_FILES, metadataOnlyFiles),
            BfoReadMetrics.task(BfoReadMetrics.SKIPPED_FILES, skipped),
            BfoReadMetrics.task(BfoReadMetrics.BATCHES, batches),
            BfoReadMetrics.task(BfoReadMetrics.NATIVE_BATCHES, reader != null && reader.isNative() ? batches : 0)};
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        pending.clear();
        ready.clear();
        try {
            if (hadoopReads != null) {
                hadoopReads.close();
            }
        } finally {
            try {
                if (batch != null) {
                    batch.close();
                }
            } finally {
                if (reader != null) {
                    reader.close();
                }
            }
        }
    }
}

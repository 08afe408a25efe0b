/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.hadoop.fs.write.WriteOptions;
import io.github.bfo.spark.read.BfoPacking;
import io.github.bfo.BatchFileReader;
import io.github.bfo.BatchFileWriter;
import io.github.bfo.LineSplitter;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.network.util.JavaUtils;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of the {@code bfo} source, parsed once on the driver and
 * shipped to the tasks. Names and meanings follow Spark's binaryFile and text
 * sources (listing options such as pathGlobFilter, recursiveFileLookup,
 * modifiedBefore/After are handed to Spark's own file index and are not
 * repeated here); the engine knobs are bfo-java's builder options.
 */
public final class BfoOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** "binary" (binaryFile's schema, the default) or "text" (text's schema). */
    public static final String FORMAT = "format";
    /** format=text: one row per file instead of one per line (text's option). */
    public static final String WHOLETEXT = "wholetext";
    /** format=text: the line separator (text's option); default: \n, \r\n and \r. */
    public static final String LINE_SEP = "lineSep";
    /** Same meaning as Spark's file sources; default from spark.sql.files.ignoreCorruptFiles. */
    public static final String IGNORE_CORRUPT_FILES = "ignoreCorruptFiles";
    /** Same meaning as Spark's file sources; default from spark.sql.files.ignoreMissingFiles. */
    public static final String IGNORE_MISSING_FILES = "ignoreMissingFiles";
    /** Largest file whose content may be read; default spark.sql.sources.binaryFile.maxLength (binaryFile's guard). */
    public static final String MAX_LENGTH = "maxLength";
    /** Session conf of binaryFile's guard, honoured as the default of {@link #MAX_LENGTH}. */
    public static final String MAX_LENGTH_CONF = "spark.sql.sources.binaryFile.maxLength";
    /**
     * At most this many files per input partition, on top of Spark's packing. Setting it (or one of the
     * three below) makes the read packed by Spark's rule, not bfo's own model (see BfoPacking).
     */
    public static final String MAX_FILES_PER_PARTITION = "maxFilesPerPartition";
    /** This read's spark.sql.files.maxPartitionBytes (the conf's key is accepted as the option name too). */
    public static final String MAX_PARTITION_BYTES = "maxPartitionBytes";
    /** This read's spark.sql.files.openCostInBytes (the conf's key is accepted as the option name too). */
    public static final String OPEN_COST_IN_BYTES = "openCostInBytes";
    /** This read's spark.sql.files.maxPartitionNum (the conf's key is accepted as the option name too). */
    public static final String MAX_PARTITION_NUM = "maxPartitionNum";
    /**
     * How directories are listed: native (default: local ones by libbfo's parallel walk and one metadata-only
     * batch, others on the driver a few directories at a time, falling back to Spark's listing where the result
     * could differ; see BfoLeafFiles) or spark (Spark's InMemoryFileIndex listing, as binaryFile).
     */
    public static final String LISTING = "listing";
    /** bfo-java engine: auto, raw, uring, portable, java. */
    public static final String ENGINE = "engine";
    /** bfo-java read order: auto, inode, physical. */
    public static final String ORDER = "order";
    public static final String WINDOW_FILES = "windowFiles";
    public static final String ARENA_BYTES = "arenaBytes";
    public static final String QUEUE_DEPTH = "queueDepth";
    public static final String THREADS = "threads";
    /** Files above this arrive from bfo-java in pieces (bounded memory); default 16 MiB. */
    public static final String LARGE_FILE = "largeFile";
    /**
     * Files on Hadoop file systems other than the local one (hdfs:, s3a: ...): how many a task opens and reads
     * at once; default {@value #DEFAULT_READS_IN_FLIGHT} (see spark-source/README.md for the measurement).
     */
    public static final String READS_IN_FLIGHT = "readsInFlight";
    static final int DEFAULT_READS_IN_FLIGHT = 32;
    /**
     * Files on other Hadoop file systems: how long a task waits for its reads in flight when none of them
     * moves (none finishes, none starts) before it fails naming the file: a duration (120s, 2m; a plain
     * number is seconds), 0 to wait as long as the file system's client does. Default: Spark's
     * spark.network.timeout (120 s unless set).
     */
    public static final String READ_TIMEOUT = "readTimeout";
    /**
     * Write (BatchFileWriter.Durability): batch (default: durable when each task batch returns), close (durable
     * when the task's writer closes, before the task commits; batches share durability points), each (each file
     * durable as soon as it is written, before the next: fsync per file, like rsync --fsync; on HDFS and other
     * Hadoop file systems hsync per file, the one way to have the bytes on the DataNodes' disks, not only
     * acknowledged, before the task commits) or none (page cache only).
     */
    public static final String DURABILITY = "durability";
    /**
     * Write: heap bytes per BFO write batch in a task (local directories); on other Hadoop file systems, the
     * bytes of the files a task has in flight at most. Default 64 MiB.
     */
    public static final String WRITE_BATCH_BYTES = "writeBatchBytes";
    /**
     * Write to a Hadoop file system other than the local one: how many files a task writes (creates or
     * uploads) at once; default {@value #DEFAULT_WRITES_IN_FLIGHT} (see spark-source/README.md).
     */
    public static final String WRITES_IN_FLIGHT = "writesInFlight";
    static final int DEFAULT_WRITES_IN_FLIGHT = WriteOptions.DEFAULT_WRITES_IN_FLIGHT;
    /**
     * Write to a Hadoop file system other than the local one: how the job commit publishes the files.
     * rename: tasks write under a staging directory, the job commit renames each file into place (every file
     * system; on HDFS a rename is one NameNode call); multipart: tasks upload each file as a multipart upload
     * that stays invisible until the job commit completes it (Hadoop's MultipartUploader: S3A; an object store
     * copies on rename). Default auto: multipart where the file system's multipart uploads are enabled and its
     * own (S3A), rename elsewhere.
     */
    public static final String COMMIT = "commit";
    /** Write: files the job commit publishes at once (renames, or multipart completions). Default 16. */
    public static final String COMMIT_THREADS = "commitThreads";
    static final int DEFAULT_COMMIT_THREADS = WriteOptions.DEFAULT_COMMIT_THREADS;

    public final boolean text;
    public final boolean wholeText;
    final String lineSep;          // null: \n, \r\n or \r
    public final boolean ignoreCorruptFiles;
    public final boolean ignoreMissingFiles;
    public final boolean nativeListing;
    public final long maxLength;
    // packing knobs the user set for this read; null when not set (BfoPacking then reads the session conf)
    public final Integer maxFilesPerPartition;
    public final Long maxPartitionBytes;
    public final Long openCostInBytes;
    public final Integer maxPartitionNum;
    final BatchFileReader.Engine engine;
    final BatchFileReader.Order order;
    final int windowFiles;
    final long arenaBytes;
    final int queueDepth;
    final int threads;
    public final long largeFile;
    public final int readsInFlight;
    public final long readTimeoutMillis;
    final BatchFileWriter.Durability durability;
    final long writeBatchBytes;
    final int writesInFlight;
    final WriteOptions.Commit commit;
    final int commitThreads;

    public BfoOptions(CaseInsensitiveStringMap o) {
        SQLConf conf = SQLConf.get();
        String format = o.getOrDefault(FORMAT, "binary").toLowerCase(Locale.ROOT);
        switch (format) {
            case "binary", "binaryfile" -> text = false;
            case "text" -> text = true;
            default -> throw new IllegalArgumentException("bfo: option format must be binary or text, not '"
                    + o.get(FORMAT) + "'");
        }
        wholeText = o.getBoolean(WHOLETEXT, false);
        if (wholeText && !text) {
            throw new IllegalArgumentException("bfo: option wholetext=true needs format=text");
        }
        String sep = o.get(LINE_SEP);
        if (sep != null && sep.isEmpty()) {
            throw new IllegalArgumentException("bfo: option lineSep must not be empty");
        }
        lineSep = sep;
        ignoreCorruptFiles = o.getBoolean(IGNORE_CORRUPT_FILES, conf.ignoreCorruptFiles());
        ignoreMissingFiles = o.getBoolean(IGNORE_MISSING_FILES, conf.ignoreMissingFiles());
        String listing = o.getOrDefault(LISTING, "native").toLowerCase(Locale.ROOT);
        if (!listing.equals("native") && !listing.equals("spark")) {
            throw new IllegalArgumentException("bfo: option listing must be native or spark, not '" + o.get(LISTING)
                    + "'");
        }
        nativeListing = listing.equals("native");
        long confMax = Long.parseLong(conf.getConfString(MAX_LENGTH_CONF, String.valueOf(Integer.MAX_VALUE)));
        maxLength = positive(o, MAX_LENGTH, confMax);
        maxFilesPerPartition = o.containsKey(MAX_FILES_PER_PARTITION)
                ? (int) Math.min(Integer.MAX_VALUE, positive(o, MAX_FILES_PER_PARTITION, 1)) : null;
        maxPartitionBytes = byteSize(o, MAX_PARTITION_BYTES, BfoPacking.MAX_PARTITION_BYTES_CONF);
        openCostInBytes = byteSize(o, OPEN_COST_IN_BYTES, BfoPacking.OPEN_COST_CONF);
        String numKey = o.containsKey(MAX_PARTITION_NUM) ? MAX_PARTITION_NUM : BfoPacking.MAX_PARTITION_NUM_CONF;
        maxPartitionNum = o.containsKey(numKey)
                ? (int) Math.min(Integer.MAX_VALUE, positive(o, numKey, 1)) : null;
        engine = enumOption(o, ENGINE, BatchFileReader.Engine.class, BatchFileReader.Engine.AUTO);
        order = enumOption(o, ORDER, BatchFileReader.Order.class, BatchFileReader.Order.AUTO);
        windowFiles = (int) o.getLong(WINDOW_FILES, 0);
        arenaBytes = o.getLong(ARENA_BYTES, 0);
        queueDepth = (int) o.getLong(QUEUE_DEPTH, 0);
        threads = (int) o.getLong(THREADS, 0);
        largeFile = o.getLong(LARGE_FILE, 16L << 20);
        readsInFlight = (int) Math.min(1024, positive(o, READS_IN_FLIGHT, DEFAULT_READS_IN_FLIGHT));
        readTimeoutMillis = duration(o, READ_TIMEOUT, networkTimeout());
        durability = enumOption(o, DURABILITY, BatchFileWriter.Durability.class, BatchFileWriter.Durability.BATCH);
        writeBatchBytes = positive(o, WRITE_BATCH_BYTES, WriteOptions.DEFAULT_WRITE_BATCH_BYTES);
        writesInFlight = (int) Math.min(1024, positive(o, WRITES_IN_FLIGHT, DEFAULT_WRITES_IN_FLIGHT));
        commit = enumOption(o, COMMIT, WriteOptions.Commit.class, WriteOptions.Commit.AUTO);
        commitThreads = (int) Math.min(1024, positive(o, COMMIT_THREADS, DEFAULT_COMMIT_THREADS));
    }

    private static long positive(CaseInsensitiveStringMap o, String key, long dflt) {
        long v = o.getLong(key, dflt);
        if (v <= 0) {
            throw new IllegalArgumentException("bfo: option " + key + " must be positive: " + v);
        }
        return v;
    }

    /** Spark's spark.network.timeout in the application's conf (what Spark waits before it calls a peer lost). */
    private static String networkTimeout() {
        org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
        return env == null ? "120s" : env.conf().get("spark.network.timeout", "120s");
    }

    /** A duration option in milliseconds (a plain number is seconds, as Spark reads its timeouts); 0 allowed. */
    private static long duration(CaseInsensitiveStringMap o, String key, String dflt) {
        String v = o.getOrDefault(key, dflt).trim();
        long ms;
        try {
            ms = JavaUtils.timeStringAsMs(v.matches("[0-9]+") ? v + "s" : v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bfo: option " + key + " must be a duration such as 120s, not '" + v
                    + "'");
        }
        if (ms < 0) {
            throw new IllegalArgumentException("bfo: option " + key + " must not be negative: " + v);
        }
        return ms;
    }

    /** A positive size given as key or confKey ("4MB" as in the session conf; a plain number is bytes), or null. */
    private static Long byteSize(CaseInsensitiveStringMap o, String key, String confKey) {
        String name = o.containsKey(key) ? key : confKey;
        String v = o.get(name);
        if (v == null) {
            return null;
        }
        long n;
        try {
            n = JavaUtils.byteStringAsBytes(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bfo: option " + name + " must be a size such as 4MB, not '" + v + "'");
        }
        if (n <= 0) {
            throw new IllegalArgumentException("bfo: option " + name + " must be positive: " + v);
        }
        return n;
    }

    private static <E extends Enum<E>> E enumOption(CaseInsensitiveStringMap o, String key, Class<E> type, E dflt) {
        String v = o.get(key);
        if (v == null) {
            return dflt;
        }
        try {
            return Enum.valueOf(type, v.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            StringBuilder known = new StringBuilder();
            for (E c : type.getEnumConstants()) {
                known.append(known.length() == 0 ? "" : ", ").append(c.name().toLowerCase(Locale.ROOT));
            }
            throw new IllegalArgumentException("bfo: option " + key + " must be one of " + known + ", not '" + v + "'");
        }
    }

    /**
     * format=text: the lines of a file as Spark's text source reads them (Hadoop's LineRecordReader: a UTF-8
     * BOM at the start of the file dropped; lineSep as its UTF-8 bytes). No limit on a line's length: Spark
     * sets none (text would take mapreduce.input.linerecordreader.line.maxlength from the session's Hadoop
     * conf; this source does not read it).
     */
    public LineSplitter newLineSplitter() {
        return new LineSplitter(lineSep == null ? null : lineSep.getBytes(StandardCharsets.UTF_8), Integer.MAX_VALUE);
    }

    /** What one partition's read may hold in memory: arenaBytes, 64 MiB by default (bfo-java's arena). */
    public long readMemoryBytes() {
        return arenaBytes > 0 ? arenaBytes : 64L << 20;
    }

    /** A reader configured by these options; metadataOnly when no content is needed. */
    public BatchFileReader newReader(boolean metadataOnly) throws java.io.IOException {
        BatchFileReader.Builder b = BatchFileReader.builder().engine(engine).order(order).metadataOnly(metadataOnly)
                .windowFiles(windowFiles).arenaBytes(arenaBytes).queueDepth(queueDepth).threads(threads);
        if (!metadataOnly) {
            b.largeFile(Math.max(4096, Math.min(largeFile, readMemoryBytes() / 8)));
        }
        return b.build();
    }

    /** The write's options, for the write machinery of bfo-hadoop-fs. */
    public WriteOptions writeOptions() {
        return new WriteOptions(durability, writeBatchBytes, writesInFlight, commit, commitThreads,
                "in the DataFrame (each row must name a different file)");
    }

    static BfoOptions of(Map<String, String> m) {
        return new BfoOptions(new CaseInsensitiveStringMap(m));
    }
}

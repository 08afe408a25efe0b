/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FailurePolicy;

import org.apache.hadoop.conf.Configuration;

import java.io.IOException;
import java.util.Locale;

/**
 * The configuration keys of the BFO input formats, in one place.
 *
 * <p>Standard Hadoop keys honoured as {@code CombineFileInputFormat} and
 * {@code FileInputFormat} do: {@link #SPLIT_MAXSIZE}, {@link #SPLIT_MINSIZE_PER_NODE},
 * {@link #SPLIT_MINSIZE_PER_RACK}, {@link #INPUT_DIR}, {@link #INPUT_DIR_RECURSIVE},
 * {@link #PATHFILTER_CLASS}, {@link #LIST_STATUS_NUM_THREADS},
 * {@link #RECORD_DELIMITER}, {@link #MAX_LINE_LENGTH}.
 *
 * <p>BFO keys: {@code bfo.input.*} shape the splits and the reading;
 * {@code bfo.read.*} are the engine knobs handed to {@link BatchFileReader}
 * (0 or unset: the library's default). Sizes accept Hadoop's suffixes
 * ({@code 64m}, {@code 1g}).
 */
public final class BfoInputConfig {
    private BfoInputConfig() {
    }

    // ---- standard Hadoop keys (the same strings as FileInputFormat / CombineFileInputFormat) ----

    /**
     * Largest split in bytes (a split holding one larger unsplittable file may exceed it); also the
     * maxSize of the split size of large files, {@code max(minsize, min(maxsize, blockSize))}.
     */
    public static final String SPLIT_MAXSIZE = "mapreduce.input.fileinputformat.split.maxsize";
    /** The minSize of the split size of large files (BatchTextInputFormat), as FileInputFormat's. Default 1. */
    public static final String SPLIT_MINSIZE = "mapreduce.input.fileinputformat.split.minsize";
    /** Node-local leftovers at least this large become a split of their own (else they go to the rack pass). */
    public static final String SPLIT_MINSIZE_PER_NODE = "mapreduce.input.fileinputformat.split.minsize.per.node";
    /** Rack-local leftovers at least this large become a split of their own (else they go to the overflow pass). */
    public static final String SPLIT_MINSIZE_PER_RACK = "mapreduce.input.fileinputformat.split.minsize.per.rack";
    public static final String INPUT_DIR = "mapreduce.input.fileinputformat.inputdir";
    public static final String INPUT_DIR_RECURSIVE = "mapreduce.input.fileinputformat.input.dir.recursive";
    public static final String PATHFILTER_CLASS = "mapreduce.input.pathFilter.class";
    public static final String LIST_STATUS_NUM_THREADS = "mapreduce.input.fileinputformat.list-status.num-threads";
    public static final String RECORD_DELIMITER = "textinputformat.record.delimiter";
    public static final String MAX_LINE_LENGTH = "mapreduce.input.linerecordreader.line.maxlength";
    /** Set per record to the record's file, as CombineFileRecordReader does (old name: map.input.file). */
    public static final String MAP_INPUT_FILE = "mapreduce.map.input.file";
    /** Set per record to 0, or the start of a large file's split (old name: map.input.start). */
    public static final String MAP_INPUT_START = "mapreduce.map.input.start";
    /** Set per record to the file's length, or the split's (old name: map.input.length). */
    public static final String MAP_INPUT_LENGTH = "mapreduce.map.input.length";

    // ---- split planning ----

    /** Most files in one split. Default {@value #DEFAULT_SPLIT_MAXFILES}. */
    public static final String SPLIT_MAXFILES = "bfo.input.split.maxfiles";
    public static final int DEFAULT_SPLIT_MAXFILES = 10_000;
    /**
     * The split size used when {@link #SPLIT_MAXSIZE} is unset or 0 (where
     * CombineFileInputFormat would make one split per node, and TextInputFormat
     * would cut large files at block boundaries only). Default 256 MiB.
     */
    public static final String SPLIT_DEFAULT_MAXSIZE = "bfo.input.split.default.maxsize";
    public static final long DEFAULT_SPLIT_MAXSIZE = 256L << 20;
    /**
     * Order of the files in the splits: {@code auto} (inode order on local
     * file systems, path order elsewhere), {@code inode} or {@code path}.
     * Files are packed in this order, so a split covers a compact range of
     * the device; the engine then reads each window in device order.
     */
    public static final String SPLIT_ORDER = "bfo.input.split.order";

    // ---- reading ----

    /**
     * Verify local {@code .crc} checksum files as LocalFileSystem does when
     * the job's {@code file:} file system is a ChecksumFileSystem (the
     * default). Default true. False reads raw bytes, like RawLocalFileSystem.
     */
    public static final String VERIFY_CHECKSUM = "bfo.input.verify.checksum";
    /**
     * Compressed files up to this size are batch-read and decompressed from
     * memory; larger ones are streamed through the FileSystem API after the
     * batch. Default 64 MiB.
     */
    public static final String COMPRESSED_INMEMORY_MAX = "bfo.input.compressed.inmemory.max";
    public static final long DEFAULT_COMPRESSED_INMEMORY_MAX = 64L << 20;

    // ---- engine knobs (BatchFileReader.Builder) ----

    /** auto | raw | uring | portable | java. */
    public static final String READ_ENGINE = "bfo.read.engine";
    /** auto | inode | physical. */
    public static final String READ_ORDER = "bfo.read.order";
    public static final String READ_WINDOW_FILES = "bfo.read.window.files";
    public static final String READ_WINDOW_BYTES = "bfo.read.window.bytes";
    public static final String READ_ARENA_BYTES = "bfo.read.arena.bytes";
    public static final String READ_MERGE_GAP = "bfo.read.merge.gap";
    public static final String READ_MAX_IO = "bfo.read.max.io";
    public static final String READ_LARGE_EXTENT = "bfo.read.large.extent";
    /** Files above this come in pieces (native engine and FileSystem path alike). Default 16 MiB. */
    public static final String READ_LARGE_FILE = "bfo.read.large.file";
    public static final long DEFAULT_LARGE_FILE = 16L << 20;
    public static final String READ_QUEUE_DEPTH = "bfo.read.queue.depth";
    public static final String READ_THREADS = "bfo.read.threads";
    /** Refuse symbolic links instead of following them. Default false. */
    public static final String READ_NO_FOLLOW = "bfo.read.no.follow";

    // ---- FileSystem API path (hdfs:, s3a:, ...: every scheme but file:) ----

    /** Files read at once by the FileSystem path. Default {@value #DEFAULT_FS_THREADS}. */
    public static final String FS_THREADS = "bfo.read.fs.threads";
    public static final int DEFAULT_FS_THREADS = 16;
    /** Bytes read ahead but not yet consumed, at most (one file or piece may exceed it alone). Default 64 MiB. */
    public static final String FS_BYTES_IN_FLIGHT = "bfo.read.fs.bytes.in.flight";
    public static final long DEFAULT_FS_BYTES_IN_FLIGHT = 64L << 20;
    /**
     * How long a task waits for its reads in flight when none of them moves (none finishes, none starts)
     * before it fails naming the file: a duration (300s, 5m; a plain number is seconds), 0 to wait as long as
     * the file system's client does. Default 300 s: within MapReduce's own {@code mapreduce.task.timeout}
     * (600 s), which would kill the task with no word of the file.
     */
    public static final String FS_TIMEOUT = "bfo.read.fs.timeout";
    public static final long DEFAULT_FS_TIMEOUT_SECONDS = 300;
    /**
     * Directories listed at once on the client when the input is on a file system other than the local one
     * and {@link #LIST_STATUS_NUM_THREADS} is not set (FileInputFormat lists one at a time): each listing is a
     * round trip to a NameNode or an object store.
     */
    public static final int DEFAULT_REMOTE_LIST_THREADS = 16;

    /** The split size in force: {@link #SPLIT_MAXSIZE} when set above 0, else {@link #SPLIT_DEFAULT_MAXSIZE}. */
    public static long maxSplitSize(Configuration conf) {
        long max = conf.getLong(SPLIT_MAXSIZE, 0);
        if (max <= 0) {
            max = conf.getLongBytes(SPLIT_DEFAULT_MAXSIZE, DEFAULT_SPLIT_MAXSIZE);
        }
        if (max <= 0) {
            max = DEFAULT_SPLIT_MAXSIZE;
        }
        return max;
    }

    public static int maxSplitFiles(Configuration conf) {
        int n = conf.getInt(SPLIT_MAXFILES, DEFAULT_SPLIT_MAXFILES);
        return n <= 0 ? Integer.MAX_VALUE : n;
    }

    public static long largeFile(Configuration conf) {
        long n = conf.getLongBytes(READ_LARGE_FILE, 0);
        return n <= 0 ? DEFAULT_LARGE_FILE : n;
    }

    /** A reader configured from the {@code bfo.read.*} keys. */
    static BatchFileReader.Builder readerBuilder(Configuration conf) throws IOException {
        BatchFileReader.Builder b = BatchFileReader.builder();
        try {
            String engine = conf.getTrimmed(READ_ENGINE, "auto");
            b.engine(BatchFileReader.Engine.valueOf(engine.toUpperCase(Locale.ROOT)));
            String order = conf.getTrimmed(READ_ORDER, "auto");
            b.order(BatchFileReader.Order.valueOf(order.toUpperCase(Locale.ROOT)));
            b.windowFiles(conf.getInt(READ_WINDOW_FILES, 0));
            b.windowBytes(conf.getLongBytes(READ_WINDOW_BYTES, 0));
            b.arenaBytes(conf.getLongBytes(READ_ARENA_BYTES, 0));
            b.mergeGap(conf.getLongBytes(READ_MERGE_GAP, 0));
            b.maxIo(conf.getLongBytes(READ_MAX_IO, 0));
            b.largeExtent(conf.getLongBytes(READ_LARGE_EXTENT, 0));
            b.largeFile(conf.getLongBytes(READ_LARGE_FILE, 0));
            b.queueDepth(conf.getInt(READ_QUEUE_DEPTH, 0));
            b.threads(conf.getInt(READ_THREADS, 0));
            b.noFollow(conf.getBoolean(READ_NO_FOLLOW, false));
        } catch (IllegalArgumentException e) {
            throw new IOException("invalid bfo.read.* setting: " + e.getMessage(), e);
        }
        // A task fails at its first unreadable file, as TextInputFormat does: stop the batch there.
        b.failurePolicy(FailurePolicy.STOP_ON_FIRST_FAILURE);
        return b;
    }
}

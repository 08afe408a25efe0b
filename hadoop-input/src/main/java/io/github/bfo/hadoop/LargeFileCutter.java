/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.task.JobContextImpl;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Which files BatchTextInputFormat cuts into several splits, and where:
 * exactly as the {@code mapreduce} TextInputFormat does, because Hadoop's
 * own {@code FileInputFormat.getSplits} does the cutting (a TextInputFormat
 * whose listing is the given files).
 *
 * <p>The rule, FileInputFormat's: a file's split size is
 * {@code max(minSize, min(maxSize, blockSize))} (computeSplitSize), with
 * minSize {@code mapreduce.input.fileinputformat.split.minsize} (at least 1)
 * and maxSize the planner's ({@link BfoInputConfig#maxSplitSize}: split.maxsize,
 * or {@code bfo.input.split.default.maxsize}, 256 MiB, when that is unset,
 * where TextInputFormat would take no maximum: the same splits whenever the
 * block size is below it, as HDFS's 128 MiB and the local 32 MiB are). A
 * file is <em>large</em> when {@code length / splitSize > 1.1}
 * (SPLIT_SLOP): it then becomes splits of splitSize from offset 0, the last
 * one holding the rest (up to 1.1 splitSize), each on the hosts of the block
 * where it starts. Only splittable files are cut (TextInputFormat's
 * isSplitable: no codec, or a SplittableCompressionCodec such as bzip2);
 * every other file, large or not, is packed whole by the planner.
 *
 * <p>Why a large file's splits leave the batch: a split of one large file
 * is one long sequential read, where the batching of many small files in
 * device order has nothing to win, so the split is a plain FileSplit read by
 * Hadoop's LineRecordReader ({@link LargeFileRecordReader}), which gives
 * TextInputFormat's exact record semantics at split boundaries (a line
 * belongs to the split where it starts; CRLF, custom delimiters and
 * maxlength across a boundary), its checksum verification and its
 * BYTES_READ accounting. The same reader is what makes bzip2 splittable:
 * cutting it costs nothing extra here, and one task decompressing a multi-
 * gigabyte bzip2 file (tens of MB/s) is what TextInputFormat users avoid.
 */
final class LargeFileCutter {
    /** FileInputFormat's SPLIT_SLOP (private there): the last split may be up to 10% larger. */
    static final double SPLIT_SLOP = 1.1;

    private final Cutter format;
    private final JobContext job;
    private final long minSize;
    private final long maxSize;

    /** The rule of a job's configuration. */
    LargeFileCutter(Configuration conf) {
        Configuration c = new Configuration(conf);
        maxSize = BfoInputConfig.maxSplitSize(conf);
        c.setLong(FileInputFormat.SPLIT_MAXSIZE, maxSize);
        job = new JobContextImpl(c, null);
        minSize = Math.max(1, FileInputFormat.getMinSplitSize(job));
        format = new Cutter();
    }

    /** True when a splittable file of this length and block size would be cut into several splits. */
    boolean isLarge(long length, long blockSize) {
        return length > 0 && ((double) length) / format.computeSplitSize(blockSize, minSize, maxSize) > SPLIT_SLOP;
    }

    /** TextInputFormat's isSplitable: no compression codec, or a splittable one. */
    boolean isSplitable(Path file) {
        return format.isSplitable(job, file);
    }

    /**
     * The splits of files (each large and splittable), in the given order,
     * each file's splits by offset: FileInputFormat.getSplits over them.
     */
    List<FileSplit> cut(List<FileStatus> files) throws IOException {
        if (files.isEmpty()) {
            return new ArrayList<>();
        }
        format.files = files;
        try {
            List<FileSplit> out = new ArrayList<>();
            for (InputSplit s : format.getSplits(job)) {
                out.add((FileSplit) s);
            }
            return out;
        } finally {
            format.files = null;
        }
    }

    /** Hadoop's TextInputFormat over a given list of files (its protected rule made reachable). */
    private static final class Cutter extends TextInputFormat {
        List<FileStatus> files;

        @Override
        protected List<FileStatus> listStatus(JobContext context) {
            return files;
        }

        @Override
        protected boolean isSplitable(JobContext context, Path file) {
            return super.isSplitable(context, file);
        }

        @Override
        protected long computeSplitSize(long blockSize, long minSize, long maxSize) {
            return super.computeSplitSize(blockSize, minSize, maxSize);
        }
    }
}

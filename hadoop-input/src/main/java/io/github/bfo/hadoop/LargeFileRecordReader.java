/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.LineRecordReader;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The lines of one split of a large file ({@link LargeFileCutter}), for
 * both MapReduce APIs: Hadoop's own LineRecordReader, as TextInputFormat
 * reads it, not a BFO batch. A split of one file is one long sequential
 * read, which the FileSystem's stream already does well; LineRecordReader
 * gives the exact semantics at split boundaries (a line belongs to the split
 * where it starts; {@code \r\n} or a custom delimiter straddling the
 * boundary; {@code line.maxlength}), verifies local {@code .crc} files
 * through LocalFileSystem, and the task counts its BYTES_READ from the
 * FileSystem statistics, as for TextInputFormat (so nothing is added here).
 *
 * <p>What this adds: {@code mapreduce.map.input.file}, {@code .start},
 * {@code .length} are set for the new API too (the old API's MapTask sets
 * them for a FileSplit), as for BatchTextInputFormat's other splits;
 * {@code bfo.input.verify.checksum=false} reads a local file raw; the
 * counters {@link BfoCounter#LARGE_FILE_SPLITS} and
 * {@link BfoCounter#LARGE_FILE_SPLIT_BYTES}.
 */
public class LargeFileRecordReader extends LineRecordReader {

    public LargeFileRecordReader(Configuration conf) {
        super(delimiter(conf));
    }

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
        FileSplit piece = (FileSplit) split;
        Configuration conf = context.getConfiguration();
        conf.set(BfoInputConfig.MAP_INPUT_FILE, piece.getPath().toString());
        conf.setLong(BfoInputConfig.MAP_INPUT_START, piece.getStart());
        conf.setLong(BfoInputConfig.MAP_INPUT_LENGTH, piece.getLength());
        Configuration read = readConf(conf, piece.getPath());
        super.initialize(split, read == conf ? context : new TaskAttemptContextImpl(read, context.getTaskAttemptID()));
        count(TaskCounters.of(context), piece.getLength());
    }

    /** The old API's reader of a split of a large file: the old LineRecordReader, as the old TextInputFormat's. */
    public static org.apache.hadoop.mapred.RecordReader<LongWritable, Text> open(
            org.apache.hadoop.mapred.FileSplit split, JobConf job, Reporter reporter) throws IOException {
        org.apache.hadoop.mapred.LineRecordReader r = new org.apache.hadoop.mapred.LineRecordReader(
                readConf(job, split.getPath()), split, delimiter(job));
        count(TaskCounters.of(reporter), split.getLength());
        return r;
    }

    /** TextInputFormat's record delimiter: textinputformat.record.delimiter as UTF-8, or null for any newline. */
    static byte[] delimiter(Configuration conf) {
        String d = conf.get(BfoInputConfig.RECORD_DELIMITER);
        return d == null ? null : d.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The configuration the reader opens file with: conf itself, or, when
     * checksums are off for a local file, one whose {@code file:} is an
     * uncached RawLocalFileSystem (the cached LocalFileSystem is shared by
     * the task: its verify flag cannot be turned off for one reader). That
     * instance holds nothing to close.
     */
    static Configuration readConf(Configuration conf, Path file) {
        if (conf.getBoolean(BfoInputConfig.VERIFY_CHECKSUM, true) || !"file".equals(file.toUri().getScheme())) {
            return conf;
        }
        Configuration raw = new Configuration(conf);
        raw.setClass("fs.file.impl", RawLocalFileSystem.class, org.apache.hadoop.fs.FileSystem.class);
        raw.setBoolean("fs.file.impl.disable.cache", true);
        return raw;
    }

    private static void count(CounterSink counters, long bytes) {
        counters.add(BfoCounter.LARGE_FILE_SPLITS, 1);
        counters.add(BfoCounter.LARGE_FILE_SPLIT_BYTES, bytes);
    }
}

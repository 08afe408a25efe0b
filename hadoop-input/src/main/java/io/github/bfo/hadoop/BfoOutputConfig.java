/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.BatchFileWriter;
import io.github.bfo.hadoop.fs.write.WriteOptions;

import org.apache.hadoop.conf.Configuration;

import java.util.Locale;

/**
 * The configuration keys of {@link BatchFileOutputFormat} ({@code bfo.output.*};
 * sizes accept Hadoop's suffixes, {@code 64m}). The output directory is
 * FileOutputFormat's ({@code mapreduce.output.fileoutputformat.outputdir});
 * {@code mapreduce.fileoutputcommitter.marksuccessfuljobs} is honoured as
 * FileOutputCommitter honours it.
 */
public final class BfoOutputConfig {
    private BfoOutputConfig() {
    }

    /**
     * Local directories: when a task's files are durable: {@code batch} (default: one durability point per
     * batch, before the task commits), {@code close} (when the task's writer closes: batches share durability
     * points), {@code each} (fsync per file), {@code none} (page cache). Other file systems: {@code each}
     * hsyncs every file before its close (HDFS: on the DataNodes' disks before the task commits), the others
     * close only (HDFS: acknowledged by the DataNodes' pipeline), as {@code FileSystem.create} users get.
     */
    public static final String DURABILITY = "bfo.output.durability";
    /** Local directories: bytes per batch; other file systems: bytes of a task's files in flight. 64 MiB. */
    public static final String WRITE_BATCH_BYTES = "bfo.output.write.batch.bytes";
    /** Other file systems: files a task creates (or uploads) at once. Default 16. */
    public static final String WRITES_IN_FLIGHT = "bfo.output.writes.in.flight";
    /**
     * Other file systems: how the job commit publishes: {@code auto} (default: multipart uploads completed at
     * the job commit where the file system's own multipart uploads are enabled, S3A; renames elsewhere),
     * {@code rename}, {@code multipart}.
     */
    public static final String COMMIT = "bfo.output.commit";
    /** Files the job commit publishes at once (renames, or multipart completions). Default 16. */
    public static final String COMMIT_THREADS = "bfo.output.commit.threads";

    /** The write options of a job's configuration; an IllegalArgumentException naming a bad value. */
    public static WriteOptions writeOptions(Configuration conf) {
        return new WriteOptions(
                enumValue(conf, DURABILITY, BatchFileWriter.Durability.class, BatchFileWriter.Durability.BATCH),
                positive(conf, WRITE_BATCH_BYTES, conf.getLongBytes(WRITE_BATCH_BYTES,
                        WriteOptions.DEFAULT_WRITE_BATCH_BYTES)),
                (int) Math.min(1024, positive(conf, WRITES_IN_FLIGHT,
                        conf.getInt(WRITES_IN_FLIGHT, WriteOptions.DEFAULT_WRITES_IN_FLIGHT))),
                enumValue(conf, COMMIT, WriteOptions.Commit.class, WriteOptions.Commit.AUTO),
                (int) Math.min(1024, positive(conf, COMMIT_THREADS,
                        conf.getInt(COMMIT_THREADS, WriteOptions.DEFAULT_COMMIT_THREADS))),
                "in two records (each record must name a different file)");
    }

    private static long positive(Configuration conf, String key, long v) {
        if (v <= 0) {
            throw new IllegalArgumentException("bfo: " + key + " must be positive, not " + conf.get(key));
        }
        return v;
    }

    private static <E extends Enum<E>> E enumValue(Configuration conf, String key, Class<E> type, E dflt) {
        String v = conf.getTrimmed(key);
        if (v == null || v.isEmpty()) {
            return dflt;
        }
        try {
            return Enum.valueOf(type, v.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            StringBuilder known = new StringBuilder();
            for (E c : type.getEnumConstants()) {
                known.append(known.length() == 0 ? "" : ", ").append(c.name().toLowerCase(Locale.ROOT));
            }
            throw new IllegalArgumentException("bfo: " + key + " must be one of " + known + ", not '" + v + "'");
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.Serializable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * What a task attempt needs to write its files, shipped from the job (Spark)
 * or made again from the configuration (Hadoop): the output directory, the
 * staging directory's name (and, locally, its identity when the job could
 * hand it over), the options, and how this file system is written.
 *
 * @param stagingKey the local staging directory's identity, or null (checked to be owner-only and the effective
 *                   user's)
 */
public record TaskSetup(Kind kind, String dir, String stagingName, String stagingKey, WriteOptions options)
        implements Serializable {
    /** How the files are written: libbfo batches, Hadoop streams, or multipart uploads. */
    public enum Kind { LOCAL, STREAMS, UPLOADS }

    /**
     * The writer of one task attempt: partition picks its directory on a Hadoop file system (0 to the
     * partitions the job was set up for), attempt names its files ({@code task-...}, unique among the job's
     * attempts), conf reaches the file system.
     */
    public OutputTask open(int partition, String attempt, Configuration conf) {
        return switch (kind) {
            case LOCAL -> new LocalTask(java.nio.file.Path.of(dir), stagingName, stagingKey, attempt, options);
            case STREAMS -> new StreamTask(new Path(dir), stagingName, partition, attempt, conf, options);
            case UPLOADS -> new UploadTask(new Path(dir), conf, options);
        };
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.hadoop.fs.write.OutputJob;
import io.github.bfo.hadoop.fs.write.OutputPaths;
import io.github.bfo.hadoop.fs.write.TaskFiles;
import io.github.bfo.hadoop.fs.write.TaskSetup;
import io.github.bfo.spark.BfoOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * A write into one directory as Spark's V2 commit protocol runs it, over the
 * write machinery of bfo-hadoop-fs ({@link OutputJob}): the factory ships
 * what the job set up (a staging directory named after the query,
 * {@code _temporary-bfo-QUERYID}) to the tasks; Spark's output commit
 * coordinator arbitrates the task commits, whose messages carry the tasks'
 * reports ({@link BfoTaskCommit}); the job commit publishes them, an abort
 * undoes everything. The session's Hadoop configuration goes to the tasks
 * when they write to a file system other than the local one, as Spark's
 * file writers ship it.
 */
final class BfoWrite implements Write, BatchWrite {
    private final OutputJob job;
    private final Configuration conf;
    private final StructType schema;
    private final boolean local;

    BfoWrite(OutputDir dir, Configuration conf, BfoOptions options, LogicalWriteInfo info, boolean truncate) {
        this.job = dir.newJob(OutputPaths.stagingName(info.queryId()), options.writeOptions(), truncate);
        this.conf = conf;
        this.schema = info.schema();
        this.local = "file".equals(new org.apache.hadoop.fs.Path(dir.qualified()).toUri().getScheme());
    }

    @Override
    public String description() {
        return job.description();
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        TaskSetup setup;
        try {
            setup = job.setup(info == null ? 1 : info.numPartitions());
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
        return new BfoDataWriterFactory(setup, local ? null : new SerializableConfiguration(conf), schema);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        try {
            job.commit(files(messages));
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: job commit failed: " + e, e);
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        job.abort(files(messages));
    }

    private static List<TaskFiles> files(WriterCommitMessage[] messages) {
        List<TaskFiles> all = new ArrayList<>();
        for (WriterCommitMessage m : messages) {
            if (m != null) {
                all.add(((BfoTaskCommit) m).files());
            }
        }
        return all;
    }
}

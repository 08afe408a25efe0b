/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.TaskSetup;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Ships what the job set up (and, for a file system other than the local
 * one, the session's Hadoop configuration: its settings and credentials, as
 * Spark's file writers ship it) to the executors; one writer per task
 * attempt.
 */
record BfoDataWriterFactory(TaskSetup setup, SerializableConfiguration conf, StructType schema)
        implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoDataWriter(setup.open(partitionId, attemptName(partitionId, taskId),
                conf == null ? null : conf.value()), schema);
    }

    /** The staging name of one task attempt: attempts of one partition never share it. */
    static String attemptName(int partitionId, long taskId) {
        return "task-" + partitionId + "-" + taskId;
    }
}

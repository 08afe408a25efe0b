/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Ships the output directory, the staging directory's name, the options and
 * the session's Hadoop configuration (the file system's settings and
 * credentials, as Spark's file writers ship it) to the executors; one
 * writer per task attempt.
 */
record BfoHadoopDataWriterFactory(String dir, String stagingName, SerializableConfiguration conf,
                                  BfoOptions options, StructType schema) implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoHadoopDataWriter(new Path(dir), stagingName, partitionId,
                BfoDataWriter.attemptName(partitionId, taskId), conf.value(), options, schema);
    }
}

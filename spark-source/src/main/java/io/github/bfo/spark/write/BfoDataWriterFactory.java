/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;

/** Ships the staging directory and options to the executors; one writer per task attempt. */
record BfoDataWriterFactory(String dir, String stagingName, String stagingKey, BfoOptions options,
                            StructType schema) implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoDataWriter(java.nio.file.Path.of(dir), stagingName, stagingKey,
                BfoDataWriter.attemptName(partitionId, taskId), options, schema);
    }
}

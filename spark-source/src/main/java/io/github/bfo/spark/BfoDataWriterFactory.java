/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;

/** Ships the staging directory and options to the executors; one writer per task attempt. */
final class BfoDataWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;

    private final String staging;
    private final BfoOptions options;
    private final StructType schema;

    BfoDataWriterFactory(String staging, BfoOptions options, StructType schema) {
        this.staging = staging;
        this.options = options;
        this.schema = schema;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoDataWriter(java.nio.file.Path.of(staging).resolve("task-" + partitionId + "-" + taskId), options,
                schema);
    }
}

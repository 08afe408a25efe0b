/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;

/** Ships the staging directory and options to the executors; one writer per task attempt. */
final class BfoDataWriterFactory implements DataWriterFactory {
    private static final long serialVersionUID = 1L;

    private final String dir;
    private final String stagingName;
    private final String stagingKey;
    private final BfoOptions options;
    private final StructType schema;

    BfoDataWriterFactory(String dir, String stagingName, String stagingKey, BfoOptions options, StructType schema) {
        this.dir = dir;
        this.stagingName = stagingName;
        this.stagingKey = stagingKey;
        this.options = options;
        this.schema = schema;
    }

    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoDataWriter(java.nio.file.Path.of(dir), stagingName, stagingKey,
                "task-" + partitionId + "-" + taskId, options, schema);
    }
}

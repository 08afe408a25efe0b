/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/** Ships the output directory, the options and the session's Hadoop configuration to a multipart write's tasks. */
record BfoUploadDataWriterFactory(String dir, SerializableConfiguration conf, BfoOptions options, StructType schema)
        implements DataWriterFactory {
    @Override
    public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
        return new BfoUploadDataWriter(new Path(dir), conf.value(), options, schema);
    }
}

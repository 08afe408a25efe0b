/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/** Ships the scan's settings to the executors and makes one reader per input partition. */
final class BfoReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    final BfoOptions options;
    final StructType dataSchema;
    final StructType partitionSchema;
    final StructType readSchema;
    final MetadataFilters filters;
    final boolean readsData;
    /** The session's Hadoop configuration, for files on other file systems; null when every file is local. */
    private final Broadcast<SerializableConfiguration> conf;

    BfoReaderFactory(BfoOptions options, StructType dataSchema, StructType partitionSchema, StructType readSchema,
                     MetadataFilters filters, boolean readsData, Broadcast<SerializableConfiguration> conf) {
        this.conf = conf;
        this.options = options;
        this.dataSchema = dataSchema;
        this.partitionSchema = partitionSchema;
        this.readSchema = readSchema;
        this.filters = filters;
        this.readsData = readsData;
    }

    /** The read's Hadoop configuration (as binaryFile's readers get theirs: broadcast once per scan). */
    Configuration hadoopConf() {
        if (conf == null) {
            throw new IllegalStateException("bfo: no Hadoop configuration was shipped for a non-local file");
        }
        return conf.value().value();
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new BfoPartitionReader(this, (BfoInputPartition) partition);
    }
}

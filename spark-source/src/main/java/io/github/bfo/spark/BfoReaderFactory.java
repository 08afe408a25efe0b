/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;

/** Ships the scan's settings to the executors and makes one reader per input partition. */
final class BfoReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    final BfoOptions options;
    final StructType dataSchema;
    final StructType partitionSchema;
    final StructType readSchema;
    final MetadataFilters filters;
    final boolean readsData;

    BfoReaderFactory(BfoOptions options, StructType dataSchema, StructType partitionSchema, StructType readSchema,
                     MetadataFilters filters, boolean readsData) {
        this.options = options;
        this.dataSchema = dataSchema;
        this.partitionSchema = partitionSchema;
        this.readSchema = readSchema;
        this.filters = filters;
        this.readsData = readsData;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        return new BfoPartitionReader(this, (BfoInputPartition) partition);
    }
}

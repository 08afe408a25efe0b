/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

/** The files of one task, read as one BFO batch. */
final class BfoInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String[] paths;            // Hadoop path strings as listed ("file:/...")
    final long[] lengths;
    final InternalRow[] partitionValues;
    private final String[] hosts;

    BfoInputPartition(PartitionedFile[] files, String[] hosts) {
        int n = files.length;
        paths = new String[n];
        lengths = new long[n];
        partitionValues = new InternalRow[n];
        for (int i = 0; i < n; i++) {
            paths[i] = files[i].toPath().toString();
            lengths[i] = files[i].fileSize();
            partitionValues[i] = files[i].partitionValues().copy();
        }
        this.hosts = hosts;
    }

    @Override
    public String[] preferredLocations() {
        return hosts;
    }
}

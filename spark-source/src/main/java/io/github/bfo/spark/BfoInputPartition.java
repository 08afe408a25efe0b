/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

/** The files of one task, read as one BFO batch. */
final class BfoInputPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String[] paths;            // Hadoop path strings as listed ("file:/..."), the path column
    final long[] lengths;
    final InternalRow[] partitionValues;
    private final String[] hosts;

    /** names: per file, its Hadoop path string (taken from the listing, not parsed again). */
    BfoInputPartition(PartitionedFile[] files, String[] hosts, Map<PartitionedFile, String> names) {
        int n = files.length;
        paths = new String[n];
        lengths = new long[n];
        partitionValues = new InternalRow[n];
        // one copy per partition directory, shared by its files (serialized once per task, not once per file)
        Map<InternalRow, InternalRow> copies = new IdentityHashMap<>();
        for (int i = 0; i < n; i++) {
            paths[i] = names.get(files[i]);
            lengths[i] = files[i].fileSize();
            partitionValues[i] = copies.computeIfAbsent(files[i].partitionValues(), InternalRow::copy);
        }
        this.hosts = hosts;
    }

    /**
     * The local path of file i: a local Hadoop path's string is "file:" and the decoded path (Path.toString),
     * so the listing's string gives it without parsing; anything else is parsed.
     */
    java.nio.file.Path localPath(int i) {
        String p = paths[i];
        if (p.startsWith("file:/") && !p.startsWith("file://")) {
            return java.nio.file.Paths.get(p.substring("file:".length()));
        }
        return java.nio.file.Paths.get(new org.apache.hadoop.fs.Path(p).toUri().getPath());
    }

    @Override
    public String[] preferredLocations() {
        return hosts;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.Charset;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;

/**
 * What a task gets: the Hadoop path strings of the listing, the local paths the batch read takes (as the JDK
 * encodes them), and the partition values, the same after Java serialization (how Spark ships partitions).
 */
class BfoInputPartitionTest {
    private static final Charset JNU = Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));

    private static BfoInputPartition partition(List<String> paths, InternalRow... rows) throws Exception {
        PartitionedFile[] files = new PartitionedFile[paths.size()];
        Map<PartitionedFile, String> names = new IdentityHashMap<>();
        for (int i = 0; i < files.length; i++) {
            files[i] = new PartitionedFile(rows[i % rows.length], SparkPath.fromPath(new Path(paths.get(i))), 0,
                    10 + i, new String[0], 1000L * i, 10 + i, scala.collection.immutable.Map$.MODULE$.empty());
            names.put(files[i], paths.get(i));
        }
        return roundTrip(new BfoInputPartition(files, new String[0], names));
    }

    private static BfoInputPartition roundTrip(BfoInputPartition p) throws Exception {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(buf)) {
            out.writeObject(p);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(buf.toByteArray()))) {
            return (BfoInputPartition) in.readObject();
        }
    }

    private static byte[] packed(List<String> paths, int... which) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i : which) {
            byte[] b = java.nio.file.Paths.get(paths.get(i).substring("file:".length())).toString().getBytes(JNU);
            out.write(b, 0, b.length);
            out.write(0);
        }
        return out.toByteArray();
    }

    @Test
    void localPathsArePackedAsTheJdkEncodesThem() throws Exception {
        List<String> paths = List.of("file:/data/a b/c%20d#e.bin", "file:/data/k=1/x:y", "file:/data/plain",
                "file:/data/" + (JNU.newEncoder().canEncode("é漢") ? "é漢" : "e"));
        InternalRow one = new GenericInternalRow(new Object[] {UTF8String.fromString("1")});
        InternalRow two = new GenericInternalRow(new Object[] {UTF8String.fromString("2")});
        BfoInputPartition p = partition(paths, one, two);
        assertEquals(paths.size(), p.size());
        for (int i = 0; i < paths.size(); i++) {
            assertEquals(paths.get(i), p.path(i));
            assertEquals(10 + i, p.lengths[i]);
            assertEquals(i % 2 == 0 ? one : two, p.partitionValues(i));
            assertEquals(java.nio.file.Paths.get(paths.get(i).substring(5)), p.localPath(i));
        }
        assertSame(p.partitionValues(0), p.partitionValues(2), "one row per distinct partition");
        assertArrayEquals(packed(paths, 0, 1, 2, 3), p.packedLocalPaths(new int[] {0, 1, 2, 3}, 4));
        assertArrayEquals(packed(paths, 1, 3), p.packedLocalPaths(new int[] {1, 3}, 2));
        assertArrayEquals(new byte[0], p.packedLocalPaths(new int[0], 0));
    }

    @Test
    void pathsTheBytesCannotCarryGoAsPaths() throws Exception {
        List<String> paths = List.of("file:/data/ok", "file:/data/bad\uFFFDname");
        BfoInputPartition p = partition(paths, InternalRow.empty());
        assertNull(p.packedLocalPaths(new int[] {0, 1}, 2));
        assertEquals(paths.get(1), p.path(1));
        assertEquals(java.nio.file.Paths.get("/data/bad\uFFFDname"), p.localPath(1));
        assertEquals(InternalRow.empty(), p.partitionValues(1));
    }
}

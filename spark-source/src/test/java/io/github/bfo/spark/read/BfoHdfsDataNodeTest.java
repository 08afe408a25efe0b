/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.MiniDfs;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A DataNode stopped in the middle of a bfo read of HDFS: files kept on two
 * DataNodes are still read whole (the client goes to the other replica);
 * files whose only copy was on the stopped one fail the query as they fail
 * binaryFile's (even under ignoreCorruptFiles, as Spark's file scans do).
 */
class BfoHdfsDataNodeTest extends SparkTestBase {
    static MiniDfs dfs;
    static final int FILES = 40, SINGLE = 12;
    static final AtomicBoolean STOPPED = new AtomicBoolean();
    static String victim;

    @BeforeAll
    static void startDfs() throws Exception {
        dfs = new MiniDfs(3, 2);
        MiniDfs.CLIENT.forEach(spark.sparkContext().hadoopConfiguration()::set);
        Random r = new Random(5);
        for (int i = 0; i < FILES; i++) {
            create("/two/f" + i, random(r, 1 + r.nextInt(20000)), (short) 2);
        }
        for (int i = 0; i < SINGLE; i++) {
            create("/one/g" + i, random(r, 1 + r.nextInt(20000)), (short) 1);
        }
        victim = busiestDataNode("/one");
        // stops the DataNode from inside the read, once, after the task's first row
        spark.udf().register("stop_datanode", (UDF1<String, Integer>) p -> {
            if (STOPPED.compareAndSet(false, true)) {
                dfs.stopDataNode(victim);
            }
            return 0;
        }, DataTypes.IntegerType);
    }

    static void create(String path, byte[] data, short replication) throws Exception {
        FileSystem fs = dfs.fs();
        try (FSDataOutputStream out = fs.create(new org.apache.hadoop.fs.Path(path), replication)) {
            out.write(data);
        }
    }

    /** The DataNode (host:port) holding the most blocks under dir. */
    static String busiestDataNode(String dir) throws Exception {
        Map<String, Integer> blocks = new HashMap<>();
        for (FileStatus st : dfs.fs().listStatus(new org.apache.hadoop.fs.Path(dir))) {
            for (BlockLocation b : dfs.fs().getFileBlockLocations(st, 0, st.getLen())) {
                for (String name : b.getNames()) {
                    blocks.merge(name, 1, Integer::sum);
                }
            }
        }
        return blocks.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
    }

    @AfterAll
    static void stopDfs() throws Exception {
        if (dfs != null) {
            dfs.close();
        }
    }

    @Test
    void dataNodeStoppedMidRead() {
        String two = dfs.uri() + "/two", one = dfs.uri() + "/one";
        List<String> expected = rows(spark.read().format("binaryFile").load(two));
        assertEquals(FILES, expected.size());
        // one file in flight at a time: nearly every file of the partition is opened after the stop
        Dataset<Row> read = spark.read().format("bfo").option("readsInFlight", "1").load(two)
                .selectExpr("*", "stop_datanode(path) AS stopped");
        List<String> got = rows(read).stream().map(r -> r.substring(0, r.length() - " | 0".length())).toList();
        assertTrue(STOPPED.get(), "the DataNode was stopped during the read");
        assertEquals(expected, got);

        // the files whose only replica was on the stopped DataNode
        // a lost block is not a corrupt file: Spark's scans fail on it even with ignoreCorruptFiles, as bfo does
        for (String ignore : new String[] {"false", "true"}) {
            assertThrows(Exception.class, () -> spark.read().format("binaryFile").option("ignoreCorruptFiles", ignore)
                    .load(one).collectAsList());
            Exception e = assertThrows(Exception.class, () -> spark.read().format("bfo")
                    .option("ignoreCorruptFiles", ignore).load(one).selectExpr("content").collectAsList());
            assertTrue(rootMessage(e).contains("bfo: cannot read " + one + "/g"),
                    rootMessage(e));
        }
        // and what was never opened cannot fail: the listing answers a metadata-only query
        assertEquals(rows(spark.read().format("binaryFile").load(one).selectExpr("path", "length")),
                rows(spark.read().format("bfo").load(one).selectExpr("path", "length")));
    }
}

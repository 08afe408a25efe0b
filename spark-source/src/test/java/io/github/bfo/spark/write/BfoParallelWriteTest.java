/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.SparkTestBase;
import io.github.bfo.testsupport.OtherSchemeFileSystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writes through Hadoop's FileSystem API (the local disk under other
 * schemes) with several files in flight per task: the same files as the
 * local writer's at any writesInFlight; one file whose create fails among
 * many in flight fails its task, and the job publishes nothing and leaves
 * no staging directory, also when a task goes on writing after the job was
 * aborted (Spark does not wait for the other tasks before it aborts).
 */
class BfoParallelWriteTest extends SparkTestBase {
    @TempDir
    static Path tmp;

    @BeforeAll
    static void schemes() {
        spark.sparkContext().hadoopConfiguration().set("fs." + OtherSchemeFileSystem.SCHEME + ".impl",
                OtherSchemeFileSystem.class.getName());
        spark.sparkContext().hadoopConfiguration().set("fs." + FailingCreateFileSystem.SCHEME + ".impl",
                FailingCreateFileSystem.class.getName());
        spark.sparkContext().hadoopConfiguration().set("fs." + LateCreateFileSystem.SCHEME + ".impl",
                LateCreateFileSystem.class.getName());
    }

    static Dataset<Row> rows(String failing) {
        return spark.sql("SELECT CASE WHEN id = 57 THEN '" + failing + "' ELSE concat('d', id % 4, '/f', id) END "
                + "AS path, repeat(concat('v', id), CAST(id % 50 AS INT)) AS content FROM range(0, 200, 1, 2)");
    }

    @Test
    void sameFilesAtAnyWritesInFlight() throws Exception {
        Path local = tmp.resolve("local");
        rows("d1/f57").write().format("bfo").save(local.toString());
        Map<String, String> want = BfoHdfsWriteTest.localTree(local);
        assertEquals(200, want.size());
        for (String n : new String[] {"1", "4", "16", "64"}) {
            Path out = tmp.resolve("fake-" + n);
            rows("d1/f57").write().format("bfo").option("writesInFlight", n).option("commitThreads", n)
                    .save(OtherSchemeFileSystem.SCHEME + "://" + out);
            assertEquals(want, BfoHdfsWriteTest.localTree(out), n);
        }
    }

    @Test
    void aFailedCreateAmongManyPublishesNothing() throws Exception {
        Path out = tmp.resolve("failing");
        Files.createDirectories(out);
        Files.writeString(out.resolve("keep.txt"), "kept");
        for (String n : new String[] {"1", "16"}) {
            Exception x = assertThrows(Exception.class, () -> rows("d1/fail57").write().format("bfo")
                    .option("writesInFlight", n).mode("append").save(FailingCreateFileSystem.SCHEME + "://" + out));
            String m = rootMessage(x);
            assertTrue(m.contains("bfo write: cannot write 'd1/fail57'") && m.contains("refused by the test file system"),
                    m);
            assertEquals(List.of("keep.txt"), names(out), "nothing published, no staging left");
        }
        Path fresh = tmp.resolve("failing-fresh");
        assertThrows(Exception.class, () -> rows("fail57").write().format("bfo").option("writesInFlight", "16")
                .save(FailingCreateFileSystem.SCHEME + "://" + fresh));
        assertFalse(Files.exists(fresh), "the directory the job made is removed");
    }

    /**
     * One task writes a file, its job is aborted (the staging directory removed), and the task goes on: its
     * next files fail, its commit fails, and nothing is left in dir (no staging directory made again).
     * Returns the names in dir afterwards, for the caller to compare with what was there.
     */
    static List<String> lateTaskAfterAbort(String dir, String queryId, String writesInFlight) throws Exception {
        org.apache.hadoop.fs.Path d = new org.apache.hadoop.fs.Path(dir);
        BfoOptions options = new BfoOptions(new CaseInsensitiveStringMap(Map.of("writesInFlight", writesInFlight)));
        org.apache.hadoop.conf.Configuration conf = spark.sparkContext().hadoopConfiguration();
        BfoWrite job = new BfoWrite(io.github.bfo.hadoop.fs.write.OutputDir.of(dir, conf), conf, options,
                BfoWriteSymlinkTest.info(queryId), false);
        DataWriter<InternalRow> task = job.createBatchWriterFactory(() -> 2).createWriter(1, 7);
        task.write(row("a/early"));
        job.abort(new WriterCommitMessage[0]);
        Exception x = assertThrows(IOException.class, () -> {
            for (int i = 0; i < 20; i++) {
                task.write(row("a/late" + i));
            }
            task.commit();
        });
        assertTrue(rootMessage(x).contains("_temporary-bfo-" + queryId), rootMessage(x));
        task.abort();
        task.close();
        FileSystem fs = d.getFileSystem(spark.sparkContext().hadoopConfiguration());
        List<String> names = new java.util.ArrayList<>();
        for (FileStatus st : fs.listStatus(d)) {
            names.add(st.getPath().getName());
        }
        names.sort(null);
        return names;
    }

    static InternalRow row(String path) {
        return new GenericInternalRow(new Object[] {UTF8String.fromString(path), BfoWriteTest.b("data " + path)});
    }

    @Test
    void aTaskGoingOnAfterItsJobAbortedLeavesNothing() throws Exception {
        for (String n : new String[] {"1", "16"}) {
            Path out = Files.createDirectories(tmp.resolve("late-" + n));
            Files.writeString(out.resolve("keep.txt"), "kept");
            assertEquals(List.of("keep.txt"), lateTaskAfterAbort(OtherSchemeFileSystem.SCHEME + "://" + out,
                    "late" + n, n));
            assertEquals(Map.of("keep.txt", BfoHdfsWriteTest.localTree(out).get("keep.txt")),
                    BfoHdfsWriteTest.localTree(out));
        }
    }

    /**
     * The local disk's recursive delete walks the tree: a task's create after the walk listed the staging
     * directory makes the delete fail and leaves the directory (LateCreateFileSystem makes that create at
     * the first delete): the job still leaves nothing behind.
     */
    @Test
    void aCreateDuringTheAbortsWalkLeavesNothing() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("walk"));
        Files.writeString(out.resolve("keep.txt"), "kept");
        assertThrows(Exception.class, () -> rows("d1/fail57").write().format("bfo").mode("append")
                .save(LateCreateFileSystem.SCHEME + "://" + out));
        assertTrue(LateCreateFileSystem.raced.get() > 0, "the delete met a late create");
        assertEquals(List.of("keep.txt"), names(out), "nothing published, no staging left");
    }
}

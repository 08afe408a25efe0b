/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Writes through Hadoop's FileSystem API (the local disk under other
 * schemes) with several files in flight per task: the same files as the
 * local writer's at any writesInFlight; one file whose create fails among
 * many in flight fails its task, and the job publishes nothing and leaves
 * no staging directory.
 */
class BfoParallelWriteTest extends SparkTestBase {
    @TempDir
    static Path tmp;

    @BeforeAll
    static void schemes() {
        spark.sparkContext().hadoopConfiguration().set("fs." + FakeSchemeFileSystem.SCHEME + ".impl",
                FakeSchemeFileSystem.class.getName());
        spark.sparkContext().hadoopConfiguration().set("fs." + FailingCreateFileSystem.SCHEME + ".impl",
                FailingCreateFileSystem.class.getName());
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
                    .save(FakeSchemeFileSystem.SCHEME + "://" + out);
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
            String m = BfoReadTest.rootMessage(x);
            assertTrue(m.contains("bfo write: cannot write 'd1/fail57'") && m.contains("refused by the test file system"),
                    m);
            assertEquals(List.of("keep.txt"), BfoWriteSymlinkTest.names(out), "nothing published, no staging left");
        }
        Path fresh = tmp.resolve("failing-fresh");
        assertThrows(Exception.class, () -> rows("fail57").write().format("bfo").option("writesInFlight", "16")
                .save(FailingCreateFileSystem.SCHEME + "://" + fresh));
        assertFalse(Files.exists(fresh), "the directory the job made is removed");
    }
}

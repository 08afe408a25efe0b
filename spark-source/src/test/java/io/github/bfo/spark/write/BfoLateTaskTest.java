/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.hadoop.fs.write.OutputPaths;
import io.github.bfo.hadoop.fs.write.WriteTestHooks;
import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local writer when a task goes on after its job ended without
 * publishing (Spark aborts a job without waiting for its other tasks): the
 * staging directory is not made again, what the task writes after the end
 * is removed, and DIR is left as it was. The overlaps are made with the
 * writers' test hooks, one step at a time.
 */
class BfoLateTaskTest {
    @TempDir
    Path tmp;

    @AfterEach
    void noHooks() {
        WriteTestHooks.beforeWriterOpen = () -> { };
        WriteTestHooks.afterStagingMoved = () -> { };
    }

    /** A job on dir whose tasks write every row at once (a batch per row). */
    static BfoWrite job(Path dir, String queryId) {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
        return new BfoWrite(OutputDir.of(dir.toString(), conf), conf,
                new BfoOptions(new CaseInsensitiveStringMap(Map.of("writeBatchBytes", "1"))),
                BfoWriteSymlinkTest.info(queryId), false);
    }

    Path dirWithAFile() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("out"));
        Files.writeString(dir.resolve("keep.txt"), "kept");
        return dir;
    }

    interface Step {
        void run() throws Exception;
    }

    static Runnable unchecked(Step s) {
        return () -> {
            try {
                s.run();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };
    }

    /** The job ends between the task's check of the staging directory and its first write. */
    @Test
    void theJobEndsBeforeTheTasksFirstWrite() throws Exception {
        Path dir = dirWithAFile();
        BfoWrite job = job(dir, "q1");
        DataWriter<InternalRow> task = job.createBatchWriterFactory(null).createWriter(0, 3);
        WriteTestHooks.beforeWriterOpen = unchecked(() -> job.abort(new WriterCommitMessage[0]));
        Exception x = assertThrows(IOException.class, () -> task.write(BfoParallelWriteTest.row("a/f")));
        assertTrue(x.toString().contains("_temporary-bfo-q1"), x.toString());
        task.abort();
        task.close();
        assertEquals(List.of("keep.txt"), SparkTestBase.names(dir), "no staging directory made again");
        assertEquals("kept", Files.readString(dir.resolve("keep.txt")));
    }

    /**
     * The job ends while the task's writer is open: the task's next file still lands (in the renamed
     * directory, through the writer's descriptors), its commit fails, and its abort removes the renamed
     * directory whole, before the driver would.
     */
    @Test
    void theJobEndsWhileTheTaskWrites() throws Exception {
        Path dir = dirWithAFile();
        BfoWrite job = job(dir, "q2");
        DataWriter<InternalRow> task = job.createBatchWriterFactory(null).createWriter(0, 4);
        task.write(BfoParallelWriteTest.row("a/early"));
        Path removed = dir.resolve(OutputPaths.removedName("_temporary-bfo-q2"));
        WriteTestHooks.afterStagingMoved = unchecked(() -> {
            task.write(BfoParallelWriteTest.row("a/late"));
            assertEquals("data a/late", Files.readString(removed.resolve("task-0-4/a/late")),
                    "the late file landed in the renamed directory");
            Exception x = assertThrows(IOException.class, task::commit);
            assertTrue(x.toString().contains("_temporary-bfo-q2"), x.toString());
            task.abort();
            task.close();
            assertFalse(Files.exists(removed), "the task's abort removed the renamed directory");
        });
        job.abort(new WriterCommitMessage[0]);
        assertEquals(List.of("keep.txt"), SparkTestBase.names(dir));
        assertEquals("kept", Files.readString(dir.resolve("keep.txt")));
    }
}

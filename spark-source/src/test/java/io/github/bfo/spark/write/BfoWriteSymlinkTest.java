/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 16: another user who can write DIR plants symbolic links (to a
 * directory outside DIR) where the writer will create, move or delete; the
 * job fails or writes only inside DIR, and nothing outside DIR changes.
 */
class BfoWriteSymlinkTest extends SparkTestBase {
    @TempDir
    Path tmp;

    /** Every entry under dir (links not followed) with its content or link target. */
    static Map<String, String> snapshot(Path dir) throws Exception {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String v = Files.isSymbolicLink(p) ? "-> " + Files.readSymbolicLink(p)
                        : Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) ? "dir"
                        : new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
                out.put(dir.relativize(p).toString(), v);
            }
        }
        return out;
    }

    Path outside() throws Exception {
        Path o = Files.createDirectories(tmp.resolve("outside"));
        Files.writeString(o.resolve("keep.txt"), "theirs");
        Files.createDirectories(o.resolve("p"));
        Files.writeString(o.resolve("p/a.txt"), "theirs too");
        return o;
    }

    @Test
    void linkAtAPartitionDirectoryFailsAppendAndTouchesNothingOutside() throws Exception {
        Path out = outside();
        Map<String, String> before = snapshot(out);
        Path dir = Files.createDirectories(tmp.resolve("dir"));
        Files.createSymbolicLink(dir.resolve("p"), out);
        Files.createDirectories(dir.resolve("x"));
        Files.createSymbolicLink(dir.resolve("x/y"), out);
        for (String path : new String[] {"p/new.txt", "p/p/new.txt", "x/y/new.txt"}) {
            Exception x = assertThrows(Exception.class, () -> BfoWriteTest.files(2, "ok.txt", BfoWriteTest.b("ok"),
                    path, BfoWriteTest.b("evil")).write().format("bfo").mode("append").save(dir.toString()), path);
            String m = rootMessage(x);
            assertTrue(m.contains("symbolic link"), path + ": " + m);
            assertEquals(before, snapshot(out), path);
            assertFalse(Files.exists(dir.resolve("ok.txt")), "nothing published");
            assertEquals(List.of("p", "x"), names(dir), "no staging left");
        }
    }

    @Test
    void overwriteRemovesTheLinkNotItsTarget() throws Exception {
        Path out = outside();
        Map<String, String> before = snapshot(out);
        Path dir = Files.createDirectories(tmp.resolve("dir"));
        Files.createSymbolicLink(dir.resolve("p"), out);
        Files.createDirectories(dir.resolve("q"));
        Files.createSymbolicLink(dir.resolve("q/r"), out);
        BfoWriteTest.files(2, "p/a.txt", BfoWriteTest.b("mine"), "q/r/b.txt", BfoWriteTest.b("mine too"))
                .write().format("bfo").mode("overwrite").save(dir.toString());
        assertEquals(before, snapshot(out));
        assertFalse(Files.isSymbolicLink(dir.resolve("p")));
        assertEquals("mine", Files.readString(dir.resolve("p/a.txt")));
        assertEquals("mine too", Files.readString(dir.resolve("q/r/b.txt")));
        assertEquals(List.of("p", "q"), names(dir));
    }

    static LogicalWriteInfo info(String queryId) {
        return new LogicalWriteInfo() {
            @Override
            public CaseInsensitiveStringMap options() {
                return CaseInsensitiveStringMap.empty();
            }

            @Override
            public String queryId() {
                return queryId;
            }

            @Override
            public StructType schema() {
                return BfoWriteTest.SCHEMA;
            }
        };
    }

    /** Tasks write, then the other user plants links before the job commit. */
    WriterCommitMessage[] runTasks(BfoWrite w, String... paths) throws Exception {
        var f = w.createBatchWriterFactory(null);
        DataWriter<InternalRow> t = f.createWriter(0, 1);
        for (String p : paths) {
            t.write(new GenericInternalRow(new Object[] {UTF8String.fromString(p), BfoWriteTest.b("data " + p)}));
        }
        WriterCommitMessage m = t.commit();
        t.close();
        return new WriterCommitMessage[] {m};
    }

    BfoWrite batch(Path dir, String qid, boolean truncate) {
        org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.conf.Configuration();
        return new BfoWrite(io.github.bfo.hadoop.fs.write.OutputDir.of(dir.toString(), conf), conf,
                new BfoOptions(CaseInsensitiveStringMap.empty()), info(qid), truncate);
    }

    @Test
    void linksPlantedBeforeTheJobCommit() throws Exception {
        Path out = outside();
        Map<String, String> before = snapshot(out);
        Path dir = Files.createDirectories(tmp.resolve("dir"));

        // append: a link at a partition directory between the tasks and the job commit
        BfoWrite w = batch(dir, "q1", false);
        WriterCommitMessage[] ms = runTasks(w, "p/a.txt", "z.txt");
        Files.createSymbolicLink(dir.resolve("p"), out);
        Exception x = assertThrows(Exception.class, () -> w.commit(ms));
        assertTrue(rootMessage(x).contains("symbolic link"), rootMessage(x));
        assertEquals(before, snapshot(out));
        assertEquals(List.of("p"), names(dir), "nothing published, staging removed");
        Files.delete(dir.resolve("p"));

        // the staging directory swapped for a link to a copy outside: refused, the copy untouched
        BfoWrite w2 = batch(dir, "q2", false);
        WriterCommitMessage[] ms2 = runTasks(w2, "s/b.txt");
        Path staging = dir.resolve(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX + "q2");
        Path moved = tmp.resolve("moved-staging");
        Files.move(staging, moved);
        Path fake = Files.createDirectories(out.resolve("fake/task-0-1/s"));
        Files.writeString(fake.resolve("b.txt"), "theirs");
        Map<String, String> before2 = snapshot(out);
        Files.createSymbolicLink(staging, out.resolve("fake"));
        x = assertThrows(Exception.class, () -> w2.commit(ms2));
        assertTrue(rootMessage(x).contains("symbolic link")
                || rootMessage(x).contains("replaced"), rootMessage(x));
        assertEquals(before2, snapshot(out));
        assertFalse(Files.exists(dir.resolve("s")));
        Files.delete(staging);

        // the staging location is predictable to whoever knows the query id: a link there fails the job
        Files.createSymbolicLink(dir.resolve(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX + "q3"), out);
        BfoWrite w3 = batch(dir, "q3", false);
        assertThrows(Exception.class, () -> w3.createBatchWriterFactory(null));
        assertEquals(before2, snapshot(out));

        // overwrite: a link planted deep inside a directory that the job replaces is removed, not followed
        Files.delete(dir.resolve(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX + "q3"));
        Files.createDirectories(dir.resolve("d"));
        Files.createSymbolicLink(dir.resolve("d/l"), out);
        BfoWrite w4 = batch(dir, "q4", true);
        WriterCommitMessage[] ms4 = runTasks(w4, "d/l/c.txt");
        w4.commit(ms4);
        assertEquals(before2, snapshot(out));
        assertEquals("data d/l/c.txt", Files.readString(dir.resolve("d/l/c.txt")));
        assertFalse(Files.isSymbolicLink(dir.resolve("d/l")));
        assertEquals(List.of("d"), names(dir));
    }
}

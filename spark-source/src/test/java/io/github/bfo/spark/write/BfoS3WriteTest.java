/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.SparkTestBase;
import io.github.bfo.testsupport.S3Server;
import static io.github.bfo.spark.write.BfoHdfsWriteTest.digest;
import static io.github.bfo.spark.write.BfoHdfsWriteTest.expected;
import static io.github.bfo.spark.write.BfoHdfsWriteTest.localTree;
import static io.github.bfo.spark.write.BfoHdfsWriteTest.tree;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UploadHandle;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.util.functional.FutureIO;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * df.write.format("bfo") to S3 (s3proxy, a real S3 server in a process of
 * its own, through S3A): files uploaded as multipart uploads in each task
 * and completed by the job commit, no copy (rename) of any object; the files
 * equal the rows, the local write's and binaryFile's reading of them; save
 * modes, bad rows, failed tasks and failed commits leave the directory as it
 * was and no upload pending; commit=rename gives the same files.
 */
class BfoS3WriteTest extends SparkTestBase {
    @TempDir
    static java.nio.file.Path tmp;
    static S3Server s3;
    static FileSystem fs;

    @BeforeAll
    static void startS3() throws Exception {
        s3 = new S3Server();
        s3.conf().forEach(spark.sparkContext().hadoopConfiguration()::set);
        fs = new Path(s3.uri("/")).getFileSystem(spark.sparkContext().hadoopConfiguration());
    }

    @AfterAll
    static void stopS3() throws Exception {
        if (s3 != null) {
            s3.conf().keySet().forEach(spark.sparkContext().hadoopConfiguration()::unset);
            s3.close();
        }
    }

    static Dataset<Row> files(int partitions, Object... pathAndContent) {
        return BfoWriteTest.files(partitions, pathAndContent);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** This JVM's S3A counters (the tasks share the driver's cached file system in local mode). */
    static Map<String, Long> counters() {
        IOStatistics st = ((IOStatisticsSource) fs).getIOStatistics();
        return new TreeMap<>(st.counters());
    }

    static long delta(Map<String, Long> before, Map<String, Long> after, String key) {
        return after.getOrDefault(key, 0L) - before.getOrDefault(key, 0L);
    }

    static List<String> names(String dir) throws Exception {
        List<String> n = new ArrayList<>();
        for (FileStatus st : fs.listStatus(new Path(dir))) {
            n.add(st.getPath().getName());
        }
        n.sort(null);
        return n;
    }

    static String key(String dir) {
        return new Path(dir).toUri().getPath().substring(1) + "/";
    }

    static void put(String path, String content) throws Exception {
        try (FSDataOutputStream out = fs.create(new Path(path), false)) {
            out.write(b(content));
        }
    }

    /** binaryFile's rows under dir as (path relative to dir -> digest of content). */
    static Map<String, String> viaBinaryFile(String dir) {
        String prefix = new Path(dir).toUri().getPath() + "/";
        Map<String, String> out = new TreeMap<>();
        for (Row r : spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(dir)
                .select("path", "content").collectAsList()) {
            String path = new Path(r.getString(0)).toUri().getPath();
            out.put(path.substring(prefix.length()), digest((byte[]) r.get(1)));
        }
        return out;
    }

    @Test
    void filesEqualTheRowsWithoutACopyOfAnyObject() throws Exception {
        Random r = new Random(13);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            rows.add(RowFactory.create("d" + (i % 7) + "/sub" + (i % 3) + "/f" + i + ".bin",
                    random(r, i == 0 ? 0 : r.nextInt(9000))));
        }
        for (String name : new String[] {"with space.bin", "per%cent.bin", "q?.bin", "é-ü.bin"}) {
            rows.add(RowFactory.create("names/" + name, random(r, 100)));
        }
        rows.add(RowFactory.create("big.bin", random(r, 3 << 20)));
        Dataset<Row> df = spark.createDataFrame(rows, BfoWriteTest.SCHEMA).repartition(3);
        Map<String, String> want = expected(rows);
        java.nio.file.Path local = tmp.resolve("roundtrip-local");
        df.write().format("bfo").save(local.toString());
        assertEquals(want, localTree(local));

        for (String commit : new String[] {"auto", "rename"}) {
            String out = s3.uri("/roundtrip-" + commit);
            Map<String, Long> before = counters();
            df.write().format("bfo").option("commit", commit).save(out);
            Map<String, Long> after = counters();
            assertEquals(want, tree(fs, out), commit + ": one object per row, nothing else");
            Map<String, String> nonEmpty = new TreeMap<>(want);
            nonEmpty.remove(rows.get(0).getString(0));   // binaryFile skips empty files
            assertEquals(nonEmpty, viaBinaryFile(out), commit);
            assertEquals(List.of(), s3.pendingUploads(key(out)), commit + ": no upload left pending");
            // auto: multipart, an upload per file completed by the job commit, no object copied (renamed);
            // rename: a plain PUT per file into the staging directory (its renames go through a FileContext, whose
            // S3A instance has counters of its own)
            assertEquals(commit.equals("auto") ? rows.size() : 0,
                    delta(before, after, "object_multipart_initiated"), commit);
            assertEquals(0, delta(before, after, "object_copy_requests"), commit);
            assertEquals(0, delta(before, after, "op_rename"), commit);
        }
    }

    @Test
    void saveModes() throws Exception {
        String out = s3.uri("/modes");
        files(2, "a.txt", b("A1"), "x/b.txt", b("B1")).write().format("bfo").save(out);
        Map<String, String> first = tree(fs, out);
        assertEquals(List.of("a.txt", "x/b.txt"), List.copyOf(first.keySet()));

        Exception x = assertThrows(Exception.class, () -> files(1, "c.txt", b("C")).write().format("bfo").save(out));
        BfoWriteTest.assertSameError(assertThrows(Exception.class, () -> spark.range(1).selectExpr("'t' AS value")
                .write().text(out)), x, "PATH_ALREADY_EXISTS");
        files(1, "c.txt", b("C")).write().format("bfo").mode("ignore").save(out);
        assertEquals(first, tree(fs, out));

        files(2, "c.txt", b("C1"), "x/d.txt", b("D1")).write().format("bfo").mode("append").save(out);
        Map<String, String> appended = tree(fs, out);
        assertEquals(List.of("a.txt", "c.txt", "x/b.txt", "x/d.txt"), List.copyOf(appended.keySet()));

        // an existing file, or a file where a new file's directory would be: nothing of the job is published,
        // and its uploads are aborted
        for (String clash : new String[] {"a.txt", "x/b.txt", "a.txt/under.txt"}) {
            x = assertThrows(Exception.class, () -> files(2, "e.txt", b("E"), "y/f.txt", b("F"), clash, b("2"))
                    .write().format("bfo").mode("append").save(out), clash);
            assertTrue(BfoHdfsWriteTest.causedBy(x, java.nio.file.FileAlreadyExistsException.class),
                    rootMessage(x));
            assertTrue(rootMessage(x).contains(clash.startsWith("a.txt/") ? "not a directory"
                    : "already exists"), rootMessage(x));
            assertEquals(appended, tree(fs, out), clash);
            assertEquals(List.of(), s3.pendingUploads(key(out)), clash);
        }

        files(2, "a.txt", b("A3"), "y/z.txt", b("Z")).write().format("bfo").mode("overwrite").save(out);
        assertEquals(expected(List.of(RowFactory.create("a.txt", b("A3")), RowFactory.create("y/z.txt", b("Z")))),
                tree(fs, out));
        assertEquals(List.of("a.txt", "y"), names(out));
    }

    @Test
    void badRowsAndFailedJobsPublishNothingAndLeaveNoUpload() throws Exception {
        String out = s3.uri("/failed");
        put(out + "/keep.txt", "kept");
        Map<String, String> before = tree(fs, out);
        // a task that fails after it uploaded 40 files
        Exception x = assertThrows(Exception.class, () -> spark.range(0, 50, 1, 1).selectExpr(
                "concat('f', id) AS path",
                "CASE WHEN id = 40 THEN CAST(raise_error('bfo test: row 40 fails') AS BINARY) "
                        + "ELSE CAST(concat('x', id) AS BINARY) END AS content")
                .write().format("bfo").mode("append").save(out));
        assertTrue(rootMessage(x).contains("row 40 fails"), rootMessage(x));
        assertEquals(before, tree(fs, out));
        assertEquals(List.of(), s3.pendingUploads(key(out)), "the task's uploads were aborted");
        // jobs that fail at their commit, after every task uploaded its files
        for (Object[] bad : new Object[][] {
            {"duplicate path", new Object[] {"n1.txt", b("1"), "n2.txt", b("2"), "n1.txt", b("3")}},
            {"is both a file and a directory", new Object[] {"n1", b("1"), "n1/n2", b("2")}}}) {
            for (String mode : new String[] {"append", "overwrite"}) {
                x = assertThrows(Exception.class, () -> files(2, (Object[]) bad[1]).write().format("bfo").mode(mode)
                        .save(out));
                assertTrue(rootMessage(x).contains((String) bad[0]), rootMessage(x));
                assertEquals(before, tree(fs, out), mode + " " + bad[0]);
                assertEquals(List.of(), s3.pendingUploads(key(out)), mode + " " + bad[0]);
            }
        }
        // a bad path fails in its task; a directory the job made is removed
        String fresh = s3.uri("/failed-fresh");
        x = assertThrows(Exception.class, () -> files(2, "ok.txt", b("ok"), "../escape", b("bad")).write()
                .format("bfo").save(fresh));
        assertTrue(rootMessage(x).contains("bad path"), rootMessage(x));
        assertFalse(fs.exists(new Path(fresh)));
        assertEquals(List.of(), s3.pendingUploads(key(fresh)));
    }

    /**
     * An upload that an attempt could not abort (its executor lost) is aborted at the end of the job, as S3A's
     * committers do, unless fs.s3a.committer.abort.pending.uploads is false.
     */
    @Test
    void uploadsLeftByLostAttemptsAreAbortedAtTheEnd() throws Exception {
        String out = s3.uri("/orphans");
        Path orphan = new Path(out + "/lost/attempt.txt");
        MultipartUploader up = fs.createMultipartUploader(new Path(out)).build();
        String lost = key(out) + "lost/attempt.txt";
        for (String purge : new String[] {"false", "true"}) {
            UploadHandle u = FutureIO.awaitFuture(up.startUpload(orphan));
            FutureIO.awaitFuture(up.putPart(u, 1, orphan, new ByteArrayInputStream(b("lost")), 4));
            List<String> pending = s3.pendingUploads(key(out));
            assertEquals(purge.equals("true") ? List.of(lost, lost) : List.of(lost), pending);
            files(1, "f" + purge, b(purge)).write().format("bfo").mode("append")
                    .option(io.github.bfo.hadoop.fs.write.OutputDir.ABORT_PENDING_UPLOADS, purge).save(out);
            assertEquals(purge.equals("true") ? List.of() : pending, s3.pendingUploads(key(out)), purge);
        }
        assertEquals(List.of("ffalse", "ftrue"), names(out).stream().filter(n -> n.startsWith("f")).toList());
        assertFalse(fs.exists(orphan), "never published");
        up.close();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.MiniDfs;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * df.write.format("bfo") to HDFS (a MiniDFSCluster): the files read back
 * through the FileSystem API and binaryFile equal the rows, and equal what
 * the same DataFrame writes to a local directory; save modes, bad rows and
 * failed jobs leave the directory as the local writer leaves it.
 */
class BfoHdfsWriteTest extends SparkTestBase {
    @TempDir
    static java.nio.file.Path tmp;
    static MiniDfs dfs;
    static FileSystem fs;

    @BeforeAll
    static void startDfs() throws Exception {
        dfs = new MiniDfs(1, 1);
        MiniDfs.CLIENT.forEach(spark.sparkContext().hadoopConfiguration()::set);   // the tasks' clients
        fs = dfs.fs();
    }

    @AfterAll
    static void stopDfs() throws Exception {
        if (dfs != null) {
            dfs.close();
        }
    }

    @AfterEach
    void localDefaultFs() {
        spark.conf().unset("fs.defaultFS");
    }

    static String hdfs(String path) {
        return dfs.uri() + path;
    }

    static String digest(byte[] b) {
        try {
            return b.length + ":" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** Every file under dir on fs (path relative to dir -> length and digest of its bytes). */
    static Map<String, String> tree(FileSystem fs, String dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        Path root = fs.makeQualified(new Path(dir));
        if (!fs.exists(root)) {
            return out;
        }
        String prefix = root.toUri().getPath() + "/";
        RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
        while (it.hasNext()) {
            Path p = it.next().getPath();
            try (InputStream in = fs.open(p)) {
                out.put(p.toUri().getPath().substring(prefix.length()), digest(in.readAllBytes()));
            }
        }
        return out;
    }

    /** Every file under a local directory, as {@link #tree(FileSystem, String)}. */
    static Map<String, String> localTree(java.nio.file.Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (var s = Files.walk(dir)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s.filter(Files::isRegularFile)::iterator) {
                out.put(dir.relativize(p).toString(), digest(Files.readAllBytes(p)));
            }
        }
        return out;
    }

    static Map<String, String> expected(List<Row> rows) {
        Map<String, String> out = new TreeMap<>();
        for (Row r : rows) {
            out.put(r.getString(0), digest((byte[]) r.get(1)));
        }
        return out;
    }

    static List<String> names(String dir) throws IOException {
        List<String> n = new ArrayList<>();
        for (FileStatus st : fs.listStatus(new Path(dir))) {
            n.add(st.getPath().getName());
        }
        n.sort(null);
        return n;
    }

    static void put(String path, String content) throws IOException {
        try (FSDataOutputStream out = fs.create(new Path(path), false)) {
            out.write(content.getBytes(StandardCharsets.UTF_8));
        }
    }

    static Dataset<Row> files(int partitions, Object... pathAndContent) {
        return BfoWriteTest.files(partitions, pathAndContent);
    }

    static byte[] b(String s) {
        return BfoWriteTest.b(s);
    }

    static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    /** binaryFile's rows under dir as (path relative to dir -> digest of content). */
    static Map<String, String> viaBinaryFile(String dir) throws Exception {
        String prefix = new Path(dir).toUri().getPath() + "/";
        Map<String, String> out = new TreeMap<>();
        for (Row r : spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(dir)
                .select("path", "content").collectAsList()) {
            String path = new Path(r.getString(0)).toUri().getPath();   // binaryFile's path is a Path's string
            assertTrue(path.startsWith(prefix), path);
            out.put(path.substring(prefix.length()), digest((byte[]) r.get(1)));
        }
        return out;
    }

    @Test
    void nestedFilesRoundTripAsTheLocalWriteAndBinaryFileSeeThem() throws Exception {
        Random r = new Random(11);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            rows.add(RowFactory.create("d" + (i % 7) + "/sub" + (i % 3) + "/f" + i + ".bin",
                    random(r, i == 0 ? 0 : r.nextInt(9000))));
        }
        for (String name : new String[] {"with space.bin", "per%cent.bin", "hash#.bin", "q?.bin", "é-ü.bin"}) {
            rows.add(RowFactory.create("names/" + name, random(r, 100)));
        }
        rows.add(RowFactory.create("big.bin", random(r, 3 << 20)));
        Dataset<Row> df = spark.createDataFrame(rows, BfoWriteTest.SCHEMA).repartition(3);
        String out = hdfs("/roundtrip");
        df.write().format("bfo").save(out);

        Map<String, String> want = expected(rows);
        assertEquals(want, tree(fs, out), "the FileSystem API sees one file per row, nothing else");
        java.nio.file.Path local = tmp.resolve("roundtrip-local");
        df.write().format("bfo").save(local.toString());
        assertEquals(localTree(local), tree(fs, out), "the same files as the local write");
        // binaryFile skips empty files, as every Spark file scan does
        Map<String, String> nonEmpty = new TreeMap<>(want);
        nonEmpty.remove(rows.get(0).getString(0));
        assertEquals(nonEmpty, viaBinaryFile(out));
        assertSameRows(spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(out),
                spark.read().format("bfo").option("recursiveFileLookup", "true").load(out));
    }

    @Test
    void saveModes() throws Exception {
        String out = hdfs("/modes");
        files(2, "a.txt", b("A1"), "x/b.txt", b("B1")).write().format("bfo").save(out);
        Map<String, String> first = tree(fs, out);
        assertEquals(List.of("a.txt", "x/b.txt"), List.copyOf(first.keySet()));

        Exception x = assertThrows(Exception.class, () -> files(1, "c.txt", b("C")).write().format("bfo").save(out));
        BfoWriteTest.assertSameError(assertThrows(Exception.class, () -> spark.range(1).selectExpr("'t' AS value")
                .write().text(out)), x, "PATH_ALREADY_EXISTS");
        files(1, "c.txt", b("C")).write().format("bfo").mode("ignore").save(out);
        assertEquals(first, tree(fs, out));

        // durability each: every file hsync'ed before its close
        files(2, "c.txt", b("C1"), "x/d.txt", b("D1")).write().format("bfo").option("durability", "each")
                .mode("append").save(out);
        Map<String, String> appended = tree(fs, out);
        assertEquals(List.of("a.txt", "c.txt", "x/b.txt", "x/d.txt"), List.copyOf(appended.keySet()));

        // an existing file, or a file where a new file's directory would be: nothing of the job is published
        for (String clash : new String[] {"a.txt", "x/b.txt", "a.txt/under.txt"}) {
            x = assertThrows(Exception.class, () -> files(2, "e.txt", b("E"), "y/f.txt", b("F"), clash, b("2"))
                    .write().format("bfo").mode("append").save(out), clash);
            assertTrue(causedBy(x, java.nio.file.FileAlreadyExistsException.class), rootMessage(x));
            assertTrue(rootMessage(x).contains(clash.startsWith("a.txt/") ? "not a directory"
                    : "already exists"), rootMessage(x));
            assertEquals(appended, tree(fs, out), clash);
            assertEquals(List.of("a.txt", "c.txt", "x"), names(out), "no staging left");
        }

        files(2, "a.txt", b("A3"), "y/z.txt", b("Z")).write().format("bfo").mode("overwrite").save(out);
        assertEquals(expected(List.of(RowFactory.create("a.txt", b("A3")), RowFactory.create("y/z.txt", b("Z")))),
                tree(fs, out));
        assertEquals(List.of("a.txt", "y"), names(out));
    }

    @Test
    void badRowsFailAsLocallyAndWriteNothing() throws Exception {
        String[][] bad = {
            {"/etc/passwd", "absolute"},
            {"../escape.txt", "'..'"},
            {"a/../../b", "'..'"},
            {"a//b", "empty or '.' component"},
            {"", "empty"},
            {"hdfs://elsewhere/x", "URI"},
        };
        int n = 0;
        for (String[] c : bad) {
            String out = hdfs("/bad" + n++);
            Exception x = assertThrows(Exception.class, () -> files(2, "ok.txt", b("ok"), c[0], b("bad")).write()
                    .format("bfo").save(out), c[0]);
            String m = rootMessage(x);
            assertTrue(m.contains("bad path") && m.contains(c[1]), c[0] + ": " + m);
            assertFalse(fs.exists(new Path(out)), "nothing published, no staging left for " + c[0]);
        }
        for (int parts : new int[] {1, 2}) {
            String out = hdfs("/dup" + parts);
            Exception x = assertThrows(Exception.class, () -> files(parts, "same.txt", b("1"), "other.txt", b("2"),
                    "same.txt", b("3")).write().format("bfo").save(out));
            assertTrue(rootMessage(x).contains("duplicate path 'same.txt'"), rootMessage(x));
            assertFalse(fs.exists(new Path(out)));
        }
        for (int parts : new int[] {1, 2}) {
            String out = hdfs("/conflict" + parts);
            Exception x = assertThrows(Exception.class, () -> files(parts, "a", b("1"), "a/b", b("2")).write()
                    .format("bfo").save(out));
            assertFalse(rootMessage(x).isEmpty());
            assertFalse(fs.exists(new Path(out)));
        }
    }

    @Test
    void failedJobsLeaveTheDirectoryAsItWas() throws Exception {
        String out = hdfs("/failed");
        put(out + "/keep.txt", "kept");
        Map<String, String> before = tree(fs, out);
        // a task that fails after it wrote 40 files
        Exception x = assertThrows(Exception.class, () -> spark.range(0, 50, 1, 1).selectExpr(
                "concat('f', id) AS path",
                "CASE WHEN id = 40 THEN CAST(raise_error('bfo test: row 40 fails') AS BINARY) "
                        + "ELSE CAST(concat('x', id) AS BINARY) END AS content")
                .write().format("bfo").mode("append").save(out));
        assertTrue(rootMessage(x).contains("row 40 fails"), rootMessage(x));
        assertEquals(before, tree(fs, out));
        assertEquals(List.of("keep.txt"), names(out), "no _temporary-bfo-* left");
        // a job that fails at its commit, after every task wrote its files
        x = assertThrows(Exception.class, () -> files(2, "n1.txt", b("1"), "n2.txt", b("2"), "n1.txt", b("3"))
                .write().format("bfo").mode("append").save(out));
        assertTrue(rootMessage(x).contains("duplicate path"), rootMessage(x));
        assertEquals(before, tree(fs, out));
        assertEquals(List.of("keep.txt"), names(out), "no _temporary-bfo-* left");
        // overwrite fails before anything is removed
        x = assertThrows(Exception.class, () -> files(2, "n1.txt", b("1"), "n1.txt", b("3"))
                .write().format("bfo").mode("overwrite").save(out));
        assertEquals(before, tree(fs, out));
        assertEquals(List.of("keep.txt"), names(out));
    }

    /** A task still writing after its job was aborted makes nothing again: HDFS creates no missing parent. */
    @Test
    void aTaskGoingOnAfterItsJobAbortedLeavesNothing() throws Exception {
        String out = hdfs("/late");
        put(out + "/keep.txt", "kept");
        Map<String, String> before = tree(fs, out);
        for (String n : new String[] {"1", "16"}) {
            assertEquals(List.of("keep.txt"), BfoParallelWriteTest.lateTaskAfterAbort(out, "late" + n, n));
            assertEquals(before, tree(fs, out));
        }
    }

    @Test
    void schemelessPathsGoToAnHdfsDefaultFileSystem() throws Exception {
        Dataset<Row> df = files(2, "f0", b("zero"), "d/f1", b("one"));
        java.nio.file.Path local = tmp.resolve("schemeless");
        spark.conf().set("fs.defaultFS", dfs.uri());
        df.write().format("bfo").save(local.toString());
        df.write().format("bfo").save("relative-out");   // under the file system's working directory
        localDefaultFs();
        Map<String, String> want = expected(df.collectAsList());
        assertEquals(want, tree(fs, local.toString()));
        assertEquals(want, tree(fs, new Path(fs.getWorkingDirectory(), "relative-out").toString()));
        assertFalse(Files.exists(local), "nothing written to the local disk");
        assertFalse(Files.exists(java.nio.file.Path.of("relative-out")), "nothing written to the local disk");
    }

    @Test
    void unreachableNameNodeFailsNamingThePath() {
        String out = "hdfs://127.0.0.1:1/nowhere";
        Exception x = assertThrows(Exception.class, () -> files(1, "f", b("x")).write().format("bfo")
                .option("ipc.client.connect.max.retries", "0").save(out));
        assertTrue(rootMessage(x).contains("cannot reach the output directory " + out),
                rootMessage(x));
    }

    // the cluster of dataNodeLostBetweenFiles, and what its content function saw when it stopped a DataNode
    static MiniDfs lossy;
    static final AtomicInteger STAGED_AT_STOP = new AtomicInteger(-1);
    static volatile String stagingPermission;

    static byte[] contentOf(long id) {
        return SparkTestBase.random(new Random(id), 4096 + (int) (id % 97));
    }

    @Test
    void dataNodeLostBetweenFilesWithReplicationTwo() throws Exception {
        try (MiniDfs cluster = new MiniDfs(3, 2)) {
            lossy = cluster;
            String out = cluster.uri() + "/lossy";
            // the content of row 100 is made after rows 0-99 were written: a DataNode goes down then
            spark.udf().register("bfoStopDataNodeAt100", (UDF1<Long, byte[]>) id -> {
                if (id == 100 && STAGED_AT_STOP.get() < 0) {
                    List<LocatedFileStatus> staged = new ArrayList<>();
                    RemoteIterator<LocatedFileStatus> it = lossy.fs().listFiles(new Path(out), true);
                    while (it.hasNext()) {
                        LocatedFileStatus st = it.next();
                        if (st.getPath().toString().contains(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX)) {
                            staged.add(st);
                        }
                    }
                    STAGED_AT_STOP.set(staged.size());
                    for (FileStatus st : lossy.fs().listStatus(new Path(out))) {
                        stagingPermission = st.getPath().getName() + " " + st.getPermission();
                    }
                    // a DataNode holding a replica of a file already written
                    lossy.stopDataNode(staged.get(0).getBlockLocations()[0].getNames()[0]);
                }
                return contentOf(id);
            }, DataTypes.BinaryType);
            // one file at a time: rows 0-99 are all written, and no other, when row 100's content is made
            spark.range(0, 200, 1, 1).selectExpr("concat('d', id % 5, '/f', id) AS path",
                    "bfoStopDataNodeAt100(id) AS content").write().format("bfo").option("writesInFlight", "1")
                    .save(out);
            assertEquals(100, STAGED_AT_STOP.get(), "rows 0-99 were in the staging directory at the stop");
            assertTrue(stagingPermission.matches(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX + "\\S+ rwx------"), stagingPermission);
            Map<String, String> want = new TreeMap<>();
            for (long id = 0; id < 200; id++) {
                want.put("d" + id % 5 + "/f" + id, digest(contentOf(id)));
            }
            assertEquals(want, tree(cluster.fs(), out));
            assertEquals(want, viaBinaryFile(out));
        } finally {
            lossy = null;
        }
    }
}

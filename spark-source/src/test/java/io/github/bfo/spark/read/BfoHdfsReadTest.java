/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.MiniDfs;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.bfo.testsupport.CountingSocketFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * format("bfo") on HDFS (a MiniDFSCluster) against binaryFile and text on the same files: every column,
 * partition directories, text lines, metadata-only reads (which must open nothing), files read in pieces,
 * pushed filters, maxLength, missing files, and local and HDFS paths in one read.
 */
class BfoHdfsReadTest extends SparkTestBase {
    static MiniDfs dfs;
    static String root;
    static final int FILES = 40;

    @BeforeAll
    static void startDfs() throws Exception {
        dfs = new MiniDfs(2, 1);
        root = dfs.uri() + "/data";
        Random r = new Random(17);
        for (int i = 0; i < FILES; i++) {
            // text-like bytes with \n and \r\n lines, some files above 4 KiB (read in pieces with largeFile=4096)
            StringBuilder b = new StringBuilder();
            int n = r.nextInt(9000);
            while (b.length() < n) {
                b.append("line ").append(r.nextInt(1000)).append(r.nextBoolean() ? "\n" : "\r\n");
            }
            create("/data/d=" + (i % 4) + "/f" + i, b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        create("/data/d=0/empty", new byte[0]);
    }

    static void create(String path, byte[] data) throws Exception {
        try (FSDataOutputStream out = dfs.fs().create(new org.apache.hadoop.fs.Path(path))) {
            out.write(data);
        }
    }

    @AfterAll
    static void stopDfs() throws Exception {
        if (dfs != null) {
            dfs.close();
        }
    }

    static Dataset<Row> binaryFile(String... paths) {
        return spark.read().format("binaryFile").load(paths);
    }

    static Dataset<Row> bfo(String... paths) {
        return spark.read().format("bfo").load(paths);
    }

    /** Files opened on HDFS so far, by any client in this JVM (what DistributedFileSystem counts). */
    static long opens() {
        return org.apache.hadoop.fs.GlobalStorageStatistics.INSTANCE.get("DFSOpsCountStatistics").getLong("op_open");
    }

    @Test
    void everyColumnEqualsBinaryFile() {
        Dataset<Row> b = binaryFile(root);
        assertEquals(FILES, b.count());   // Spark's file scans skip empty files
        assertSameSchema(b, bfo(root));
        assertSameRows(b, bfo(root));
        // one file at a time, and in pieces of 4 KiB (files above largeFile are streamed by the task's thread)
        assertSameRows(b, spark.read().format("bfo").option("readsInFlight", "1").load(root));
        assertSameRows(b, spark.read().format("bfo").option("largeFile", "4096").load(root));
    }

    @Test
    void textEqualsSparkText() {
        Dataset<Row> t = spark.read().text(root);
        assertSameRows(t, spark.read().format("bfo").option("format", "text").load(root), "value", "d");
        assertSameRows(t, spark.read().format("bfo").option("format", "text").option("largeFile", "4096")
                .load(root), "value", "d");
        assertSameRows(spark.read().option("wholetext", "true").text(root),
                spark.read().format("bfo").option("format", "text").option("wholetext", "true").load(root));
    }

    @Test
    void metadataOnlyOpensNothing() throws Exception {
        String[] cols = {"path", "length", "modificationTime", "d"};
        long before = opens();
        Dataset<Row> f = bfo(root).selectExpr(cols);
        java.util.List<String> rows = rows(f);
        assertEquals(0, opens() - before, "a metadata-only read opened files");
        assertEquals(rows(binaryFile(root).selectExpr(cols)), rows);
        before = opens();
        rows(bfo(root).selectExpr("path", "content"));
        assertEquals(FILES, opens() - before, "a content read opens each (non-empty) file once");
    }

    @Test
    void pushedFiltersAndPruning() {
        String where = "length > 5000 AND d IN (1, 2)";
        assertSameRows(binaryFile(root).where(where), bfo(root).where(where));
        assertSameRows(binaryFile(root).where(where).selectExpr("path"), bfo(root).where(where).selectExpr("path"));
    }

    @Test
    void maxLengthGuardAsLocally() {
        Exception e = assertThrows(Exception.class, () -> spark.read().format("bfo").option("maxLength", "5000")
                .load(root).selectExpr("content").collectAsList());
        assertTrue(String.valueOf(e.getMessage()).contains("exceeds the max length"), e.toString());
        // as for local files (BfoReadTest): ignoreCorruptFiles skips the long files
        Dataset<Row> b = binaryFile(root).where("length <= 5000");
        assertTrue(b.count() < FILES, "some files are longer than 5000 bytes");
        assertSameRows(b, spark.read().format("bfo").option("maxLength", "5000").option("ignoreCorruptFiles", "true")
                .load(root));
    }

    @Test
    void missingFilesAsBinaryFile() throws Exception {
        String dir = dfs.uri() + "/missing";
        for (int i = 0; i < 6; i++) {
            create("/missing/g" + i, ("file " + i).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        // listed now, read after g3 is gone
        Dataset<Row> b = spark.read().format("binaryFile").option("ignoreMissingFiles", "true").load(dir);
        Dataset<Row> f = spark.read().format("bfo").option("ignoreMissingFiles", "true").load(dir);
        Dataset<Row> strict = bfo(dir);
        dfs.fs().delete(new org.apache.hadoop.fs.Path("/missing/g3"), false);
        assertEquals(5, rows(b).size());
        assertSameRows(b, f);
        Exception e = assertThrows(Exception.class, strict::collectAsList);
        assertTrue(String.valueOf(e.getMessage()).contains("file does not exist: " + dir + "/g3"), e.toString());
    }

    @Test
    void localAndHdfsInOneRead(@TempDir Path tmp) throws Exception {
        Random r = new Random(3);
        for (int i = 0; i < 10; i++) {
            write(tmp, "local" + i, random(r, r.nextInt(5000)));
        }
        // two roots without partition directories (two bases of partition discovery would conflict)
        String local = tmp.toUri().toString();
        String remote = root + "/d=1";
        Dataset<Row> b = binaryFile(local, remote);
        assertEquals(10 + FILES / 4, b.count());
        assertSameRows(b, bfo(local, remote));
        assertSameRows(b, spark.read().format("bfo").option("maxFilesPerPartition", "7").load(local, remote));
    }

    @Test
    void remotePartitionsPreferTheirDataNodes() {
        BfoScan scan = (BfoScan) bfoScan(bfo(root).selectExpr("length")).batch();
        for (org.apache.spark.sql.connector.read.InputPartition p : scan.planInputPartitions()) {
            assertTrue(p.preferredLocations().length > 0, "no hosts for " + p);
        }
    }

    /** Jobs Spark ran while the dataset was made and collected, under a job group of its own. */
    static long jobsFor(String group, java.util.function.Supplier<Dataset<Row>> read) {
        spark.sparkContext().setJobGroup(group, group, false);
        try {
            read.get().collectAsList();
        } finally {
            spark.sparkContext().clearJobGroup();
        }
        return spark.sparkContext().statusTracker().getJobIdsForGroup(group).length;
    }

    @Test
    void wideTreeListedOnTheDriverAsSparkListsIt() throws Exception {
        // 40 partition directories (Spark lists more than 32 through a job), hidden and temporary names at
        // both levels (dropped), and a tree one level deeper for recursiveFileLookup
        for (int i = 0; i < 40; i++) {
            create("/wide/k=" + i + "/f" + i, new byte[] {(byte) i, 1, 2});
            create("/deep/d" + i + "/e/g" + i, new byte[] {(byte) i});
        }
        for (String n : new String[] {"/wide/_tmp/x", "/wide/.hidden", "/wide/k=1/_y", "/wide/k=2/.z",
            "/wide/k=3/f._COPYING_", "/deep/d5/_temporary/0/h", "/deep/.d/i"}) {
            create(n, new byte[] {9});
        }
        String wide = dfs.uri() + "/wide";
        String deep = dfs.uri() + "/deep";
        assertSameSchema(binaryFile(wide), bfo(wide));
        assertSameRows(binaryFile(wide), bfo(wide));
        assertEquals(40, bfo(wide).count());
        Dataset<Row> dr = spark.read().format("bfo").option("recursiveFileLookup", "true").load(deep);
        assertSameRows(spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(deep), dr);
        assertEquals(40, dr.count());
        assertEquals(1, BfoReadTest.listedRoots(dr)[0], "listed by bfo");
        assertEquals(0, BfoReadTest.listedRoots(dr)[1]);
        // a file as a root lists as itself, as in Spark
        Dataset<Row> one = bfo(wide + "/k=7/f7");
        assertSameRows(binaryFile(wide + "/k=7/f7"), one);
        assertEquals(1, one.count());
        assertEquals(1, BfoReadTest.listedRoots(one)[0]);
        // binaryFile's listing runs a Spark job for the 40 directories; bfo's runs none (only the query's own)
        long spark1 = jobsFor("binaryFile-wide", () -> binaryFile(wide).selectExpr("length"));
        long bfo1 = jobsFor("bfo-wide", () -> bfo(wide).selectExpr("length"));
        assertTrue(bfo1 < spark1, "jobs: bfo " + bfo1 + ", binaryFile " + spark1);
        // with Spark's listing asked for, bfo lists as binaryFile does
        long spark2 = jobsFor("bfo-spark-listing", () -> spark.read().format("bfo").option("listing", "spark")
                .load(wide).selectExpr("length"));
        assertEquals(spark1, spark2);
    }

    /**
     * Many small files, 23 read at once per task: the rows binaryFile gives, and every DataNode connection the
     * tasks made is kept for the next reads (bfo-hadoop-fs's ReadFileSystems: HDFS's own peer cache of 16
     * closes what overflows it, and later reads open new connections), so sockets made are the connections
     * kept and one NameNode connection per task at most.
     */
    @Test
    void manyFilesKeepTheirConnections() throws Exception {
        int files = 400;
        for (int i = 0; i < files; i++) {
            create("/many/f" + i, ("file " + i + "\n").repeat(1 + i % 50).getBytes(
                    java.nio.charset.StandardCharsets.UTF_8));
        }
        String many = dfs.uri() + "/many";
        org.apache.hadoop.conf.Configuration hc = spark.sparkContext().hadoopConfiguration();
        CountingSocketFactory.register(hc);
        hc.setLong("dfs.client.socketcache.expiryMsec", 600_000);   // no idle connection expires mid-test
        try {
            Dataset<Row> b = spark.read().format("bfo").option("readsInFlight", "23").load(many);
            int tasks = b.rdd().getNumPartitions();
            int before = CountingSocketFactory.made();
            java.util.List<Row> rows = b.collectAsList();
            int made = CountingSocketFactory.made() - before;
            assertEquals(files, rows.size());
            // an instance in the client context the tasks' readers share
            org.apache.hadoop.conf.Configuration c = new io.github.bfo.hadoop.fs.ReadFileSystems(hc, 23).ownConf();
            try (FileSystem same = FileSystem.newInstance(java.net.URI.create(dfs.uri()), c)) {
                int kept = ((org.apache.hadoop.hdfs.DistributedFileSystem) same).getClient().getClientContext()
                        .getPeerCache().size();
                assertTrue(kept > 0 && made <= kept + tasks, made + " sockets made for " + files + " files in "
                        + tasks + " tasks, 23 at once, " + kept + " kept for the next reads");
            }
        } finally {
            hc.unset(CountingSocketFactory.KEY);
            hc.unset("dfs.client.socketcache.expiryMsec");
        }
        assertSameRows(binaryFile(many), bfo(many));
    }
}

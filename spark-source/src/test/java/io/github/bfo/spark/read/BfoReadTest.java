/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoCatalog;
import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.bfo.Bfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** spark.read.format("bfo") against binaryFile and text on the same directories. */
class BfoReadTest extends SparkTestBase {
    @TempDir
    static Path tmp;
    static Path flat;        // files of many sizes, one large enough for pieces, an empty one, hidden ones
    static Path parted;      // key=value directories
    static Path texts;       // line endings of every kind
    static long totalBytes;
    static int flatFiles;

    @BeforeAll
    static void data() throws Exception {
        Random r = new Random(42);
        flat = tmp.resolve("flat");
        int[] sizes = {0, 1, 100, 4095, 4096, 4097, 65536, 300_000, 1_000_000};
        for (int i = 0; i < 60; i++) {
            int n = i < sizes.length ? sizes[i] : r.nextInt(20_000);
            Path p = write(flat, String.format("f%03d.bin", i), random(r, n));
            setMtime(p, 1_600_000_000_000L + i * 1_000_123L);
            totalBytes += n;
            if (n > 0) {
                flatFiles++;     // Spark's file scans (binaryFile too) skip empty files
            }
        }
        write(flat, "name with space & amp.bin", "odd name".getBytes(StandardCharsets.UTF_8));
        totalBytes += 8;
        flatFiles++;
        write(flat, "_hidden", new byte[] {1});
        write(flat, ".hidden", new byte[] {2});
        write(flat, "sub/nested.bin", new byte[] {3, 4, 5});

        parted = tmp.resolve("parted");
        for (int y : new int[] {2020, 2021}) {
            for (String c : new String[] {"fr", "de", "a b"}) {
                for (int k = 0; k < 4; k++) {
                    write(parted, "year=" + y + "/country=" + c + "/part" + k + ".txt",
                            ("y" + y + c + k + "\n").repeat(k + 1).getBytes(StandardCharsets.UTF_8));
                }
            }
        }

        texts = tmp.resolve("texts");
        String[] bodies = {"", "one line no newline", "a\nb\n", "a\r\nb\r\n\r\nc", "x\ry\rz\r", "\n\n\n",
            "unicode é ü 漢字\nsecond\n", "tail\r", "mixed\n\r\n\rend"};
        for (int i = 0; i < bodies.length; i++) {
            write(texts, "t" + i + ".txt", bodies[i].getBytes(StandardCharsets.UTF_8));
        }
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 40_000; i++) {
            big.append("line ").append(i).append(i % 7 == 0 ? "\r\n" : "\n");
        }
        write(texts, "big.txt", big.toString().getBytes(StandardCharsets.UTF_8));
    }

    Dataset<Row> bfo(Path dir) {
        return spark.read().format("bfo").load(dir.toString());
    }

    Dataset<Row> binaryFile(Path dir) {
        return spark.read().format("binaryFile").load(dir.toString());
    }

    @Test
    void sameSchemaAndRowsAsBinaryFile() {
        Dataset<Row> b = bfo(flat);
        assertSameSchema(binaryFile(flat), b);
        assertSameRows(binaryFile(flat), b);
        assertEquals(flatFiles, b.collectAsList().size(), String.valueOf(rows(b, "path")));
        assertEquals(flatFiles, b.count());
    }

    @Test
    void largeFilesArriveInPiecesAndAreReassembled() {
        Dataset<Row> b = spark.read().format("bfo").option("largeFile", "4096").option("arenaBytes", 1 << 20).load(
                flat.toString());
        assertSameRows(binaryFile(flat), b);
    }

    @Test
    void javaEngineGivesTheSameRows() {
        Dataset<Row> b = spark.read().format("bfo").option("engine", "java").load(flat.toString());
        assertSameRows(binaryFile(flat), b);
        BatchScanExec scan = bfoScan(b);
        assertTrue(metric(scan, BfoReadMetrics.BATCHES) > 0);
        assertEquals(0, metric(scan, BfoReadMetrics.NATIVE_BATCHES), "batches on libbfo with engine=java");
    }

    @Test
    void partitionColumnsAreDiscoveredLikeBinaryFile() {
        Dataset<Row> b = bfo(parted);
        assertSameSchema(binaryFile(parted), b);
        assertEquals("year", b.schema().fields()[4].name());
        assertSameRows(binaryFile(parted), b);
        // pushed partition filter, exact result
        assertSameRows(binaryFile(parted).where("year = 2021 and country <> 'de'"),
                bfo(parted).where("year = 2021 and country <> 'de'"));
        assertSameRows(binaryFile(parted).where("country in ('a b', 'fr') or year < 2021"),
                bfo(parted).where("country in ('a b', 'fr') or year < 2021"));
    }

    @Test
    void listingOptionsBehaveLikeBinaryFile() {
        String[][] cases = {
            {"pathGlobFilter", "*.bin"},
            {"pathGlobFilter", "f00?.bin"},
            {"recursiveFileLookup", "true"},
            {"modifiedBefore", "2020-09-20T00:00:00"},
            {"modifiedAfter", "2020-09-14T00:00:00"},
        };
        for (String[] c : cases) {
            Dataset<Row> e = spark.read().format("binaryFile").option(c[0], c[1]).load(flat.toString());
            Dataset<Row> a = spark.read().format("bfo").option(c[0], c[1]).load(flat.toString());
            assertSameRows(e, a, "path", "length", "modificationTime", "content");
            assertTrue(e.count() > 0, c[0]);
        }
        // recursive lookup over partition directories disables partition discovery, as in binaryFile
        Dataset<Row> e = spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(parted.toString());
        Dataset<Row> a = spark.read().format("bfo").option("recursiveFileLookup", "true").load(parted.toString());
        assertSameSchema(e, a);
        assertSameRows(e, a);
        // glob in the path itself, several paths
        assertSameRows(spark.read().format("binaryFile").load(parted + "/year=2020/*"),
                spark.read().format("bfo").load(parted + "/year=2020/*"));
        assertSameRows(spark.read().format("binaryFile").load(flat.toString(), flat.resolve("sub").toString()),
                spark.read().format("bfo").load(flat.toString(), flat.resolve("sub").toString()));
    }

    /** The README's warning: plain subdirectories give 0 rows (Spark's rule), recursiveFileLookup and globs all. */
    @Test
    void plainSubdirectoriesAreNotReadWithoutRecursiveFileLookup() throws Exception {
        Path tree = tmp.resolve("plain-tree");
        write(tree, "2024/01/a.txt", "a\n".getBytes(StandardCharsets.UTF_8));
        write(tree, "2024/02/b.txt", "b\n".getBytes(StandardCharsets.UTF_8));
        write(tree, "2025/01/c.txt", "c\n".getBytes(StandardCharsets.UTF_8));
        assertEquals(0, spark.read().format("binaryFile").load(tree.toString()).count());
        assertEquals(0, spark.read().format("bfo").load(tree.toString()).count());
        assertEquals(0, spark.read().format("bfo").option("format", "text").load(tree.toString()).count());
        Dataset<Row> e = spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(tree.toString());
        assertEquals(3, e.count());
        assertSameRows(e, spark.read().format("bfo").option("recursiveFileLookup", "true").load(tree.toString()));
        assertSameRows(spark.read().format("binaryFile").load(tree + "/*/*"),
                spark.read().format("bfo").load(tree + "/*/*"));
        assertEquals(3, spark.read().format("bfo").load(tree + "/*/*").count());
    }

    /** How the scan's roots were listed: {native roots, roots left to Spark}. */
    static long[] listedRoots(Dataset<Row> df) {
        df.collectAsList();
        BfoLeafFiles l = ((BfoScan) bfoScan(df).scan()).listing().leafFiles;
        return new long[] {l.nativeRoots(), l.sparkRoots()};
    }

    @Test
    void nativeListingGivesSparksFileList() throws Exception {
        Path t = tmp.resolve("listing");
        String[] names = {"a.bin", "d1/b.bin", "d1/d2/c.bin", "d1/.hidden/x.bin", "_tmp/y.bin", "d1/_z.bin",
            "k=1/_v.bin", "_metadata", "_common_metadata", "f._COPYING_", ".dot", "pct%41#hash.bin",
            "sp ace/é ü.bin", "deep/a/b/c/d/e.bin", "empty.bin"};
        Random r = new Random(7);
        for (String n : names) {
            write(t, n, random(r, n.equals("empty.bin") ? 0 : 1 + r.nextInt(5000)));
        }
        Files.createSymbolicLink(t.resolve("link-to-file"), t.resolve("a.bin"));
        String[][] options = {{"recursiveFileLookup", "true"}, {"pathGlobFilter", "*.bin"}};
        for (String[] o : options) {
            Dataset<Row> a = spark.read().format("bfo").option(o[0], o[1]).load(t.toString());
            assertSameRows(spark.read().format("binaryFile").option(o[0], o[1]).load(t.toString()), a);
            assertEquals(1, listedRoots(a)[0], "listed by libbfo with " + o[0]);
            assertEquals(0, listedRoots(a)[1]);
        }
        // binaryFile cannot read a name with a colon (Hadoop's checksum path): compare what it can list
        Path colon = tmp.resolve("listing-colon");
        write(colon, "colon:name.bin", new byte[] {1});
        Dataset<Row> c = spark.read().format("bfo").load(colon.toString()).select("path", "length",
                "modificationTime");
        assertSameRows(spark.read().format("binaryFile").load(colon.toString()).select("path", "length",
                "modificationTime"), c);
        assertEquals(1, listedRoots(c)[0]);
        // the same with Spark's listing, asked for
        Dataset<Row> s = spark.read().format("bfo").option("listing", "spark").option("recursiveFileLookup", "true")
                .load(t.toString());
        assertSameRows(spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(t.toString()), s);
        assertTrue(((BfoScan) bfoScan(s).scan()).listing().leafFiles == null);
        // partition directories found in a natively listed tree
        Dataset<Row> p = bfo(parted);
        assertSameRows(binaryFile(parted), p);
        assertEquals(1, listedRoots(p)[0]);
        // a file as a root, and a glob over files: left to Spark, same rows
        Dataset<Row> f = spark.read().format("bfo").load(t.resolve("a.bin").toString(), t.resolve("d1").toString());
        assertSameRows(spark.read().format("binaryFile").load(t.resolve("a.bin").toString(),
                t.resolve("d1").toString()), f);
        assertEquals(1, listedRoots(f)[0]);
        assertEquals(1, listedRoots(f)[1]);
    }

    @Test
    void treesHadoopListsDifferentlyAreLeftToSpark() throws Exception {
        Path t = tmp.resolve("odd-trees");
        write(t, "a/f1.bin", new byte[] {1, 2, 3});
        write(t, "b/f2.bin", new byte[] {4, 5});
        // Hadoop's local listing follows a link to a directory (the walk does not)
        Files.createSymbolicLink(t.resolve("link-to-dir"), t.resolve("b"));
        Dataset<Row> a = spark.read().format("bfo").option("recursiveFileLookup", "true").load(t.toString());
        assertSameRows(spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(t.toString()), a);
        assertEquals(3, a.count(), "f2.bin twice, through the link");
        assertEquals(0, listedRoots(a)[0]);
        assertEquals(1, listedRoots(a)[1]);
        // a dangling link: Hadoop skips it too, but the walk cannot tell it from others, so Spark lists
        Path u = tmp.resolve("dangling-tree");
        write(u, "f.bin", new byte[] {9});
        Files.createSymbolicLink(u.resolve("dangling"), u.resolve("none"));
        Dataset<Row> d = spark.read().format("bfo").load(u.toString());
        assertSameRows(spark.read().format("binaryFile").load(u.toString()), d);
        assertEquals(1, listedRoots(d)[1]);
    }

    @Test
    void textFormatMatchesSparkText() {
        Dataset<Row> b = spark.read().format("bfo").option("format", "text").load(texts.toString());
        assertSameSchema(spark.read().text(texts.toString()), b);
        assertSameRows(spark.read().text(texts.toString()), b);
        // pieces: lines split across piece boundaries
        assertSameRows(spark.read().text(texts.toString()), spark.read().format("bfo").option("format", "text")
                .option("largeFile", "4096").load(texts.toString()));
        // wholetext and lineSep
        assertSameRows(spark.read().option("wholetext", "true").text(texts.toString()),
                spark.read().format("bfo").option("format", "text").option("wholetext", "true").load(texts.toString()));
        assertSameRows(spark.read().option("lineSep", "\r\n").text(texts.toString()),
                spark.read().format("bfo").option("format", "text").option("lineSep", "\r\n").load(texts.toString()));
        // with partition columns
        Dataset<Row> pt = spark.read().format("bfo").option("format", "text").load(parted.toString());
        assertSameSchema(spark.read().text(parted.toString()), pt);
        assertSameRows(spark.read().text(parted.toString()), pt);
    }

    @Test
    void noContentColumnMeansNoDataRead() {
        Dataset<Row> meta = bfo(flat).select("path", "length", "modificationTime");
        assertSameRows(binaryFile(flat).select("path", "length", "modificationTime"), meta);
        BatchScanExec scan = bfoScan(meta);
        assertEquals(0, metric(scan, BfoReadMetrics.DATA_BYTES), "data bytes read without content");
        assertEquals(flatFiles, metric(scan, BfoReadMetrics.METADATA_ONLY_FILES));
        assertEquals(flatFiles, metric(scan, BfoReadMetrics.FILES));

        Dataset<Row> full = bfo(flat).select("path", "content");
        full.collectAsList();
        BatchScanExec fs = bfoScan(full);
        assertEquals(totalBytes, metric(fs, BfoReadMetrics.DATA_BYTES));
        assertEquals(0, metric(fs, BfoReadMetrics.METADATA_ONLY_FILES));
        assertTrue(metric(fs, BfoReadMetrics.BATCHES) > 0);
        assertEquals(Bfo.isNativeAvailable() ? metric(fs, BfoReadMetrics.BATCHES) : 0,
                metric(fs, BfoReadMetrics.NATIVE_BATCHES), "batches on libbfo");
        assertEquals(bfo(flat).count(), binaryFile(flat).count());
    }

    @Test
    void filtersOnMetadataArePushedAndEvaluatedBeforeReading() {
        String[] wheres = {
            "length between 1 and 4096 and modificationTime < timestamp'2020-09-14 00:00:00'",
            "path = '" + "file:" + flat.resolve("f003.bin") + "' or path like '%f01%'",
            "not (length > 1000) or path like '%space%' or length in (65536)",
        };
        for (String w : wheres) {
            Dataset<Row> a = bfo(flat).where(w).select("path", "length", "content");
            List<Row> expected = binaryFile(flat).where(w).select("path", "length").collectAsList();
            assertSameRows(binaryFile(flat).where(w).select("path", "length", "content"), a);
            assertTrue(expected.size() > 0 && expected.size() < flatFiles, w);
            BatchScanExec scan = bfoScan(a);
            assertEquals(expected.size(), metric(scan, BfoReadMetrics.FILES), "files handed to the batch read for " + w);
            long expectedBytes = expected.stream().mapToLong(r -> r.getLong(1)).sum();
            assertEquals(expectedBytes, metric(scan, BfoReadMetrics.DATA_BYTES), w);
            assertTrue(scan.scan().description().contains("pushedFilters=[") && !scan.scan().description()
                    .contains("pushedFilters=[]"), scan.scan().description());
        }
    }

    @Test
    void missingFilesFollowIgnoreMissingFiles() throws Exception {
        Path dir = tmp.resolve("missing");
        for (int i = 0; i < 10; i++) {
            write(dir, "m" + i, ("file " + i).getBytes(StandardCharsets.UTF_8));
        }
        Dataset<Row> b = spark.read().format("bfo").option("ignoreMissingFiles", "true").load(dir.toString());
        Dataset<Row> e = spark.read().format("binaryFile").option("ignoreMissingFiles", "true").load(dir.toString());
        Dataset<Row> strict = spark.read().format("bfo").load(dir.toString());
        Dataset<Row> strictE = spark.read().format("binaryFile").load(dir.toString());
        Files.delete(dir.resolve("m3"));
        Files.delete(dir.resolve("m7"));
        assertSameRows(e, b);
        assertEquals(8, b.count());
        Exception x = assertThrows(Exception.class, () -> strict.collectAsList());
        assertTrue(String.valueOf(rootMessage(x)).contains("does not exist"), rootMessage(x));
        assertThrows(Exception.class, () -> strictE.collectAsList());
        // metadata only: the stat finds the file missing just the same
        assertEquals(8, b.select("path").collectAsList().size());
    }

    @Test
    void unreadableFilesFollowIgnoreCorruptFiles() throws Exception {
        Path dir = tmp.resolve("unreadable");
        for (int i = 0; i < 6; i++) {
            write(dir, "u" + i, ("file " + i).getBytes(StandardCharsets.UTF_8));
        }
        Files.setPosixFilePermissions(dir.resolve("u2"), java.util.Set.of());
        try {
            if (!"root".equals(System.getProperty("user.name"))) {
                UnreadableFilesCheck.check(spark, dir.toString(), 5);
                return;
            }
            // root reads every file: check in a JVM without the capabilities that bypass permissions
            Path setpriv = Path.of("/usr/bin/setpriv");
            Assumptions.assumeTrue(Files.isExecutable(setpriv), "as root, this needs setpriv (util-linux) to run "
                    + "a JVM without CAP_DAC_OVERRIDE, and /usr/bin/setpriv is missing");
            List<String> cmd = new ArrayList<>(List.of(setpriv.toString(), "--bounding-set",
                    "-dac_override,-dac_read_search", "--", Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString()));
            for (String a : java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) {
                if (!a.startsWith("-agentlib:") && !a.startsWith("-javaagent:")) {
                    cmd.add(a);
                }
            }
            cmd.addAll(List.of("-cp", System.getProperty("surefire.test.class.path",
                    System.getProperty("java.class.path")), UnreadableFilesCheck.class.getName(), dir.toString(), "5"));
            Path log = tmp.resolve("unreadable-check.log");
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            boolean ended = p.waitFor(10, java.util.concurrent.TimeUnit.MINUTES);
            if (!ended) {
                p.destroyForcibly();
            }
            String out = Files.readString(log);
            assertTrue(ended && p.exitValue() == 0 && out.lines().anyMatch("OK"::equals),
                    "the check without CAP_DAC_OVERRIDE failed:\n" + out);
        } finally {
            Files.setPosixFilePermissions(dir.resolve("u2"), java.util.Set.of(
                    java.nio.file.attribute.PosixFilePermission.OWNER_READ));
        }
    }

    @Test
    void maxLengthGuardLikeBinaryFile() {
        Exception x = assertThrows(Exception.class, () -> spark.read().format("bfo").option("maxLength", "100000")
                .load(flat.toString()).select("content").collectAsList());
        assertTrue(rootMessage(x).contains("exceeds the max length allowed"), rootMessage(x));
        // metadata only: no content, no guard (as binaryFile)
        assertEquals(flatFiles, spark.read().format("bfo").option("maxLength", "100000").load(flat.toString())
                .select("length").collectAsList().size());
        // ignoreCorruptFiles skips the long files
        assertEquals(binaryFile(flat).where("length <= 100000").count(), spark.read().format("bfo")
                .option("maxLength", "100000").option("ignoreCorruptFiles", "true").load(flat.toString())
                .select("content").collectAsList().size());
    }

    @Test
    void sqlUsingBfo() {
        // SELECT ... FROM bfo.`/dir` through the path catalog (Spark's own ResolveSQLOnFile takes V1 FileFormats only)
        spark.conf().set("spark.sql.catalog.bfo", BfoCatalog.class.getName());
        assertSameRows(binaryFile(flat), spark.sql("SELECT * FROM bfo.`" + flat + "`"));
        assertSameRows(binaryFile(parted).where("year = 2020"),
                spark.sql("SELECT * FROM bfo.`" + parted + "` WHERE year = 2020"));
        spark.sql("CREATE TEMPORARY VIEW bfo_v USING bfo OPTIONS (path '" + flat + "')");
        assertSameRows(binaryFile(flat), spark.sql("SELECT * FROM bfo_v"));
        spark.sql("CREATE TABLE bfo_t USING bfo LOCATION '" + parted + "'");
        try {
            assertSameRows(binaryFile(parted), spark.sql("SELECT * FROM bfo_t"));
            assertEquals(8, spark.sql("SELECT * FROM bfo_t WHERE year = 2020 AND country = 'fr'").count() * 2);
        } finally {
            spark.sql("DROP TABLE bfo_t");
        }
    }

    @Test
    void partitionsArePackedLikeBinaryFile() {
        String[][] settings = {{"128MB", "4MB"}, {"64KB", "4KB"}, {"1MB", "100KB"}};
        for (String[] s : settings) {
            spark.conf().set("spark.sql.files.maxPartitionBytes", s[0]);
            spark.conf().set("spark.sql.files.openCostInBytes", s[1]);
            try {
                int e = binaryFile(flat).rdd().getNumPartitions();
                int a = bfo(flat).rdd().getNumPartitions();
                assertEquals(e, a, "partitions with maxPartitionBytes=" + s[0] + " openCostInBytes=" + s[1]);
            } finally {
                spark.conf().unset("spark.sql.files.maxPartitionBytes");
                spark.conf().unset("spark.sql.files.openCostInBytes");
            }
        }
        int capped = spark.read().format("bfo").option("maxFilesPerPartition", "7").load(flat.toString()).rdd()
                .getNumPartitions();
        assertTrue(capped >= (flatFiles + 6) / 7, "maxFilesPerPartition=7 gives " + capped + " partitions");
    }

    @Test
    void taskInputMetricsCountBytesAndRecords() throws Exception {
        AtomicLong bytes = new AtomicLong();
        AtomicLong records = new AtomicLong();
        SparkListener l = new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.taskMetrics() != null) {
                    bytes.addAndGet(end.taskMetrics().inputMetrics().bytesRead());
                    records.addAndGet(end.taskMetrics().inputMetrics().recordsRead());
                }
            }
        };
        spark.sparkContext().addSparkListener(l);
        try {
            bfo(flat).select("content").collectAsList();
            spark.sparkContext().listenerBus().waitUntilEmpty();
        } finally {
            spark.sparkContext().removeSparkListener(l);
        }
        assertEquals(totalBytes, bytes.get());
        assertEquals(flatFiles, records.get());
    }

    @Test
    void badOptionsAreClearErrors() {
        Exception x = assertThrows(Exception.class, () -> spark.read().format("bfo").option("format", "csv")
                .load(flat.toString()).schema());
        assertTrue(rootMessage(x).contains("format must be binary or text"), rootMessage(x));
        x = assertThrows(Exception.class, () -> spark.read().format("bfo").option("engine", "warp")
                .load(flat.toString()).schema());
        assertTrue(rootMessage(x).contains("engine must be one of"), rootMessage(x));
        x = assertThrows(Exception.class, () -> spark.read().format("bfo").load(tmp.resolve("nope").toString()));
        assertTrue(rootMessage(x).contains("PATH_NOT_FOUND") || rootMessage(x).contains("does not exist"),
                rootMessage(x));
    }
}

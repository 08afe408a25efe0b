/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.bundle;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.regexp_extract;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bundle jar on Spark executors that are JVMs of their own and get bfo
 * only as a user gives it: {@code spark.jars}.
 *
 * <p>{@code local-cluster[2,1,1024]}: the master and the worker run in this
 * JVM, the worker starts each executor as a child process with the class
 * path Spark's launcher builds from SPARK_HOME/jars (WorkerCommandBuilder).
 * That Spark home is made here: jars/ holds links to the jars of Spark's own
 * dependency closure (target/it-spark-classpath.txt), checked to hold no bfo
 * or JNA class, so an executor can find bfo in nothing but the jar the
 * driver serves. SPARK_HOME itself must be in this JVM's environment when
 * the worker starts: failsafe sets it (see spark-bundle/pom.xml). This JVM,
 * the driver, has the same bundle jar on its class path instead of bfo's
 * module jars.
 *
 * <p>Every read and the write is compared with Spark's binaryFile and text
 * sources on the same files; the scans' bfoNativeBatches metric and a job
 * that asks each executor JVM for its pid and bfo-java's loader state show
 * that libbfo ran there.
 */
class BfoClusterIT {
    private static final int EXECUTORS = 2;
    private static final int FILES = 300;

    @TempDir
    static Path tmp;

    static Path sparkHome;
    static Path in;
    static long totalBytes;
    static SparkSession spark;

    @BeforeAll
    static void startCluster() throws Exception {
        sparkHome = makeSparkHome();
        in = tmp.resolve("bfo-in");
        totalBytes = makeFiles(in, FILES);
        spark = SparkSession.builder().master("local-cluster[" + EXECUTORS + ",1,1024]")
                .appName("bfo-cluster-it")
                .config("spark.jars", bundleJar().toString())
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.ui.enabled", "false")
                // the scans' metrics are read from the executed plan, which AQE would wrap
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate();
        awaitExecutors();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        // the executors are this JVM's children (the worker's ExecutorRunner started them)
        List<ProcessHandle> children = ProcessHandle.current().descendants().collect(Collectors.toList());
        if (spark != null) {
            spark.stop();
            spark = null;
        }
        List<String> left = new ArrayList<>();
        for (ProcessHandle p : children) {
            try {
                p.onExit().get(2, TimeUnit.MINUTES);
            } catch (TimeoutException e) {
                left.add(p.pid() + " " + p.info().commandLine().orElse("?"));
                p.destroyForcibly();
            }
        }
        assertTrue(left.isEmpty(), "processes still running after spark.stop(): " + left);
    }

    @Test
    void driverHasBfoFromTheBundleJarOnly() throws Exception {
        for (String c : new String[] {"io.github.bfo.spark.BfoDataSource", "io.github.bfo.Bfo", "com.sun.jna.Native"}) {
            URL where = Class.forName(c).getProtectionDomain().getCodeSource().getLocation();
            assertEquals(bundleJar().toRealPath(), Path.of(where.toURI()).toRealPath(), c + " loaded from");
        }
    }

    @Test
    void executorsAreOtherJvmsThatLoadedLibbfoFromTheJar() {
        // 4 tasks per executor, 1 core each: the first round of offers gives every executor one
        List<Row> jvms = spark.range(0, 4 * EXECUTORS, 1, 4 * EXECUTORS).selectExpr(
                "reflect('java.lang.ProcessHandle', 'current') AS pid",
                "reflect('io.github.bfo.Bfo', 'isNativeAvailable') AS native",
                "reflect('io.github.bfo.Bfo', 'nativeUnavailableReason') AS reason",
                "reflect('io.github.bfo.Bfo', 'nativeLocation') AS location",
                "reflect('java.lang.System', 'getProperty', 'java.class.path') AS classPath")
                .distinct().collectAsList();
        Set<Long> children = ProcessHandle.current().descendants().map(ProcessHandle::pid)
                .collect(Collectors.toSet());
        Set<Long> pids = new TreeSet<>();
        for (Row r : jvms) {
            long pid = Long.parseLong(r.getString(0));
            String what = "executor JVM " + pid + ": native=" + r.getString(1) + " " + r.getString(2) + " "
                    + r.getString(3);
            System.out.println(what);
            pids.add(pid);
            assertTrue(children.contains(pid), what + " is not a process the local-cluster worker started");
            assertEquals("true", r.getString(1), "libbfo in " + what);
            for (String e : r.getString(4).split(File.pathSeparator)) {
                assertTrue(e.startsWith(sparkHome.toString()), what + ": class path entry outside SPARK_HOME: " + e);
            }
        }
        assertEquals(EXECUTORS, pids.size(), "executor JVMs that ran tasks: " + jvms);
        assertFalse(pids.contains(ProcessHandle.current().pid()), "a task ran in the driver");
    }

    @Test
    void binaryRowsEqualBinaryFile() {
        Dataset<Row> bfo = spark.read().format("bfo").load(in.toString());
        Dataset<Row> ref = spark.read().format("binaryFile").load(in.toString());
        assertEquals(ref.schema(), bfo.schema());
        List<String> want = rows(ref);
        assertEquals(FILES, want.size(), "binaryFile's rows: the generated files, not the empty or hidden ones");
        assertEquals(want, rows(bfo));
        BatchScanExec scan = scan(bfo);
        assertEquals(FILES, metric(scan, "bfoFiles"));
        assertEquals(totalBytes, metric(scan, "bfoDataBytes"));
        assertAllBatchesNative(scan);
    }

    @Test
    void textRowsEqualText() {
        Dataset<Row> bfo = spark.read().format("bfo").option("format", "text").load(in.toString());
        Dataset<Row> ref = spark.read().text(in.toString());
        assertEquals(ref.schema(), bfo.schema());
        List<String> want = rows(ref);
        assertTrue(want.size() > FILES, "text's rows: " + want.size());
        assertEquals(want, rows(bfo));
        assertAllBatchesNative(scan(bfo));
    }

    @Test
    void metadataOnlyQueryReadsNoDataAndEqualsBinaryFile() {
        String[] cols = {"path", "modificationTime", "length", "k"};
        Dataset<Row> bfo = spark.read().format("bfo").load(in.toString()).selectExpr(cols);
        List<String> want = rows(spark.read().format("binaryFile").load(in.toString()).selectExpr(cols));
        assertEquals(FILES, want.size());
        assertEquals(want, rows(bfo));
        BatchScanExec scan = scan(bfo);
        assertEquals(0, metric(scan, "bfoDataBytes"), "data bytes read without the content column");
        assertEquals(FILES, metric(scan, "bfoMetadataOnlyFiles"));
        assertAllBatchesNative(scan);
    }

    @Test
    void writeThroughBfoReadsBackAsWritten() throws Exception {
        Path out = tmp.resolve("bfo-out");
        Column rel = regexp_extract(col("path"), "/bfo-in/(.*)$", 1).as("path");
        Dataset<Row> written = spark.read().format("bfo").load(in.toString()).select(rel, col("content"));
        written.write().format("bfo").save(out.toString());

        Dataset<Row> back = spark.read().format("binaryFile").option("recursiveFileLookup", "true")
                .load(out.toString())
                .select(regexp_extract(col("path"), "/bfo-out/(.*)$", 1).as("path"), col("content"));
        List<String> want = rows(spark.read().format("binaryFile").load(in.toString()).select(rel, col("content")));
        assertEquals(FILES, want.size());
        assertEquals(want, rows(back), "binaryFile on the written directory");
        assertEquals(want, rows(written), "the rows written");

        // and as the driver sees the files: each one the same bytes as its source, nothing else in the tree
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> s = Files.walk(out)) {
            for (Path p : (Iterable<Path>) s.filter(Files::isRegularFile)::iterator) {
                files.put(out.relativize(p).toString(), Files.readAllBytes(p));
            }
        }
        assertEquals(FILES, files.size(), "files under " + out + ": " + files.keySet());
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            assertTrue(Arrays.equals(Files.readAllBytes(in.resolve(e.getKey())), e.getValue()), e.getKey());
        }
    }

    /** bfo's scan ran libbfo in every batch (the executors would fall back to Java without it). */
    private static void assertAllBatchesNative(BatchScanExec scan) {
        long batches = metric(scan, "bfoBatches");
        assertTrue(batches > 0, "bfoBatches " + batches);
        assertEquals(batches, metric(scan, "bfoNativeBatches"), "batches on libbfo, of " + batches);
    }

    /** The rows, collected from df itself (its plan then holds the metrics), sorted; content as length and digest. */
    private static List<String> rows(Dataset<Row> df) {
        List<String> out = new ArrayList<>();
        for (Row r : df.collectAsList()) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < r.length(); i++) {
                Object v = r.get(i);
                b.append(i == 0 ? "" : " | ").append(v instanceof byte[] a ? a.length + " bytes " + sha256(a) : v);
            }
            out.add(b.toString());
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }

    private static String sha256(byte[] a) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(a));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static BatchScanExec scan(Dataset<Row> df) {
        List<BatchScanExec> found = new ArrayList<>();
        collectScans(df.queryExecution().executedPlan(), found);
        assertEquals(1, found.size(), "one BatchScanExec in " + df.queryExecution().executedPlan());
        return found.get(0);
    }

    private static void collectScans(SparkPlan p, List<BatchScanExec> out) {
        if (p instanceof BatchScanExec s) {
            out.add(s);
        }
        scala.collection.Iterator<SparkPlan> it = p.children().iterator();
        while (it.hasNext()) {
            collectScans(it.next(), out);
        }
    }

    private static long metric(BatchScanExec scan, String name) {
        return ((SQLMetric) scan.metrics().apply(name)).value();
    }

    private static Path bundleJar() {
        Path jar = Path.of(property("bfo.it.bundleJar"));
        assertTrue(Files.isRegularFile(jar), "no bundle jar " + jar + " (run after package: mvn verify)");
        return jar;
    }

    private static String property(String name) {
        String v = System.getProperty(name);
        assertNotNull(v, name + " is set by failsafe (spark-bundle/pom.xml): run this test with mvn verify");
        return v;
    }

    /**
     * SPARK_HOME made afresh: jars/ links to every jar of Spark's dependency closure, none of which may
     * hold a bfo or JNA class. Executors' logs go to its work/ (kept after the run, under target/).
     */
    private static Path makeSparkHome() throws IOException {
        String env = System.getenv("SPARK_HOME");
        assertNotNull(env, "SPARK_HOME is set by failsafe (spark-bundle/pom.xml): run this test with mvn verify");
        Path home = Path.of(env);
        if (Files.exists(home)) {
            try (Stream<Path> s = Files.walk(home)) {   // does not follow the links of jars/
                for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                    Files.delete(p);
                }
            }
        }
        Path jars = Files.createDirectories(home.resolve("jars"));
        String listed = Files.readString(Path.of(property("bfo.it.sparkClasspath")), StandardCharsets.UTF_8).trim();
        for (String entry : listed.split(File.pathSeparator)) {
            Path jar = Path.of(entry);
            try (JarFile j = new JarFile(jar.toFile())) {
                for (String c : new String[] {"io/github/bfo/Bfo.class", "com/sun/jna/Native.class"}) {
                    assertNull(j.getEntry(c), jar + " holds " + c + ": executors would not need spark.jars");
                }
            }
            Files.createSymbolicLink(jars.resolve(jar.getFileName()), jar);   // two jars of one name: fails here
        }
        try (Stream<Path> s = Files.list(jars)) {
            assertTrue(s.anyMatch(p -> p.getFileName().toString().startsWith("spark-core_")), "no spark-core in "
                    + jars);
        }
        return home;
    }

    /** Waits until every executor has registered (the status tracker lists the driver too). */
    private static void awaitExecutors() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (spark.sparkContext().statusTracker().getExecutorInfos().length < EXECUTORS + 1) {
            if (System.nanoTime() > deadline) {
                fail("fewer than " + EXECUTORS + " executors after 5 minutes; their logs:\n" + executorLogs());
            }
            Thread.sleep(200);
        }
    }

    private static String executorLogs() throws IOException {
        StringBuilder b = new StringBuilder();
        Path work = sparkHome.resolve("work");
        if (!Files.isDirectory(work)) {
            return "(no " + work + ")";
        }
        try (Stream<Path> s = Files.walk(work)) {
            for (Path p : (Iterable<Path>) s.filter(p -> p.getFileName().toString().equals("stderr"))::iterator) {
                List<String> lines = Files.readAllLines(p, StandardCharsets.UTF_8);
                b.append("== ").append(p).append('\n');
                lines.subList(Math.max(0, lines.size() - 40), lines.size()).forEach(l -> b.append(l).append('\n'));
            }
        }
        return b.toString();
    }

    /**
     * count non-empty files under root/k=0..2/dNN/: binary (any byte), and text with \n or \r\n lines,
     * UTF-8, with or without a last newline; plus an empty, a hidden and an underscore file both sources
     * skip. Returns the bytes of the counted files.
     */
    private static long makeFiles(Path root, int count) throws IOException {
        Random rnd = new Random(17);
        String[] words = {"alpha", "beta", "gamma", "delta", "épsilon", "ζήτα", "日本", ""};
        long bytes = 0;
        for (int i = 0; i < count; i++) {
            Path dir = Files.createDirectories(root.resolve("k=" + (i % 3)).resolve(String.format("d%02d", i % 11)));
            int kind = i % 4;
            byte[] data;
            if (kind == 0) {
                data = new byte[1 + rnd.nextInt(6000)];
                rnd.nextBytes(data);
            } else {
                String sep = kind == 2 ? "\r\n" : "\n";
                int n = 1 + rnd.nextInt(80);
                StringBuilder text = new StringBuilder();
                for (int l = 0; l < n; l++) {
                    int w = rnd.nextInt(13);
                    for (int k = 0; k < w; k++) {
                        text.append(k == 0 ? "" : " ").append(words[rnd.nextInt(words.length)]);
                    }
                    if (l < n - 1 || kind != 3) {
                        text.append(sep);
                    }
                }
                if (text.length() == 0) {
                    text.append('x');
                }
                data = text.toString().getBytes(StandardCharsets.UTF_8);
            }
            Files.write(dir.resolve(String.format("f%04d.%s", i, kind == 0 ? "bin" : "txt")), data);
            bytes += data.length;
        }
        Path d00 = root.resolve("k=0").resolve("d00");
        Files.write(d00.resolve("empty.txt"), new byte[0]);
        Files.write(d00.resolve(".hidden"), "skipped by both\n".getBytes(StandardCharsets.UTF_8));
        Files.write(d00.resolve("_SUCCESS"), "skipped by both\n".getBytes(StandardCharsets.UTF_8));
        return bytes;
    }
}

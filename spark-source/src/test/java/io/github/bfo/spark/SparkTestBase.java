/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** One local[2] SparkSession per test class, and helpers that compare bfo with Spark's own sources. */
public abstract class SparkTestBase {
    public static SparkSession spark;

    @BeforeAll
    public static void startSpark() {
        spark = SparkSession.builder().master("local[2]").appName("bfo-spark-source-test")
                .config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.driver.host", "127.0.0.1")
                .getOrCreate();
    }

    @AfterAll
    public static void stopSpark() {
        if (spark != null) {
            spark.stop();
            spark = null;
        }
    }

    public static Path write(Path root, String rel, byte[] data) throws IOException {
        Path p = root.resolve(rel);
        Files.createDirectories(p.getParent());
        Files.write(p, data);
        return p;
    }

    public static byte[] random(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    public static void setMtime(Path p, long millis) throws IOException {
        Files.setLastModifiedTime(p, FileTime.fromMillis(millis));
    }

    /** Rows as comparable strings, sorted (content shown as its bytes); columns in the given order. */
    public static List<String> rows(Dataset<Row> df, String... cols) {
        Dataset<Row> d = cols.length == 0 ? df : df.selectExpr(cols);
        List<String> out = new ArrayList<>();
        for (Row r : d.collectAsList()) {
            StringBuilder b = new StringBuilder();
            for (int i = 0; i < r.length(); i++) {
                Object v = r.get(i);
                b.append(i == 0 ? "" : " | ").append(v instanceof byte[] a ? Arrays.toString(a) : String.valueOf(v));
            }
            out.add(b.toString());
        }
        out.sort(Comparator.naturalOrder());
        return out;
    }

    public static void assertSameRows(Dataset<Row> expected, Dataset<Row> actual, String... cols) {
        List<String> e = rows(expected, cols);
        List<String> a = rows(actual, cols);
        assertEquals(e.size(), a.size(), "row count");
        assertEquals(e, a);
    }

    public static void assertSameSchema(Dataset<Row> expected, Dataset<Row> actual) {
        assertEquals(expected.schema(), actual.schema());
    }

    /** The bfo scan of an executed DataFrame (AQE is off in these tests). */
    public static BatchScanExec bfoScan(Dataset<Row> df) {
        SparkPlan plan = df.queryExecution().executedPlan();
        List<SparkPlan> found = new ArrayList<>();
        collect(plan, found);
        assertEquals(1, found.size(), "one BatchScanExec in " + plan);
        return (BatchScanExec) found.get(0);
    }

    private static void collect(SparkPlan p, List<SparkPlan> out) {
        if (p instanceof BatchScanExec) {
            out.add(p);
        }
        for (SparkPlan c : ScalaInterop.list(p.children())) {
            collect(c, out);
        }
    }

    public static long metric(BatchScanExec scan, String name) {
        return ((org.apache.spark.sql.execution.metric.SQLMetric) scan.metrics().apply(name)).value();
    }

    public static void assertBytesEqual(byte[] e, byte[] a) {
        assertArrayEquals(e, a);
    }

    /** Every message of t's cause chain, outermost first. */
    public static String rootMessage(Throwable t) {
        List<String> all = new ArrayList<>();
        for (Throwable c = t; c != null; c = c.getCause()) {
            all.add(String.valueOf(c.getMessage()));
        }
        return String.join(" <- ", all);
    }

    /** The names in dir, sorted. */
    public static List<String> names(Path dir) throws IOException {
        List<String> n = new ArrayList<>();
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            s.forEach(p -> n.add(p.getFileName().toString()));
        }
        n.sort(null);
        return n;
    }

    /** Removes dir and everything beneath it (links are removed, not followed); nothing when it is missing. */
    public static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.SparkTestBase;
import io.github.bfo.testsupport.S3Server;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * format("bfo") on S3 (s3proxy, a real S3 server in a process of its own, through Hadoop's S3A) against
 * binaryFile and text on the same objects, and what it asks the store: a GET per file read, no HEAD per
 * object (the listing's length goes into openFile), nothing per object for a metadata-only query.
 */
class BfoS3ReadTest extends SparkTestBase {
    static S3Server s3;
    static String root;
    static int nonEmpty;

    @BeforeAll
    static void startS3() throws Exception {
        s3 = new S3Server();
        s3.conf().forEach(spark.sparkContext().hadoopConfiguration()::set);
        root = s3.uri("/data");
        Random r = new Random(23);
        List<String> names = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            StringBuilder b = new StringBuilder();
            int n = i == 3 ? 70_000 : r.nextInt(6000);   // one above largeFile=16k in the pieces run
            while (b.length() < n) {
                b.append("word").append(r.nextInt(500)).append(r.nextInt(3) == 0 ? "\r\n" : " ");
            }
            names.add("/data/k=" + (i % 3) + "/f" + i + ".txt");
            bodies.add(b.toString().getBytes(StandardCharsets.UTF_8));
        }
        names.add("/data/k=1/empty.txt");
        bodies.add(new byte[0]);
        names.add("/data/k=2/_hidden");
        bodies.add(new byte[] {1, 2});
        put(names, bodies);
        nonEmpty = 60;
    }

    /** Uploads the objects, 16 at a time. */
    static void put(List<String> names, List<byte[]> bodies) throws Exception {
        FileSystem fs = fs();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < names.size(); i++) {
                int k = i;
                done.add(pool.submit(() -> {
                    try (FSDataOutputStream out = fs.create(new Path(s3.uri(names.get(k))), true)) {
                        out.write(bodies.get(k));
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The S3A file system the tasks use too (local[2]: the same JVM, the same cached instance). */
    static FileSystem fs() throws Exception {
        return new Path(s3.uri("/")).getFileSystem(spark.sparkContext().hadoopConfiguration());
    }

    @AfterAll
    static void stopS3() throws Exception {
        if (s3 != null) {
            s3.conf().keySet().forEach(spark.sparkContext().hadoopConfiguration()::unset);
            s3.close();
        }
    }

    @Test
    void rowsEqualBinaryFilesAndTexts() {
        Dataset<Row> b = spark.read().format("binaryFile").load(root);
        assertEquals(nonEmpty, b.count());
        assertSameSchema(b, spark.read().format("bfo").load(root));
        assertSameRows(b, spark.read().format("bfo").load(root));
        // one in flight, and pieces of 16 KiB (the large file streamed by the task's thread)
        assertSameRows(b, spark.read().format("bfo").option("readsInFlight", "1").option("largeFile", "16384")
                .load(root));
        assertSameRows(b.select("path", "length", "k"), spark.read().format("bfo").load(root)
                .select("path", "length", "k"));
        assertSameRows(spark.read().text(root), spark.read().format("bfo").option("format", "text").load(root));
        assertSameRows(spark.read().format("binaryFile").option("recursiveFileLookup", "true").load(root),
                spark.read().format("bfo").option("recursiveFileLookup", "true").load(root));
    }

    /** Requests of the given kinds this JVM's S3A client has made so far. */
    static long[] requests(String... kinds) throws Exception {
        IOStatistics st = ((IOStatisticsSource) fs()).getIOStatistics();
        long[] n = new long[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            Long v = st.counters().get(kinds[i]);
            n[i] = v == null ? 0 : v;
        }
        return n;
    }

    /** HEAD and GET requests made while q ran. */
    static long[] headsAndGets(Dataset<Row> q) throws Exception {
        long[] before = requests("action_http_head_request", "action_http_get_request");
        q.collectAsList();
        long[] after = requests("action_http_head_request", "action_http_get_request");
        return new long[] {after[0] - before[0], after[1] - before[1]};
    }

    @Test
    void oneGetPerFileAndNoHeadPerObject() throws Exception {
        // the listing costs the same to both queries; what the content read adds is the difference
        for (String format : new String[] {"bfo", "binaryFile"}) {
            long[] meta = headsAndGets(spark.read().format(format).load(root).selectExpr("path", "length"));
            long[] data = headsAndGets(spark.read().format(format).load(root).selectExpr("path", "length",
                    "content"));
            if (format.equals("bfo")) {
                assertEquals(0, meta[1], "bfo, metadata only: no GET");
                assertEquals(meta[0], data[0], "bfo: no HEAD beyond the listing's");
                assertEquals(nonEmpty, data[1], "bfo: one GET per file");
            } else {
                // binaryFile asks for each object's status when it opens it: the difference the test can see
                assertTrue(data[0] - meta[0] >= nonEmpty, "binaryFile: a HEAD per object: " + (data[0] - meta[0]));
                assertTrue(data[1] >= nonEmpty, "binaryFile: a GET per object: " + data[1]);
            }
        }
    }

    /**
     * The S3 server killed (SIGKILL) in the middle of a bfo read: the query fails, naming the file and the
     * connection's failure, as binaryFile's does; it does not hang (S3A's own retries are few here).
     */
    static final java.util.concurrent.atomic.AtomicBoolean KILLED = new java.util.concurrent.atomic.AtomicBoolean();
    static volatile S3Server VICTIM;

    @Test
    @org.junit.jupiter.api.Timeout(value = 5, unit = java.util.concurrent.TimeUnit.MINUTES)
    void serverKilledMidRead() throws Exception {
        S3Server victim = new S3Server("bfo-victim");
        Map<String, String> victimConf = victim.bucketConf();
        try {
            victimConf.forEach(spark.sparkContext().hadoopConfiguration()::set);
            List<String> names = new ArrayList<>();
            List<byte[]> bodies = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                names.add("/v/f" + i);
                bodies.add(("victim " + i + "\n").repeat(100).getBytes(StandardCharsets.UTF_8));
            }
            FileSystem vfs = new Path(victim.uri("/")).getFileSystem(spark.sparkContext().hadoopConfiguration());
            for (int i = 0; i < names.size(); i++) {
                try (FSDataOutputStream out = vfs.create(new Path(victim.uri(names.get(i))), true)) {
                    out.write(bodies.get(i));
                }
            }
            String dir = victim.uri("/v");
            assertEquals(40, spark.read().format("binaryFile").load(dir).count());
            VICTIM = victim;
            spark.udf().register("kill_s3", (org.apache.spark.sql.api.java.UDF1<String, Integer>) p -> {
                if (KILLED.compareAndSet(false, true)) {
                    VICTIM.kill();   // static: the task runs a deserialized copy of this function
                }
                return 0;
            }, org.apache.spark.sql.types.DataTypes.IntegerType);
            Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> spark.read()
                    .format("bfo").option("readsInFlight", "1").load(dir).selectExpr("kill_s3(path)", "content")
                    .collectAsList());
            assertTrue(KILLED.get(), "the server was killed during the read");
            String m = rootMessage(e);
            assertTrue(m.contains("bfo: cannot read " + dir + "/f"), m);
            // binaryFile fails on the dead server too
            org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> spark.read().format("binaryFile")
                    .load(dir).selectExpr("content").collectAsList());
        } finally {
            victimConf.keySet().forEach(spark.sparkContext().hadoopConfiguration()::unset);
            victim.close();
        }
    }

    /** For other tests: S3A settings of a server on a Configuration. */
    static Configuration conf(S3Server server) {
        Configuration c = new Configuration(false);
        for (Map.Entry<String, String> e : server.conf().entrySet()) {
            c.set(e.getKey(), e.getValue());
        }
        return c;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;

/**
 * One timed query of benchmark S1 (benchmarks/harness/spark.py drives it):
 * {@code S1Bench DIR PROBE_DIR METHOD QUERY}. METHOD is bfo, binaryFile or
 * text; QUERY is count, sumlen (sum(length(content)), or length(value) with
 * wholetext for text) or wordcount. The query runs once on PROBE_DIR (class
 * loading, code generation: off the clock), then the driver prints READY and
 * waits for a line on stdin (the harness drops the caches meanwhile), runs the
 * query on DIR and prints one JSON line with the time and the result.
 *
 * <p>With {@code -Dbfo.s1.hdfs=STORAGE}, DIR and PROBE_DIR are read from an
 * HDFS in this JVM (a MiniDFSCluster, one DataNode, on 127.0.0.1) whose
 * storage is STORAGE: the first run copies both directories into it (off the
 * clock), later runs start on what it holds. The cache drop then empties the
 * DataNode's block files from the page cache; the NameNode's metadata stays
 * in its memory, as on a running cluster.
 */
public final class S1Bench {
    private S1Bench() {
    }

    /**
     * Copies the tree below local into the HDFS at target, 8 files at a time (as {@code FsShell -put -t 8}):
     * a small file's close waits for the DataNode's block report, which HDFS polls from 400 ms unless told to
     * start sooner; one file at a time, 100,000 files took over 20 minutes. Load parameters, off the clock.
     */
    static void copyIn(FileSystem dfs, java.nio.file.Path local, String target)
            throws Exception {
        Configuration c = new Configuration(dfs.getConf());
        c.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 10);
        List<java.nio.file.Path> files;
        try (Stream<java.nio.file.Path> w = Files.walk(local)) {
            files = w.filter(Files::isRegularFile).toList();
        }
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try (FileSystem fs = FileSystem.newInstance(dfs.getUri(), c)) {
            List<Future<?>> done = new ArrayList<>();
            for (java.nio.file.Path f : files) {
                org.apache.hadoop.fs.Path dst = new org.apache.hadoop.fs.Path(target + "/"
                        + local.relativize(f).toString());
                done.add(pool.submit(() -> {
                    fs.copyFromLocalFile(false, true, new org.apache.hadoop.fs.Path(f.toUri()), dst);
                    return null;
                }));
            }
            for (Future<?> d : done) {
                d.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    static Dataset<Row> load(SparkSession spark, String method, String query, String dir) {
        boolean text = query.equals("wordcount");
        // the set's files sit in subdirectories (not key=value): every method looks them up recursively
        org.apache.spark.sql.DataFrameReader r = spark.read().option("recursiveFileLookup", "true");
        return switch (method) {
            case "bfo" -> text ? r.format("bfo").option("format", "text").load(dir) : r.format("bfo").load(dir);
            case "binaryFile" -> r.format("binaryFile").load(dir);
            case "text" -> text ? r.text(dir) : r.option("wholetext", "true").text(dir);
            default -> throw new IllegalArgumentException("method: bfo, binaryFile or text");
        };
    }

    static String run(SparkSession spark, String method, String query, String dir) {
        Dataset<Row> df = load(spark, method, query, dir);
        switch (query) {
            case "count":
                return String.valueOf(df.count());
            case "sumlen": {
                String col = method.equals("text") ? "value" : "content";
                Row r = df.agg(functions.count(functions.lit(1)), functions.sum(functions.length(functions.col(col))))
                        .first();
                return r.get(0) + " files, " + r.get(1) + " bytes";
            }
            case "metalen": {
                // Metadata only for both sources: no content column is read.
                Row r = df.agg(functions.count(functions.lit(1)), functions.sum(functions.col("length"))).first();
                return r.get(0) + " files, " + r.get(1) + " bytes";
            }
            case "wordcount": {
                Dataset<Row> words = df.select(functions.explode(functions.split(functions.col("value"), "[ \\t]+"))
                        .as("word")).where("word != ''").groupBy("word").count();
                Row r = words.agg(functions.count(functions.lit(1)), functions.sum("count"),
                        functions.sum(functions.hash(functions.col("word"), functions.col("count")).cast("long")))
                        .first();
                return r.get(0) + " distinct words, " + r.get(1) + " words, checksum " + r.get(2);
            }
            default:
                throw new IllegalArgumentException("query: count, sumlen, metalen or wordcount");
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: S1Bench DIR PROBE_DIR METHOD QUERY");
            System.exit(2);
        }
        String dir = args[0], probe = args[1], method = args[2], query = args[3];
        SparkSession.Builder b = SparkSession.builder().appName("bfo-s1").config("spark.ui.enabled", "false")
                .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1");
        if (System.getProperty("spark.master") == null) {
            b.master("local[*]");
        }
        SparkSession spark = b.getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        String storage = System.getProperty("bfo.s1.hdfs");
        MiniDfs dfs = null;
        if (storage != null) {
            java.nio.file.Path base = java.nio.file.Path.of(storage);
            java.nio.file.Path loaded = base.resolve("bfo-s1-loaded");
            boolean load = !java.nio.file.Files.exists(loaded);
            java.nio.file.Files.createDirectories(base);
            dfs = new MiniDfs(base, load, 1, 1);
            if (load) {
                copyIn(dfs.fs(), java.nio.file.Path.of(dir), "/s1");
                copyIn(dfs.fs(), java.nio.file.Path.of(probe), "/s1-probe");
                java.nio.file.Files.createFile(loaded);
            }
            dir = dfs.uri() + "/s1";
            probe = dfs.uri() + "/s1-probe";
        }
        run(spark, method, query, probe);
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        in.readLine();
        long t0 = System.nanoTime();
        String result = run(spark, method, query, dir);
        double secs = (System.nanoTime() - t0) / 1e9;
        int parts = load(spark, method, query, dir).rdd().getNumPartitions();
        System.out.println("{\"seconds\": " + secs + ", \"partitions\": " + parts + ", \"result\": \""
                + result.replace("\"", "'") + "\"}");
        spark.stop();
        if (dfs != null) {
            dfs.close();
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.SparkSession;

/**
 * The Spark driver of benchmark L1 (benchmarks/harness/latency.py drives it): one JVM per side (bfo, or the
 * incumbents binaryFile and text) runs every query of a place, so a JVM's start (tens of seconds on two busy
 * cores) is paid once per place instead of once per query. Usage: {@code L1Bench} with lines on stdin:
 * <pre>
 * WARM METHOD QUERY DIR    run once, untimed (class loading, code generation), print "READY"
 * RUN METHOD QUERY DIR     run once, timed, print one JSON line (seconds, partitions, result)
 * QUIT
 * </pre>
 * METHOD, QUERY and their results are {@link S1Bench}'s. The harness drops the caches before each RUN.
 * Any failure of a query prints {@code {"error": ...}} and the JVM goes on with the next line.
 */
public final class L1Bench {
    private L1Bench() {
    }

    public static void main(String[] args) throws Exception {
        SparkSession.Builder b = SparkSession.builder().appName("bfo-l1").config("spark.ui.enabled", "false")
                .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1");
        if (System.getProperty("spark.master") == null) {
            b.master("local[*]");
        }
        SparkSession spark = b.getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("STARTED");
        System.out.flush();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] w = line.trim().split(" ", 4);
            if (w[0].equals("QUIT")) {
                break;
            }
            if (w.length != 4 || !(w[0].equals("WARM") || w[0].equals("RUN"))) {
                System.out.println("{\"error\": \"bad command\"}");
                System.out.flush();
                continue;
            }
            String method = w[1], query = w[2], dir = w[3];
            try {
                long t0 = System.nanoTime();
                String result = S1Bench.run(spark, method, query, dir);
                double secs = (System.nanoTime() - t0) / 1e9;
                if (w[0].equals("WARM")) {
                    System.out.println("READY");
                } else {
                    int parts = S1Bench.load(spark, method, query, dir).rdd().getNumPartitions();
                    System.out.println("{\"seconds\": " + secs + ", \"partitions\": " + parts + ", \"result\": \""
                            + result.replace("\"", "'") + "\"}");
                }
            } catch (Exception | Error e) {
                String msg = String.valueOf(e).replace("\"", "'").replace("\n", " ").replace("\\", "/");
                System.out.println("{\"error\": \"" + (msg.length() > 300 ? msg.substring(0, 300) : msg) + "\"}");
            }
            System.out.flush();
        }
        spark.stop();
    }
}

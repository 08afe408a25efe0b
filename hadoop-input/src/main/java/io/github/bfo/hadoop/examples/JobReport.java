/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;

import java.io.IOException;
import java.io.PrintStream;
import java.util.Locale;

/**
 * Runs an example's job and prints what the benchmarks read back: its
 * wall-clock time, split into submission (listing and split planning run
 * in the client) and run (the tasks and the job commit), and its counters.
 */
final class JobReport {
    private static final String POLL_INTERVAL = "mapreduce.client.completion.pollinterval";

    private JobReport() {
    }

    /**
     * A job of conf is polled for completion every 50 ms, not every 5 s, unless set (its time is measured).
     * Call before Job.getInstance: the client's completion poll reads the configuration its cluster was made with.
     */
    static Configuration timed(Configuration conf) {
        if (conf.get(POLL_INTERVAL) == null) {
            conf.setInt(POLL_INTERVAL, 50);
        }
        return conf;
    }

    /**
     * Submits job (its configuration made {@link #timed}) and waits for it; what says which formats ran ("input
     * format X"). Returns the exit status: 0 when the job succeeded, 1 when it could not be submitted (one line
     * on stderr) or failed.
     */
    static int run(Job job, String prog, String what) throws IOException, InterruptedException,
            ClassNotFoundException {
        long t0 = System.nanoTime();
        try {
            job.submit();
        } catch (IOException e) {
            // a missing input path, an empty glob, an existing output directory...: one clear line, no trace
            System.err.println(prog + ": the job could not be submitted: " + e.getMessage());
            return 1;
        }
        long t1 = System.nanoTime();
        boolean ok = job.waitForCompletion(false);
        long t2 = System.nanoTime();
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "job: %s, %s, %s in %.3f s%n", job.getJobName(), what, ok ? "succeeded" : "FAILED",
                (t2 - t0) / 1e9);
        out.printf(Locale.ROOT, "  submit (listing, split planning) %.3f s, run %.3f s%n", (t1 - t0) / 1e9,
                (t2 - t1) / 1e9);
        Counters counters = job.getCounters();
        if (counters != null) {
            for (CounterGroup g : counters) {
                out.println("  " + g.getDisplayName());
                for (Counter c : g) {
                    out.println("    " + c.getDisplayName() + "=" + c.getValue());
                }
            }
        }
        if (!ok) {
            System.err.println(prog + ": the job failed" + (job.getStatus() != null && job.getStatus()
                    .getFailureInfo() != null ? ": " + job.getStatus().getFailureInfo() : ""));
        }
        return ok ? 0 : 1;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.S3Server;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.statistics.IOStatistics;
import org.apache.hadoop.fs.statistics.IOStatisticsSource;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BatchTextInputFormat on S3 (s3proxy, a real S3 server in a process of its
 * own, through Hadoop's S3A): the records and WordCount of
 * CombineTextInputFormat on the same objects, and what the reads ask the
 * store: a GET per file, no HEAD per object (the listing's length goes into
 * openFile).
 */
class S3InputTest {
    @TempDir
    static java.nio.file.Path work;
    static S3Server s3;
    static Configuration conf;
    static Path in;
    static int nonEmpty;

    @BeforeAll
    static void start() throws Exception {
        s3 = new S3Server();
        conf = TestJobs.localConf(work);
        s3.conf().forEach(conf::set);
        in = new Path(s3.uri("/in"));
        FileSystem fs = in.getFileSystem(conf);
        Random r = new Random(31);
        for (int i = 0; i < 40; i++) {
            StringBuilder b = new StringBuilder();
            int n = r.nextInt(5000);
            while (b.length() < n) {
                b.append("w").append(r.nextInt(300)).append(r.nextInt(4) == 0 ? "\r\n" : r.nextBoolean() ? "\n" : " ");
            }
            write(fs, new Path(in, (i % 4 == 0 ? "sub/" : "") + "f" + i + ".txt"), b.toString());
            nonEmpty += n > 0 ? 1 : 0;
        }
        write(fs, new Path(in, "empty.txt"), "");
        write(fs, new Path(in, "_SUCCESS"), "hidden\n");
    }

    static void write(FileSystem fs, Path p, String s) throws Exception {
        try (FSDataOutputStream out = fs.create(p, true)) {
            out.write(s.getBytes(StandardCharsets.UTF_8));
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    static long[] headsAndGets() throws Exception {
        IOStatistics st = ((IOStatisticsSource) in.getFileSystem(conf)).getIOStatistics();
        Long h = st.counters().get("action_http_head_request");
        Long g = st.counters().get("action_http_get_request");
        return new long[] {h == null ? 0 : h, g == null ? 0 : g};
    }

    @Test
    void recordsEqualCombineTextsWithoutAHeadPerObject() throws Exception {
        long[] z = headsAndGets();
        TestJobs.Result combine = TestJobs.dump(conf, CombineTextInputFormat.class, work.resolve("out"), in);
        long[] y = headsAndGets();
        // CombineTextInputFormat's LineRecordReader asks for each object's status: what this test can see
        assertTrue(y[0] - z[0] >= nonEmpty, "CombineTextInputFormat: a HEAD per object: " + (y[0] - z[0]));
        // the listing alone (getSplits), then the job (its listing again, and the reads)
        long[] a = headsAndGets();
        SplitPlanner.getTextSplits(withInput(conf), null);
        long[] b = headsAndGets();
        TestJobs.Result bfo = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), in);
        long[] c = headsAndGets();
        assertTrue(combine.ok() && bfo.ok());
        TestJobs.assertSameLines(combine.lines(), bfo.lines(), "records on s3a");
        assertTrue(bfo.lines().size() > 100, "records: " + bfo.lines().size());
        assertEquals(b[0] - a[0], c[0] - b[0], "no HEAD beyond the listing's");
        assertEquals(nonEmpty, c[1] - b[1], "one GET per file");
        assertEquals(nonEmpty + 1, bfo.counter(BfoCounter.ENGINE_GROUP, "hadoop-fs"));
        // WordCount too
        TestJobs.assertSameLines(
                TestJobs.wordCount(conf, CombineTextInputFormat.class, new Path(work.resolve("wc").toUri()), in).lines(),
                TestJobs.wordCount(conf, BatchTextInputFormat.class, new Path(work.resolve("wc").toUri()), in).lines(),
                "wordcount on s3a");
    }

    /**
     * The S3 server killed (SIGKILL) in the middle of a split's read: the record reader fails naming the file
     * and the connection's failure; it does not hang (S3A's own retries are few here).
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 5, unit = java.util.concurrent.TimeUnit.MINUTES)
    void serverKilledMidRead() throws Exception {
        try (S3Server victim = new S3Server("bfo-victim")) {
            Configuration c = new Configuration(conf);
            victim.bucketConf().forEach(c::set);
            c.setInt(BfoInputConfig.FS_THREADS, 1);   // one file at a time: most are opened after the kill
            Path dir = new Path(victim.uri("/v"));
            FileSystem vfs = dir.getFileSystem(c);
            for (int i = 0; i < 30; i++) {
                write(vfs, new Path(dir, "f" + i), ("victim " + i + "\n").repeat(50));
            }
            org.apache.hadoop.mapreduce.Job job = org.apache.hadoop.mapreduce.Job.getInstance(c);
            org.apache.hadoop.mapreduce.lib.input.FileInputFormat.addInputPath(job, dir);
            BatchTextInputFormat format = new BatchTextInputFormat();
            java.util.List<org.apache.hadoop.mapreduce.InputSplit> splits = format.getSplits(job);
            assertEquals(1, splits.size());
            org.apache.hadoop.mapreduce.TaskAttemptContext ctx = new org.apache.hadoop.mapreduce.task
                    .TaskAttemptContextImpl(job.getConfiguration(), new org.apache.hadoop.mapreduce.TaskAttemptID());
            java.io.IOException e;
            try (org.apache.hadoop.mapreduce.RecordReader<org.apache.hadoop.io.LongWritable,
                    org.apache.hadoop.io.Text> r = format.createRecordReader(splits.get(0), ctx)) {
                r.initialize(splits.get(0), ctx);
                assertTrue(r.nextKeyValue());
                victim.kill();
                e = org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class, () -> {
                    while (r.nextKeyValue()) {
                        // the files read before the kill
                    }
                });
            }
            assertTrue(String.valueOf(e.getMessage()).contains(victim.uri("/v/f")) || String.valueOf(e)
                    .contains("bfo-victim"), String.valueOf(e));
        }
    }

    private static Configuration withInput(Configuration c) {
        Configuration x = new Configuration(c);
        x.set(BfoInputConfig.INPUT_DIR, in.toString());
        return x;
    }
}

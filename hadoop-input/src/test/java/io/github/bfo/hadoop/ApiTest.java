/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.MD5Hash;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobClient;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.MapReduceBase;
import org.apache.hadoop.mapred.OutputCollector;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapred.RunningJob;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The old (mapred) API twins, BatchFileInputFormat in both APIs, and local .crc checksum files. */
class ApiTest {
    @TempDir
    static java.nio.file.Path work;
    static java.nio.file.Path edge;
    private static final AtomicInteger RUN = new AtomicInteger();

    @BeforeAll
    static void data() throws Exception {
        edge = work.resolve("edge");
        TestData.edgeCases(edge);
    }

    /** Old API: (file TAB offset, line), the file from map.input.file. */
    public static class OldDump extends MapReduceBase
            implements org.apache.hadoop.mapred.Mapper<LongWritable, Text, Text, Text> {
        private JobConf job;

        @Override
        public void configure(JobConf job) {
            this.job = job;
        }

        @Override
        public void map(LongWritable key, Text value, OutputCollector<Text, Text> out, Reporter reporter)
                throws IOException {
            out.collect(new Text(job.get("map.input.file") + "\t" + key.get()), TestJobs.escape(value));
        }
    }

    /** Old API: (path, md5 and length). */
    public static class OldWhole extends MapReduceBase
            implements org.apache.hadoop.mapred.Mapper<Text, BytesWritable, Text, Text> {
        @Override
        public void map(Text key, BytesWritable value, OutputCollector<Text, Text> out, Reporter reporter) {
            try {
                out.collect(new Text(key), new Text(MD5Hash.digest(value.getBytes(), 0, value.getLength()) + " "
                        + value.getLength()));
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /** New API: (path, md5 and length). */
    public static class NewWhole extends Mapper<Text, BytesWritable, Text, Text> {
        @Override
        protected void map(Text key, BytesWritable value, Context context) throws IOException, InterruptedException {
            context.write(new Text(key), new Text(MD5Hash.digest(value.getBytes(), 0, value.getLength()) + " "
                    + value.getLength()));
        }
    }

    private static List<String> oldJob(Configuration base, Class<? extends org.apache.hadoop.mapred.InputFormat<?, ?>>
            format, Class<? extends org.apache.hadoop.mapred.Mapper<?, ?, ?, ?>> mapper, java.nio.file.Path in)
            throws Exception {
        JobConf job = new JobConf(base);
        job.setInputFormat(format);
        job.setMapperClass(mapper);
        job.setNumReduceTasks(1);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        FileInputFormat.setInputPaths(job, new Path(in.toUri()));
        Path out = new Path(work.resolve("out-old-" + RUN.incrementAndGet()).toUri());
        FileOutputFormat.setOutputPath(job, out);
        RunningJob r = JobClient.runJob(job);
        assertTrue(r.isSuccessful());
        return TestJobs.readOutput(out, job);
    }

    /** md5 and length of every non-hidden file under root, as "file:/path TAB md5 len". */
    private static List<String> expectedWhole(java.nio.file.Path root) throws IOException {
        List<String> r = new ArrayList<>();
        try (var s = Files.walk(root)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s.filter(Files::isRegularFile)::iterator) {
                boolean hidden = false;
                for (java.nio.file.Path part : root.relativize(p)) {
                    hidden |= part.toString().startsWith("_") || part.toString().startsWith(".");
                }
                if (!hidden) {
                    byte[] b = Files.readAllBytes(p);
                    r.add(new Path(p.toUri()) + "\t" + MD5Hash.digest(b) + " " + b.length);
                }
            }
        }
        r.sort(null);
        return r;
    }

    @Test
    void oldApiTextSameAsOldTextInputFormat() throws Exception {
        Configuration conf = TestJobs.localConf(work);
        conf.setLong(BfoInputConfig.READ_LARGE_FILE, 8192);
        List<String> bfo = oldJob(conf, io.github.bfo.hadoop.mapred.BatchTextInputFormat.class, OldDump.class, edge);
        List<String> text = oldJob(conf, org.apache.hadoop.mapred.TextInputFormat.class, OldDump.class, edge);
        List<String> combine = oldJob(conf, org.apache.hadoop.mapred.lib.CombineTextInputFormat.class, OldDump.class,
                edge);
        assertFalse(bfo.isEmpty());
        TestJobs.assertSameLines(text, combine, "old API: CombineTextInputFormat vs TextInputFormat");
        TestJobs.assertSameLines(text, bfo, "old API: BatchTextInputFormat vs TextInputFormat");

        // a custom delimiter and many small splits, old API
        conf.set(BfoInputConfig.RECORD_DELIMITER, "\r\n");
        conf.setInt(BfoInputConfig.SPLIT_MAXFILES, 4);
        bfo = oldJob(conf, io.github.bfo.hadoop.mapred.BatchTextInputFormat.class, OldDump.class, edge);
        combine = oldJob(conf, org.apache.hadoop.mapred.lib.CombineTextInputFormat.class, OldDump.class, edge);
        TestJobs.assertSameLines(combine, bfo, "old API, delimiter CRLF: BatchTextInputFormat vs CombineTextInputFormat");
    }

    @Test
    void wholeFilesBothApis() throws Exception {
        Configuration conf = TestJobs.localConf(work);
        conf.setLong(BfoInputConfig.READ_LARGE_FILE, 8192);   // large files come in pieces, put together
        List<String> expected = expectedWhole(edge);
        List<String> old = oldJob(conf, io.github.bfo.hadoop.mapred.BatchFileInputFormat.class, OldWhole.class, edge);
        TestJobs.assertSameLines(expected, old, "old API BatchFileInputFormat");

        Job job = Job.getInstance(new Configuration(conf));
        job.setInputFormatClass(BatchFileInputFormat.class);
        job.setMapperClass(NewWhole.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.addInputPath(job, new Path(edge.toUri()));
        Path out = new Path(work.resolve("out-whole").toUri());
        org.apache.hadoop.mapreduce.lib.output.FileOutputFormat.setOutputPath(job, out);
        assertTrue(job.waitForCompletion(false));
        TestJobs.assertSameLines(expected, TestJobs.readOutput(out, conf), "new API BatchFileInputFormat");
        assertEquals(expected.size(), job.getCounters().findCounter(BfoCounter.FILES).getValue());
    }

    @Test
    void oldApiMissingInput() {
        JobConf job = new JobConf(TestJobs.localConf(work));
        FileInputFormat.setInputPaths(job, new Path(work.resolve("missing").toUri()));
        assertThrows(org.apache.hadoop.mapred.InvalidInputException.class,
                () -> new io.github.bfo.hadoop.mapred.BatchTextInputFormat().getSplits(job, 1));
    }

    /**
     * Local checksums: files written through LocalFileSystem have .NAME.crc files; BatchTextInputFormat
     * verifies them as LocalFileSystem does, a corrupted file fails the job like TextInputFormat, and
     * bfo.input.verify.checksum=false (or RawLocalFileSystem) reads the raw bytes.
     */
    @Test
    void localChecksums() throws Exception {
        Configuration conf = TestJobs.localConf(work);
        java.nio.file.Path dir = work.resolve("crc");
        FileSystem local = FileSystem.getLocal(conf);
        for (int i = 0; i < 20; i++) {
            try (FSDataOutputStream o = local.create(new Path(dir.resolve("f" + i + ".txt").toUri()))) {
                o.write(TestData.utf8(TestData.prose(new java.util.Random(i), 200, "\n")));
            }
        }
        assertTrue(Files.exists(dir.resolve(".f3.txt.crc")));
        TestJobs.Result ok = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), dir);
        TestJobs.Result text = TestJobs.dump(conf, TextInputFormat.class, work.resolve("out"), dir);
        assertTrue(ok.ok());
        TestJobs.assertSameLines(text.lines(), ok.lines(), "crc-verified read vs TextInputFormat");
        assertEquals(20, ok.counter(BfoCounter.CHECKSUM_FILES));
        assertTrue(ok.lines().stream().noneMatch(l -> l.contains(".crc")), ".crc files are not input");

        // corrupt one byte in the middle of a file, same length: the .crc no longer matches
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("f3.txt").toFile(), "rw")) {
            f.seek(1000);
            int b = f.read();
            f.seek(1000);
            f.write(b ^ 0x20);
        }
        assertFalse(TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), dir).ok(),
                "a checksum error fails the job");
        assertFalse(TestJobs.dump(conf, TextInputFormat.class, work.resolve("out"), dir).ok(),
                "as it does with TextInputFormat");

        Configuration raw = new Configuration(conf);
        raw.setBoolean(BfoInputConfig.VERIFY_CHECKSUM, false);
        TestJobs.Result r = TestJobs.dump(raw, BatchTextInputFormat.class, work.resolve("out"), dir);
        assertTrue(r.ok(), "raw bytes without verification");
        assertEquals(0, r.counter(BfoCounter.CHECKSUM_FILES));
        // RawLocalFileSystem as file: (LocalJobRunner itself needs LocalFileSystem, so read a split directly)
        Configuration rawFs = new Configuration(conf);
        rawFs.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
        rawFs.setBoolean("fs.file.impl.disable.cache", true);
        rawFs.set(BfoInputConfig.INPUT_DIR, dir.toUri().toString());
        long records = 0;
        for (BatchFileSplit s : SplitPlanner.getSplits(rawFs, null)) {
            try (TextCursor c = new TextCursor(s, rawFs, CounterSink.NONE)) {
                while (c.next(new LongWritable(), new Text())) {
                    records++;
                }
            }
        }
        assertEquals(r.lines().size(), records, "RawLocalFileSystem: raw bytes, no verification");
    }
}

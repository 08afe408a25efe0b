/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

import io.github.bfo.hadoop.examples.WordCount;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** Running small MapReduce jobs on the local runner in the test JVM, and reading their output. */
final class TestJobs {
    private static final AtomicInteger RUN = new AtomicInteger();

    private TestJobs() {
    }

    /** A configuration for the local runner: small sort buffer, fast polling, local file system. */
    static Configuration localConf(java.nio.file.Path work) {
        Configuration conf = new Configuration();
        conf.set("mapreduce.framework.name", "local");
        conf.set("fs.defaultFS", "file:///");
        conf.setInt("mapreduce.task.io.sort.mb", 4);
        conf.setInt("mapreduce.client.completion.pollinterval", 20);
        conf.setInt("mapreduce.local.map.tasks.maximum", 2);
        conf.set("hadoop.tmp.dir", work.resolve("hadoop-tmp").toString());
        conf.set("mapreduce.jobtracker.staging.root.dir", work.resolve("staging").toString());
        conf.set("mapreduce.cluster.local.dir", work.resolve("local").toString());
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        return conf;
    }

    /** Emits (file TAB key, line) for every record, and checks the old alias of the file key. */
    public static class DumpMapper extends Mapper<LongWritable, Text, Text, Text> {
        private final Text out = new Text();

        @Override
        protected void map(LongWritable key, Text value, Context context) throws IOException, InterruptedException {
            String file;
            if (context.getInputSplit() instanceof org.apache.hadoop.mapreduce.lib.input.FileSplit) {
                // TextInputFormat: the new API's MapTask does not set mapreduce.map.input.file;
                // BatchTextInputFormat's split of a large file sets it (and the old alias) to the split's file
                file = ((org.apache.hadoop.mapreduce.lib.input.FileSplit) context.getInputSplit()).getPath().toString();
                String set = context.getConfiguration().get("mapreduce.map.input.file");
                if (set != null && (!set.equals(file) || !set.equals(context.getConfiguration().get("map.input.file")))) {
                    context.getCounter("test", "BAD_INPUT_FILE").increment(1);
                }
            } else {
                file = context.getConfiguration().get("mapreduce.map.input.file");
                String alias = context.getConfiguration().get("map.input.file");
                if (file == null || !file.equals(alias)) {
                    context.getCounter("test", "BAD_INPUT_FILE").increment(1);
                }
            }
            out.set(file + "\t" + key.get());
            context.write(out, escape(value));
        }
    }

    /** The bytes of t with CR, LF and backslash escaped (so one record is one output line). */
    static Text escape(Text t) {
        byte[] b = t.getBytes();
        java.io.ByteArrayOutputStream o = new java.io.ByteArrayOutputStream(t.getLength() + 8);
        for (int i = 0; i < t.getLength(); i++) {
            byte c = b[i];
            if (c == '\r') {
                o.write('\\');
                o.write('r');
            } else if (c == '\n') {
                o.write('\\');
                o.write('n');
            } else if (c == '\\') {
                o.write('\\');
                o.write('\\');
            } else {
                o.write(c);
            }
        }
        Text r = new Text();
        r.set(o.toByteArray());
        return r;
    }

    /** Writes each record once per value (keeps duplicates). */
    public static class DumpReducer extends Reducer<Text, Text, Text, Text> {
        @Override
        protected void reduce(Text key, Iterable<Text> values, Context context) throws IOException,
                InterruptedException {
            for (Text v : values) {
                context.write(key, v);
            }
        }
    }

    /** A record dump job: returns its sorted output lines. */
    static Result dump(Configuration base, Class<? extends InputFormat<?, ?>> format, java.nio.file.Path out,
                       java.nio.file.Path... inputs) throws Exception {
        Path[] in = new Path[inputs.length];
        for (int i = 0; i < in.length; i++) {
            in[i] = new Path(inputs[i].toUri());
        }
        return dump(base, format, out, in);
    }

    /** A record dump job over inputs on any file system. */
    static Result dump(Configuration base, Class<? extends InputFormat<?, ?>> format, java.nio.file.Path out,
                       Path... inputs) throws Exception {
        Configuration conf = new Configuration(base);
        Job job = Job.getInstance(conf, "dump " + format.getSimpleName());
        job.setInputFormatClass(format);
        for (Path in : inputs) {
            FileInputFormat.addInputPath(job, in);
        }
        job.setMapperClass(DumpMapper.class);
        job.setReducerClass(DumpReducer.class);
        job.setNumReduceTasks(1);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        Path o = new Path(out.resolve("dump-" + format.getSimpleName() + "-" + RUN.incrementAndGet()).toUri());
        FileOutputFormat.setOutputPath(job, o);
        boolean ok = job.waitForCompletion(false);
        return new Result(job, ok, ok ? readOutput(o, conf) : List.of());
    }

    /** WordCount (the example's mapper, combiner and reducer): returns its sorted output lines. */
    static Result wordCount(Configuration base, Class<? extends InputFormat<?, ?>> format, Path out, Path... inputs)
            throws Exception {
        Configuration conf = new Configuration(base);
        Job job = Job.getInstance(conf, "wordcount " + format.getSimpleName());
        job.setInputFormatClass(format);
        for (Path in : inputs) {
            FileInputFormat.addInputPath(job, in);
        }
        job.setMapperClass(WordCount.TokenizerMapper.class);
        job.setCombinerClass(WordCount.IntSumReducer.class);
        job.setReducerClass(WordCount.IntSumReducer.class);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(IntWritable.class);
        Path o = new Path(out, "wc-" + format.getSimpleName() + "-" + RUN.incrementAndGet());
        FileOutputFormat.setOutputPath(job, o);
        long t0 = System.nanoTime();
        boolean ok = job.waitForCompletion(false);
        System.out.printf("%s: %.2f s%n", job.getJobName(), (System.nanoTime() - t0) / 1e9);
        return new Result(job, ok, ok ? readOutput(o, conf) : List.of());
    }

    /** A record dump job of the old API (ApiTest.OldDump: the file from map.input.file), one reducer. */
    static OldResult oldDump(Configuration base, Class<? extends org.apache.hadoop.mapred.InputFormat<?, ?>> format,
                             java.nio.file.Path out, java.nio.file.Path in) throws Exception {
        org.apache.hadoop.mapred.JobConf job = new org.apache.hadoop.mapred.JobConf(base);
        job.setInputFormat(format);
        job.setMapperClass(ApiTest.OldDump.class);
        job.setNumReduceTasks(1);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(Text.class);
        org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, new Path(in.toUri()));
        Path o = new Path(out.resolve("old-" + format.getSimpleName() + "-" + RUN.incrementAndGet()).toUri());
        org.apache.hadoop.mapred.FileOutputFormat.setOutputPath(job, o);
        org.apache.hadoop.mapred.RunningJob r = org.apache.hadoop.mapred.JobClient.runJob(job);
        return new OldResult(r, readOutput(o, job));
    }

    record OldResult(org.apache.hadoop.mapred.RunningJob job, List<String> lines) {
        long counter(Enum<?> c) throws IOException {
            return job.getCounters().getCounter(c);
        }
    }

    static List<String> readOutput(Path dir, Configuration conf) throws IOException {
        FileSystem fs = dir.getFileSystem(conf);
        List<String> lines = new ArrayList<>();
        FileStatus[] parts = fs.listStatus(dir, p -> p.getName().startsWith("part-"));
        Arrays.sort(parts);
        for (FileStatus st : parts) {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(fs.open(st.getPath()),
                    StandardCharsets.UTF_8))) {
                String l;
                while ((l = r.readLine()) != null) {
                    lines.add(l);
                }
            }
        }
        lines.sort(null);
        return lines;
    }

    record Result(Job job, boolean ok, List<String> lines) {
        long counter(Enum<?> c) throws IOException {
            return job.getCounters().findCounter(c).getValue();
        }

        long counter(String group, String name) throws IOException {
            return job.getCounters().findCounter(group, name).getValue();
        }
    }

    /** assertEquals for long line lists, with a short message: sizes and the first difference. */
    static void assertSameLines(List<String> expected, List<String> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        int i = 0;
        while (i < expected.size() && i < actual.size() && expected.get(i).equals(actual.get(i))) {
            i++;
        }
        String e = i < expected.size() ? expected.get(i) : "<end>";
        String a = i < actual.size() ? actual.get(i) : "<end>";
        org.junit.jupiter.api.Assertions.fail(what + ": " + expected.size() + " lines expected, " + actual.size()
                + " found; first difference at line " + i + ":\n  expected: " + cut(e) + "\n  found:    " + cut(a));
    }

    private static String cut(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }

    static void write(java.nio.file.Path p, byte[] b) throws IOException {
        Files.createDirectories(p.getParent());
        Files.write(p, b);
    }

    static void write(java.nio.file.Path p, String s) throws IOException {
        write(p, s.getBytes(StandardCharsets.UTF_8));
    }
}

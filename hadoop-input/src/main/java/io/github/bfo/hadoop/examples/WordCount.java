/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import io.github.bfo.hadoop.BatchTextInputFormat;
import io.github.bfo.hadoop.BfoInputConfig;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.IntWritable;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.CounterGroup;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.InputFormat;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.Reducer;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.NullOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.TextOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.StringTokenizer;

/**
 * WordCount over many small files, with a choice of input format:
 *
 * <pre>
 * hadoop jar bfo-hadoop-input-VERSION-job.jar [-D key=value...] [--input-format bfo|combine|text]
 *            [--read-only] [--reducers N] IN... OUT
 * hadoop-input/bin/bfo-wordcount [same arguments]          # no cluster: the embedded local runner
 * </pre>
 *
 * <ul>
 * <li>{@code bfo} (default): {@link BatchTextInputFormat};</li>
 * <li>{@code combine}: CombineTextInputFormat;</li>
 * <li>{@code text}: TextInputFormat (one split per file).</li>
 * </ul>
 * bfo and combine get the same {@code split.maxsize} (the BFO default,
 * 256 MiB, when none is given), so they are compared at the same split
 * size. Input directories are read recursively (every format): unless
 * {@code -D mapreduce.input.fileinputformat.input.dir.recursive=false} is
 * given, the files in subdirectories are input too, where a Hadoop job
 * would plan no split for them (or, with TextInputFormat, fail).
 * The mapper splits lines on white space like Hadoop's own WordCount
 * example; a combiner sums. {@code --read-only} runs a map-only job that
 * only counts records and bytes (no OUT). Prints the job's wall-clock time (and, apart, its submission: listing and split planning)
 * and its counters; the exit status is 0 only when the job succeeded.
 */
public class WordCount extends Configured implements Tool {
    /** Counters of the mappers. */
    public enum Records {
        RECORDS,
        LINE_BYTES
    }

    /** Splits lines into words (white space), emits (word, 1). */
    public static class TokenizerMapper extends Mapper<LongWritable, Text, Text, IntWritable> {
        private static final IntWritable ONE = new IntWritable(1);
        private final Text word = new Text();

        @Override
        protected void map(LongWritable key, Text value, Context context) throws java.io.IOException,
                InterruptedException {
            StringTokenizer it = new StringTokenizer(value.toString());
            while (it.hasMoreTokens()) {
                word.set(it.nextToken());
                context.write(word, ONE);
            }
        }
    }

    /** Sums the counts of a word. */
    public static class IntSumReducer extends Reducer<Text, IntWritable, Text, IntWritable> {
        private final IntWritable result = new IntWritable();

        @Override
        protected void reduce(Text key, Iterable<IntWritable> values, Context context) throws java.io.IOException,
                InterruptedException {
            int sum = 0;
            for (IntWritable v : values) {
                sum += v.get();
            }
            result.set(sum);
            context.write(key, result);
        }
    }

    /** Read-only: counts records and bytes, writes nothing. */
    public static class CountMapper extends Mapper<LongWritable, Text, NullWritable, NullWritable> {
        private long records;
        private long bytes;

        @Override
        protected void map(LongWritable key, Text value, Context context) {
            records++;
            bytes += value.getLength();
        }

        @Override
        protected void cleanup(Context context) {
            context.getCounter(Records.RECORDS).increment(records);
            context.getCounter(Records.LINE_BYTES).increment(bytes);
        }
    }

    private static void usage(PrintStream err) {
        err.println("usage: WordCount [-D key=value...] [--input-format bfo|combine|text] [--read-only] "
                + "[--reducers N] IN... OUT");
        err.println("       WordCount --read-only [--input-format ...] IN...");
        err.println("IN is read recursively (-D " + BfoInputConfig.INPUT_DIR_RECURSIVE + "=false: its top level only)");
    }

    /** The input format class for a name: bfo, combine or text. */
    public static Class<? extends InputFormat<LongWritable, Text>> inputFormat(String name) {
        switch (name.toLowerCase(Locale.ROOT)) {
            case "bfo":
                return BatchTextInputFormat.class;
            case "combine":
                return CombineTextInputFormat.class;
            case "text":
                return TextInputFormat.class;
            default:
                throw new IllegalArgumentException("unknown input format: " + name + " (bfo, combine or text)");
        }
    }

    @Override
    public int run(String[] args) throws Exception {
        String format = "bfo";
        boolean readOnly = false;
        int reducers = 1;
        List<String> paths = new ArrayList<>();
        Configuration conf = getConf();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if ((a.equals("-D") && i + 1 < args.length) || (a.startsWith("-D") && a.length() > 2)) {
                // ToolRunner takes -D only before the first other argument; accept it anywhere
                String kv = a.equals("-D") ? args[++i] : a.substring(2);
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    System.err.println("WordCount: -D needs key=value: " + kv);
                    return 2;
                }
                conf.set(kv.substring(0, eq), kv.substring(eq + 1));
            } else if (a.equals("--input-format") && i + 1 < args.length) {
                format = args[++i];
            } else if (a.startsWith("--input-format=")) {
                format = a.substring("--input-format=".length());
            } else if (a.equals("--read-only")) {
                readOnly = true;
            } else if (a.equals("--reducers") && i + 1 < args.length) {
                reducers = Integer.parseInt(args[++i]);
            } else if (a.equals("-h") || a.equals("--help")) {
                usage(System.out);
                return 0;
            } else if (a.startsWith("--")) {
                System.err.println("WordCount: unknown option " + a);
                usage(System.err);
                return 2;
            } else {
                paths.add(a);
            }
        }
        if (paths.size() < (readOnly ? 1 : 2)) {
            usage(System.err);
            return 2;
        }
        Class<? extends InputFormat<LongWritable, Text>> inputFormat;
        try {
            inputFormat = inputFormat(format);
        } catch (IllegalArgumentException e) {
            System.err.println("WordCount: " + e.getMessage());
            return 2;
        }
        if (conf.get(BfoInputConfig.INPUT_DIR_RECURSIVE) == null) {
            // IN is usually a tree of small files: a non-recursive job would plan nothing for its subdirectories
            conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        }
        long maxSplit = BfoInputConfig.maxSplitSize(conf);
        if (conf.getLong(BfoInputConfig.SPLIT_MAXSIZE, 0) <= 0) {
            conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, maxSplit);
        }
        if (conf.get("mapreduce.client.completion.pollinterval") == null) {
            conf.setInt("mapreduce.client.completion.pollinterval", 50);   // not 5 s: the job's time is measured
        }
        Job job = Job.getInstance(conf, (readOnly ? "read-only count (" : "wordcount (") + format + ")");
        if (conf.get(MRJobConfig.JAR) == null) {
            // a job jar the user named (-D mapreduce.job.jar=...) wins over the jar this class came from
            job.setJarByClass(WordCount.class);
        }
        job.setInputFormatClass(inputFormat);
        int inputs = readOnly ? paths.size() : paths.size() - 1;
        for (int i = 0; i < inputs; i++) {
            FileInputFormat.addInputPath(job, new Path(paths.get(i)));
        }
        if (readOnly) {
            job.setMapperClass(CountMapper.class);
            job.setNumReduceTasks(0);
            job.setOutputKeyClass(NullWritable.class);
            job.setOutputValueClass(NullWritable.class);
            job.setOutputFormatClass(NullOutputFormat.class);
        } else {
            job.setMapperClass(TokenizerMapper.class);
            job.setCombinerClass(IntSumReducer.class);
            job.setReducerClass(IntSumReducer.class);
            job.setNumReduceTasks(reducers);
            job.setOutputKeyClass(Text.class);
            job.setOutputValueClass(IntWritable.class);
            job.setOutputFormatClass(TextOutputFormat.class);
            FileOutputFormat.setOutputPath(job, new Path(paths.get(paths.size() - 1)));
        }
        long t0 = System.nanoTime();
        // submit() lists the input and plans the splits (getSplits runs in the client): timed on its own, since
        // listing costs differ widely between input formats and file systems.
        try {
            job.submit();
        } catch (IOException e) {
            // a missing input path, an empty glob, an existing output directory...: one clear line, no trace
            System.err.println("WordCount: the job could not be submitted: " + e.getMessage());
            return 1;
        }
        long t1 = System.nanoTime();
        boolean ok = job.waitForCompletion(false);
        long t2 = System.nanoTime();
        PrintStream out = System.out;
        out.printf(Locale.ROOT, "job: %s, input format %s, %s in %.3f s%n", job.getJobName(),
                inputFormat.getSimpleName(), ok ? "succeeded" : "FAILED", (t2 - t0) / 1e9);
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
            System.err.println("WordCount: the job failed" + (job.getStatus() != null && job.getStatus()
                    .getFailureInfo() != null ? ": " + job.getStatus().getFailureInfo() : ""));
        }
        return ok ? 0 : 1;
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new WordCount(), args));
    }
}

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

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Set;
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
        Configuration conf = getConf();
        JobArgs a = JobArgs.parse("WordCount", args, conf, Set.of("--input-format", "--reducers"), Set.of("--read-only"), WordCount::usage);
        if (a.exit != null) {
            return a.exit;
        }
        String format = a.options.getOrDefault("--input-format", "bfo");
        boolean readOnly = a.flags.contains("--read-only");
        int reducers = Integer.parseInt(a.options.getOrDefault("--reducers", "1"));
        List<String> paths = a.paths;
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
        Job job = Job.getInstance(JobReport.timed(conf),
                (readOnly ? "read-only count (" : "wordcount (") + format + ")");
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
        // submit() lists the input and plans the splits (getSplits runs in the client): timed on its own, since
        // listing costs differ widely between input formats and file systems.
        return JobReport.run(job, "WordCount", "input format " + inputFormat.getSimpleName());
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new WordCount(), args));
    }
}

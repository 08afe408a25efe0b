/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import io.github.bfo.hadoop.BatchFileOutputFormat;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.OutputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.LazyOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.MultipleOutputs;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

import java.io.IOException;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The inverse of the small-files input: SequenceFiles of (name, bytes)
 * records (Text, BytesWritable; a file, or a directory of them) become one
 * file per record under OUT, named by the record's key:
 *
 * <pre>
 * hadoop jar bfo-hadoop-input-VERSION-job.jar unpack [-D key=value...] [--output-format bfo|plain|multiple]
 *            [--base PREFIX] IN... OUT
 * hadoop-input/bin/bfo-unpack [same arguments]               # no cluster: the embedded local runner
 * </pre>
 *
 * <ul>
 * <li>{@code bfo} (default): {@link BatchFileOutputFormat};</li>
 * <li>{@code plain}: what a job does without bfo, {@link PerFileOutputFormat}
 * ({@code FileSystem.create} per record, FileOutputCommitter);</li>
 * <li>{@code multiple}: Hadoop's MultipleOutputs, each record to a base path
 * of its own ({@link RawValueOutputFormat}): the same tree, but each file
 * named with MultipleOutputs' part suffix ({@code NAME-m-00000}), and every
 * file of a task held open until the task ends.</li>
 * </ul>
 * {@code --base PREFIX} strips PREFIX from every key (keys made by
 * {@link Pack} are the files' full paths: {@code --base} the directory they
 * were packed from); a key not under it fails the job. A map-only job;
 * prints its time and counters as {@link WordCount} does.
 */
public class Unpack extends Configured implements Tool {
    /** The prefix stripped from every key (--base). */
    public static final String BASE = "bfo.unpack.base";

    /** (name, bytes) to (path relative to OUT, bytes). */
    public static class UnpackMapper extends Mapper<Text, BytesWritable, Text, BytesWritable> {
        private final Text path = new Text();
        private String base;

        @Override
        protected void setup(Context context) {
            base = base(context.getConfiguration());
        }

        @Override
        protected void map(Text key, BytesWritable value, Context context) throws IOException, InterruptedException {
            path.set(relative(key.toString(), base));
            context.write(path, value);
        }
    }

    /** The same through MultipleOutputs: each record's bytes to a base path of its own. */
    public static class MultipleOutputsMapper extends Mapper<Text, BytesWritable, NullWritable, BytesWritable> {
        private MultipleOutputs<NullWritable, BytesWritable> out;
        private String base;

        @Override
        protected void setup(Context context) {
            out = new MultipleOutputs<>(context);
            base = base(context.getConfiguration());
        }

        @Override
        protected void map(Text key, BytesWritable value, Context context) throws IOException, InterruptedException {
            out.write(NullWritable.get(), value, relative(key.toString(), base));
        }

        @Override
        protected void cleanup(Context context) throws IOException, InterruptedException {
            out.close();
        }
    }

    private static String base(Configuration conf) {
        String b = conf.get(BASE);
        return b == null || b.isEmpty() ? null : b.endsWith("/") ? b : b + "/";
    }

    /** key without base (null: as it is); a key not under base is an error naming both. */
    static String relative(String key, String base) {
        if (base == null) {
            return key;
        }
        if (!key.startsWith(base)) {
            throw new IllegalArgumentException("bfo unpack: the record key '" + key + "' is not under --base " + base);
        }
        return key.substring(base.length());
    }

    private static void usage(PrintStream err) {
        err.println("usage: Unpack [-D key=value...] [--output-format bfo|plain|multiple] [--base PREFIX] IN... OUT");
        err.println("IN: SequenceFiles of (Text name, BytesWritable bytes), or directories of them; "
                + "OUT: one file per record");
    }

    @Override
    public int run(String[] args) throws Exception {
        Configuration conf = getConf();
        JobArgs a = JobArgs.parse("Unpack", args, conf, Set.of("--output-format", "--base"), Set.of(), Unpack::usage);
        if (a.exit != null) {
            return a.exit;
        }
        List<String> paths = a.paths;
        String format = a.options.getOrDefault("--output-format", "bfo").toLowerCase(Locale.ROOT);
        if (paths.size() < 2 || !Set.of("bfo", "plain", "multiple").contains(format)) {
            if (paths.size() >= 2) {
                System.err.println("Unpack: unknown output format " + format + " (bfo, plain or multiple)");
            }
            usage(System.err);
            return 2;
        }
        if (a.options.containsKey("--base")) {
            conf.set(BASE, a.options.get("--base"));
        }
        Job job = Job.getInstance(JobReport.timed(conf), "unpack (" + format + ")");
        if (conf.get(MRJobConfig.JAR) == null) {
            job.setJarByClass(Unpack.class);
        }
        job.setInputFormatClass(SequenceFileInputFormat.class);
        for (String in : paths.subList(0, paths.size() - 1)) {
            FileInputFormat.addInputPath(job, new Path(in));
        }
        FileOutputFormat.setOutputPath(job, new Path(paths.get(paths.size() - 1)));
        job.setNumReduceTasks(0);
        Class<? extends OutputFormat<?, ?>> outputFormat;
        if (format.equals("multiple")) {
            job.setMapperClass(MultipleOutputsMapper.class);
            job.setOutputKeyClass(NullWritable.class);
            LazyOutputFormat.setOutputFormatClass(job, RawValueOutputFormat.class);   // no empty part-m files
            outputFormat = RawValueOutputFormat.class;
        } else {
            job.setMapperClass(UnpackMapper.class);
            job.setOutputKeyClass(Text.class);
            outputFormat = format.equals("bfo") ? BatchFileOutputFormat.class : PerFileOutputFormat.class;
            job.setOutputFormatClass(outputFormat);
        }
        job.setOutputValueClass(BytesWritable.class);
        return JobReport.run(job, "Unpack", "output format " + outputFormat.getSimpleName()
                + (format.equals("multiple") ? " (MultipleOutputs)" : ""));
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new Unpack(), args));
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import io.github.bfo.hadoop.BatchFileInputFormat;
import io.github.bfo.hadoop.BfoInputConfig;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.conf.Configured;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.Mapper;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat;
import org.apache.hadoop.util.Tool;
import org.apache.hadoop.util.ToolRunner;

import java.io.PrintStream;
import java.util.Set;

/**
 * Small files packed into SequenceFiles of (full path, bytes), with
 * Hadoop's own parts: {@link BatchFileInputFormat} (one record per file;
 * Hadoop ships no whole-file input format), the identity Mapper and
 * SequenceFileOutputFormat, map-only (one SequenceFile per map task):
 *
 * <pre>
 * hadoop jar bfo-hadoop-input-VERSION-job.jar pack [-D key=value...] IN... OUT
 * hadoop-input/bin/bfo-unpack --pack [same arguments]
 * </pre>
 * IN is read recursively. {@link Unpack} with {@code --base IN} makes the
 * files again.
 */
public class Pack extends Configured implements Tool {
    private static void usage(PrintStream err) {
        err.println("usage: Pack [-D key=value...] IN... OUT");
        err.println("OUT: SequenceFiles of (Text path, BytesWritable bytes), IN read recursively");
    }

    @Override
    public int run(String[] args) throws Exception {
        Configuration conf = getConf();
        JobArgs a = JobArgs.parse("Pack", args, conf, Set.of(), Set.of(), Pack::usage);
        if (a.exit != null) {
            return a.exit;
        }
        if (a.paths.size() < 2) {
            usage(System.err);
            return 2;
        }
        if (conf.get(BfoInputConfig.INPUT_DIR_RECURSIVE) == null) {
            conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        }
        Job job = Job.getInstance(JobReport.timed(conf), "pack");
        if (conf.get(MRJobConfig.JAR) == null) {
            job.setJarByClass(Pack.class);
        }
        job.setInputFormatClass(BatchFileInputFormat.class);
        for (String in : a.paths.subList(0, a.paths.size() - 1)) {
            FileInputFormat.addInputPath(job, new Path(in));
        }
        job.setMapperClass(Mapper.class);
        job.setNumReduceTasks(0);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(BytesWritable.class);
        job.setOutputFormatClass(SequenceFileOutputFormat.class);
        FileOutputFormat.setOutputPath(job, new Path(a.paths.get(a.paths.size() - 1)));
        return JobReport.run(job, "Pack", "input format BatchFileInputFormat, output format SequenceFileOutputFormat");
    }

    public static void main(String[] args) throws Exception {
        System.exit(ToolRunner.run(new Configuration(), new Pack(), args));
    }
}

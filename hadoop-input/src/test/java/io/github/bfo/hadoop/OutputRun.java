/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.OutputFormat;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.hadoop.util.ReflectionUtils;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One job's output protocol driven step by step, as MapReduce drives it
 * (the job's committer in the application master; in each task attempt, a
 * record writer and a committer of an output format of its own), so that
 * tests can look at the output directory between the steps and make
 * attempts fail, die or race.
 */
final class OutputRun {
    private static final AtomicInteger JOBS = new AtomicInteger();

    final Configuration conf;
    final Path out;
    final JobID jobId;
    final JobContext job;
    private final Class<? extends OutputFormat<Text, BytesWritable>> format;
    private OutputCommitter jobCommitter;

    OutputRun(Configuration base, Path out, Class<? extends OutputFormat<Text, BytesWritable>> format, int tasks)
            throws IOException {
        Job j = Job.getInstance(new Configuration(base));
        FileOutputFormat.setOutputPath(j, out);
        j.setOutputFormatClass(format);
        j.setNumReduceTasks(0);
        j.getConfiguration().setInt(MRJobConfig.NUM_MAPS, tasks);
        this.conf = j.getConfiguration();
        this.out = out;
        this.format = format;
        this.jobId = new JobID("bfotest" + ProcessHandle.current().pid(), JOBS.incrementAndGet());
        this.job = new JobContextImpl(conf, jobId);
    }

    OutputFormat<Text, BytesWritable> newFormat() {
        return ReflectionUtils.newInstance(format, conf);
    }

    void checkSpecs() throws IOException, InterruptedException {
        newFormat().checkOutputSpecs(job);
    }

    private OutputCommitter jobCommitter() throws IOException, InterruptedException {
        if (jobCommitter == null) {
            TaskAttemptID am = new TaskAttemptID(new TaskID(jobId, TaskType.JOB_SETUP, 0), 0);
            jobCommitter = newFormat().getOutputCommitter(new TaskAttemptContextImpl(conf, am));
        }
        return jobCommitter;
    }

    void setupJob() throws IOException, InterruptedException {
        checkSpecs();
        jobCommitter().setupJob(job);
    }

    void commitJob() throws IOException, InterruptedException {
        jobCommitter().commitJob(job);
    }

    void abortJob() throws IOException, InterruptedException {
        jobCommitter().abortJob(job, JobStatus.State.FAILED);
    }

    Attempt attempt(int task, int attempt) throws IOException, InterruptedException {
        return new Attempt(new TaskAttemptID(new TaskID(jobId, TaskType.MAP, task), attempt));
    }

    /** The whole job: one attempt per task, each writing its share of files, all committed. */
    void run(Map<String, byte[]> files, int tasks) throws Exception {
        setupJob();
        Attempt[] a = new Attempt[tasks];
        for (int t = 0; t < tasks; t++) {
            a[t] = attempt(t, 0);
        }
        int i = 0;
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            a[i++ % tasks].write(e.getKey(), e.getValue());
        }
        for (Attempt x : a) {
            x.close();
            x.commit();
        }
        commitJob();
    }

    /** A task attempt: its record writer and its committer, from an output format of its own. */
    final class Attempt {
        final TaskAttemptContext ctx;
        private final OutputCommitter committer;
        private RecordWriter<Text, BytesWritable> writer;

        Attempt(TaskAttemptID id) throws IOException, InterruptedException {
            Configuration c = new Configuration(conf);
            c.set(MRJobConfig.TASK_ATTEMPT_ID, id.toString());
            this.ctx = new TaskAttemptContextImpl(c, id);
            this.committer = newFormat().getOutputCommitter(ctx);
            committer.setupTask(ctx);
        }

        void write(String path, byte[] bytes) throws IOException, InterruptedException {
            write(new Text(path), new BytesWritable(bytes));
        }

        void write(Text key, BytesWritable value) throws IOException, InterruptedException {
            if (writer == null) {
                writer = newFormat().getRecordWriter(ctx);
            }
            writer.write(key, value);
        }

        void close() throws IOException, InterruptedException {
            if (writer == null) {
                writer = newFormat().getRecordWriter(ctx);
            }
            writer.close(ctx);
        }

        /** The task commit, as MapReduce does it: only when the committer says the attempt needs it. */
        boolean commit() throws IOException {
            if (!committer.needsTaskCommit(ctx)) {
                return false;
            }
            committer.commitTask(ctx);
            return true;
        }

        void abort() throws IOException {
            committer.abortTask(ctx);
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileOutput;

import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.JobContext;
import org.apache.hadoop.mapred.OutputCommitter;
import org.apache.hadoop.mapred.TaskAttemptContext;
import org.apache.hadoop.mapreduce.JobID;

import java.io.IOException;

/**
 * The committer of the {@code mapred} {@link BatchFileOutputFormat} (the old
 * API takes it from the job: {@code conf.setOutputCommitter}): the protocol
 * of {@link io.github.bfo.hadoop.BatchFileOutputCommitter}, as
 * {@code mapred.FileOutputCommitter} wraps its {@code mapreduce} twin.
 */
public class BatchFileOutputCommitter extends OutputCommitter {
    private BatchFileOutput output;   // the job's, from its setup to its commit or abort

    private synchronized BatchFileOutput output(JobConf conf, JobID id) {
        if (output == null || !output.stagingPath().getName().endsWith(id.toString())) {
            output = BatchFileOutput.of(conf, FileOutputFormat.getOutputPath(conf), id);
        }
        return output;
    }

    private BatchFileOutput output(JobContext c) {
        return output(c.getJobConf(), c.getJobID());
    }

    private BatchFileOutput output(TaskAttemptContext c) {
        return output(c.getJobConf(), c.getTaskAttemptID().getJobID());
    }

    @Override
    public void setupJob(JobContext context) throws IOException {
        output(context).setupJob();
    }

    @Override
    public void commitJob(JobContext context) throws IOException {
        output(context).commitJob();
    }

    @Override
    public void abortJob(JobContext context, int runState) throws IOException {
        output(context).abortJob();
    }

    @Override
    public void setupTask(TaskAttemptContext context) {
    }

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) throws IOException {
        return output(context).needsTaskCommit(context.getTaskAttemptID());
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
        output(context).commitTask(context.getTaskAttemptID());
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
        output(context).abortTask(context.getTaskAttemptID());
    }

    @Override
    public boolean isRecoverySupported() {
        return false;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;

import java.io.IOException;

/**
 * The committer of {@link BatchFileOutputFormat} ({@code mapreduce} API; the
 * {@code mapred} twin wraps it): FileOutputCommitter's guarantees with the
 * files staged by bfo ({@link BatchFileOutput} has the protocol).
 * <ul>
 * <li>A task attempt's files are invisible until the job commit: staged in
 * {@code OUT/_temporary-bfo-JOBID} (hidden from readers like every "_"
 * name) and reported when its record writer closes.</li>
 * <li>The task commit makes the attempt's report its task's: one attempt per
 * task, refused for a second.</li>
 * <li>The job commit checks every task's files together (no path twice, no
 * file that is another's directory), publishes them, removes the staging
 * directory and writes {@code _SUCCESS} (unless
 * {@code mapreduce.fileoutputcommitter.marksuccessfuljobs} is false).</li>
 * <li>A failed, killed or speculative attempt's files are removed by its
 * task abort, or with the staging directory at the job's end; an aborted
 * job leaves OUT as it was (removed when the job made it and nothing is in
 * it).</li>
 * </ul>
 * Recovery of a job's tasks by a later application attempt is not
 * supported (they run again).
 */
public class BatchFileOutputCommitter extends PathOutputCommitter {
    private final Path outputPath;
    private final BatchFileOutput output;

    public BatchFileOutputCommitter(Path outputPath, TaskAttemptContext context) throws IOException {
        super(outputPath, context);
        this.outputPath = outputPath;
        this.output = BatchFileOutput.of(context.getConfiguration(), outputPath, context.getJobID());
    }

    public BatchFileOutputCommitter(Path outputPath, JobContext context) throws IOException {
        super(outputPath, context);
        this.outputPath = outputPath;
        this.output = BatchFileOutput.of(context.getConfiguration(), outputPath, context.getJobID());
    }

    /** The job's output (its record writers are made from it too). */
    BatchFileOutput output() {
        return output;
    }

    @Override
    public Path getOutputPath() {
        return outputPath;
    }

    /** The staging directory: where the tasks' files wait, under names of their own, for the job commit. */
    @Override
    public Path getWorkPath() {
        return output.stagingPath();
    }

    @Override
    public void setupJob(JobContext context) throws IOException {
        output.setupJob();
    }

    @Override
    public void commitJob(JobContext context) throws IOException {
        output.commitJob();
    }

    @Override
    public void abortJob(JobContext context, JobStatus.State state) throws IOException {
        output.abortJob();
    }

    /** Nothing: an attempt stages its files when its record writer first writes. */
    @Override
    public void setupTask(TaskAttemptContext context) {
    }

    @Override
    public boolean needsTaskCommit(TaskAttemptContext context) throws IOException {
        return output.needsTaskCommit(context.getTaskAttemptID());
    }

    @Override
    public void commitTask(TaskAttemptContext context) throws IOException {
        output.commitTask(context.getTaskAttemptID());
    }

    @Override
    public void abortTask(TaskAttemptContext context) throws IOException {
        output.abortTask(context.getTaskAttemptID());
    }

    @Override
    public boolean isRecoverySupported() {
        return false;
    }
}

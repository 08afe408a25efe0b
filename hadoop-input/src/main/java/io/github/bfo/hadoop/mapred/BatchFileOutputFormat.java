/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileOutput;
import io.github.bfo.hadoop.BatchFileRecordWriter;
import io.github.bfo.hadoop.BfoOutputConfig;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.InvalidJobConfException;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordWriter;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.util.Progressable;

import java.io.IOException;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchFileOutputFormat}:
 * one file per record, key the path relative to the output directory, value
 * the bytes. The old API takes its committer from the job's configuration,
 * not from the output format, so a job names both:
 * <pre>
 * conf.setOutputFormat(BatchFileOutputFormat.class);
 * conf.setOutputCommitter(BatchFileOutputCommitter.class);   // io.github.bfo.hadoop.mapred
 * </pre>
 * and a job that names only the format is refused at submission.
 */
public class BatchFileOutputFormat extends FileOutputFormat<Text, BytesWritable> {

    @Override
    public RecordWriter<Text, BytesWritable> getRecordWriter(FileSystem ignored, JobConf job, String name,
                                                             Progressable progress) throws IOException {
        TaskAttemptID id = TaskAttemptID.forName(job.get(MRJobConfig.TASK_ATTEMPT_ID));
        return new BatchFileRecordWriter(BatchFileOutput.of(job, getOutputPath(job), id.getJobID()), id, job);
    }

    /** FileOutputFormat's checks, bfo's settings, and the job's committer: {@link BatchFileOutputCommitter}. */
    @Override
    public void checkOutputSpecs(FileSystem ignored, JobConf job) throws IOException {
        super.checkOutputSpecs(ignored, job);
        BfoOutputConfig.writeOptions(job);
        if (!(job.getOutputCommitter() instanceof BatchFileOutputCommitter)) {
            throw new InvalidJobConfException("bfo: the mapred BatchFileOutputFormat publishes through its own "
                    + "committer, which the old API takes from the job: conf.setOutputCommitter("
                    + BatchFileOutputCommitter.class.getName() + ".class) (the job has "
                    + job.getOutputCommitter().getClass().getName() + ")");
        }
    }
}

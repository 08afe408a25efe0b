/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

import java.io.IOException;

/**
 * One file per record ({@code mapreduce} API; the {@code mapred} twin is
 * {@link io.github.bfo.hadoop.mapred.BatchFileOutputFormat}): key the file's
 * path relative to the output directory (Text), value its bytes
 * (BytesWritable, or {@link FileBytesWritable} with a mode and a
 * modification time): the pair {@link BatchFileInputFormat} reads. Written
 * through bfo's write machinery (libbfo batches with one durability point per
 * batch on the local disk; many Hadoop streams in flight on HDFS and other
 * file systems; multipart uploads completed at the job commit on S3A) and
 * published by {@link BatchFileOutputCommitter} at the job commit, with
 * FileOutputCommitter's guarantees. The output directory is FileOutputFormat's
 * ({@code FileOutputFormat.setOutputPath}), refused when it exists as
 * FileOutputFormat refuses it. Settings: {@link BfoOutputConfig}.
 */
public class BatchFileOutputFormat extends FileOutputFormat<Text, BytesWritable> {
    private BatchFileOutputCommitter committer;

    @Override
    public RecordWriter<Text, BytesWritable> getRecordWriter(TaskAttemptContext context) throws IOException {
        return new BatchFileRecordWriter(((BatchFileOutputCommitter) getOutputCommitter(context)).output(),
                context.getTaskAttemptID(), context.getConfiguration());
    }

    @Override
    public synchronized OutputCommitter getOutputCommitter(TaskAttemptContext context) throws IOException {
        if (committer == null) {
            committer = new BatchFileOutputCommitter(getOutputPath(context), context);
        }
        return committer;
    }

    /** FileOutputFormat's checks (the directory set, not there yet; tokens), and bfo's settings. */
    @Override
    public void checkOutputSpecs(JobContext job) throws IOException {
        super.checkOutputSpecs(job);
        BfoOutputConfig.writeOptions(job.getConfiguration());
    }
}

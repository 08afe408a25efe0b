/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.LargeFileRecordReader;
import io.github.bfo.hadoop.SplitCursor;
import io.github.bfo.hadoop.SplitPlanner;
import io.github.bfo.hadoop.TextCursor;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;
import java.util.List;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchTextInputFormat}:
 * a drop-in for {@code org.apache.hadoop.mapred.TextInputFormat} and
 * {@code CombineTextInputFormat}, with the same records, the same splits and
 * the same batch reading: large files cut into FileSplits read by the old
 * API's LineRecordReader, as the old TextInputFormat reads them.
 */
public class BatchTextInputFormat extends BatchInputFormat<LongWritable, Text> {
    public BatchTextInputFormat() {
        super(LongWritable::new, Text::new);
    }

    @Override
    SplitCursor<LongWritable, Text> open(BatchFileSplit split, JobConf job, Reporter reporter) throws IOException {
        return TextCursor.open(split, job, reporter);
    }

    @Override
    List<? extends org.apache.hadoop.mapreduce.InputSplit> plan(JobConf job) throws IOException {
        return SplitPlanner.getTextSplits(job, job.getCredentials());
    }

    @Override
    RecordReader<LongWritable, Text> openPiece(FileSplit split, JobConf job, Reporter reporter) throws IOException {
        return LargeFileRecordReader.open(split, job, reporter);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.TextCursor;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchTextInputFormat}:
 * a drop-in for {@code org.apache.hadoop.mapred.TextInputFormat} and
 * {@code CombineTextInputFormat}, with the same records, the same splits and
 * the same batch reading.
 */
public class BatchTextInputFormat extends FileInputFormat<LongWritable, Text> {

    @Override
    public InputSplit[] getSplits(JobConf job, int numSplits) throws IOException {
        return Splits.of(job);
    }

    @Override
    protected boolean isSplitable(FileSystem fs, Path file) {
        return false;
    }

    @Override
    public RecordReader<LongWritable, Text> getRecordReader(InputSplit split, JobConf job, Reporter reporter)
            throws IOException {
        BatchFileSplit batch = CursorRecordReader.batchSplit(split, "BatchTextInputFormat");
        reporter.setStatus(split.toString());
        return new CursorRecordReader<>(TextCursor.open(batch, job, reporter), LongWritable::new, Text::new);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.WholeFileCursor;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchFileInputFormat}:
 * one record per file, key the path, value the bytes.
 */
public class BatchFileInputFormat extends FileInputFormat<Text, BytesWritable> {

    @Override
    public InputSplit[] getSplits(JobConf job, int numSplits) throws IOException {
        return Splits.of(job);
    }

    @Override
    protected boolean isSplitable(FileSystem fs, Path file) {
        return false;
    }

    @Override
    public RecordReader<Text, BytesWritable> getRecordReader(InputSplit split, JobConf job, Reporter reporter)
            throws IOException {
        BatchFileSplit batch = CursorRecordReader.batchSplit(split, "BatchFileInputFormat");
        reporter.setStatus(split.toString());
        return new CursorRecordReader<>(WholeFileCursor.open(batch, job, reporter), Text::new, BytesWritable::new);
    }
}

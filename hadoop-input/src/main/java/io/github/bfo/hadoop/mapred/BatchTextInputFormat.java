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
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException("BatchTextInputFormat needs a BatchFileSplit, not " + split.getClass().getName());
        }
        reporter.setStatus(split.toString());
        TextCursor cursor = TextCursor.open((BatchFileSplit) split, job, reporter);
        return new RecordReader<>() {
            @Override
            public boolean next(LongWritable key, Text value) throws IOException {
                return cursor.next(key, value);
            }

            @Override
            public LongWritable createKey() {
                return new LongWritable();
            }

            @Override
            public Text createValue() {
                return new Text();
            }

            @Override
            public long getPos() {
                return cursor.bytesConsumed();
            }

            @Override
            public void close() throws IOException {
                cursor.close();
            }

            @Override
            public float getProgress() {
                return cursor.progress();
            }
        };
    }
}

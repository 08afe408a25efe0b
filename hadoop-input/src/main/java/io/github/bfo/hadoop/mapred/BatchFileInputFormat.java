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
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException("BatchFileInputFormat needs a BatchFileSplit, not " + split.getClass().getName());
        }
        reporter.setStatus(split.toString());
        WholeFileCursor cursor = WholeFileCursor.open((BatchFileSplit) split, job, reporter);
        return new RecordReader<>() {
            @Override
            public boolean next(Text key, BytesWritable value) throws IOException {
                return cursor.next(key, value);
            }

            @Override
            public Text createKey() {
                return new Text();
            }

            @Override
            public BytesWritable createValue() {
                return new BytesWritable();
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

import java.io.IOException;

/** One record per file of a {@link BatchFileSplit} ({@code mapreduce} API); see {@link WholeFileCursor}. */
public class BatchFileRecordReader extends RecordReader<Text, BytesWritable> {
    private WholeFileCursor cursor;
    private final Text key = new Text();
    private final BytesWritable value = new BytesWritable();
    private boolean has;

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException("BatchFileRecordReader needs a BatchFileSplit, not " + split.getClass().getName());
        }
        cursor = new WholeFileCursor((BatchFileSplit) split, context.getConfiguration(), TaskCounters.of(context));
    }

    @Override
    public boolean nextKeyValue() throws IOException {
        has = cursor.next(key, value);
        return has;
    }

    @Override
    public Text getCurrentKey() {
        return has ? key : null;
    }

    @Override
    public BytesWritable getCurrentValue() {
        return has ? value : null;
    }

    @Override
    public float getProgress() {
        return cursor == null ? 0f : cursor.progress();
    }

    @Override
    public void close() throws IOException {
        if (cursor != null) {
            cursor.close();
        }
    }
}

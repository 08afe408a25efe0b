/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

import java.io.IOException;

/** The line records of a {@link BatchFileSplit} ({@code mapreduce} API); see {@link TextCursor}. */
public class BatchTextRecordReader extends RecordReader<LongWritable, Text> {
    private TextCursor cursor;
    private final LongWritable key = new LongWritable();
    private final Text value = new Text();
    private boolean has;

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException("BatchTextRecordReader needs a BatchFileSplit, not " + split.getClass().getName());
        }
        cursor = new TextCursor((BatchFileSplit) split, context.getConfiguration(), TaskCounters.of(context));
    }

    @Override
    public boolean nextKeyValue() throws IOException {
        has = cursor.next(key, value);
        return has;
    }

    @Override
    public LongWritable getCurrentKey() {
        return has ? key : null;
    }

    @Override
    public Text getCurrentValue() {
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

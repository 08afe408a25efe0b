/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

import java.io.IOException;

/** A {@code mapreduce} record reader over a {@link SplitCursor}: the split is read as one batch. */
abstract class CursorRecordReader<K, V> extends RecordReader<K, V> {
    private final K key;
    private final V value;
    private SplitCursor<K, V> cursor;
    private boolean has;

    CursorRecordReader(K key, V value) {
        this.key = key;
        this.value = value;
    }

    /** The cursor over split, counters going to sink. */
    abstract SplitCursor<K, V> open(BatchFileSplit split, Configuration conf, CounterSink sink) throws IOException;

    @Override
    public void initialize(InputSplit split, TaskAttemptContext context) throws IOException {
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException(getClass().getSimpleName() + " needs a BatchFileSplit, not "
                    + split.getClass().getName());
        }
        cursor = open((BatchFileSplit) split, context.getConfiguration(), TaskCounters.of(context));
    }

    @Override
    public boolean nextKeyValue() throws IOException {
        has = cursor.next(key, value);
        return has;
    }

    @Override
    public K getCurrentKey() {
        return has ? key : null;
    }

    @Override
    public V getCurrentValue() {
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.SplitCursor;

import org.apache.hadoop.mapred.RecordReader;

import java.io.IOException;
import java.util.function.Supplier;

/** A {@code mapred} record reader over a {@link SplitCursor}: the split is read as one batch. */
final class CursorRecordReader<K, V> implements RecordReader<K, V> {
    private final SplitCursor<K, V> cursor;
    private final Supplier<K> keys;
    private final Supplier<V> values;

    CursorRecordReader(SplitCursor<K, V> cursor, Supplier<K> keys, Supplier<V> values) {
        this.cursor = cursor;
        this.keys = keys;
        this.values = values;
    }

    @Override
    public boolean next(K key, V value) throws IOException {
        return cursor.next(key, value);
    }

    @Override
    public K createKey() {
        return keys.get();
    }

    @Override
    public V createValue() {
        return values.get();
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
}

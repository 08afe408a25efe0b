/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import java.io.IOException;

/**
 * The records of one {@link BatchFileSplit}, read as one batch: what the
 * record readers of both MapReduce APIs wrap ({@link WholeFileCursor},
 * {@link TextCursor}). Not thread-safe: one task thread.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public interface SplitCursor<K, V> extends AutoCloseable {
    /** Fills key and value with the next record; false at the end of the split. */
    boolean next(K key, V value) throws IOException;

    /** Fraction of the split's bytes consumed, 0 to 1. */
    float progress();

    /** Bytes of the split consumed so far. */
    long bytesConsumed();

    @Override
    void close() throws IOException;
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Pointer;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A native read context (threads, io_uring instance, arena) with the Java
 * buffers its batches use, made once and reused by one reader after
 * another through {@link ContextPool}: a batch's fixed cost is then a
 * reset, not a context and a megabyte of buffers. Used by one reader at a
 * time.
 */
final class NativeContext {
    /** The options it was made with, byte for byte (struct bfo_opts): the pool's key. */
    final Key key;
    final Pointer ptr;
    /** Resolved window size: it sizes the path ring. */
    final int windowFiles;
    /** Paths given as Paths in flight, by index % ring.length (see NativeReadEngine.NativeBatch). */
    final Object[] ring;
    /** Packed paths for bfo_read_submit_packed; grows for a longer path and stays grown. */
    ByteBuffer pathBuf;
    final ByteBuffer entries;
    final long[] words;
    /** struct bfo_stats read after each packed submission, for the number of paths it took. */
    final ByteBuffer submitStats;
    /** When it went idle in the pool (System.nanoTime). */
    long idleSince;

    NativeContext(Key key, Pointer ptr, int windowFiles) {
        this.key = key;
        this.ptr = ptr;
        this.windowFiles = windowFiles;
        // Enough paths in flight to keep the library's input queue (two windows) and its
        // lookahead fed, and at least one window more than it can wait for (no dead end).
        int cap = Integer.highestOneBit(Math.max(4096, Math.min(1 << 21, 4 * windowFiles)) - 1) << 1;
        this.ring = new Object[cap];
        this.pathBuf = BfoNative.direct(NativeReadEngine.PATH_BUF);
        this.entries = BfoNative.direct(NativeReadEngine.WAIT_MAX * BfoNative.FILE_SIZE);
        this.words = new long[NativeReadEngine.WAIT_MAX * NativeReadEngine.ENTRY_WORDS];
        this.submitStats = BfoNative.direct(BfoNative.STATS_SIZE);
    }

    /**
     * Back to a new context's state (bfo_ctx_reset: the batch in flight
     * cancelled and drained, held entries released, stats cleared); false
     * if libbfo refused. The ring is cleared by the batch that used it
     * (only its slots, not a megabyte per batch).
     */
    boolean reset() {
        return BfoNative.bfo_ctx_reset(ptr) == 0;
    }

    void destroy() {
        BfoNative.bfo_ctx_destroy(ptr);
    }

    /** struct bfo_opts as bytes, compared by content. */
    static final class Key {
        private final byte[] opts;
        private final int hash;

        Key(byte[] opts) {
            this.opts = opts;
            this.hash = Arrays.hashCode(opts);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Key && Arrays.equals(opts, ((Key) o).opts);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}

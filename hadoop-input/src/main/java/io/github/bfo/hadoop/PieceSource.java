/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FileSystem;

import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;

/**
 * The bytes of a split's files as one batch: whole files, or consecutive
 * pieces of large ones, in the order the batch delivers them. Two engines:
 * {@link NativePieceSource} (bfo-java: the native engine, for {@code file:})
 * and {@link FsPieceSource} (the Hadoop FileSystem API with bounded parallel
 * prefetch, for every other file system).
 */
interface PieceSource extends Closeable {

    /** One delivered piece: valid until the next {@link #next()} or {@link #close()}. */
    final class Piece {
        /** Index of the file in the split. */
        int file;
        /** Offset of these bytes in the file. */
        long offset;
        /** The file's size. */
        long size;
        /** The bytes (position 0). */
        ByteBuffer data;
        /** True for the file's last (or only) piece. */
        boolean last;
    }

    /** The next piece, or null when the batch has ended. A file that cannot be read throws. */
    Piece next() throws IOException;

    /** Adds what the batch did to the counters (once, at the end). */
    void report(CounterSink counters);

    @Override
    void close() throws IOException;

    /**
     * The source for files[] of split: native when they are all {@code file:}
     * paths, else the FileSystem API.
     */
    static PieceSource open(BatchFileSplit split, int[] files, Configuration conf) throws IOException {
        boolean local = true;
        for (int i = 0; local && i < files.length; i++) {
            String p = split.getPathString(files[i]);
            local = p.startsWith("file:");
        }
        if (local) {
            boolean verify = conf.getBoolean(BfoInputConfig.VERIFY_CHECKSUM, true)
                    && FileSystem.get(URI.create("file:///"), conf) instanceof ChecksumFileSystem;
            return new NativePieceSource(split, files, conf, verify);
        }
        return new FsPieceSource(split, files, conf);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.FileData;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One delivered file, or piece of a file, of a partition, whichever path
 * read it: libbfo's batch read (local files) or Hadoop's FileSystem API
 * ({@link BfoHadoopReads}). The partition reader turns pieces into rows
 * without knowing which.
 */
interface BfoPiece {
    /** The file's index in its partition. */
    int file();

    /** Why the file could not be read, or null. */
    IOException failure();

    /** The file's size as this read found it. */
    long size();

    /** Milliseconds, as Hadoop's FileStatus gives them. */
    long modificationMillis();

    long offset();

    /** How many bytes this piece holds. */
    long length();

    /** The piece's bytes (position to limit); empty for a metadata-only read. */
    ByteBuffer data();

    /** The whole file in one piece. */
    boolean isWhole();

    boolean isLast();

    /** data() as an array of its own (a whole file's content column). */
    byte[] bytes();

    /** A piece of a libbfo batch read; batchToFile maps the batch's indexes to the partition's. */
    static BfoPiece of(FileData d, int[] batchToFile) {
        return new BfoPiece() {
            @Override public int file() { return batchToFile[(int) d.index()]; }
            @Override public IOException failure() { return d.isOk() ? null : d.failure(); }
            @Override public long size() { return d.size(); }
            @Override public long modificationMillis() { return d.lastModifiedTime().toMillis(); }
            @Override public long offset() { return d.offset(); }
            @Override public long length() { return d.length(); }
            @Override public ByteBuffer data() { return d.data(); }
            @Override public boolean isWhole() { return d.isWhole(); }
            @Override public boolean isLast() { return d.isLast(); }
            @Override public byte[] bytes() { return d.bytes(); }
        };
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.ChecksumException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.zip.CRC32;

/**
 * Verifies one file against its ChecksumFileSystem {@code .crc} file
 * (header {@code "crc\0"}, int bytesPerChecksum, then one big-endian CRC32
 * per chunk), fed the file's pieces in order.
 */
final class ChecksumVerifier {
    private static final byte[] MAGIC = {'c', 'r', 'c', 0};

    private final String path;
    private final int bytesPerSum;
    private final ByteBuffer sums;
    private final CRC32 crc = new CRC32();
    private int inChunk;
    private long chunk;
    private long position;
    private boolean off;

    private ChecksumVerifier(String path, int bytesPerSum, ByteBuffer sums) {
        this.path = path;
        this.bytesPerSum = bytesPerSum;
        this.sums = sums;
    }

    static ChecksumVerifier parse(String path, String crcPath, ByteBuffer crcFile) throws IOException {
        ByteBuffer b = crcFile.duplicate();
        if (b.remaining() < 8) {
            throw new IOException("Not a checksum file: " + crcPath);
        }
        for (byte m : MAGIC) {
            if (b.get() != m) {
                throw new IOException("Not a checksum file: " + crcPath);
            }
        }
        int bps = b.getInt();
        if (bps <= 0) {
            throw new IOException("Not a checksum file: " + crcPath);
        }
        ByteBuffer sums = ByteBuffer.allocate(b.remaining());
        sums.put(b).flip();
        return new ChecksumVerifier(path, bps, sums);
    }

    /** The next bytes of the file, which start at offset. */
    void update(ByteBuffer data, long offset) throws ChecksumException {
        if (off) {
            return;
        }
        if (offset != position) {
            throw new IllegalStateException("pieces out of order for " + path + ": " + offset + " != " + position);
        }
        while (data.hasRemaining()) {
            int take = Math.min(data.remaining(), bytesPerSum - inChunk);
            ByteBuffer slice = data.slice();
            slice.limit(take);
            crc.update(slice);
            data.position(data.position() + take);
            inChunk += take;
            position += take;
            if (inChunk == bytesPerSum) {
                check();
                if (off) {
                    return;
                }
            }
        }
    }

    /** The end of the file. */
    void finish() throws ChecksumException {
        if (!off && inChunk > 0) {
            check();
        }
    }

    private void check() throws ChecksumException {
        long at = chunk * 4;
        if (at + 4 > sums.limit()) {
            off = true;   // the checksum file ends here: LocalFileSystem stops verifying too
            return;
        }
        int expected = sums.getInt((int) at);
        int actual = (int) crc.getValue();
        if (expected != actual) {
            long start = chunk * bytesPerSum;
            throw new ChecksumException("Checksum error: " + path + " at " + start + " exp: " + expected + " got: "
                    + actual, start);
        }
        crc.reset();
        inChunk = 0;
        chunk++;
    }
}

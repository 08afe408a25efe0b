/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Splits a file's bytes, fed in one or more pieces, into lines as Spark's
 * text source does (Hadoop's LineReader): by default a line ends at \n, \r
 * or \r\n; with lineSep at that exact separator. The terminator is not part
 * of the line and a last line without one is still a line; an empty file has
 * no lines.
 */
final class LineSplitter {
    private final byte[] sep;        // null: \n, \r, \r\n
    private byte[] carry = new byte[256];
    private int carryLen;
    private boolean afterCr;         // default mode: the previous piece ended with \r

    LineSplitter(String lineSep) {
        this.sep = lineSep == null ? null : lineSep.getBytes(StandardCharsets.UTF_8);
    }

    /** Feeds the next piece; complete lines go to out as fresh arrays. */
    void feed(ByteBuffer data, Consumer<byte[]> out) {
        if (sep == null) {
            feedDefault(data, out);
        } else {
            feedSeparator(data, out);
        }
    }

    /** The end of the file: the unterminated last line, if any. */
    void finish(Consumer<byte[]> out) {
        if (carryLen > 0) {
            out.accept(Arrays.copyOf(carry, carryLen));
        }
        carryLen = 0;
        afterCr = false;
    }

    private void feedDefault(ByteBuffer data, Consumer<byte[]> out) {
        int pos = data.position();
        int end = data.limit();
        int start = pos;
        if (afterCr && pos < end) {
            afterCr = false;
            if (data.get(pos) == '\n') {
                pos++;
                start = pos;
            }
        }
        if (data.hasArray()) {
            byte[] a = data.array();
            int off = data.arrayOffset();
            for (int i = pos; i < end; i++) {
                byte b = a[off + i];
                if (b == '\n' || b == '\r') {
                    emit(data, start, i, out);
                    if (b == '\r') {
                        if (i + 1 < end) {
                            if (a[off + i + 1] == '\n') {
                                i++;
                            }
                        } else {
                            afterCr = true;
                        }
                    }
                    start = i + 1;
                }
            }
        } else {
            for (int i = pos; i < end; i++) {
                byte b = data.get(i);
                if (b == '\n' || b == '\r') {
                    emit(data, start, i, out);
                    if (b == '\r') {
                        if (i + 1 < end) {
                            if (data.get(i + 1) == '\n') {
                                i++;
                            }
                        } else {
                            afterCr = true;
                        }
                    }
                    start = i + 1;
                }
            }
        }
        append(data, start, end);
    }

    private void feedSeparator(ByteBuffer data, Consumer<byte[]> out) {
        // the separator may straddle pieces: scan carry + data together
        append(data, data.position(), data.limit());
        int start = 0;
        int last = carryLen - sep.length;
        for (int i = 0; i <= last; ) {
            if (matches(i)) {
                out.accept(Arrays.copyOfRange(carry, start, i));
                i += sep.length;
                start = i;
            } else {
                i++;
            }
        }
        System.arraycopy(carry, start, carry, 0, carryLen - start);
        carryLen -= start;
    }

    private boolean matches(int i) {
        for (int k = 0; k < sep.length; k++) {
            if (carry[i + k] != sep[k]) {
                return false;
            }
        }
        return true;
    }

    private void emit(ByteBuffer data, int from, int to, Consumer<byte[]> out) {
        byte[] line = new byte[carryLen + (to - from)];
        System.arraycopy(carry, 0, line, 0, carryLen);
        data.get(from, line, carryLen, to - from);
        carryLen = 0;
        out.accept(line);
    }

    private void append(ByteBuffer data, int from, int to) {
        int n = to - from;
        if (n <= 0) {
            return;
        }
        if (carryLen + n > carry.length) {
            carry = Arrays.copyOf(carry, Math.max(carry.length * 2, carryLen + n));
        }
        data.get(from, carry, carryLen, n);
        carryLen += n;
    }
}

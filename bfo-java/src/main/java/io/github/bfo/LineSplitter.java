/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.util.Arrays;

/**
 * The lines of one file, fed as consecutive chunks (pieces of a batch, or
 * blocks of a decompressed stream), with exactly the semantics of Hadoop's
 * {@code LineReader} and {@code LineRecordReader} on a whole file, which
 * Hadoop's text input formats and Spark's {@code text} source both read
 * through:
 *
 * <ul>
 * <li>no delimiter: a line ends at {@code \n}, {@code \r\n} or a
 *     {@code \r} not followed by {@code \n} (also across chunks);</li>
 * <li>a delimiter: its bytes end a line; the leftmost match wins (a failed
 *     partial match is resumed where the next match could start, as
 *     LineReader's backtracking does);</li>
 * <li>the delimiter is not part of the line; a last line without one is a
 *     line; an empty file has none; a partial delimiter at the end of the
 *     file belongs to the last line;</li>
 * <li>a UTF-8 byte order mark at the start of the file is dropped from the
 *     first line (its bytes still count in {@link #lineStart()});</li>
 * <li>a line of {@code maxLineLength} bytes or more (delimiter included)
 *     is skipped ({@link #skippedLength()}), and the next line keeps the
 *     skipped one's start, as LineRecordReader does.</li>
 * </ul>
 *
 * <p>Use: {@link #reset()} per file; {@link #scan} each chunk until it is
 * consumed, calling {@link #take()} whenever {@link #ready()}; at the end
 * of the file {@link #finish()} and, when it returns true, {@link #take()}
 * once more. Stop feeding a file once {@link #ended()}. After a
 * {@code take()} that returned true the line is
 * {@code lineBytes()[lineOffset(), lineOffset() + lineLength())}: the
 * caller's own chunk when the line lay within it (no copy), else a buffer
 * of the splitter; it is valid until the next {@code scan} or
 * {@code finish}.
 *
 * <p>Not thread-safe; one splitter per file being split at a time.
 */
public final class LineSplitter {
    private static final byte CR = '\r';
    private static final byte LF = '\n';

    private final byte[] delim;
    private final int[] fail;
    private final int maxLineLength;
    // bytes of a line kept across chunks: one longer than maxLineLength is skipped anyway, so no more than
    // that (and a BOM) need be kept
    private final int cap;

    // the line in progress, when it spans chunks
    private byte[] buf = new byte[128];
    private int len;        // bytes kept (at most cap)
    private long logical;   // bytes of content seen (with a delimiter: its bytes too, removed at a match)
    private long consumed;  // bytes of the file this line consumed
    private boolean prevCR;
    private int delPos;
    private boolean ready;

    // the completed line
    private byte[] lineBytes;
    private int lineOff;
    private int lineLen;
    private long lineStart;
    private long skippedLength;

    // the file
    private long pos;
    private long keyPos;
    private boolean ended;

    /**
     * @param delimiter     the bytes that end a line; null or empty: {@code \n}, {@code \r\n} or {@code \r}
     * @param maxLineLength lines of this many bytes or more are skipped ({@link Integer#MAX_VALUE}: none)
     */
    public LineSplitter(byte[] delimiter, int maxLineLength) {
        this.delim = delimiter == null || delimiter.length == 0 ? null : delimiter.clone();
        this.fail = delim == null ? null : failure(delim);
        this.maxLineLength = maxLineLength;
        this.cap = (int) Math.min(Integer.MAX_VALUE - 16L, (long) maxLineLength + 3);
    }

    /** KMP failure function: the longest proper border of d[0..i]. */
    private static int[] failure(byte[] d) {
        int[] f = new int[d.length];
        int k = 0;
        for (int i = 1; i < d.length; i++) {
            while (k > 0 && d[i] != d[k]) {
                k = f[k - 1];
            }
            if (d[i] == d[k]) {
                k++;
            }
            f[i] = k;
        }
        return f;
    }

    /** Starts a new file. */
    public void reset() {
        len = 0;
        logical = 0;
        consumed = 0;
        prevCR = false;
        delPos = 0;
        ready = false;
        lineBytes = null;
        pos = 0;
        keyPos = 0;
        ended = false;
    }

    /** True once a line ended the file (LineRecordReader returned false): the rest of it is to be ignored. */
    public boolean ended() {
        return ended;
    }

    /**
     * Scans data[off, end). Returns the offset after the bytes taken; when
     * a line is complete ({@link #ready()}), {@link #take()} must be called
     * before scanning on.
     */
    public int scan(byte[] data, int off, int end) {
        return delim == null ? scanDefault(data, off, end) : scanCustom(data, off, end);
    }

    /** True when {@link #scan} completed a line. */
    public boolean ready() {
        return ready;
    }

    /** At the end of the file: true when a pending line completed (then call {@link #take()}). */
    public boolean finish() {
        if (delim == null) {
            if (prevCR) {
                prevCR = false;
                ready = true;
            } else {
                ready = consumed > 0;
            }
        } else {
            delPos = 0;   // a trailing partial delimiter is part of the last line
            ready = consumed > 0;
        }
        if (ready) {
            kept();
        }
        return ready;
    }

    private int scanDefault(byte[] data, int i, int end) {
        if (prevCR) {
            if (i >= end) {
                return i;
            }
            prevCR = false;
            if (data[i] == LF) {
                consumed++;
                i++;
            }
            kept();
            ready = true;
            return i;
        }
        int seg = i;
        for (; i < end; i++) {
            byte b = data[i];
            if (b == LF || b == CR) {
                consumed += i - seg + 1;
                if (b == CR && i + 1 >= end) {
                    // whether \n follows is known only from the next chunk: keep the line
                    append(data, seg, i - seg);
                    prevCR = true;
                    return i + 1;
                }
                complete(data, seg, i - seg, 0);
                i++;
                if (b == CR && data[i] == LF) {
                    consumed++;
                    i++;
                }
                ready = true;
                return i;
            }
        }
        append(data, seg, end - seg);
        consumed += end - seg;
        return end;
    }

    private int scanCustom(byte[] data, int i, int end) {
        byte[] d = delim;
        int dl = d.length;
        int[] f = fail;
        int seg = i;
        for (; i < end; i++) {
            byte b = data[i];
            int j = delPos;
            while (j > 0 && b != d[j]) {
                j = f[j - 1];
            }
            if (b == d[j]) {
                j++;
            }
            if (j == dl) {
                i++;
                consumed += i - seg;
                complete(data, seg, i - seg, dl);
                delPos = 0;
                ready = true;
                return i;
            }
            delPos = j;
        }
        append(data, seg, end - seg);
        consumed += end - seg;
        return end;
    }

    /** The line ends with data[off, off + n), of which the last dropped bytes are its delimiter. */
    private void complete(byte[] data, int off, int n, int dropped) {
        if (logical == 0) {
            // the whole line lies in this chunk: hand out the caller's bytes
            logical = n - dropped;
            lineBytes = data;
            lineOff = off;
            lineLen = (int) logical;
            return;
        }
        append(data, off, n);
        logical -= dropped;
        if (len > logical) {
            len = (int) logical;
        }
        kept();
    }

    /** The line is the bytes kept in buf. */
    private void kept() {
        lineBytes = buf;
        lineOff = 0;
        lineLen = len;
    }

    private void append(byte[] data, int off, int n) {
        logical += n;
        int room = cap - len;
        int take = Math.min(n, room);
        if (take <= 0) {
            return;
        }
        if (len + take > buf.length) {
            buf = Arrays.copyOf(buf, (int) Math.min(cap, Math.max((long) len + take, (long) buf.length * 2)));
        }
        System.arraycopy(data, off, buf, len, take);
        len += take;
    }

    /**
     * Takes the completed line: true when it is a line to return (see
     * {@link #lineBytes()}), false when LineRecordReader would skip it (too
     * long: {@link #skippedLength()} says so) or it ends the file
     * ({@link #ended()}).
     */
    public boolean take() {
        ready = false;
        skippedLength = 0;
        long size = consumed;
        byte[] b = lineBytes;
        int off = lineOff;
        int n = lineLen;
        if (pos == 0 && Math.min(n, cap) >= 3 && (b[off] & 0xFF) == 0xEF && (b[off + 1] & 0xFF) == 0xBB
                && (b[off + 2] & 0xFF) == 0xBF) {
            off += 3;
            n -= 3;
            size -= 3;
        }
        pos += consumed;
        len = 0;
        logical = 0;
        consumed = 0;
        if (size == 0) {
            ended = true;
            return false;
        }
        if (size < maxLineLength) {
            lineStart = keyPos;
            lineOff = off;
            lineLen = n;
            keyPos = pos;
            return true;
        }
        skippedLength = size;
        return false;
    }

    /** The array holding the line {@link #take()} returned. */
    public byte[] lineBytes() {
        return lineBytes;
    }

    /** Where the line starts in {@link #lineBytes()}. */
    public int lineOffset() {
        return lineOff;
    }

    /** The line's length in bytes (without its delimiter, or a BOM). */
    public int lineLength() {
        return lineLen;
    }

    /** The line's byte offset in the file (LineRecordReader's key). */
    public long lineStart() {
        return lineStart;
    }

    /** After a {@link #take()} that skipped a line: its size in bytes, delimiter included; else 0. */
    public long skippedLength() {
        return skippedLength;
    }

    /** Bytes of the file consumed by the lines taken so far (after a skipped line: where it ended). */
    public long position() {
        return pos;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;

/**
 * The records of one file, fed as consecutive chunks (pieces of a batch, or
 * blocks of a decompressed stream), with exactly the semantics of Hadoop's
 * LineReader and LineRecordReader on a whole-file split:
 *
 * <ul>
 * <li>no delimiter set: a line ends at {@code \n}, {@code \r\n} or a
 *     {@code \r} not followed by {@code \n} (also across chunks);</li>
 * <li>{@code textinputformat.record.delimiter} set: its UTF-8 bytes end a
 *     record, matched with LineReader's automaton (after a partial match
 *     fails, the failing byte is compared with the delimiter's first byte
 *     again);</li>
 * <li>the key is the byte offset of the record in the (decompressed) file;
 *     a last record without a delimiter is a record; an empty file has
 *     none; a UTF-8 byte order mark at the start of the file is dropped from
 *     the first record (its bytes still count in the offsets); a record of
 *     {@code mapreduce.input.linerecordreader.line.maxlength} bytes or more
 *     (delimiter included) is skipped and the next record keeps the
 *     skipped one's key, as LineRecordReader does;</li>
 * <li>a partial delimiter at the end of the file belongs to the last record.</li>
 * </ul>
 */
final class LineSplitter {
    private static final Logger LOG = LoggerFactory.getLogger(LineSplitter.class);
    private static final byte CR = '\r';
    private static final byte LF = '\n';

    private final byte[] delim;
    private final int[] fail;
    private final int maxLineLength;
    private final int cap;

    // the record in progress
    private byte[] buf = new byte[128];
    private int len;        // bytes kept (at most cap)
    private long logical;   // bytes of content seen (custom: delimiter bytes too, removed at a match)
    private long consumed;  // bytes of the file this record consumed
    private boolean prevCR;
    private int delPos;
    private boolean ready;

    // the file
    private long pos;
    private long keyPos;
    private boolean ended;

    LineSplitter(byte[] delimiter, int maxLineLength) {
        this.delim = delimiter == null || delimiter.length == 0 ? null : delimiter;
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
    void reset() {
        len = 0;
        logical = 0;
        consumed = 0;
        prevCR = false;
        delPos = 0;
        ready = false;
        pos = 0;
        keyPos = 0;
        ended = false;
    }

    /** True after a record of this file ended it (LineRecordReader returned false): ignore the rest. */
    boolean ended() {
        return ended;
    }

    /**
     * Scans data[off, end). Returns the offset after the bytes taken; when a
     * record is complete, {@link #take} must be called before scanning on.
     */
    int scan(byte[] data, int off, int end) {
        return delim == null ? scanDefault(data, off, end) : scanCustom(data, off, end);
    }

    /** True when {@link #scan} completed a record. */
    boolean ready() {
        return ready;
    }

    /** At the end of the file: true when a pending record completed (then call {@link #take}). */
    boolean finish() {
        if (delim == null) {
            if (prevCR) {
                prevCR = false;
                ready = true;
            } else {
                ready = consumed > 0;
            }
        } else {
            delPos = 0;   // a trailing partial delimiter is part of the last record
            ready = consumed > 0;
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
            ready = true;
            return i;
        }
        int seg = i;
        for (; i < end; i++) {
            byte b = data[i];
            if (b == LF || b == CR) {
                append(data, seg, i - seg);
                consumed += i - seg + 1;
                i++;
                if (b == LF) {
                    ready = true;
                    return i;
                }
                if (i < end) {
                    if (data[i] == LF) {
                        consumed++;
                        i++;
                    }
                    ready = true;
                    return i;
                }
                prevCR = true;
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
                append(data, seg, i - seg);
                consumed += i - seg;
                logical -= dl;
                if (len > logical) {
                    len = (int) logical;
                }
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
     * Takes the completed record: true when it is a record to return (key
     * and value set), false when LineRecordReader would skip it (too long)
     * or it ends the file.
     */
    boolean take(LongWritable key, Text value) {
        ready = false;
        long size = consumed;
        int off = 0;
        int n = len;
        if (pos == 0 && n >= 3 && (buf[0] & 0xFF) == 0xEF && (buf[1] & 0xFF) == 0xBB && (buf[2] & 0xFF) == 0xBF) {
            off = 3;
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
            key.set(keyPos);
            value.set(buf, off, n);
            keyPos = pos;
            return true;
        }
        LOG.info("Skipped line of size {} at pos {}", size, pos - size);
        return false;
    }
}

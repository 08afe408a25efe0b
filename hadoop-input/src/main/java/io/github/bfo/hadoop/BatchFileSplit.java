/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.WritableUtils;
import org.apache.hadoop.mapreduce.InputSplit;

import java.io.ByteArrayOutputStream;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * A split of many whole files, for both MapReduce APIs (it is a
 * {@code mapreduce} InputSplit and a {@code mapred} InputSplit, like
 * CombineFileSplit) and with CombineFileSplit's accessors
 * ({@link #getNumPaths()}, {@link #getPath(int)}, {@link #getOffset(int)},
 * {@link #getLength(int)}, {@link #getPaths()}, {@link #getLengths()},
 * {@link #getStartOffsets()}), but compact: the paths are kept front-coded
 * (each path stores only what differs from the previous one) in one byte
 * array, with varint lengths, so a split of 10,000 files in one directory
 * costs a few hundred kilobytes on the client, and a job's split file stays
 * small. Files appear in the planner's order (device order on local file
 * systems); every file is read whole, from offset 0.
 */
public class BatchFileSplit extends InputSplit implements org.apache.hadoop.mapred.InputSplit {
    private static final String[] NO_HOSTS = new String[0];

    private int count;
    private long totalLength;
    private String[] hosts = NO_HOSTS;
    private byte[] blob = new byte[0];

    // decoded on demand (task side)
    private transient String[] paths;
    private transient long[] lengths;
    private transient boolean[] crcs;

    /** For deserialization. */
    public BatchFileSplit() {
    }

    private BatchFileSplit(int count, long totalLength, String[] hosts, byte[] blob) {
        this.count = count;
        this.totalLength = totalLength;
        this.hosts = hosts;
        this.blob = blob;
    }

    /** Accumulates the files of one split. */
    static final class Builder {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private byte[] prev = new byte[0];
        private int count;
        private long total;

        void add(String path, long length, boolean crc) {
            byte[] b = path.getBytes(StandardCharsets.UTF_8);
            int n = Math.min(prev.length, b.length);
            int shared = Arrays.mismatch(prev, 0, n, b, 0, n);
            if (shared < 0) {
                shared = n;
            }
            writeVLong(shared);
            writeVLong(b.length - shared);
            out.write(b, shared, b.length - shared);
            writeVLong(length << 1 | (crc ? 1 : 0));
            prev = b;
            count++;
            total += length;
        }

        int count() {
            return count;
        }

        long bytes() {
            return total;
        }

        BatchFileSplit build(String[] hosts) {
            return new BatchFileSplit(count, total, hosts == null ? NO_HOSTS : hosts, out.toByteArray());
        }

        private void writeVLong(long v) {
            while ((v & ~0x7FL) != 0) {
                out.write((int) ((v & 0x7F) | 0x80));
                v >>>= 7;
            }
            out.write((int) v);
        }
    }

    private synchronized void decode() {
        if (paths != null) {
            return;
        }
        String[] ps = new String[count];
        long[] ls = new long[count];
        boolean[] cs = new boolean[count];
        byte[] prev = new byte[0];
        int[] pos = {0};
        for (int i = 0; i < count; i++) {
            int shared = (int) readVLong(pos);
            int rest = (int) readVLong(pos);
            byte[] b = Arrays.copyOf(prev, shared + rest);
            System.arraycopy(blob, pos[0], b, shared, rest);
            pos[0] += rest;
            long l = readVLong(pos);
            ps[i] = new String(b, StandardCharsets.UTF_8);
            ls[i] = l >>> 1;
            cs[i] = (l & 1) != 0;
            prev = b;
        }
        lengths = ls;
        crcs = cs;
        paths = ps;
    }

    private long readVLong(int[] pos) {
        long v = 0;
        int shift = 0;
        while (true) {
            int b = blob[pos[0]++] & 0xFF;
            v |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return v;
            }
            shift += 7;
        }
    }

    /** Total bytes of the files. */
    @Override
    public long getLength() {
        return totalLength;
    }

    /** Hosts holding most of the split's bytes (a scheduling hint). */
    @Override
    public String[] getLocations() {
        return hosts.clone();
    }

    public int getNumPaths() {
        return count;
    }

    /** The fully qualified path of file i, as a string (cheaper than {@link #getPath(int)}). */
    public String getPathString(int i) {
        decode();
        return paths[i];
    }

    public Path getPath(int i) {
        return new Path(getPathString(i));
    }

    /** Always 0: files are read whole. */
    public long getOffset(int i) {
        Objects.checkIndex(i, count);
        return 0;
    }

    public long getLength(int i) {
        decode();
        return lengths[i];
    }

    /** True when the planner saw a local {@code .NAME.crc} checksum file beside file i. */
    public boolean hasChecksumFile(int i) {
        decode();
        return crcs[i];
    }

    public Path[] getPaths() {
        Path[] p = new Path[count];
        for (int i = 0; i < count; i++) {
            p[i] = getPath(i);
        }
        return p;
    }

    public long[] getLengths() {
        decode();
        return lengths.clone();
    }

    public long[] getStartOffsets() {
        return new long[count];
    }

    @Override
    public void write(DataOutput out) throws IOException {
        WritableUtils.writeVInt(out, count);
        WritableUtils.writeVLong(out, totalLength);
        WritableUtils.writeVInt(out, hosts.length);
        for (String h : hosts) {
            Text.writeString(out, h);
        }
        WritableUtils.writeVInt(out, blob.length);
        out.write(blob);
    }

    @Override
    public void readFields(DataInput in) throws IOException {
        count = WritableUtils.readVInt(in);
        totalLength = WritableUtils.readVLong(in);
        int h = WritableUtils.readVInt(in);
        hosts = new String[h];
        for (int i = 0; i < h; i++) {
            hosts[i] = Text.readString(in);
        }
        blob = new byte[WritableUtils.readVInt(in)];
        in.readFully(blob);
        paths = null;
        lengths = null;
        crcs = null;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("BatchFileSplit[").append(count).append(" files, ").append(totalLength)
                .append(" bytes");
        if (count > 0) {
            sb.append(", ").append(getPathString(0));
            if (count > 1) {
                sb.append(" ... ").append(getPathString(count - 1));
            }
        }
        sb.append(", hosts ").append(String.join(",", hosts)).append(']');
        return sb.toString();
    }
}

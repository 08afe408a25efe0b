/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.BytesWritable;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;

/**
 * A file's bytes with, optionally, its permission bits and modification
 * time: a value {@link BatchFileOutputFormat} writes with that metadata
 * (a plain {@link BytesWritable} gets the defaults: the umask's mode, the
 * time of the write). A {@code BytesWritable}, so it goes wherever one
 * does; declare it as the job's (or the map's) output value class when
 * values cross a shuffle, so that the metadata crosses too.
 */
public class FileBytesWritable extends BytesWritable {
    private int mode = -1;
    private long modificationTime = -1;

    public FileBytesWritable() {
    }

    /** bytes (not copied), with mode (permission bits, -1: default) and modification time (ms, -1: default). */
    public FileBytesWritable(byte[] bytes, int mode, long modificationTime) {
        super(bytes);
        setMode(mode);
        setModificationTime(modificationTime);
    }

    /** Permission bits (07777 at most), or -1 for the default. */
    public int getMode() {
        return mode;
    }

    public void setMode(int mode) {
        if (mode < -1 || mode > 07777) {
            throw new IllegalArgumentException("mode has bits outside 07777: " + Integer.toOctalString(mode));
        }
        this.mode = mode;
    }

    /** Modification time in milliseconds since the epoch, or -1 for the default. */
    public long getModificationTime() {
        return modificationTime;
    }

    public void setModificationTime(long millis) {
        if (millis < -1) {
            throw new IllegalArgumentException("modification time must be -1 or not negative: " + millis);
        }
        this.modificationTime = millis;
    }

    @Override
    public void write(DataOutput out) throws IOException {
        super.write(out);
        out.writeInt(mode);
        out.writeLong(modificationTime);
    }

    @Override
    public void readFields(DataInput in) throws IOException {
        super.readFields(in);
        int m = in.readInt();
        long t = in.readLong();
        if (m < -1 || m > 07777 || t < -1) {
            throw new IOException("bad FileBytesWritable: mode " + m + ", modification time " + t);
        }
        mode = m;
        modificationTime = t;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FileBytesWritable f && super.equals(o) && f.mode == mode
                && f.modificationTime == modificationTime;
    }

    @Override
    public int hashCode() {
        return super.hashCode() * 31 + mode * 17 + Long.hashCode(modificationTime);
    }

    @Override
    public String toString() {
        return "mode " + (mode < 0 ? "default" : Integer.toOctalString(mode)) + ", mtime "
                + (modificationTime < 0 ? "default" : modificationTime) + ", " + super.toString();
    }
}

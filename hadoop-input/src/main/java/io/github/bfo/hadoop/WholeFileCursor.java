/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;

/**
 * One record per file of a {@link BatchFileSplit}, whichever MapReduce API
 * asks: key the path, value the file's bytes as stored (compressed files are
 * not decompressed), in the order the batch delivers the files. Pieces of a
 * large file are put together (a file must fit in one BytesWritable: under
 * 2 GiB). Sets {@code mapreduce.map.input.file} per record, as
 * {@link TextCursor} does.
 */
public final class WholeFileCursor implements SplitCursor<Text, BytesWritable> {
    private final BatchFileSplit split;
    private final Configuration conf;
    private final CounterSink counters;
    private final PieceSource source;
    private final Map<Integer, byte[]> partial = new HashMap<>();
    private final long total;
    private long consumed;
    private int currentFile = -1;

    /** For the {@code mapred} API: counters go to the reporter. */
    public static WholeFileCursor open(BatchFileSplit split, Configuration conf, org.apache.hadoop.mapred.Reporter reporter)
            throws IOException {
        return new WholeFileCursor(split, conf, TaskCounters.of(reporter));
    }

    WholeFileCursor(BatchFileSplit split, Configuration conf, CounterSink counters) throws IOException {
        this.split = split;
        this.conf = conf;
        this.counters = counters;
        this.total = split.getLength();
        int[] all = new int[split.getNumPaths()];
        for (int i = 0; i < all.length; i++) {
            all[i] = i;
            if (split.getLength(i) > Integer.MAX_VALUE - 64) {
                throw new IOException("file too large for one BytesWritable record: " + split.getPathString(i) + " ("
                        + split.getLength(i) + " bytes)");
            }
        }
        this.source = PieceSource.open(split, all, conf);
    }

    public boolean next(Text key, BytesWritable value) throws IOException {
        while (true) {
            PieceSource.Piece p = source.next();
            if (p == null) {
                source.report(counters);
                return false;
            }
            int len = p.data.remaining();
            consumed += len;
            if (p.offset == 0 && p.last) {
                value.setSize(0);
                value.setCapacity(len);
                value.setSize(len);
                p.data.get(value.getBytes(), 0, len);
            } else {
                byte[] b = partial.get(p.file);
                if (b == null) {
                    if (p.size > Integer.MAX_VALUE - 64) {
                        throw new IOException("file too large for one BytesWritable record: "
                                + split.getPathString(p.file));
                    }
                    b = new byte[(int) p.size];
                    partial.put(p.file, b);
                }
                if (p.offset + len > b.length) {
                    throw new IOException("file changed while it was being read: " + split.getPathString(p.file));
                }
                p.data.get(b, (int) p.offset, len);
                if (!p.last) {
                    continue;
                }
                partial.remove(p.file);
                value.set(b, 0, b.length);
            }
            key.set(split.getPathString(p.file));
            if (p.file != currentFile) {
                currentFile = p.file;
                conf.set(BfoInputConfig.MAP_INPUT_FILE, split.getPathString(p.file));
                conf.setLong(BfoInputConfig.MAP_INPUT_START, 0);
                conf.setLong(BfoInputConfig.MAP_INPUT_LENGTH, split.getLength(p.file));
            }
            return true;
        }
    }

    public float progress() {
        return total <= 0 ? 0f : Math.min(1f, consumed / (float) total);
    }

    public long bytesConsumed() {
        return consumed;
    }

    @Override
    public void close() throws IOException {
        try {
            source.report(counters);
        } finally {
            source.close();
        }
    }
}

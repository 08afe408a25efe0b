/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.LineSplitter;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.lib.input.LineRecordReader;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * bfo-java's LineSplitter, as TextCursor uses it, against Hadoop's own LineRecordReader on the same bytes: random
 * contents over an alphabet of line-ending, delimiter and BOM bytes, every
 * delimiter kind, a small maximum line length, and random chunk boundaries
 * (as batch pieces or decompressed blocks arrive).
 */
class LineSemanticsTest {
    @TempDir
    java.nio.file.Path dir;

    private static final byte[] ALPHABET = {'a', 'b', '\r', '\n', '|', (byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    private static final String[] DELIMS = {null, "|", "||", "|a|", "\r\n", "\n", "ab", "aab", "é"};

    @Test
    void sameRecordsAsLineRecordReader() throws Exception {
        Random rnd = new Random(42);
        Configuration conf = new Configuration();
        conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
        conf.setBoolean("fs.file.impl.disable.cache", true);
        conf.setInt("io.file.buffer.size", 1 << 20);   // one buffer: no LineReader buffer-edge quirks
        int cases = 0;
        for (int round = 0; round < 300; round++) {
            byte[] content = randomContent(rnd, round);
            java.nio.file.Path f = dir.resolve("f" + round);
            Files.write(f, content);
            for (String d : DELIMS) {
                for (int max : new int[] {Integer.MAX_VALUE, 6}) {
                    byte[] delim = d == null ? null : d.getBytes(StandardCharsets.UTF_8);
                    Configuration c = new Configuration(conf);
                    c.setInt(BfoInputConfig.MAX_LINE_LENGTH, max);
                    List<String> expected = hadoop(c, f, content.length, delim);
                    for (int chunking = 0; chunking < 3; chunking++) {
                        List<String> actual = ours(content, delim, max, rnd, chunking);
                        assertEquals(expected, actual, () -> "content " + HexFormat.of().formatHex(content)
                                + " delimiter " + (d == null ? "default" : HexFormat.of().formatHex(delim))
                                + " max " + max);
                        cases++;
                    }
                }
            }
        }
        assertEquals(300 * DELIMS.length * 2 * 3, cases);
    }

    @Test
    void knownCases() throws Exception {
        assertEquals(List.of("0:a", "2:b"), ours("a\nb".getBytes(), null, Integer.MAX_VALUE, new Random(1), 0));
        assertEquals(List.of("0:a"), ours("a\n".getBytes(), null, Integer.MAX_VALUE, new Random(1), 0));
        assertEquals(List.of("0:a", "3:", "4:b"),
                ours("a\r\n\rb".getBytes(), null, Integer.MAX_VALUE, new Random(1), 0));
        assertEquals(List.of(), ours(new byte[0], null, Integer.MAX_VALUE, new Random(1), 0));
        // a partial delimiter at the end belongs to the last record
        assertEquals(List.of("0:x", "3:|"), ours("x|||".getBytes(), "||".getBytes(), Integer.MAX_VALUE, new Random(1), 0));
        // BOM: stripped from the first record, offsets count it
        byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, 'h', 'i', '\n', 'x'};
        assertEquals(List.of("0:hi", "6:x"), ours(bom, null, Integer.MAX_VALUE, new Random(1), 0));
    }

    private static byte[] randomContent(Random rnd, int round) {
        int len = round < 20 ? round : rnd.nextInt(400);
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        if (rnd.nextInt(5) == 0) {
            o.write(0xEF);
            o.write(0xBB);
            o.write(0xBF);
        }
        for (int i = 0; i < len; i++) {
            o.write(ALPHABET[rnd.nextInt(ALPHABET.length)]);
        }
        return o.toByteArray();
    }

    private static String rec(LongWritable k, Text v) {
        return k.get() + ":" + new String(v.getBytes(), 0, v.getLength(), StandardCharsets.ISO_8859_1);
    }

    private static List<String> hadoop(Configuration conf, java.nio.file.Path f, long len, byte[] delim)
            throws Exception {
        List<String> out = new ArrayList<>();
        try (LineRecordReader r = new LineRecordReader(delim)) {
            r.initialize(new FileSplit(new Path(f.toUri()), 0, len, null),
                    new TaskAttemptContextImpl(conf, new TaskAttemptID()));
            while (r.nextKeyValue()) {
                out.add(rec(r.getCurrentKey(), r.getCurrentValue()));
            }
        }
        return out;
    }

    static List<String> ours(byte[] content, byte[] delim, int max, Random rnd, int chunking) {
        LineSplitter s = new LineSplitter(delim, max);
        s.reset();
        LongWritable k = new LongWritable();
        Text v = new Text();
        List<String> out = new ArrayList<>();
        int off = 0;
        while (off < content.length && !s.ended()) {
            int n = chunking == 0 ? content.length : chunking == 1 ? 1 : 1 + rnd.nextInt(7);
            int end = Math.min(content.length, off + n);
            byte[] chunk = Arrays.copyOfRange(content, off, end);
            int p = 0;
            while (p < chunk.length) {
                p = s.scan(chunk, p, chunk.length);
                if (s.ready() && take(s, k, v)) {
                    out.add(rec(k, v));
                }
                if (s.ended()) {
                    break;
                }
            }
            off = end;
        }
        if (!s.ended() && s.finish() && take(s, k, v)) {
            out.add(rec(k, v));
        }
        return out;
    }

    /** The line as TextCursor makes it a record. */
    private static boolean take(LineSplitter s, LongWritable k, Text v) {
        if (!s.take()) {
            return false;
        }
        k.set(s.lineStart());
        v.set(s.lineBytes(), s.lineOffset(), s.lineLength());
        return true;
    }
}

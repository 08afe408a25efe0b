/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * LineSplitter fed the way its users feed it: one chunk array reused for
 * every chunk, so a line handed out from an earlier chunk's bytes would show.
 * (Its semantics are compared with Hadoop's LineRecordReader in
 * hadoop-input's LineSemanticsTest, and with Spark's text source in
 * spark-source's BfoTextTest.)
 */
class LineSplitterTest {
    private static final byte[] ALPHABET = {'a', 'b', '\r', '\n', '|', (byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    private static final String[] DELIMS = {null, "|", "||", "|a|", "\r\n", "ab", "é"};

    @Test
    void chunkBoundariesDoNotMatter() {
        Random rnd = new Random(7);
        for (int round = 0; round < 400; round++) {
            byte[] content = new byte[rnd.nextInt(200)];
            for (int i = 0; i < content.length; i++) {
                content[i] = ALPHABET[rnd.nextInt(ALPHABET.length)];
            }
            if (round % 4 == 0 && content.length >= 3) {
                content[0] = (byte) 0xEF;
                content[1] = (byte) 0xBB;
                content[2] = (byte) 0xBF;
            }
            for (String d : DELIMS) {
                byte[] delim = d == null ? null : d.getBytes(StandardCharsets.UTF_8);
                for (int max : new int[] {Integer.MAX_VALUE, 5}) {
                    List<String> whole = lines(content, delim, max, content.length + 1, rnd);
                    assertEquals(whole, lines(content, delim, max, 1, rnd));
                    assertEquals(whole, lines(content, delim, max, 0, rnd));
                }
            }
        }
    }

    @Test
    void knownCases() {
        Random rnd = new Random(1);
        assertEquals(List.of("0:a", "2:b", "4:", "6:c"), lines("a\nb\r\r\nc".getBytes(), null, Integer.MAX_VALUE, 1, rnd));
        assertEquals(List.of("0:x", "3:|"), lines("x|||".getBytes(), "||".getBytes(), Integer.MAX_VALUE, 2, rnd));
        byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, 'h', 'i', '\r', '\n', 'x'};
        assertEquals(List.of("0:hi", "7:x"), lines(bom, null, Integer.MAX_VALUE, 1, rnd));
        // a skipped line's start goes to the next line, as in LineRecordReader
        assertEquals(List.of("0:ab", "3:e"), lines("ab\ncdef\ne".getBytes(), null, 4, 3, rnd));
        assertEquals(List.of(), lines(new byte[0], null, Integer.MAX_VALUE, 1, rnd));
    }

    /** chunk: bytes per chunk; 0: random sizes. The chunk array is reused and cleared after each scan. */
    private static List<String> lines(byte[] content, byte[] delim, int max, int chunk, Random rnd) {
        LineSplitter s = new LineSplitter(delim, max);
        s.reset();
        byte[] buf = new byte[content.length + 1];
        List<String> out = new ArrayList<>();
        int off = 0;
        while (off < content.length && !s.ended()) {
            int n = Math.min(content.length - off, chunk > 0 ? chunk : 1 + rnd.nextInt(9));
            System.arraycopy(content, off, buf, 0, n);
            int p = 0;
            while (p < n && !s.ended()) {
                p = s.scan(buf, p, n);
                if (s.ready() && s.take()) {
                    out.add(s.lineStart() + ":" + new String(s.lineBytes(), s.lineOffset(), s.lineLength(),
                            StandardCharsets.ISO_8859_1));
                }
            }
            Arrays.fill(buf, (byte) 'Z');
            off += n;
        }
        if (!s.ended() && s.finish() && s.take()) {
            out.add(s.lineStart() + ":" + new String(s.lineBytes(), s.lineOffset(), s.lineLength(),
                    StandardCharsets.ISO_8859_1));
        }
        return out;
    }
}

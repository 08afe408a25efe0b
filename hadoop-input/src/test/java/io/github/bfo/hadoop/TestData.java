/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.commons.compress.compressors.bzip2.BZip2CompressorOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

import static io.github.bfo.hadoop.TestJobs.write;

/** Input sets for the tests. */
final class TestData {
    static final String[] WORDS = ("the of and to in is that for it as was with be by on not he this are or his from "
            + "at which but have an they you were her she there been one all we their has would when if so no what "
            + "int void return static final class public private String new null true false import package "
            + "données über straße naïve café 日本語 テキスト Ελληνικά русский ☃ 😀").split(" ");

    private TestData() {
    }

    static byte[] gzip(byte[]... members) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] m : members) {
            try (GZIPOutputStream g = new GZIPOutputStream(new NonClosing(o))) {
                g.write(m);
            }
        }
        return o.toByteArray();
    }

    static byte[] bzip2(byte[] b) throws IOException {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        try (BZip2CompressorOutputStream z = new BZip2CompressorOutputStream(o)) {
            z.write(b);
        }
        return o.toByteArray();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Prose-like lines of random words, with the given line ending. */
    static String prose(Random rnd, int lines, String eol) {
        StringBuilder sb = new StringBuilder();
        for (int l = 0; l < lines; l++) {
            int n = rnd.nextInt(12);
            for (int w = 0; w < n; w++) {
                if (w > 0) {
                    sb.append(rnd.nextInt(10) == 0 ? "\t" : " ");
                }
                sb.append(WORDS[rnd.nextInt(WORDS.length)]);
            }
            sb.append(eol);
        }
        return sb.toString();
    }

    /** The edge cases of TextInputFormat's semantics, under root (recursive). */
    static void edgeCases(Path root) throws IOException {
        Random rnd = new Random(7);
        write(root.resolve("a/plain.txt"), "hello world\nfoo bar\n");
        write(root.resolve("a/no-newline.txt"), "no trailing newline here");
        write(root.resolve("a/crlf.txt"), "a b\r\nc d\r\n\r\ne f");
        write(root.resolve("a/cr.txt"), "x\ry\rz\r");
        write(root.resolve("a/mixed.txt"), "1\r\n2\n3\r4\n\r5");
        write(root.resolve("a/empty.txt"), new byte[0]);
        write(root.resolve("a/blank-lines.txt"), "\n\n\n");
        write(root.resolve("a/utf8.txt"), "日本語 テキスト\nüber straße café\n😀 emoji ☃\r\nΕλληνικά русский\n");
        byte[] bom = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
        write(root.resolve("a/bom.txt"), concat(bom, utf8("bom first line\nsecond line\n")));
        write(root.resolve("a/only-bom.txt"), bom);
        write(root.resolve("a/data.gz"), gzip(utf8("gz line one\ngz line two\r\ngz three")));
        write(root.resolve("a/multi.gz"), gzip(utf8("member one\n"), utf8("member two\n")));
        write(root.resolve("a/empty.gz"), gzip(new byte[0]));
        write(root.resolve("a/data.bz2"), bzip2(utf8(prose(rnd, 300, "\n"))));
        write(root.resolve("a/crlf.bz2"), bzip2(utf8("bz2 a\r\nbz2 b\r\nno newline")));
        // large: comes in pieces when bfo.read.large.file is small; lines cross piece boundaries
        write(root.resolve("a/large.txt"), prose(rnd, 20_000, "\n"));
        write(root.resolve("a/large-crlf.txt"), prose(rnd, 8_000, "\r\n"));
        write(root.resolve("a/large.gz"), gzip(utf8(prose(rnd, 10_000, "\n"))));
        write(root.resolve("b/c/deep.txt"), "deep file\nin a subdirectory\n");
        write(root.resolve("b/name with spaces.txt"), "spaces in the name\n");
        write(root.resolve("b/ünïcödé-名前.txt"), "unicode file name\n");
        // hidden files: skipped by every FileInputFormat
        write(root.resolve("a/_SUCCESS"), "hidden\n");
        write(root.resolve("a/.hidden"), "hidden\n");
        write(root.resolve("_logs/x.txt"), "hidden dir\n");
    }

    /** Files for a custom delimiter "||" (with partial delimiters, CR/LF inside records). */
    static void delimited(Path root) throws IOException {
        Random rnd = new Random(11);
        write(root.resolve("d1.txt"), "one||two||three");
        write(root.resolve("d2.txt"), "||leading||trailing||");
        write(root.resolve("d3.txt"), "pipe|inside||line\nbreak\r\ninside||x|||y||||z|");
        write(root.resolve("d4.txt"), "");
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 5000; i++) {
            sb.append(WORDS[rnd.nextInt(WORDS.length)]).append(rnd.nextInt(4) == 0 ? "|" : "")
                    .append(rnd.nextInt(3) == 0 ? "||" : " ");
        }
        write(root.resolve("d5-large.txt"), sb.toString());
        write(root.resolve("d6.gz"), gzip(utf8("gz||records|||end")));
    }

    /** n small prose files in 20 directories, created in shuffled order. */
    static void manyFiles(Path root, int n, long seed) throws IOException {
        Random rnd = new Random(seed);
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        java.util.Collections.shuffle(java.util.Arrays.asList(order), rnd);
        for (int i : order) {
            String eol = i % 17 == 0 ? "\r\n" : "\n";
            String text = prose(new Random(seed * 31 + i), 1 + (i % 40), eol);
            if (i % 13 == 0) {
                text = text.substring(0, Math.max(0, text.length() - eol.length()));   // no trailing newline
            }
            write(root.resolve(String.format("dir%02d/file%05d.txt", i % 20, i)), text);
        }
    }

    /**
     * Large files for a split size of s bytes (several splits each), under
     * root: line ends placed just before, at and just after the boundaries
     * k*s, CRLF straddling them, a lone CR before them, lengths of exactly
     * N*s and around the 1.1 slop, empty lines, lines longer than a split,
     * random files; a gzip file over the split size (never cut); ASCII only.
     */
    static void largeFiles(Path root, int s, long seed) throws IOException {
        Random rnd = new Random(seed);
        write(root.resolve("nl-before.txt"), place(ascii(rnd, 4 * s + 123, "\n"), s, -1, "\n"));
        write(root.resolve("nl-at.txt"), place(ascii(rnd, 4 * s + 77, "\n"), s, 0, "\n"));
        write(root.resolve("nl-after.txt"), place(ascii(rnd, 3 * s + 5, "\n"), s, 1, "\n"));
        write(root.resolve("crlf-straddle.txt"), place(ascii(rnd, 4 * s + 9, "\r\n"), s, -1, "\r\n"));
        write(root.resolve("crlf-at.txt"), place(ascii(rnd, 3 * s + 3, "\r\n"), s, 0, "\r\n"));
        write(root.resolve("crlf-before.txt"), place(ascii(rnd, 3 * s + 400, "\r\n"), s, -2, "\r\n"));
        write(root.resolve("cr-before.txt"), place(ascii(rnd, 3 * s + 31, "\r"), s, -1, "\rx"));
        write(root.resolve("exact-3s.txt"), place(ascii(rnd, 3 * s, "\n"), 3 * s, -1, "\n"));
        write(root.resolve("exact-4s-no-newline.txt"), place(ascii(rnd, 4 * s, "\n"), 4 * s, -1, "x"));
        write(root.resolve("slop-1.05.txt"), ascii(rnd, (int) (1.05 * s), "\n"));
        write(root.resolve("slop-1.15.txt"), ascii(rnd, (int) (1.15 * s), "\n"));
        write(root.resolve("slop-below.txt"), ascii(rnd, (int) Math.floor(1.1 * s), "\n"));
        write(root.resolve("slop-above.txt"), ascii(rnd, (int) Math.floor(1.1 * s) + 1, "\n"));
        StringBuilder empty = new StringBuilder();
        while (empty.length() < 3 * s + 50) {
            empty.append(rnd.nextInt(8) == 0 ? "word\n" : "\n");
        }
        write(root.resolve("empty-lines.txt"), empty.toString());
        StringBuilder longLines = new StringBuilder();
        while (longLines.length() < 3 * s) {
            longLines.append(new String(ascii(rnd, s + rnd.nextInt(2 * s), " "), StandardCharsets.US_ASCII))
                    .append('\n');
        }
        write(root.resolve("long-lines.txt"), longLines.toString());
        for (int i = 0; i < 3; i++) {
            String eol = new String[] {"\n", "\r\n", "\r"}[i];
            write(root.resolve("random-" + i + ".txt"), ascii(rnd, s + rnd.nextInt(2 * s), eol));
        }
        write(root.resolve("big.gz"), gzip(ascii(rnd, 8 * s, "\n")));
    }

    /** Large files for a custom delimiter "||", one placed to end before, straddle and start at each boundary. */
    static void largeDelimited(Path root, int s, long seed) throws IOException {
        Random rnd = new Random(seed);
        for (int at = -2; at <= 0; at++) {
            write(root.resolve("delim" + (at + 2) + ".txt"), place(piped(rnd, 3 * s + 17 * (at + 3)), s, at, "||"));
        }
    }

    /** n bytes of ASCII words and line ends eol (words separated by single spaces). */
    static byte[] ascii(Random rnd, int n, String eol) {
        StringBuilder sb = new StringBuilder(n + 16);
        while (sb.length() < n) {
            int words = rnd.nextInt(40);
            for (int w = 0; w < words; w++) {
                sb.append(w > 0 ? " " : "").append(ASCII_WORDS[rnd.nextInt(ASCII_WORDS.length)]);
            }
            sb.append(eol);
        }
        return sb.substring(0, n).getBytes(StandardCharsets.US_ASCII);
    }

    private static final String[] ASCII_WORDS = ("the of and to in is that for it as was with be by on not he this are "
            + "or his from at which but have an they you were her she there been one all").split(" ");

    /** n bytes of words, with "|" and "||" among them (partial and whole delimiters) and some newlines. */
    private static byte[] piped(Random rnd, int n) {
        StringBuilder sb = new StringBuilder(n + 16);
        while (sb.length() < n) {
            sb.append(ASCII_WORDS[rnd.nextInt(ASCII_WORDS.length)]);
            int r = rnd.nextInt(10);
            sb.append(r < 2 ? "||" : r < 3 ? "|" : r < 4 ? "|||" : r < 5 ? "\n" : " ");
        }
        return sb.substring(0, n).getBytes(StandardCharsets.US_ASCII);
    }

    /** b with mark written at k*s + at for every k >= 1 where it fits. */
    private static byte[] place(byte[] b, int s, int at, String mark) {
        byte[] m = mark.getBytes(StandardCharsets.US_ASCII);
        for (long k = s; k + at + m.length <= b.length; k += s) {
            System.arraycopy(m, 0, b, (int) (k + at), m.length);
        }
        return b;
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] r = new byte[a.length + b.length];
        System.arraycopy(a, 0, r, 0, a.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    private static final class NonClosing extends java.io.FilterOutputStream {
        NonClosing(OutputStream o) {
            super(o);
        }

        @Override
        public void close() throws IOException {
            flush();
        }
    }
}

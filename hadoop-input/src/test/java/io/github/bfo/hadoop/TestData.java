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

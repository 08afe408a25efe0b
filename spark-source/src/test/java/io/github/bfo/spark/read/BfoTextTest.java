/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * format("bfo").option("format", "text") against spark.read.text on what
 * LineRecordReader treats specially: a UTF-8 byte order mark at the start of
 * a file (dropped by text), CRLF line ends, and custom lineSep values, one
 * byte and multi-byte, with partial separators; each file read whole and in
 * pieces (largeFile), so lines and separators also straddle pieces.
 */
class BfoTextTest extends SparkTestBase {
    private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

    @TempDir
    static Path tmp;
    static Path dir;

    @BeforeAll
    static void data() throws Exception {
        dir = tmp.resolve("texts");
        write(dir, "bom.txt", concat(BOM, utf8("first\nsecond\r\nthird")));
        write(dir, "bom-crlf.txt", concat(BOM, utf8("a\r\nb\r\n")));
        write(dir, "bom-empty-line.txt", concat(BOM, utf8("\nafter")));
        write(dir, "bom-only.txt", BOM);
        write(dir, "bom-later.txt", concat(utf8("no mark here\n"), concat(BOM, utf8("kept\n"))));
        write(dir, "crlf.txt", utf8("one\r\ntwo\r\n\r\nthree\r\n"));
        write(dir, "cr-lf-mixed.txt", utf8("x\ry\n\rz\r\n"));
        write(dir, "pipes.txt", utf8("a||b|||c||||d|"));
        write(dir, "arrows.txt", utf8("α→β→→γ→ and a lone − and →"));
        write(dir, "bom-pipes.txt", concat(BOM, utf8("p||q||")));
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 5_000; i++) {
            big.append("line ").append(i).append(i % 3 == 0 ? "\r\n" : i % 3 == 1 ? "||" : "→");
        }
        write(dir, "big.txt", concat(BOM, utf8(big.toString())));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        o.writeBytes(a);
        o.writeBytes(b);
        return o.toByteArray();
    }

    private static Dataset<Row> text(String lineSep) {
        return lineSep == null ? spark.read().text(dir.toString())
                : spark.read().option("lineSep", lineSep).text(dir.toString());
    }

    private static Dataset<Row> bfo(String lineSep, String largeFile) {
        var r = spark.read().format("bfo").option("format", "text").option("largeFile", largeFile);
        return (lineSep == null ? r : r.option("lineSep", lineSep)).load(dir.toString());
    }

    private static void assertLikeText(String lineSep) {
        Dataset<Row> expected = text(lineSep);
        for (String largeFile : new String[] {"16777216", "4096"}) {
            Dataset<Row> actual = bfo(lineSep, largeFile);
            assertSameSchema(expected, actual);
            assertSameRows(expected, actual);
        }
    }

    @Test
    void defaultLineEnds() {
        assertLikeText(null);
        // what text gives, spelled out: the mark is gone from the first line only
        List<String> bom = rows(spark.read().format("bfo").option("format", "text")
                .load(dir.resolve("bom.txt").toString()));
        assertEquals(List.of("first", "second", "third"), bom);
    }

    @Test
    void oneByteAndTwoByteLineSep() {
        assertLikeText("||");
        assertLikeText("|");
        assertLikeText("\r\n");
    }

    @Test
    void multiByteLineSep() {
        assertLikeText("→");
        assertLikeText("→→");
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** df.write.format("bfo"): round trips through bfo and binaryFile, save modes, bad rows. */
class BfoWriteTest extends SparkTestBase {
    @TempDir
    static Path tmp;

    static final StructType SCHEMA = new StructType().add("path", DataTypes.StringType)
            .add("content", DataTypes.BinaryType);

    static Dataset<Row> files(int partitions, Object... pathAndContent) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < pathAndContent.length; i += 2) {
            rows.add(RowFactory.create(pathAndContent[i], pathAndContent[i + 1]));
        }
        return spark.createDataFrame(rows, SCHEMA).repartition(partitions);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static List<String> tree(Path dir) throws Exception {
        List<String> out = new ArrayList<>();
        if (!Files.exists(dir)) {
            return out;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            s.filter(Files::isRegularFile).forEach(p -> out.add(dir.relativize(p).toString()));
        }
        out.sort(null);
        return out;
    }

    @Test
    void roundTripThroughBfoAndBinaryFile() throws Exception {
        Random r = new Random(7);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            rows.add(RowFactory.create("d" + (i % 13) + "/sub" + (i % 3) + "/file" + i + ".bin",
                    random(r, i == 0 ? 0 : r.nextInt(9000))));
        }
        rows.add(RowFactory.create("top.bin", random(r, 200_000)));
        Dataset<Row> df = spark.createDataFrame(rows, SCHEMA).repartition(4);
        Path out = tmp.resolve("roundtrip");
        df.write().format("bfo").save(out.toString());

        assertEquals(501, tree(out).size(), "no staging left, one file per row");
        for (Row row : rows) {
            assertArrayEquals((byte[]) row.get(1), Files.readAllBytes(out.resolve(row.getString(0))), row.getString(0));
        }
        Dataset<Row> viaBfo = spark.read().format("bfo").option("recursiveFileLookup", "true").load(out.toString());
        Dataset<Row> viaBinary = spark.read().format("binaryFile").option("recursiveFileLookup", "true")
                .load(out.toString());
        assertSameRows(viaBinary, viaBfo);
        String prefix = "file:" + out + "/";
        // Spark's file scans skip empty files (binaryFile too): the empty row is on disk but not read back
        assertSameRows(df.where("length(content) > 0"), viaBfo.selectExpr("substring(path, " + (prefix.length() + 1) + ") as path", "content"));
    }

    @Test
    void contentAsStringIsWrittenAsUtf8AndExtraColumnsAreIgnored() throws Exception {
        Path out = tmp.resolve("strings");
        spark.sql("SELECT concat('n', id, '.txt') AS path, concat('hello ', id, ' é') AS content, id AS other "
                + "FROM range(20)").write().format("bfo").save(out.toString());
        assertEquals(20, tree(out).size());
        assertEquals("hello 7 é", Files.readString(out.resolve("n7.txt")));
        // wholetext reads them back as written
        assertEquals(20, spark.read().format("bfo").option("format", "text").option("wholetext", "true")
                .load(out.toString()).where("value like 'hello % é'").count());
    }

    /** actual is what Spark's own source raised (expected): the same class, error class and message. */
    static void assertSameError(Exception expected, Exception actual, String errorClass) {
        assertEquals(org.apache.spark.sql.AnalysisException.class, expected.getClass(), expected.toString());
        assertEquals(errorClass, ((org.apache.spark.SparkThrowable) expected).getCondition());
        assertEquals(expected.getClass(), actual.getClass(), actual.toString());
        assertEquals(errorClass, ((org.apache.spark.SparkThrowable) actual).getCondition());
        assertEquals(expected.getMessage(), actual.getMessage());
    }

    /** Every durability writes the same files; small batches, so that close has several batches to share a sync. */
    @Test
    void everyDurability() throws Exception {
        for (String d : new String[] {"none", "batch", "close", "each"}) {
            Path out = tmp.resolve("durability-" + d);
            spark.sql("SELECT concat('d', id % 3, '/n', id, '.txt') AS path, concat('v', id) AS content FROM range(30)")
                    .repartition(2).write().format("bfo").option("durability", d).option("writeBatchBytes", "64")
                    .save(out.toString());
            assertEquals(30, tree(out).size(), d);
            assertEquals("v7", Files.readString(out.resolve("d1/n7.txt")), d);
        }
    }

    @Test
    void saveModes() throws Exception {
        Path out = tmp.resolve("modes");
        files(2, "a.txt", b("A1"), "x/b.txt", b("B1")).write().format("bfo").save(out.toString());
        assertEquals(List.of("a.txt", "x/b.txt"), tree(out));

        // errorifexists (the default): Spark's file sources' AnalysisException [PATH_ALREADY_EXISTS]
        Exception x = assertThrows(Exception.class, () -> files(1, "c.txt", b("C")).write().format("bfo")
                .save(out.toString()));
        assertSameError(assertThrows(Exception.class, () -> spark.range(1).selectExpr("'t' AS value").write()
                .text(out.toString())), x, "PATH_ALREADY_EXISTS");
        assertEquals(List.of("a.txt", "x/b.txt"), tree(out));

        // ignore: nothing happens
        files(1, "c.txt", b("C")).write().format("bfo").mode("ignore").save(out.toString());
        assertEquals(List.of("a.txt", "x/b.txt"), tree(out));
        Path fresh = tmp.resolve("modes-ignore-new");
        files(1, "c.txt", b("C")).write().format("bfo").mode("ignore").save(fresh.toString());
        assertEquals(List.of("c.txt"), tree(fresh));

        // append: new files join; an existing one is an error and nothing of that job is published
        files(2, "c.txt", b("C1"), "x/d.txt", b("D1")).write().format("bfo").mode("append").save(out.toString());
        assertEquals(List.of("a.txt", "c.txt", "x/b.txt", "x/d.txt"), tree(out));
        x = assertThrows(Exception.class, () -> files(2, "e.txt", b("E"), "a.txt", b("A2")).write().format("bfo")
                .mode("append").save(out.toString()));
        assertTrue(rootMessage(x).contains("already exists"), rootMessage(x));
        assertEquals(List.of("a.txt", "c.txt", "x/b.txt", "x/d.txt"), tree(out));
        assertEquals("A1", Files.readString(out.resolve("a.txt")));

        // overwrite: the directory holds exactly the new files
        files(2, "a.txt", b("A3"), "y/z.txt", b("Z")).write().format("bfo").mode("overwrite").save(out.toString());
        assertEquals(List.of("a.txt", "y/z.txt"), tree(out));
        assertEquals("A3", Files.readString(out.resolve("a.txt")));
    }

    @Test
    void badRowsAreClearErrorsAndWriteNothing() throws Exception {
        String[][] bad = {
            {"/etc/passwd", "absolute"},
            {"../escape.txt", "'..'"},
            {"a/../../b", "'..'"},
            {"a//b", "empty or '.' component"},
            {"", "empty"},
            {"file:/tmp/x", "URI"},
        };
        int n = 0;
        for (String[] c : bad) {
            Path out = tmp.resolve("bad" + n++);
            Exception x = assertThrows(Exception.class, () -> files(2, "ok.txt", b("ok"), c[0], b("bad")).write()
                    .format("bfo").save(out.toString()), c[0]);
            String m = rootMessage(x);
            assertTrue(m.contains("bad path") && m.contains(c[1]), c[0] + ": " + m);
            assertEquals(List.of(), tree(out), "nothing published, no staging left for " + c[0]);
        }
        // duplicates, in one task and across tasks
        for (int parts : new int[] {1, 2}) {
            Path out = tmp.resolve("dup" + parts);
            Exception x = assertThrows(Exception.class, () -> files(parts, "same.txt", b("1"), "other.txt", b("2"),
                    "same.txt", b("3")).write().format("bfo").save(out.toString()));
            assertTrue(rootMessage(x).contains("duplicate path 'same.txt'"), rootMessage(x));
            assertEquals(List.of(), tree(out));
        }
        // a file that would also be a directory
        Path conflict = tmp.resolve("conflict");
        Exception x = assertThrows(Exception.class, () -> files(1, "a", b("1"), "a/b", b("2")).write().format("bfo")
                .save(conflict.toString()));
        assertFalse(rootMessage(x).isEmpty());
        assertEquals(List.of(), tree(conflict));
        // missing columns, wrong types, nulls
        Path cols = tmp.resolve("cols");
        x = assertThrows(Exception.class, () -> spark.sql("SELECT 'a' AS path").write().format("bfo")
                .save(cols.toString()));
        assertTrue(rootMessage(x).contains("missing: content"), rootMessage(x));
        x = assertThrows(Exception.class, () -> spark.sql("SELECT 'a' AS name, X'00' AS content").write()
                .format("bfo").save(cols.toString()));
        assertTrue(rootMessage(x).contains("missing: path"), rootMessage(x));
        x = assertThrows(Exception.class, () -> spark.sql("SELECT 1 AS path, X'00' AS content").write()
                .format("bfo").save(cols.toString()));
        assertTrue(rootMessage(x).contains("path must be a string"), rootMessage(x));
        x = assertThrows(Exception.class, () -> files(1, null, b("x")).write().format("bfo").save(cols.toString()));
        assertTrue(rootMessage(x).contains("null path"), rootMessage(x));
        x = assertThrows(Exception.class, () -> files(1, "n.txt", null).write().format("bfo").save(cols.toString()));
        assertTrue(rootMessage(x).contains("null content"), rootMessage(x));
    }
}

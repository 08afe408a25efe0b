/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.testsupport.OtherSchemeFileSystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Paths resolved as Spark's own file sources and writers resolve them; user-specified schemas. */
class BfoResolutionTest extends SparkTestBase {
    @TempDir
    static Path tmp;
    static Path parted;

    @BeforeAll
    static void data() throws Exception {
        parted = tmp.resolve("parted");
        for (int y : new int[] {2020, 2021}) {
            for (int k = 0; k < 3; k++) {
                write(parted, "year=" + y + "/f" + k + ".txt", ("y" + y + " k" + k + "\n").repeat(k + 1)
                        .getBytes(StandardCharsets.UTF_8));
            }
        }
    }

    @AfterEach
    void localDefaultFs() {
        spark.conf().unset("fs.defaultFS");
        spark.conf().unset("fs." + OtherSchemeFileSystem.SCHEME + ".impl");
    }

    private static void fakeDefaultFs() {
        spark.conf().set("fs." + OtherSchemeFileSystem.SCHEME + ".impl", OtherSchemeFileSystem.class.getName());
        spark.conf().set("fs.defaultFS", OtherSchemeFileSystem.SCHEME + ":///");
    }

    @Test
    void schemelessReadPathResolvesAsBinaryFileDoes() {
        fakeDefaultFs();
        String dir = parted.toString();   // no scheme: on fs.defaultFS
        List<String> paths = rows(spark.read().format("binaryFile").load(dir), "path");
        assertTrue(paths.get(0).startsWith(OtherSchemeFileSystem.SCHEME + ":" + dir + "/"), paths.get(0));
        // read through Hadoop's API from that file system (not libbfo from the disk): the same rows and paths
        assertSameRows(spark.read().format("binaryFile").load(dir), spark.read().format("bfo").load(dir));
    }

    @Test
    void schemelessWritePathGoesToTheDefaultFileSystemOrFails() throws Exception {
        Dataset<Row> out = spark.range(3).select(functions.concat(functions.lit("f"), functions.col("id"))
                .as("path"), functions.col("id").cast("string").as("content"));
        // written through that file system (the Hadoop FileSystem route), where binaryFile reads the same path
        fakeDefaultFs();
        Path written = tmp.resolve("out-fakefs");
        out.write().format("bfo").save(written.toString());
        List<String> paths = rows(spark.read().format("binaryFile").load(written.toString()), "path");
        assertEquals(List.of(OtherSchemeFileSystem.SCHEME + ":" + written + "/f0",
                OtherSchemeFileSystem.SCHEME + ":" + written + "/f1", OtherSchemeFileSystem.SCHEME + ":" + written + "/f2"),
                paths);
        org.apache.hadoop.fs.Path f2 = new org.apache.hadoop.fs.Path(paths.get(2));
        try (var in = f2.getFileSystem(((org.apache.spark.sql.classic.SparkSession) spark).sessionState()
                .newHadoopConf()).open(f2)) {
            assertEquals("2", new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        // a file system that cannot be reached or is unknown: an error naming the qualified path
        for (String fs : new String[] {"hdfs://nonexistent:1", "nosuchfs:///"}) {
            spark.conf().set("fs.defaultFS", fs);
            Path target = tmp.resolve("out-" + fs.charAt(0));
            Exception e = assertThrows(Exception.class, () -> out.write().format("bfo").save(target.toString()));
            String qualified = fs.replaceAll("/+$", "") + target;
            assertTrue(rootMessage(e).contains("cannot reach the output directory " + qualified + " (fs.defaultFS="
                    + fs + ")"), rootMessage(e));
            assertFalse(Files.exists(target), "nothing written to the local disk");
        }
        localDefaultFs();
        // a file: path stays local whatever the default, and a relative one is under the working directory
        fakeDefaultFs();
        Path local = tmp.resolve("out-local");
        out.write().format("bfo").save("file:" + local);
        assertEquals("0", Files.readString(local.resolve("f0")));
        localDefaultFs();
        String relative = "target/bfo-relative-" + ProcessHandle.current().pid();
        try {
            out.write().format("bfo").save(relative);
            Path abs = Path.of(System.getProperty("user.dir")).resolve(relative);
            assertEquals("2", Files.readString(abs.resolve("f2")));
            assertSameRows(spark.read().format("binaryFile").load(relative).select("path"),
                    spark.read().format("bfo").load(relative).select("path"));
        } finally {
            Path abs = Path.of(System.getProperty("user.dir")).resolve(relative);
            deleteTree(abs);
        }
    }

    @Test
    void theWritesHadoopOptionsReachItsTasks() throws Exception {
        // a file system named only in this write's options and made afresh from the configuration at each use
        // (never cached), so a task without the write's configuration could not write to it
        String scheme = "bfooptionsfs";
        Path target = tmp.resolve("out-options");
        spark.range(3).selectExpr("concat('f', id) AS path", "cast(id AS string) AS content").write().format("bfo")
                .option("fs." + scheme + ".impl", OtherSchemeFileSystem.class.getName())
                .option("fs." + scheme + ".impl.disable.cache", "true")
                .save(scheme + "://" + target);
        assertEquals("1", Files.readString(target.resolve("f1")));   // the fake scheme is the local disk
        assertEquals(List.of("f0", "f1", "f2"), names(target));
    }

    @Test
    void reorderedSubsetSchemaEqualsBinaryFilesColumns() {
        StructType user = StructType.fromDDL("year INT, length BIGINT, path STRING");
        Dataset<Row> b = spark.read().format("bfo").schema(user).load(parted.toString());
        assertEquals(user, b.schema());
        assertSameRows(spark.read().format("binaryFile").load(parted.toString()).select("year", "length", "path"), b);
        // a partition column typed by the user, as Spark's index types it
        StructType asString = StructType.fromDDL("content BINARY, year STRING");
        Dataset<Row> s = spark.read().format("bfo").schema(asString).load(parted.toString());
        assertEquals(asString, s.schema());
        assertSameRows(spark.read().format("binaryFile").schema(
                StructType.fromDDL("path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY, year STRING"))
                .load(parted.toString()).select("content", "year"), s);
        // text: the value column and a partition column, reordered
        StructType text = StructType.fromDDL("year INT, value STRING");
        assertSameRows(spark.read().text(parted.toString()).select("year", "value"),
                spark.read().format("bfo").option("format", "text").schema(text).load(parted.toString()));
    }

    /** binaryFile's exception class (no error class), with a message saying what bfo accepts. */
    @Test
    void wrongSchemaFailsAsBinaryFileDoesSayingWhatBfoAccepts() {
        for (String ddl : new String[] {"path STRING, size BIGINT", "length INT", "content STRING, path STRING"}) {
            StructType wrong = StructType.fromDDL(ddl);
            Exception expected = assertThrows(Exception.class,
                    () -> spark.read().format("binaryFile").schema(wrong).load(parted.toString()).collectAsList());
            Exception actual = assertThrows(Exception.class,
                    () -> spark.read().format("bfo").schema(wrong).load(parted.toString()).collectAsList());
            assertTrue(innermost(expected).getMessage().contains("Binary file data source expects dataSchema"),
                    innermost(expected).getMessage());
            assertEquals(innermost(expected).getClass(), innermost(actual).getClass(), ddl);
            assertFalse(innermost(actual) instanceof org.apache.spark.SparkThrowable, ddl);
            assertFalse(innermost(expected) instanceof org.apache.spark.SparkThrowable, ddl);
            assertEquals("bfo data source expects a schema of binaryFile's columns (path STRING, modificationTime "
                    + "TIMESTAMP, length BIGINT, content BINARY) and the partition columns (year INT): any of them, in "
                    + "any order, each with this type (binaryFile itself takes only its four columns, all of them); "
                    + "but got: " + ddl + ".", innermost(actual).getMessage());
        }
    }

    /** text's own AnalysisException (class, error class, message) where text refuses the schema too. */
    @Test
    void wrongTextSchemaFailsAsTextDoes() {
        for (String ddl : new String[] {"path STRING, size BIGINT", "value INT", "value STRING, x INT",
            "value STRING, other STRING", "year INT, value BINARY"}) {
            StructType wrong = StructType.fromDDL(ddl);
            Exception expected = assertThrows(Exception.class,
                    () -> spark.read().format("text").schema(wrong).load(parted.toString()).collectAsList());
            Exception actual = assertThrows(Exception.class, () -> spark.read().format("bfo")
                    .option("format", "text").schema(wrong).load(parted.toString()).collectAsList());
            Throwable e = innermost(expected);
            Throwable a = innermost(actual);
            assertTrue(e instanceof org.apache.spark.sql.AnalysisException, ddl + ": " + e);
            assertEquals(e.getClass(), a.getClass(), ddl);
            assertEquals(((org.apache.spark.SparkThrowable) e).getCondition(),
                    ((org.apache.spark.SparkThrowable) a).getCondition(), ddl);
            assertEquals(e.getMessage(), a.getMessage(), ddl);
        }
        // text takes a single string column of any name; bfo does not, and says what it takes
        StructType other = StructType.fromDDL("line STRING");
        assertEquals(spark.read().text(parted.toString()).count(),
                spark.read().format("text").schema(other).load(parted.toString()).select("line").count());
        Exception actual = assertThrows(Exception.class, () -> spark.read().format("bfo").option("format", "text")
                .schema(other).load(parted.toString()).collectAsList());
        assertEquals(IllegalArgumentException.class, innermost(actual).getClass());
        assertEquals("bfo data source (format text) expects a schema of text's column (value STRING) and the "
                + "partition columns (year INT): any of them, in any order, each with this type; but got: line "
                + "STRING.", innermost(actual).getMessage());
    }

    private static Throwable innermost(Throwable t) {
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}

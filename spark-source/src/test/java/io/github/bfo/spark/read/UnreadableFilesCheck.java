/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.SparkTestBase;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The unreadable-file half of BfoReadTest's ignoreCorruptFiles test, run in a
 * JVM that permission checks apply to: BfoReadTest starts it through
 * {@code setpriv} without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH when the
 * tests run as root (as CI does), since root reads every file otherwise.
 * {@code UnreadableFilesCheck DIR READABLE}: DIR holds READABLE readable files
 * and one file its owner cannot read. Prints "OK" and exits 0 when
 * bfo behaves as binaryFile; throws (exit 1) otherwise.
 */
public final class UnreadableFilesCheck {
    private UnreadableFilesCheck() {
    }

    public static void main(String[] args) {
        SparkTestBase.startSpark();
        try {
            check(SparkTestBase.spark, args[0], Integer.parseInt(args[1]));
            System.out.println("OK");
        } finally {
            SparkTestBase.stopSpark();
        }
    }

    static void check(SparkSession spark, String dir, int readable) {
        // binaryFile counts a file it may not open as missing (Hadoop's local open reports FileNotFoundException):
        // skipped under ignoreMissingFiles, a failed query otherwise, even with ignoreCorruptFiles
        Dataset<Row> bfo = spark.read().format("bfo").option("ignoreMissingFiles", "true").load(dir);
        Dataset<Row> bin = spark.read().format("binaryFile").option("ignoreMissingFiles", "true").load(dir);
        SparkTestBase.assertSameRows(bin, bfo);
        assertEquals(readable, bfo.collectAsList().size(), "rows with content");
        for (String corrupt : new String[] {"true", "false"}) {
            Exception b = assertThrows(Exception.class, () -> spark.read().format("bfo")
                    .option("ignoreCorruptFiles", corrupt).load(dir).collectAsList());
            assertTrue(SparkTestBase.rootMessage(b).contains("permission denied"), SparkTestBase.rootMessage(b));
            assertThrows(Exception.class, () -> spark.read().format("binaryFile").option("ignoreCorruptFiles", corrupt)
                    .load(dir).collectAsList());
        }
        // metadata only: a stat needs no read permission, so both keep the file
        Dataset<Row> meta = spark.read().format("bfo").load(dir).select("path", "length", "modificationTime");
        SparkTestBase.assertSameRows(spark.read().format("binaryFile").load(dir).select("path", "length",
                "modificationTime"), meta);
        assertEquals(readable + 1, meta.collectAsList().size(), "rows without content");
    }
}

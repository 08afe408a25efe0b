/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.SparkTestBase;
import io.github.bfo.testsupport.StallingFileSystem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A file system whose server stops answering in the middle of a read (a
 * stalled open, {@link StallingFileSystem}): the task fails after
 * readTimeout, naming the file, instead of waiting forever on its reads in
 * flight; with no stalled file the same read equals binaryFile's.
 */
class BfoReadTimeoutTest extends SparkTestBase {
    @TempDir
    static Path tmp;
    static String dir;

    @BeforeAll
    static void data() throws Exception {
        for (int i = 0; i < 30; i++) {
            write(tmp, "d/f" + i, ("file " + i + "\n").repeat(i + 1).getBytes(StandardCharsets.UTF_8));
        }
        write(tmp, "d/stall-me", "never read\n".getBytes(StandardCharsets.UTF_8));
        write(tmp, "ok/f1", "fine\n".getBytes(StandardCharsets.UTF_8));
        spark.sparkContext().hadoopConfiguration().set("fs." + StallingFileSystem.SCHEME + ".impl",
                StallingFileSystem.class.getName());
        dir = StallingFileSystem.SCHEME + "://" + tmp;
    }

    @AfterEach
    void release() {
        StallingFileSystem.release();
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void aStalledReadFailsTheTaskNamingTheFile() {
        Exception e = assertThrows(Exception.class, () -> spark.read().format("bfo").option("readTimeout", "2s")
                .load(dir + "/d").selectExpr("sum(length(content))").collectAsList());
        String m = rootMessage(e);
        assertTrue(m.contains("bfo: no answer from the file system for 2 s while reading " + StallingFileSystem.SCHEME + ":" + tmp + "/d/stall-me"), m);
        assertTrue(StallingFileSystem.STALLED.get() > 0);
        // metadata only: nothing is opened, nothing stalls
        assertEquals(31, spark.read().format("bfo").option("readTimeout", "2s").load(dir + "/d").count());
        // nothing stalled: binaryFile's rows
        assertSameRows(spark.read().format("binaryFile").load(dir + "/ok"),
                spark.read().format("bfo").option("readTimeout", "2s").load(dir + "/ok"));
    }

    @Test
    void badTimeoutsAreRefused() {
        Exception e = assertThrows(Exception.class, () -> spark.read().format("bfo").option("readTimeout", "soon")
                .load(dir + "/ok").collectAsList());
        assertTrue(rootMessage(e).contains("option readTimeout must be a duration"),
                rootMessage(e));
    }
}

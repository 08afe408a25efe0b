/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.OtherSchemeFileSystem;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.TaskCounter;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BatchTextInputFormat on the local runner gives exactly the records (file,
 * offset, line) and the WordCount output of CombineTextInputFormat and
 * TextInputFormat on the same inputs.
 */
class TextEquivalenceTest {
    @TempDir
    static java.nio.file.Path work;
    static java.nio.file.Path edge;
    static java.nio.file.Path delimited;
    static java.nio.file.Path many;
    static java.nio.file.Path some;

    @BeforeAll
    static void data() throws Exception {
        edge = work.resolve("edge");
        TestData.edgeCases(edge);
        delimited = work.resolve("delimited");
        TestData.delimited(delimited);
        many = work.resolve("many");
        TestData.manyFiles(many, 3000, 5);
        some = work.resolve("some");
        TestData.manyFiles(some, 300, 6);
    }

    private static Configuration conf() {
        return TestJobs.localConf(work);
    }

    private static void assertSameAsText(Configuration conf, java.nio.file.Path in) throws Exception {
        TestJobs.Result bfo = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), in);
        TestJobs.Result combine = TestJobs.dump(conf, CombineTextInputFormat.class, work.resolve("out"), in);
        TestJobs.Result text = TestJobs.dump(conf, TextInputFormat.class, work.resolve("out"), in);
        assertTrue(bfo.ok() && combine.ok() && text.ok(), "jobs succeeded");
        assertFalse(bfo.lines().isEmpty());
        TestJobs.assertSameLines(text.lines(), combine.lines(), "CombineTextInputFormat vs TextInputFormat");
        TestJobs.assertSameLines(text.lines(), bfo.lines(), "BatchTextInputFormat vs TextInputFormat");
        assertEquals(0, bfo.counter("test", "BAD_INPUT_FILE"), "map.input.file alias set per record");
        assertEquals(text.counter(TaskCounter.MAP_INPUT_RECORDS), bfo.counter(TaskCounter.MAP_INPUT_RECORDS));
        assertTrue(bfo.counter(BfoCounter.FILES) > 0);
    }

    @Test
    void edgeCases() throws Exception {
        Configuration conf = conf();
        assertSameAsText(conf, edge);
        // the same with large files in pieces (lines crossing piece boundaries) and small splits
        conf.setLong(BfoInputConfig.READ_LARGE_FILE, 4096);
        conf.setInt(BfoInputConfig.SPLIT_MAXFILES, 3);
        assertSameAsText(conf, edge);
    }

    @Test
    void edgeCasesThroughTheFileSystemPath() throws Exception {
        // the local files under another scheme: listed and read as on hdfs:, by both formats
        Configuration conf = OtherSchemeFileSystem.register(conf());
        conf.setLong(BfoInputConfig.READ_LARGE_FILE, 5000);
        conf.setLong(BfoInputConfig.FS_BYTES_IN_FLIGHT, 20000);
        conf.setInt(BfoInputConfig.FS_THREADS, 3);
        Path in = OtherSchemeFileSystem.path(edge);
        TestJobs.Result bfo = TestJobs.dump(conf, BatchTextInputFormat.class, work.resolve("out"), in);
        TestJobs.Result text = TestJobs.dump(OtherSchemeFileSystem.register(conf()), TextInputFormat.class,
                work.resolve("out"), in);
        TestJobs.assertSameLines(text.lines(), bfo.lines(), "BatchTextInputFormat (FileSystem path) vs TextInputFormat");
        assertTrue(bfo.counter(BfoCounter.ENGINE_GROUP, "hadoop-fs") > 0);
    }

    @Test
    void customDelimiter() throws Exception {
        Configuration conf = conf();
        conf.set(BfoInputConfig.RECORD_DELIMITER, "||");
        assertSameAsText(conf, delimited);
        conf.set(BfoInputConfig.RECORD_DELIMITER, "\r\n");
        assertSameAsText(conf, edge);
        conf.set(BfoInputConfig.RECORD_DELIMITER, "é");
        assertSameAsText(conf, edge);
    }

    @Test
    void wordCountOnThousandsOfFiles() throws Exception {
        Configuration conf = conf();
        conf.setInt(BfoInputConfig.SPLIT_MAXFILES, 1000);
        Path in = new Path(many.toUri());
        Path out = new Path(work.resolve("out").toUri());
        TestJobs.Result bfo = TestJobs.wordCount(conf, BatchTextInputFormat.class, out, in);
        TestJobs.Result combine = TestJobs.wordCount(conf, CombineTextInputFormat.class, out, in);
        assertTrue(bfo.ok() && combine.ok());
        assertTrue(bfo.lines().size() > 50);
        TestJobs.assertSameLines(combine.lines(), bfo.lines(), "WordCount: BatchText vs CombineText");
        assertEquals(3000, bfo.counter(BfoCounter.FILES));
        long bytes = 0;
        try (var s = Files.walk(many)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s.filter(Files::isRegularFile)::iterator) {
                bytes += Files.size(p);
            }
        }
        assertEquals(bytes, bfo.counter(BfoCounter.BYTES));
        assertEquals(bytes, bfo.counter(FileInputFormatCounter.BYTES_READ), "BYTES_READ: the file bytes (no .crc)");
        assertEquals(3, new BatchTextInputFormat().getSplits(bfo.job()).size(), "3000 files, at most 1000 per split");
    }

    /** TextInputFormat makes one map task per file: a few hundred files keep the local runner quick. */
    @Test
    void wordCountSameAsTextInputFormat() throws Exception {
        Configuration conf = conf();
        Path in = new Path(some.toUri());
        Path out = new Path(work.resolve("out").toUri());
        TestJobs.Result bfo = TestJobs.wordCount(conf, BatchTextInputFormat.class, out, in);
        TestJobs.Result text = TestJobs.wordCount(conf, TextInputFormat.class, out, in);
        assertTrue(bfo.ok() && text.ok());
        TestJobs.assertSameLines(text.lines(), bfo.lines(), "WordCount: BatchText vs Text");
        assertEquals(300, new TextInputFormat().getSplits(text.job()).size());
        assertEquals(1, new BatchTextInputFormat().getSplits(bfo.job()).size());
    }
}

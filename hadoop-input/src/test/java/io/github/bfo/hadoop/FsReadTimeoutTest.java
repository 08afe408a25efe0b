/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.StallingFileSystem;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A file system whose server stops answering in the middle of a split's
 * read (a stalled open, {@link StallingFileSystem}): the record reader fails
 * after bfo.read.fs.timeout, naming the file, instead of waiting on its
 * reads in flight until MapReduce kills the task.
 */
class FsReadTimeoutTest {
    @TempDir
    java.nio.file.Path dir;

    @AfterEach
    void release() {
        StallingFileSystem.release();
    }

    /** Reads every record of the input's splits (one task's work each); returns the count. */
    private static long readAll(Configuration conf, org.apache.hadoop.fs.Path in) throws Exception {
        Job job = Job.getInstance(conf);
        FileInputFormat.addInputPath(job, in);
        BatchTextInputFormat format = new BatchTextInputFormat();
        long n = 0;
        List<InputSplit> splits = format.getSplits(job);
        for (InputSplit s : splits) {
            TaskAttemptContext ctx = new TaskAttemptContextImpl(job.getConfiguration(), new TaskAttemptID());
            try (RecordReader<LongWritable, Text> r = format.createRecordReader(s, ctx)) {
                r.initialize(s, ctx);
                while (r.nextKeyValue()) {
                    n++;
                }
            }
        }
        return n;
    }

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void aStalledReadFailsTheTaskNamingTheFile() throws Exception {
        for (int i = 0; i < 30; i++) {
            TestJobs.write(dir.resolve("in/f" + i), ("line " + i + "\n").repeat(i + 1));
        }
        TestJobs.write(dir.resolve("in/stall-me"), "never read\n");
        Configuration conf = StallingFileSystem.register(new Configuration());
        conf.set(BfoInputConfig.FS_TIMEOUT, "2s");
        IOException e = assertThrows(IOException.class, () -> readAll(conf, StallingFileSystem.path(
                dir.resolve("in"))));
        assertTrue(e.getMessage().startsWith("bfo: no answer from the file system for 2 s while reading "
                + StallingFileSystem.SCHEME + ":" + dir.resolve("in/stall-me")), e.getMessage());
        assertTrue(StallingFileSystem.STALLED.get() > 0);
        // nothing stalls: every record, as through the other scheme without stalls
        java.nio.file.Files.delete(dir.resolve("in/stall-me"));
        assertEquals(30 * 31 / 2, readAll(conf, StallingFileSystem.path(dir.resolve("in"))));
    }
}

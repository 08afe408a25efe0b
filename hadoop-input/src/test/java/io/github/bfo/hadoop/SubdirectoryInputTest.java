/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.OtherSchemeFileSystem;
import io.github.bfo.hadoop.examples.WordCount;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.util.ToolRunner;
import org.apache.log4j.AppenderSkeleton;
import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.spi.LoggingEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An input directory holding subdirectories (issue 34): without
 * {@code input.dir.recursive} the job plans no split for them, as
 * CombineTextInputFormat does, and the client says so in a WARN naming the
 * count and the property; bfo-wordcount reads recursively by default.
 */
class SubdirectoryInputTest {
    @TempDir
    java.nio.file.Path dir;

    /** The WARN lines SplitPlanner logs while body runs. */
    private static List<String> warnings(ThrowingRunnable body) throws Exception {
        List<String> seen = new ArrayList<>();
        AppenderSkeleton a = new AppenderSkeleton() {
            @Override
            protected void append(LoggingEvent e) {
                if (e.getLevel().isGreaterOrEqual(Level.WARN)) {
                    synchronized (seen) {
                        seen.add(e.getRenderedMessage());
                    }
                }
            }

            @Override
            public void close() {
            }

            @Override
            public boolean requiresLayout() {
                return false;
            }
        };
        Logger log = Logger.getLogger(SplitPlanner.class);
        log.addAppender(a);
        try {
            body.run();
        } finally {
            log.removeAppender(a);
        }
        return seen;
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private void tree() throws Exception {
        TestJobs.write(dir.resolve("in/top.txt"), "top level\nalpha\n");
        TestJobs.write(dir.resolve("in/sub1/b.txt"), "in sub1\nbeta\n");
        TestJobs.write(dir.resolve("in/sub2/deep/c.txt"), "deep down\ngamma\n");
        TestJobs.write(dir.resolve("in/_logs/x.txt"), "hidden directory\n");   // hidden: not counted
        TestJobs.write(dir.resolve("only-dirs/d1/e.txt"), "epsilon\n");
        TestJobs.write(dir.resolve("only-dirs/d2/f.txt"), "phi\n");
    }

    private static int splits(Configuration conf, Class<? extends org.apache.hadoop.mapreduce.InputFormat<?, ?>> f,
                              java.nio.file.Path in) throws Exception {
        Job job = Job.getInstance(new Configuration(conf));
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.addInputPath(job, new Path(in.toUri()));
        return org.apache.hadoop.util.ReflectionUtils.newInstance(f, job.getConfiguration()).getSplits(job).size();
    }

    @Test
    void nonRecursiveInputWarnsAndGivesCombineTextsRecords() throws Exception {
        tree();
        Configuration conf = TestJobs.localConf(dir);
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, false);

        // a directory of directories only: no split, as CombineTextInputFormat plans, and a warning
        List<String> w = warnings(() -> assertEquals(splits(conf, CombineTextInputFormat.class,
                dir.resolve("only-dirs")), splits(conf, BatchTextInputFormat.class, dir.resolve("only-dirs"))));
        assertEquals(0, splits(conf, BatchTextInputFormat.class, dir.resolve("only-dirs")));
        assertEquals(1, w.size(), w.toString());
        assertTrue(w.get(0).contains("2 subdirectories"), w.get(0));
        assertTrue(w.get(0).contains(BfoInputConfig.INPUT_DIR_RECURSIVE + "=true"), w.get(0));

        // mixed: the top level's records only, as CombineTextInputFormat's; the two visible subdirectories counted
        List<TestJobs.Result> r = new ArrayList<>();
        w = warnings(() -> r.add(TestJobs.dump(conf, BatchTextInputFormat.class, dir.resolve("out"),
                dir.resolve("in"))));
        TestJobs.Result combine = TestJobs.dump(conf, CombineTextInputFormat.class, dir.resolve("out"),
                dir.resolve("in"));
        assertTrue(r.get(0).ok() && combine.ok());
        TestJobs.assertSameLines(combine.lines(), r.get(0).lines(), "non-recursive records");
        assertEquals(2, combine.lines().size(), combine.lines().toString());
        assertEquals(1, w.size(), w.toString());
        assertTrue(w.get(0).startsWith("BFO: 2 subdirectories of the input skipped"), w.get(0));

        // the FileSystem-API lister (another scheme over the same files) counts them too
        Configuration other = new Configuration(conf);
        OtherSchemeFileSystem.register(other);
        other.set(BfoInputConfig.INPUT_DIR, OtherSchemeFileSystem.path(dir.resolve("in")).toString());
        w = warnings(() -> SplitPlanner.getSplits(other, null));
        assertEquals(1, w.size(), w.toString());
        assertTrue(w.get(0).startsWith("BFO: 2 subdirectories of the input skipped"), w.get(0));

        // recursive: every file, nothing to say
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        w = warnings(() -> r.set(0, TestJobs.dump(conf, BatchTextInputFormat.class, dir.resolve("out"),
                dir.resolve("in"))));
        assertTrue(w.isEmpty(), w.toString());
        combine = TestJobs.dump(conf, CombineTextInputFormat.class, dir.resolve("out"), dir.resolve("in"));
        TestJobs.assertSameLines(combine.lines(), r.get(0).lines(), "recursive records");
        assertEquals(6, combine.lines().size(), combine.lines().toString());
    }

    /** Runs the example's driver as bfo-wordcount does; returns its sorted output. */
    private List<String> wordCount(Configuration conf, String... args) throws Exception {
        assertEquals(0, ToolRunner.run(new Configuration(conf), new WordCount(), args), String.join(" ", args));
        return TestJobs.readOutput(new Path(args[args.length - 1]), conf);
    }

    @Test
    void wordCountReadsRecursivelyByDefault() throws Exception {
        tree();
        Configuration conf = TestJobs.localConf(dir);
        conf.unset(BfoInputConfig.INPUT_DIR_RECURSIVE);
        String in = dir.resolve("in").toUri().toString();
        List<String> bfo = wordCount(conf, "--input-format", "bfo", in, dir.resolve("wc-bfo").toUri().toString());
        List<String> combine = wordCount(conf, "--input-format", "combine", in,
                dir.resolve("wc-combine").toUri().toString());
        TestJobs.assertSameLines(combine, bfo, "recursive by default");
        assertTrue(bfo.contains("gamma\t1") && bfo.contains("beta\t1") && bfo.contains("alpha\t1"), bfo.toString());
        assertFalse(bfo.contains("hidden\t1"), bfo.toString());

        // asked not to: the top level only, as CombineTextInputFormat
        String off = "-D" + BfoInputConfig.INPUT_DIR_RECURSIVE + "=false";
        bfo = wordCount(conf, off, "--input-format", "bfo", in, dir.resolve("wc-bfo-top").toUri().toString());
        combine = wordCount(conf, off, "--input-format", "combine", in,
                dir.resolve("wc-combine-top").toUri().toString());
        TestJobs.assertSameLines(combine, bfo, "top level only");
        assertTrue(bfo.contains("alpha\t1") && !bfo.contains("gamma\t1") && !bfo.contains("beta\t1"), bfo.toString());
    }
}

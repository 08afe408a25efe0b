/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.OutputTrees.Meta;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileOutputFormat;
import org.apache.hadoop.mapred.InvalidJobConfException;
import org.apache.hadoop.mapred.JobClient;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.SequenceFileInputFormat;
import org.apache.hadoop.mapred.lib.IdentityMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BatchFileOutputFormat on the local disk (libbfo batches, published through
 * a guarded tree), against the plain path; and what only the local disk has:
 * a symbolic link planted in OUT, the old (mapred) API's job.
 */
class LocalOutputTest extends OutputContractTest {
    @TempDir
    static java.nio.file.Path work;
    static Configuration conf;
    static final AtomicInteger DIRS = new AtomicInteger();

    @BeforeAll
    static void setUp() {
        conf = TestJobs.localConf(work);
    }

    @Override
    Configuration conf() {
        return conf;
    }

    @Override
    Path fresh(String name) {
        return new Path(work.resolve("out").resolve(name + "-" + DIRS.incrementAndGet()).toUri());
    }

    /**
     * A symbolic link planted in OUT before the job commit, where a directory of the output goes: the commit
     * fails naming it, nothing is written where it points, and the abort leaves the link (not the job's).
     */
    @Test
    void aLinkPlantedInTheOutputIsNotFollowed() throws Exception {
        Path out = fresh("link");
        java.nio.file.Path elsewhere = Files.createDirectories(work.resolve("elsewhere-" + DIRS.incrementAndGet()));
        OutputRun run = bfo(out, 1);
        run.setupJob();
        OutputRun.Attempt a = run.attempt(0, 0);
        a.write("d1/f", new byte[] {1});
        a.write("top", new byte[] {2});
        a.close();
        a.commit();
        java.nio.file.Path local = java.nio.file.Path.of(out.toUri());
        Files.createSymbolicLink(local.resolve("d1"), elsewhere);
        Exception x = assertThrows(IOException.class, run::commitJob);
        assertTrue(x.toString().contains(local.resolve("d1").toString()), x.toString());
        assertEquals(List.of(), List.of(elsewhere.toFile().list()), "nothing written through the link");
        run.abortJob();
        assertTrue(Files.isSymbolicLink(local.resolve("d1")), "the link (not the job's) is left");
        assertNothingLeft(out, "after the abort");
    }

    /** The old API: a JobClient job with the mapred format and committer, against the plain path's tree. */
    @Test
    void theMapredApiWritesTheSameTree() throws Exception {
        Map<String, byte[]> files = OutputTrees.files(30, 7);
        Path seq = new Path(work.resolve("mapred-" + DIRS.incrementAndGet() + ".seq").toUri());
        try (org.apache.hadoop.io.SequenceFile.Writer w = org.apache.hadoop.io.SequenceFile.createWriter(conf,
                org.apache.hadoop.io.SequenceFile.Writer.file(seq),
                org.apache.hadoop.io.SequenceFile.Writer.keyClass(Text.class),
                org.apache.hadoop.io.SequenceFile.Writer.valueClass(BytesWritable.class))) {
            for (Map.Entry<String, byte[]> e : files.entrySet()) {
                w.append(new Text(e.getKey()), new BytesWritable(e.getValue()));
            }
        }
        Path out = fresh("mapred");
        JobConf job = new JobConf(conf);
        job.setInputFormat(SequenceFileInputFormat.class);
        org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, seq);
        job.setMapperClass(IdentityMapper.class);
        job.setNumReduceTasks(0);
        job.setOutputKeyClass(Text.class);
        job.setOutputValueClass(BytesWritable.class);
        job.setOutputFormat(io.github.bfo.hadoop.mapred.BatchFileOutputFormat.class);
        FileOutputFormat.setOutputPath(job, out);
        Exception x = assertThrows(InvalidJobConfException.class, () -> JobClient.runJob(job));
        assertTrue(x.getMessage().contains("setOutputCommitter"), x.getMessage());
        assertFalse(fs(out).exists(out), "refused before anything ran");
        job.setOutputCommitter(io.github.bfo.hadoop.mapred.BatchFileOutputCommitter.class);
        assertTrue(JobClient.runJob(job).isSuccessful());
        assertEquals(expected(files), OutputTrees.tree(fs(out), out, Meta.NONE));
        assertEquals(plainTree(files, 1, Meta.MODE), OutputTrees.tree(fs(out), out, Meta.MODE));
        assertNothingLeft(out, "mapred");
    }
}

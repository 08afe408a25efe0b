/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.S3Server;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * BatchFileOutputFormat on S3 (s3proxy, a real S3 server in a process of its
 * own, through S3A): multipart uploads left pending by the tasks and
 * completed at the job commit; what an attempt or a job leaves pending is
 * listed with the S3 API and must be nothing. S3 keeps no mode or time.
 */
class S3OutputTest extends OutputContractTest {
    @TempDir
    static java.nio.file.Path work;
    static S3Server s3;
    static Configuration conf;
    static final AtomicInteger DIRS = new AtomicInteger();

    @BeforeAll
    static void start() throws Exception {
        s3 = new S3Server();
        conf = TestJobs.localConf(work);
        s3.conf().forEach(conf::set);
    }

    @AfterAll
    static void stop() throws Exception {
        if (s3 != null) {
            s3.close();
        }
    }

    @Override
    Configuration conf() {
        return conf;
    }

    @Override
    Path fresh(String name) {
        return new Path(s3.uri("/out/" + name + "-" + DIRS.incrementAndGet()));
    }

    @Override
    boolean keepsMetadata() {
        return false;
    }

    @Override
    List<String> pendingUploads(Path dir) {
        return s3.pendingUploads(dir.toUri().getPath().substring(1) + "/");
    }

    /** Uploads go to their files' names: before the retries start, every pending one is the killed attempt's. */
    @Override
    long killedStaged(List<String> staged) {
        return staged.stream().filter(n -> !n.startsWith("_temporary")).count();
    }

    private static long counter(Path p, String name) throws Exception {
        org.apache.hadoop.fs.statistics.IOStatistics st = ((org.apache.hadoop.fs.statistics.IOStatisticsSource)
                p.getFileSystem(conf)).getIOStatistics();
        Long v = st.counters().get(name);
        return v == null ? 0 : v;
    }

    /**
     * Each file is one multipart upload, initiated by its task and completed by the job: no file is copied;
     * the one copy per task is its report's, made the task's at its commit (S3A's rename).
     */
    @Test
    void eachFileIsOneUploadAndNothingIsCopied() throws Exception {
        java.util.Map<String, byte[]> files = OutputTrees.files(30, 8);
        Path out = fresh("requests");
        long copies = counter(out, "object_copy_requests");
        long initiated = counter(out, "object_multipart_initiated");
        bfo(out, 2).run(files, 2);
        assertEquals(files.size(), counter(out, "object_multipart_initiated") - initiated, "uploads initiated");
        assertEquals(2, counter(out, "object_copy_requests") - copies, "objects copied: the 2 tasks' reports");
        assertEquals(expected(files), OutputTrees.tree(fs(out), out, OutputTrees.Meta.NONE));
    }
}

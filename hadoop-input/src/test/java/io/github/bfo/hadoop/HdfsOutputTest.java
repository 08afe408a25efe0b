/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

import java.util.concurrent.atomic.AtomicInteger;

/** BatchFileOutputFormat on HDFS (MiniDFSCluster, 2 DataNodes): many streams in flight, renames at the commit. */
class HdfsOutputTest extends OutputContractTest {
    @TempDir
    static java.nio.file.Path work;
    static MiniDFSCluster cluster;
    static Configuration conf;
    static final AtomicInteger DIRS = new AtomicInteger();

    @BeforeAll
    static void start() throws Exception {
        Configuration c = new Configuration();
        c.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, work.resolve("dfs").toString());
        c.setInt("dfs.replication", 2);
        c.setInt("dfs.namenode.handler.count", 4);
        cluster = new MiniDFSCluster.Builder(c).numDataNodes(2).format(true).build();
        cluster.waitActive();
        conf = TestJobs.localConf(work);
        conf.set("fs.defaultFS", cluster.getFileSystem().getUri().toString());
        // a small file's close polls the NameNode after 10 ms, not 400 (the test's time, not its result)
        conf.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 10);
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.shutdown();
        }
    }

    @Override
    Configuration conf() {
        return conf;
    }

    @Override
    Path fresh(String name) throws java.io.IOException {
        return new Path(cluster.getFileSystem().getUri() + "/out/" + name + "-" + DIRS.incrementAndGet());
    }
}

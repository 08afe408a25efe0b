/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * An HDFS in the test JVM (Hadoop's MiniDFSCluster, from the shaded
 * hadoop-client-minicluster that matches Spark's hadoop-client-api), on
 * 127.0.0.1, with its storage under a temporary directory removed on close.
 */
final class MiniDfs implements AutoCloseable {
    private final Path base;
    private final MiniDFSCluster cluster;

    /** dataNodes DataNodes; each block kept replication times. */
    MiniDfs(int dataNodes, int replication) throws IOException {
        base = Files.createTempDirectory("bfo-minidfs");
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.toString());
        conf.setInt("dfs.replication", replication);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        // a stopped DataNode is not waited for: the client goes to the next replica, or fails the read
        conf.setInt("dfs.client.retry.window.base", 10);
        conf.setInt("dfs.client.max.block.acquire.failures", 1);
        cluster = new MiniDFSCluster.Builder(conf).numDataNodes(dataNodes).build();
        cluster.waitActive();
    }

    /** hdfs://127.0.0.1:PORT */
    String uri() {
        return "hdfs://127.0.0.1:" + cluster.getNameNodePort();
    }

    FileSystem fs() throws IOException {
        return cluster.getFileSystem();
    }

    /** Stops DataNode i (its blocks are then read from another replica, or not at all). */
    void stopDataNode(int i) {
        cluster.stopDataNode(i);
    }

    @Override
    public void close() throws IOException {
        try {
            cluster.shutdown(true);   // removes its storage under base
        } finally {
            Files.deleteIfExists(base);
        }
    }
}

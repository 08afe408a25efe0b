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
public final class MiniDfs implements AutoCloseable {
    /**
     * HDFS client settings for tests: a block whose replicas are all gone fails after one short wait, not
     * after Hadoop's three growing ones (about 20 s per file); a file's close() polls the NameNode after
     * 10 ms, not 400. Spark's tasks make their own clients, from the session's Hadoop configuration: set these
     * there too.
     */
    public static final java.util.Map<String, String> CLIENT = java.util.Map.of(
            "dfs.client.retry.window.base", "10",
            "dfs.client.max.block.acquire.failures", "1",
            "dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "10");

    private final Path base;
    private final boolean temporary;
    private final MiniDFSCluster cluster;

    /** dataNodes DataNodes; each block kept replication times; storage in a temporary directory. */
    public MiniDfs(int dataNodes, int replication) throws IOException {
        this(Files.createTempDirectory("bfo-minidfs"), true, dataNodes, replication, true);
    }

    /**
     * An HDFS whose storage stays in base (the S1 benchmark loads its set once and starts on it again in each
     * run's JVM): format makes it new, else what base holds is served.
     */
    public MiniDfs(Path base, boolean format, int dataNodes, int replication) throws IOException {
        this(base, false, dataNodes, replication, format);
    }

    private MiniDfs(Path base, boolean temporary, int dataNodes, int replication, boolean format)
            throws IOException {
        this.base = base;
        this.temporary = temporary;
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.toString());
        conf.setInt("dfs.replication", replication);
        conf.set("dfs.namenode.rpc-bind-host", "127.0.0.1");
        conf.set("dfs.datanode.address", "127.0.0.1:0");
        conf.set("dfs.datanode.http.address", "127.0.0.1:0");
        conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
        conf.set("dfs.namenode.http-address", "127.0.0.1:0");
        CLIENT.forEach(conf::set);
        // close() returns once the last block is committed, not after the DataNode's report of it reached the
        // NameNode: without it each file's close() sleeps 400 ms or more (creating 2,000 files took minutes)
        conf.setInt("dfs.namenode.file.close.num-committed-allowed", 1);
        // an idle connection stays open however slow the machine (BfoHdfsReadTest.manyFilesKeepTheirConnections)
        conf.setLong("dfs.datanode.socket.reuse.keepalive", 600_000);
        cluster = new MiniDFSCluster.Builder(conf).numDataNodes(dataNodes).format(format).build();
        cluster.waitActive();
    }

    /** hdfs://127.0.0.1:PORT */
    public String uri() {
        return "hdfs://127.0.0.1:" + cluster.getNameNodePort();
    }

    public FileSystem fs() throws IOException {
        return cluster.getFileSystem();
    }

    /** Stops the DataNode at host:port (its blocks are then read from another replica, or not at all). */
    public void stopDataNode(String name) {
        if (cluster.stopDataNode(name) == null) {
            throw new IllegalArgumentException("no DataNode " + name);
        }
    }

    @Override
    public void close() throws IOException {
        if (!temporary) {
            // not shutdown(): even without deleting, it marks base to be deleted when the JVM exits
            cluster.shutdownDataNodes();
            cluster.shutdownNameNodes();
            return;
        }
        try {
            cluster.shutdown(true);   // removes its storage under base
        } finally {
            Files.deleteIfExists(base);
        }
    }
}

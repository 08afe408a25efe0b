/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;

/**
 * The cluster of {@link YarnClusterIT}: an HDFS (one DataNode) and YARN with
 * MapReduce (one NodeManager, a JobHistoryServer) in a JVM of their own, whose
 * classpath is Hadoop's alone, as on a real cluster. Usage: {@code BASE CONF};
 * the storage goes below BASE (the working directory too), the clients'
 * configuration is written to CONF (atomically, once the cluster is up), and
 * the cluster runs until standard input closes, so it never outlives the test.
 */
public final class MiniClusterMain {
    private MiniClusterMain() {
    }

    public static void main(String[] args) throws Exception {
        File base = new File(args[0]);
        File confOut = new File(args[1]);
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(base, "dfs").getPath());
        conf.setInt("dfs.namenode.handler.count", 4);
        // An almost full disk (a CI machine's) would take the NodeManager's only local dir out of service.
        conf.setBoolean("yarn.nodemanager.disk-health-checker.enable", false);
        // A JVM reserves far more virtual memory than YARN's default 2.1 ratio allows.
        conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).format(true).build();
        dfs.waitActive();
        conf.set("fs.defaultFS", dfs.getFileSystem().getUri().toString());
        MiniMRYarnCluster mr = new MiniMRYarnCluster("bfo-yarn", 1);
        mr.init(conf);
        mr.start();
        write(mr.getConfig(), confOut);
        System.out.println("cluster up: " + conf.get("fs.defaultFS"));
        while (System.in.read() != -1) {
            // runs until the test closes our standard input (or dies)
        }
        mr.stop();
        dfs.shutdown();
        System.exit(0);
    }

    private static void write(Configuration conf, File to) throws IOException {
        File tmp = new File(to.getPath() + ".tmp");
        try (OutputStream out = new FileOutputStream(tmp)) {
            conf.writeXml(out);
        }
        Files.move(tmp.toPath(), to.toPath(), StandardCopyOption.ATOMIC_MOVE);
    }
}

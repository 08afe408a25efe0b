/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.fs.ReadFileSystems;
import io.github.bfo.testsupport.CountingSocketFactory;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter;
import org.apache.hadoop.mapreduce.lib.input.TextInputFormat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The FileSystem-API path on a real in-process HDFS (MiniDFSCluster, 2
 * datanodes): the same WordCount output as CombineTextInputFormat and
 * TextInputFormat, the splits carry datanode locations, and BYTES_READ
 * counts the bytes the prefetch threads read.
 */
class MiniDfsTest {
    @TempDir
    static java.nio.file.Path work;
    static MiniDFSCluster cluster;
    static FileSystem fs;
    static long inputBytes;

    @BeforeAll
    static void start() throws Exception {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, work.resolve("dfs").toString());
        conf.setInt("dfs.replication", 2);
        conf.setLong("dfs.blocksize", 1 << 20);
        conf.setInt("dfs.namenode.handler.count", 2);
        conf.setInt("dfs.datanode.handler.count", 2);
        // an idle DataNode connection stays open however slow the machine (readsReuseDataNodeConnections)
        conf.setLong("dfs.datanode.socket.reuse.keepalive", 600_000);
        cluster = new MiniDFSCluster.Builder(conf).numDataNodes(2).format(true).build();
        cluster.waitActive();
        fs = cluster.getFileSystem();
        // small files, CRLF, no trailing newline, gzip, a multi-block file
        java.nio.file.Path local = work.resolve("local");
        TestData.manyFiles(local, 300, 9);
        TestJobs.write(local.resolve("extra/data.gz"), TestData.gzip(TestData.utf8("gz one\ngz two\r\n")));
        TestJobs.write(local.resolve("extra/big.txt"), TestData.prose(new Random(1), 60_000, "\n"));
        TestJobs.write(local.resolve("extra/empty.txt"), new byte[0]);
        try (var s = Files.walk(local)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s.filter(Files::isRegularFile)::iterator) {
                byte[] b = Files.readAllBytes(p);
                inputBytes += b.length;
                try (FSDataOutputStream o = fs.create(new Path("/input/" + local.relativize(p)))) {
                    o.write(b);
                }
            }
        }
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.shutdown();
        }
    }

    private static Configuration conf() {
        Configuration conf = TestJobs.localConf(work);
        conf.set("fs.defaultFS", fs.getUri().toString());
        conf.set("mapreduce.jobtracker.staging.root.dir", "/tmp/staging");
        conf.setInt("mapreduce.local.map.tasks.maximum", 1);   // JVM-wide FileSystem statistics: one task at a time
        return conf;
    }

    @Test
    void wordCountOnHdfs() throws Exception {
        Configuration conf = conf();
        conf.setLong(BfoInputConfig.READ_LARGE_FILE, 256 * 1024);   // the big file in pieces
        // ... of the batch: a split size above the big file keeps it whole (CombineFileInputFormat ignores it)
        conf.setLong(BfoInputConfig.SPLIT_MINSIZE, 64L << 20);
        conf.setLong(BfoInputConfig.FS_BYTES_IN_FLIGHT, 1 << 20);
        conf.setInt(BfoInputConfig.SPLIT_MAXFILES, 150);
        Path in = new Path(fs.getUri() + "/input");
        Path out = new Path(fs.getUri() + "/out");
        TestJobs.Result bfo = TestJobs.wordCount(conf, BatchTextInputFormat.class, out, in);
        TestJobs.Result combine = TestJobs.wordCount(conf, CombineTextInputFormat.class, out, in);
        assertTrue(bfo.ok() && combine.ok());
        TestJobs.assertSameLines(combine.lines(), bfo.lines(), "HDFS WordCount: BatchText vs CombineText");
        assertEquals(303, bfo.counter(BfoCounter.ENGINE_GROUP, "hadoop-fs"), "all files through the FileSystem API");
        assertEquals(inputBytes, bfo.counter(BfoCounter.BYTES));
        long read = bfo.counter(FileInputFormatCounter.BYTES_READ);
        assertTrue(read >= inputBytes && read < inputBytes * 12 / 10, "BYTES_READ " + read + " for " + inputBytes);

        List<BatchFileSplit> splits = SplitPlanner.getSplits(bfo.job().getConfiguration(), null);
        assertTrue(splits.size() >= 3, splits.size() + " splits");
        java.util.Set<String> hosts = new java.util.HashSet<>();
        for (org.apache.hadoop.hdfs.server.datanode.DataNode dn : cluster.getDataNodes()) {
            hosts.add(dn.getDatanodeId().getHostName());
            hosts.add(dn.getDatanodeId().getIpAddr());
        }
        for (BatchFileSplit s : splits) {
            assertTrue(s.getLocations().length > 0);
            for (String h : s.getLocations()) {
                assertTrue(hosts.contains(h), h + " is a datanode");
            }
        }
    }

    @Test
    void recordsOnHdfsSameAsTextInputFormat() throws Exception {
        Configuration conf = conf();
        Path in = new Path(fs.getUri() + "/input/extra");
        TestJobs.Result bfo = dumpHdfs(conf, BatchTextInputFormat.class, in);
        TestJobs.Result text = dumpHdfs(conf, TextInputFormat.class, in);
        TestJobs.assertSameLines(text.lines(), bfo.lines(), "HDFS records: BatchText vs Text");
        // the multi-block file is cut at its 1 MiB blocks, as TextInputFormat cuts it, on the blocks' datanodes
        int textSplits = new TextInputFormat().getSplits(text.job()).size() - 2;   // data.gz and empty.txt: 1 each
        assertTrue(textSplits >= 2, textSplits + " splits of big.txt");
        assertEquals(textSplits, bfo.counter(BfoCounter.LARGE_FILE_SPLITS));
        assertEquals(0, bfo.counter("test", "BAD_INPUT_FILE"));
        java.util.Set<String> hosts = new java.util.HashSet<>();
        for (org.apache.hadoop.hdfs.server.datanode.DataNode dn : cluster.getDataNodes()) {
            hosts.add(dn.getDatanodeId().getHostName());
        }
        int cut = 0;
        for (org.apache.hadoop.mapreduce.InputSplit s : new BatchTextInputFormat().getSplits(bfo.job())) {
            if (s instanceof org.apache.hadoop.mapreduce.lib.input.FileSplit) {
                cut++;
                assertTrue(hosts.containsAll(java.util.List.of(s.getLocations())), s + " on datanodes");
                assertEquals(2, s.getLocations().length, "the hosts of the block's 2 replicas");
            }
        }
        assertEquals(textSplits, cut);
    }

    private static TestJobs.Result dumpHdfs(Configuration base, Class<? extends org.apache.hadoop.mapreduce.InputFormat<?, ?>>
            format, Path in) throws Exception {
        org.apache.hadoop.mapreduce.Job job = org.apache.hadoop.mapreduce.Job.getInstance(new Configuration(base));
        job.setInputFormatClass(format);
        org.apache.hadoop.mapreduce.lib.input.FileInputFormat.addInputPath(job, in);
        job.setMapperClass(TestJobs.DumpMapper.class);
        job.setReducerClass(TestJobs.DumpReducer.class);
        job.setOutputKeyClass(org.apache.hadoop.io.Text.class);
        job.setOutputValueClass(org.apache.hadoop.io.Text.class);
        Path out = new Path(fs.getUri() + "/dump-" + format.getSimpleName());
        org.apache.hadoop.mapreduce.lib.output.FileOutputFormat.setOutputPath(job, out);
        boolean ok = job.waitForCompletion(false);
        assertTrue(ok);
        return new TestJobs.Result(job, ok, TestJobs.readOutput(out, base));
    }

    /**
     * Many small files read at once through ReadFileSystems: the same bytes as the local copies, and every
     * DataNode connection made is kept for the next reads (with HDFS's default of 16, 53-63 sockets were made
     * here for these 1,208 reads, 23 at a time, and at most 16 kept); a capacity the user
     * chose, and other schemes, get Hadoop's cached instance; close() closes only the reader's own.
     */
    @Test
    void readsReuseDataNodeConnections() throws Exception {
        Configuration conf = conf();
        CountingSocketFactory.register(conf);
        conf.setLong("dfs.client.socketcache.expiryMsec", 600_000);   // no idle connection expires mid-test
        java.nio.file.Path local = work.resolve("local");
        List<java.nio.file.Path> files;
        try (var s = Files.walk(local)) {
            files = s.filter(Files::isRegularFile).filter(f -> f.toFile().length() < (1 << 20)).toList();
        }
        int inFlight = 23;   // a capacity no other reader of this JVM uses: this test's conf makes its client context
        ReadFileSystems rfs = new ReadFileSystems(conf, inFlight);
        Path first = new Path(fs.getUri() + "/input/" + local.relativize(files.get(0)));
        FileSystem own = rfs.get(first);
        assertTrue(own != FileSystem.get(fs.getUri(), conf), "an instance of the reader's own");
        assertEquals(ReadFileSystems.peerCapacity(inFlight), own.getConf().getInt(ReadFileSystems.PEER_CACHE, 0));
        assertTrue(ReadFileSystems.peerCapacity(inFlight) >= inFlight * 2);
        org.apache.hadoop.hdfs.PeerCache cache = ((org.apache.hadoop.hdfs.DistributedFileSystem) own).getClient()
                .getClientContext().getPeerCache();
        int cachedBefore = cache.size();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(inFlight);
        try {
            int before = CountingSocketFactory.made();
            List<java.util.concurrent.Future<?>> reads = new java.util.ArrayList<>();
            for (int round = 0; round < 4; round++) {
                for (java.nio.file.Path f : files) {
                    Path p = new Path(fs.getUri() + "/input/" + local.relativize(f));
                    reads.add(pool.submit(() -> {
                        byte[] want = Files.readAllBytes(f);
                        byte[] got = new byte[want.length];
                        try (var in = rfs.get(p).open(p)) {
                            in.readFully(0, got);   // a positional read, as FsPieceSource reads
                        }
                        assertTrue(java.util.Arrays.equals(want, got), p + ": same bytes as the local copy");
                        return null;
                    }));
                }
            }
            for (java.util.concurrent.Future<?> r : reads) {
                r.get();
            }
            int made = CountingSocketFactory.made() - before;
            int kept = cache.size() - cachedBefore;
            // every DataNode connection made is kept for the next reads (the one more: the NameNode's), and
            // there are no more than the reads in flight can hold at once: not one per read (files x 4)
            assertTrue(made <= kept + 1, made + " sockets made for " + reads.size() + " reads, " + inFlight
                    + " at once, " + kept + " kept for the next reads");
            assertTrue(kept <= inFlight * cluster.getDataNodes().size(), kept + " connections kept");
        } finally {
            pool.shutdownNow();
        }

        Configuration chosen = new Configuration(conf);
        chosen.setInt(ReadFileSystems.PEER_CACHE, 7);
        try (ReadFileSystems user = new ReadFileSystems(chosen, inFlight)) {
            assertTrue(user.get(first) == FileSystem.get(fs.getUri(), chosen), "the user's capacity: Hadoop's instance");
            Path lf = new Path(files.get(0).toUri());
            assertTrue(user.get(lf) == lf.getFileSystem(chosen), "file: goes to Hadoop's instance");
        }
        rfs.close();
        assertThrows(java.io.IOException.class, () -> own.open(first), "the reader's own instance is closed");
        assertThrows(java.io.IOException.class, () -> rfs.get(first), "a closed reader opens nothing");
        try (var in = fs.open(first)) {
            assertEquals(Files.size(files.get(0)), in.readAllBytes().length, "Hadoop's instance still reads");
        }
    }
}

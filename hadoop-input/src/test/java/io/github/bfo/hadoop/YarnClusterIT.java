/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.examples.ExampleDriver;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Cluster;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobID;
import org.apache.hadoop.mapreduce.JobStatus;
import org.apache.hadoop.mapreduce.TaskCompletionEvent;
import org.apache.hadoop.security.UserGroupInformation;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * WordCount with BatchTextInputFormat on a YARN cluster (MiniDFSCluster and
 * MiniMRYarnCluster in a JVM of their own, {@link MiniClusterMain}), map tasks
 * in container JVMs whose classpath is Hadoop's alone: bfo-java, libbfo and
 * JNA (and bfo-hadoop-fs) reach them only as a user ships them, in the {@code -job} jar or with
 * {@code -libjars} beside the plain jar. Input: a local {@code file:}
 * directory of small files and its {@code hdfs:} copy; every output equals
 * CombineTextInputFormat's on the same cluster. Run as root, the cluster runs
 * as nobody, so the tasks have no access to the block device, as on most
 * clusters: the engine counters must show the unprivileged engines.
 */
class YarnClusterIT {
    private static final int FILES = 400;
    private static final String NOBODY = "nobody";
    private static final long MAX_SPLIT = 96 * 1024;   // several map tasks, bfo and combine alike

    static java.nio.file.Path base;
    static Process cluster;
    static OutputStream clusterStdin;
    static Configuration conf;
    static UserGroupInformation user;
    static Path localInput;
    static Path hdfsInput;
    static List<String> reference;

    @BeforeAll
    static void start() throws Exception {
        boolean root = "root".equals(System.getProperty("user.name"));
        base = Files.createTempDirectory("bfo-yarn-it-");
        java.nio.file.Path lib = base.resolve("lib");
        List<String> hadoopJars = linkJars(lib);
        copyTree(java.nio.file.Path.of(property("bfo.it.testClasses")), lib.resolve("test-classes"));
        java.nio.file.Path in = base.resolve("input");
        TestData.manyFiles(in, FILES, 21);
        if (root) {
            chownTree(base, NOBODY);
        }
        cluster = startCluster(root, lib, hadoopJars);
        clusterStdin = cluster.getOutputStream();
        conf = clientConf(waitForConf(base.resolve("cluster.xml")), hadoopJars);
        user = root ? UserGroupInformation.createRemoteUser(NOBODY) : UserGroupInformation.getCurrentUser();
        localInput = new Path(in.toUri());
        hdfsInput = new Path(FileSystem.getDefaultUri(conf).toString() + "/input");
        as(() -> {
            // the NameNode runs as the cluster's user: the HDFS superuser writes the copy
            FileSystem fs = hdfsInput.getFileSystem(conf);
            fs.copyFromLocalFile(false, true, localInput, hdfsInput);
            return null;
        });
        JobRun combine = wordCount("combine", property("bfo.it.jar"), null, localInput, "/out/combine");
        assertTrue(combine.ok(), "CombineTextInputFormat on the cluster");
        reference = combine.lines();
        long words = reference.stream().mapToLong(l -> Long.parseLong(l.substring(l.indexOf('\t') + 1))).sum();
        assertTrue(reference.size() > 50 && words > 10L * FILES, reference.size() + " words, " + words + " in all");
    }

    @AfterAll
    static void stop() throws Exception {
        if (cluster != null) {
            clusterStdin.close();   // MiniClusterMain stops both clusters and exits
            if (!cluster.waitFor(120, TimeUnit.SECONDS)) {
                cluster.destroyForcibly().waitFor();
            }
        }
        if (base != null) {
            try (Stream<java.nio.file.Path> s = Files.walk(base)) {
                s.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** The job jar alone carries bfo-java, libbfo and JNA; local input, read by the native engine as nobody. */
    @Test
    void jobJarOnLocalInput() throws Exception {
        JobRun bfo = wordCount("bfo", property("bfo.it.jobJar"), null, localInput, "/out/bfo-local");
        assertTrue(bfo.ok(), "the job failed");
        TestJobs.assertSameLines(reference, bfo.lines(), "YARN, file: input, job jar: BatchText vs CombineText");
        assertEquals(FILES, bfo.counters().findCounter(BfoCounter.FILES).getValue());
        long engines = 0;
        for (String e : new String[] {"raw", "uring", "portable", "java", "hadoop-fs"}) {
            engines += bfo.counter(BfoCounter.ENGINE_GROUP, e);
        }
        assertEquals(FILES, engines, "every file counted under one engine");
        assertEquals(0, bfo.counter(BfoCounter.ENGINE_GROUP, "hadoop-fs"), "file: input goes through bfo-java");
        if (!"root".equals(clusterUser())) {
            // no block device for an unprivileged task: the raw engine must not have been chosen
            assertEquals(0, bfo.counter(BfoCounter.ENGINE_GROUP, "raw"), "tasks without root");
        }
        System.out.printf("file: input in containers as %s: engines raw %d, uring %d, portable %d, java %d%n",
                clusterUser(), bfo.counter(BfoCounter.ENGINE_GROUP, "raw"),
                bfo.counter(BfoCounter.ENGINE_GROUP, "uring"), bfo.counter(BfoCounter.ENGINE_GROUP, "portable"),
                bfo.counter(BfoCounter.ENGINE_GROUP, "java"));
    }

    /**
     * The plain jar with {@code -libjars bfo-hadoop-fs.jar,bfo-java.jar,jna.jar}; HDFS input, read through the
     * FileSystem API.
     */
    @Test
    void libjarsOnHdfsInput() throws Exception {
        String libjars = Files.readString(java.nio.file.Path.of(property("bfo.it.libjars"))).trim();
        String[] jars = libjars.split(",");
        assertEquals(3, jars.length, "bfo-hadoop-fs, bfo-java and jna: " + libjars);
        for (String j : jars) {
            assertTrue(j.endsWith(".jar") && Files.isRegularFile(java.nio.file.Path.of(j)), j);
        }
        JobRun bfo = wordCount("bfo", property("bfo.it.jar"), libjars, hdfsInput, "/out/bfo-hdfs");
        assertTrue(bfo.ok(), "the job failed");
        TestJobs.assertSameLines(reference, bfo.lines(), "YARN, hdfs: input, -libjars: BatchText vs CombineText");
        assertEquals(FILES, bfo.counter(BfoCounter.ENGINE_GROUP, "hadoop-fs"), "all files through the FileSystem API");
    }

    /** Without bfo on the containers' classpath the job must fail: otherwise the two tests above prove nothing. */
    @Test
    void plainJarAloneFails() throws Exception {
        JobRun bfo = wordCount("bfo", property("bfo.it.jar"), null, hdfsInput, "/out/bfo-nolibs",
                "mapreduce.map.maxattempts=1");
        assertFalse(bfo.ok(), "a task found bfo-java without the job jar or -libjars");
        assertTrue(bfo.diagnostics().contains("io/github/bfo/") || bfo.diagnostics().contains("io.github.bfo."),
                "failed for want of bfo-java: " + bfo.diagnostics());
    }

    /**
     * Unpack with BatchFileOutputFormat from the job jar, SequenceFile input on HDFS, output on HDFS; the first
     * attempt of the first task is killed in the middle of its writes (some of its files staged, the attempt
     * waiting, {@link PausingUnpackMapper}): the retry's files are published, nothing of the killed attempt is
     * left, and the tree equals the plain path's (the same job with FileSystem.create per record).
     */
    @Test
    void unpackSurvivesATaskKilledMidWrite() throws Exception {
        java.util.Map<String, byte[]> files = OutputTrees.files(240, 11);
        String fsUri = FileSystem.getDefaultUri(conf).toString();
        Path seq = new Path(fsUri + "/unpack-in/records.seq");
        Path marks = new Path(fsUri + "/unpack-marks");
        java.nio.file.Path mapperJar = base.resolve("pausing-mapper.jar");
        jarOf(mapperJar, PausingUnpackMapper.class);
        as(() -> {
            FileSystem fs = seq.getFileSystem(conf);
            fs.mkdirs(marks);
            try (org.apache.hadoop.io.SequenceFile.Writer w = org.apache.hadoop.io.SequenceFile.createWriter(conf,
                    org.apache.hadoop.io.SequenceFile.Writer.file(seq),
                    org.apache.hadoop.io.SequenceFile.Writer.keyClass(org.apache.hadoop.io.Text.class),
                    org.apache.hadoop.io.SequenceFile.Writer.valueClass(org.apache.hadoop.io.BytesWritable.class))) {
                for (java.util.Map.Entry<String, byte[]> e : files.entrySet()) {
                    w.append(new org.apache.hadoop.io.Text(e.getKey()), new org.apache.hadoop.io.BytesWritable(e.getValue()));
                }
            }
            return null;
        });
        Path bfoOut = new Path(fsUri + "/out/unpack-bfo");
        boolean ok = as(() -> {
            Job job = Job.getInstance(new Configuration(conf), "unpack, a task killed mid-write");
            job.getConfiguration().set("mapreduce.job.jar", property("bfo.it.jobJar"));
            job.getConfiguration().set("tmpjars", mapperJar.toUri().toString());
            job.getConfiguration().set(PausingUnpackMapper.MARKS, marks.toString());
            job.getConfiguration().setLong("mapreduce.input.fileinputformat.split.maxsize", 200_000);
            job.setInputFormatClass(org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat.class);
            org.apache.hadoop.mapreduce.lib.input.FileInputFormat.addInputPath(job, seq);
            job.setMapperClass(PausingUnpackMapper.class);
            job.setNumReduceTasks(0);
            job.setOutputKeyClass(org.apache.hadoop.io.Text.class);
            job.setOutputValueClass(org.apache.hadoop.io.BytesWritable.class);
            job.setOutputFormatClass(BatchFileOutputFormat.class);
            org.apache.hadoop.mapreduce.lib.output.FileOutputFormat.setOutputPath(job, bfoOut);
            job.submit();
            FileSystem fs = marks.getFileSystem(conf);
            org.apache.hadoop.mapreduce.TaskAttemptID paused = null;
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (paused == null && System.nanoTime() < deadline && !job.isComplete()) {
                org.apache.hadoop.fs.FileStatus[] m = fs.listStatus(marks);
                if (m.length > 0) {
                    paused = org.apache.hadoop.mapreduce.TaskAttemptID.forName(m[0].getPath().getName());
                } else {
                    Thread.sleep(200);
                }
            }
            assertTrue(paused != null, "the first attempt never paused");
            Path part = new Path(bfoOut, "_temporary-bfo-" + job.getJobID() + "/p-0");
            String prefix = "task-" + paused + ".";
            int staged = 0;
            while (System.nanoTime() < deadline) {   // its files written before the pause are on HDFS
                staged = 0;
                for (org.apache.hadoop.fs.FileStatus st : fs.listStatus(part)) {
                    staged += st.getPath().getName().startsWith(prefix) ? 1 : 0;
                }
                if (staged >= PausingUnpackMapper.RECORDS_BEFORE_PAUSE) {
                    break;
                }
                Thread.sleep(200);
            }
            assertEquals(PausingUnpackMapper.RECORDS_BEFORE_PAUSE, staged, "the paused attempt's staged files");
            assertTrue(job.killTask(paused, false), "kill " + paused);
            return job.waitForCompletion(false);
        });
        assertTrue(ok, "the job with a killed attempt failed");
        JobRun plain = unpack("plain", seq, "/out/unpack-plain");
        assertTrue(plain.ok(), "the plain path's job");
        as(() -> {
            FileSystem fs = bfoOut.getFileSystem(conf);
            java.util.Map<String, String> tree = OutputTrees.tree(fs, bfoOut, OutputTrees.Meta.MODE);
            assertEquals(OutputContractTest.expected(files).keySet(), tree.keySet(), "published: the records, _SUCCESS");
            assertEquals(OutputTrees.tree(fs, new Path(fsUri + "/out/unpack-plain"), OutputTrees.Meta.MODE), tree,
                    "bfo against the plain path");
            return null;
        });
    }

    /** Unpack through the jars' main class. */
    private static JobRun unpack(String format, Path in, String out) throws Exception {
        return runProgram(out, ExampleDriver.UNPACK, "-D",
                "mapreduce.job.jar=" + property("bfo.it.jobJar"), "--output-format", format, in.toString(), out);
    }

    /** A jar of test classes, for the containers (their classpath is Hadoop's and the job's jars). */
    private static void jarOf(java.nio.file.Path jar, Class<?>... classes) throws IOException {
        java.nio.file.Path root = java.nio.file.Path.of(property("bfo.it.testClasses"));
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar))) {
            for (Class<?> c : classes) {
                String entry = c.getName().replace('.', '/') + ".class";
                out.putNextEntry(new java.util.jar.JarEntry(entry));
                out.write(Files.readAllBytes(root.resolve(entry)));
                out.closeEntry();
            }
        }
        jar.toFile().setReadable(true, false);
    }

    /** One WordCount through the jars' main class, as {@code hadoop jar JAR wordcount ...} runs it. */
    private static JobRun wordCount(String format, String jar, String libjars, Path in, String out,
                                    String... settings) throws Exception {
        List<String> args = new ArrayList<>(List.of(ExampleDriver.WORDCOUNT));
        if (libjars != null) {
            args.addAll(List.of("-libjars", libjars));
        }
        for (String kv : settings) {
            args.addAll(List.of("-D", kv));
        }
        args.addAll(List.of("-D", "mapreduce.job.jar=" + jar,
                "-D", BfoInputConfig.SPLIT_MAXSIZE + "=" + MAX_SPLIT,
                "-D", "mapreduce.input.fileinputformat.input.dir.recursive=true", "--input-format", format, in.toString(), out));
        return runProgram(out, args.toArray(new String[0]));
    }

    /** One program of the jars' main class; its job's outcome, text output (part-* files), counters. */
    private static JobRun runProgram(String out, String... args) throws Exception {
        return as(() -> {
            Cluster c = new Cluster(conf);
            Set<JobID> before = jobIds(c);
            int rc = ExampleDriver.run(new Configuration(conf), args);
            List<JobID> ran = new ArrayList<>(jobIds(c));
            ran.removeAll(before);
            assertEquals(1, ran.size(), "one job submitted: " + ran);
            Job job = c.getJob(ran.get(0));
            Counters counters = job.getCounters();
            // a finished job's counters come from the history server, which may not have it yet; a failed
            // job may have none at all
            for (long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); rc == 0 && counters == null
                    && System.nanoTime() < end; counters = job.getCounters()) {
                Thread.sleep(500);
            }
            assertTrue(rc != 0 || counters != null, "no counters for " + ran.get(0));
            StringBuilder diagnostics = new StringBuilder();
            for (TaskCompletionEvent e : job.getTaskCompletionEvents(0, 1000)) {
                if (e.getStatus() != TaskCompletionEvent.Status.SUCCEEDED) {
                    diagnostics.append(String.join("\n", job.getTaskDiagnostics(e.getTaskAttemptId())));
                }
            }
            Path o = new Path(FileSystem.getDefaultUri(conf).toString() + out);
            List<String> lines = rc == 0 && args[0].equals(ExampleDriver.WORDCOUNT) ? TestJobs.readOutput(o, conf)
                    : List.of();
            JobRun run = new JobRun(rc == 0, lines, counters, diagnostics.toString());
            c.close();
            return run;
        });
    }

    private static Set<JobID> jobIds(Cluster c) throws IOException, InterruptedException {
        Set<JobID> ids = new HashSet<>();
        for (JobStatus s : c.getAllJobStatuses()) {
            ids.add(s.getJobID());
        }
        return ids;
    }

    record JobRun(boolean ok, List<String> lines, Counters counters, String diagnostics) {
        long counter(String group, String name) {
            assertTrue(counters != null, "no counters (the job failed)");
            return counters.findCounter(group, name).getValue();
        }
    }

    private static String clusterUser() {
        return user.getShortUserName();
    }

    private static <T> T as(PrivilegedExceptionAction<T> action) throws Exception {
        return user.doAs(action);
    }

    private static String property(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            fail(name + " is not set: run through Maven (mvn -pl hadoop-input verify)");
        }
        return v;
    }

    /** The cluster's jars, linked (or copied) where an unprivileged cluster can read them. */
    private static List<String> linkJars(java.nio.file.Path lib) throws IOException {
        Files.createDirectories(lib);
        List<String> jars = new ArrayList<>();
        String cp = Files.readString(java.nio.file.Path.of(property("bfo.it.clusterClasspath"))).trim();
        for (String e : cp.split(java.io.File.pathSeparator)) {
            java.nio.file.Path src = java.nio.file.Path.of(e);
            String name = src.getFileName().toString();
            assertFalse(name.startsWith("bfo-") || name.startsWith("jna"), "bfo on the cluster's classpath: " + e);
            java.nio.file.Path dst = lib.resolve(jars.size() + "-" + name);
            try {
                Files.createLink(dst, src);
            } catch (IOException | UnsupportedOperationException x) {
                Files.copy(src, dst);
            }
            jars.add(dst.toString());
        }
        return jars;
    }

    private static void copyTree(java.nio.file.Path from, java.nio.file.Path to) throws IOException {
        try (Stream<java.nio.file.Path> s = Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s::iterator) {
                java.nio.file.Path d = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(d);
                } else {
                    Files.copy(p, d);
                }
            }
        }
    }

    private static void chownTree(java.nio.file.Path root, String owner) throws IOException {
        UserPrincipalLookupService users = root.getFileSystem().getUserPrincipalLookupService();
        UserPrincipal u = users.lookupPrincipalByName(owner);
        GroupPrincipal g = users.lookupPrincipalByGroupName("nogroup");
        try (Stream<java.nio.file.Path> s = Files.walk(root)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) s::iterator) {
                PosixFileAttributeView v = Files.getFileAttributeView(p, PosixFileAttributeView.class,
                        java.nio.file.LinkOption.NOFOLLOW_LINKS);
                v.setOwner(u);
                v.setGroup(g);
            }
        }
    }

    private static Process startCluster(boolean root, java.nio.file.Path lib, List<String> hadoopJars)
            throws IOException {
        List<String> cmd = new ArrayList<>();
        if (root) {
            cmd.addAll(List.of("setpriv", "--reuid=" + NOBODY, "--regid=nogroup", "--clear-groups"));
        }
        cmd.add(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(Arrays.asList(property("bfo.it.javaOpts").trim().split("\\s+")));
        cmd.add("-Xmx1g");   // NameNode, DataNode, ResourceManager, NodeManager and history server in one JVM
        cmd.add("-Djava.net.preferIPv4Stack=true");
        cmd.add("-cp");
        cmd.add(lib.resolve("test-classes") + java.io.File.pathSeparator + String.join(java.io.File.pathSeparator,
                hadoopJars));
        cmd.add(MiniClusterMain.class.getName());
        cmd.add(base.resolve("cluster").toString());
        cmd.add(base.resolve("cluster.xml").toString());
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(base.toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("HOME", base.toString());
        pb.redirectErrorStream(true).redirectOutput(base.resolve("cluster.log").toFile());
        return pb.start();
    }

    private static java.nio.file.Path waitForConf(java.nio.file.Path file) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (!Files.exists(file)) {
            if (!cluster.isAlive() || System.nanoTime() > deadline) {
                fail("the cluster did not start (" + (cluster.isAlive() ? "timeout" : "exit " + cluster.exitValue())
                        + "): " + tail(base.resolve("cluster.log")));
            }
            Thread.sleep(200);
        }
        return file;
    }

    private static String tail(java.nio.file.Path log) throws IOException {
        String s = Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
        return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
    }

    /**
     * The cluster's own configuration, as a client machine has it, plus what
     * a real cluster's administrator sets: the MapReduce classpath is the
     * Hadoop installation's (not the minicluster's "propagate the client's
     * classpath", which would hand the tasks bfo from this JVM), and the
     * task JVMs get the {@code --add-opens} Hadoop needs on Java 17.
     */
    private static Configuration clientConf(java.nio.file.Path xml, List<String> hadoopJars) {
        Configuration c = new Configuration();
        c.addResource(new Path(xml.toUri()));
        c.setBoolean("yarn.is.minicluster", false);
        c.set("mapreduce.application.classpath", String.join(",", hadoopJars));
        String opts = property("bfo.it.javaOpts").trim().replaceAll("\\s+", " ");   // one line: a launch script
        c.set("yarn.app.mapreduce.am.command-opts", opts);
        c.set("mapreduce.map.java.opts", opts);
        c.set("mapreduce.reduce.java.opts", opts);
        c.setInt("mapreduce.client.completion.pollinterval", 200);
        // HDFS retries a small file's close from 400 ms: copying hundreds of them would take minutes
        c.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 10);
        return c;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.OutputTrees.Meta;
import io.github.bfo.hadoop.examples.PerFileOutputFormat;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.FileAlreadyExistsException;
import org.apache.hadoop.mapreduce.OutputFormat;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BatchFileOutputFormat's commit semantics on one file system (a subclass
 * per file system: the local disk, the local disk under another scheme,
 * HDFS, S3), each step of a job driven as MapReduce drives it
 * ({@link OutputRun}) and every result compared with what the plain path
 * leaves: {@link PerFileOutputFormat} (FileSystem.create per record) under
 * FileOutputCommitter at its defaults, bytes and metadata.
 */
abstract class OutputContractTest {
    /** The file system's configuration (the local runner's, with the store's settings). */
    abstract Configuration conf();

    /** A directory of the store that does not exist yet. */
    abstract Path fresh(String name) throws IOException;

    /** Whether modes and modification times are kept (an object store keeps neither). */
    boolean keepsMetadata() {
        return true;
    }

    /** The uploads still pending under dir (an object store's); none elsewhere. */
    List<String> pendingUploads(Path dir) {
        return List.of();
    }

    FileSystem fs(Path p) throws IOException {
        return p.getFileSystem(conf());
    }

    Meta meta() {
        return keepsMetadata() ? Meta.MODE : Meta.NONE;
    }

    OutputRun bfo(Path out, int tasks) throws IOException {
        return new OutputRun(conf(), out, BatchFileOutputFormat.class, tasks);
    }

    /** The plain path's tree for the same files, written by the same steps. */
    Map<String, String> plainTree(Map<String, byte[]> files, int tasks, Meta meta) throws Exception {
        Path out = fresh("plain");
        new OutputRun(conf(), out, PerFileOutputFormat.class, tasks).run(files, tasks);
        return OutputTrees.tree(fs(out), out, meta);
    }

    /** The tree files make: each file's length and SHA-256, its directories. */
    static Map<String, String> expected(Map<String, byte[]> files) {
        Map<String, String> m = new TreeMap<>();
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            String p = e.getKey();
            for (int k = p.indexOf('/'); k > 0; k = p.indexOf('/', k + 1)) {
                m.put(p.substring(0, k), "dir");
            }
            m.put(p, e.getValue().length + " " + sha(e.getValue()));
        }
        m.put("_SUCCESS", "0 " + sha(new byte[0]));
        return m;
    }

    static String sha(byte[] b) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** What a job has staged in OUT or left pending: staged files, reports, uploads. */
    List<String> staged(Path out) throws IOException {
        List<String> left = new java.util.ArrayList<>(pendingUploads(out));
        for (String name : OutputTrees.tree(fs(out), out, Meta.NONE).keySet()) {
            if (name.startsWith("_temporary")) {
                left.add(name);
            }
        }
        return left;
    }

    /** How many of the staged entries are the killed attempt's files (attempt 0 of task 0). */
    long killedStaged(List<String> staged) {
        return staged.stream().filter(n -> n.matches(".*_m_000000_0(/.*/f[0-9]+\\.(txt|bin)|/f[0-9]+\\.(txt|bin)|\\.[0-9]+)"))
                .count();
    }

    void assertNothingLeft(Path out, String what) throws IOException {
        assertEquals(List.of(), staged(out), what + ": staging or uploads left");
    }

    /**
     * Nothing is visible while the attempts write and after their task commits; the job commit publishes
     * every file and _SUCCESS, and the tree equals the plain path's, bytes and modes.
     */
    @Test
    void filesAppearAtTheJobCommitAsThePlainPathLeavesThem() throws Exception {
        Map<String, byte[]> files = OutputTrees.files(60, 1);
        Path out = fresh("bfo");
        OutputRun run = bfo(out, 2);
        run.setupJob();
        OutputRun.Attempt a0 = run.attempt(0, 0);
        OutputRun.Attempt a1 = run.attempt(1, 0);
        int i = 0;
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            (i++ % 2 == 0 ? a0 : a1).write(e.getKey(), e.getValue());
        }
        assertEquals(List.of(), OutputTrees.visible(fs(out), out), "visible while the attempts write");
        a0.close();
        a1.close();
        assertEquals(List.of(), OutputTrees.visible(fs(out), out), "visible before the task commits");
        assertTrue(a0.commit() && a1.commit());
        assertEquals(List.of(), OutputTrees.visible(fs(out), out), "visible before the job commit");
        run.commitJob();
        Map<String, String> bfo = OutputTrees.tree(fs(out), out, meta());
        assertEquals(expected(files), OutputTrees.tree(fs(out), out, Meta.NONE), "the files, as the records say");
        assertEquals(plainTree(files, 2, meta()), bfo, "bfo against the plain path");
        assertNothingLeft(out, "after the job commit");
    }

    /** Two attempts of one task: the one that commits is published; the other's files are gone. */
    @Test
    void aSpeculativeAttemptThatLosesLeavesNothing() throws Exception {
        Map<String, byte[]> files = OutputTrees.files(20, 2);
        Path out = fresh("spec");
        OutputRun run = bfo(out, 1);
        run.setupJob();
        OutputRun.Attempt first = run.attempt(0, 0);
        OutputRun.Attempt speculative = run.attempt(0, 1);
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            first.write(e.getKey(), ("first " + e.getKey()).getBytes());
            speculative.write(e.getKey(), e.getValue());
        }
        first.write("only/in/first", new byte[] {1, 2, 3});
        speculative.close();
        first.close();
        assertTrue(speculative.commit());
        first.abort();
        run.commitJob();
        assertEquals(expected(files), OutputTrees.tree(fs(out), out, Meta.NONE));
        assertNothingLeft(out, "a speculative attempt");
    }

    /**
     * An attempt killed mid-write (no close, no abort: its container is gone, after its files reached the
     * store) and one that failed (closed by its task, as MapTask closes its writer, then its task abort): only
     * the retries that committed are published, and nothing of the others is left.
     */
    @Test
    void killedAndFailedAttemptsLeaveNothing() throws Exception {
        Map<String, byte[]> files = OutputTrees.files(24, 3);
        Path out = fresh("killed");
        OutputRun run = bfo(out, 2);
        run.conf.setLong(BfoOutputConfig.WRITE_BATCH_BYTES, 1);   // locally too, each file written as it comes
        run.setupJob();
        OutputRun.Attempt killed = run.attempt(0, 0);
        OutputRun.Attempt failed = run.attempt(1, 0);
        int i = 0;
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            if (i++ < 10) {
                killed.write(e.getKey(), e.getValue());
                failed.write("failed-" + e.getKey(), e.getValue());
            }
        }
        assertThrows(IllegalArgumentException.class, () -> failed.write("../climbs", new byte[1]));
        failed.close();
        failed.abort();
        // the killed attempt's writes in flight reach the store before it dies (a state, waited for)
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(60);
        while (killedStaged(staged(out)) < 10 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertEquals(10, killedStaged(staged(out)), "the killed attempt's files, staged: " + staged(out));
        OutputRun.Attempt retry0 = run.attempt(0, 1);
        OutputRun.Attempt retry1 = run.attempt(1, 1);
        i = 0;
        for (Map.Entry<String, byte[]> e : files.entrySet()) {
            (i++ % 2 == 0 ? retry0 : retry1).write(e.getKey(), e.getValue());
        }
        retry0.close();
        retry1.close();
        assertTrue(retry0.commit() && retry1.commit());
        run.commitJob();
        assertEquals(expected(files), OutputTrees.tree(fs(out), out, Meta.NONE));
        assertNothingLeft(out, "killed and failed attempts");
    }

    /** A job that fails after its tasks committed leaves no OUT (there was none) and nothing pending. */
    @Test
    void aFailedJobLeavesTheOutputAsItWas() throws Exception {
        Path out = fresh("failed");
        OutputRun run = bfo(out, 1);
        run.setupJob();
        OutputRun.Attempt a = run.attempt(0, 0);
        for (Map.Entry<String, byte[]> e : OutputTrees.files(10, 4).entrySet()) {
            a.write(e.getKey(), e.getValue());
        }
        a.close();
        a.commit();
        run.abortJob();
        assertFalse(fs(out).exists(out), "OUT removed: the job made it");
        assertEquals(List.of(), pendingUploads(out));
    }

    /** Two tasks naming one file: the job commit fails naming it, nothing is published, the abort cleans. */
    @Test
    void twoTasksWithOnePathFailTheJobCommit() throws Exception {
        Path out = fresh("dup");
        OutputRun run = bfo(out, 2);
        run.setupJob();
        OutputRun.Attempt a0 = run.attempt(0, 0);
        OutputRun.Attempt a1 = run.attempt(1, 0);
        a0.write("x/same.txt", new byte[] {1});
        a0.write("a0.txt", new byte[] {1});
        a1.write("x/same.txt", new byte[] {2});
        a0.close();
        a1.close();
        a0.commit();
        a1.commit();
        Exception x = assertThrows(Exception.class, run::commitJob);
        assertTrue(String.valueOf(x.getMessage()).contains("duplicate path 'x/same.txt'"), x.toString());
        assertEquals(List.of(), OutputTrees.visible(fs(out), out), "nothing published");
        run.abortJob();
        assertFalse(fs(out).exists(out));
        assertEquals(List.of(), pendingUploads(out));
    }

    /** Within a task: a path twice, and paths that climb out, fail the write naming the path. */
    @Test
    void badPathsFailTheTaskNamingThem() throws Exception {
        Path out = fresh("bad");
        OutputRun run = bfo(out, 1);
        run.setupJob();
        OutputRun.Attempt a = run.attempt(0, 0);
        a.write("dir/twice", new byte[] {1});
        Exception x = assertThrows(IllegalArgumentException.class, () -> a.write("dir/twice", new byte[] {2}));
        assertTrue(x.getMessage().contains("duplicate path 'dir/twice'"), x.getMessage());
        for (String bad : new String[] {"../up", "a/../../up", "/etc/abs", "a//b", "./a", "", "x/..",
                "_temporary-bfo-x/y", "hdfs://host/a"}) {
            x = assertThrows(IllegalArgumentException.class, () -> a.write(bad, new byte[] {1}), bad);
            assertTrue(x.getMessage().contains("bad path '" + bad + "'"), x.getMessage());
        }
        a.close();   // as MapTask closes a failed task's writer
        a.abort();
        run.abortJob();
        assertFalse(fs(out).exists(out));
        assertEquals(List.of(), pendingUploads(out));
    }

    /** An existing OUT is refused before anything runs, as FileOutputFormat refuses it (same class, text). */
    @Test
    void anExistingOutputIsRefusedAsFileOutputFormatRefusesIt() throws Exception {
        Path out = fresh("exists");
        fs(out).mkdirs(out);
        fs(out).create(new Path(out, "keep"), false).close();
        Exception bfo = assertThrows(FileAlreadyExistsException.class, () -> bfo(out, 1).checkSpecs());
        Exception plain = assertThrows(FileAlreadyExistsException.class,
                () -> new OutputRun(conf(), out, PerFileOutputFormat.class, 1).checkSpecs());
        assertEquals(plain.getMessage(), bfo.getMessage());
        assertEquals(List.of("keep"), OutputTrees.visible(fs(out), out));
    }

    /** Modes and modification times given with the records: as the plain path's setPermission and setTimes. */
    @Test
    void metadataAsThePlainPathSetsIt() throws Exception {
        Map<String, byte[]> files = OutputTrees.files(12, 5);
        int[] modes = {0600, 0640, 0755, 0444};
        Map<String, String> trees = new TreeMap<>();
        for (Class<? extends OutputFormat<Text, BytesWritable>> f : List.of(BatchFileOutputFormat.class,
                PerFileOutputFormat.class)) {
            Path out = fresh("meta");
            OutputRun run = new OutputRun(conf(), out, f, 1);
            run.setupJob();
            OutputRun.Attempt a = run.attempt(0, 0);
            int i = 0;
            for (Map.Entry<String, byte[]> e : files.entrySet()) {
                a.write(new Text(e.getKey()), new FileBytesWritable(e.getValue(), i % 5 == 4 ? -1 : modes[i % 4],
                        i % 3 == 2 ? -1 : 1_500_000_000_123L + i * 1000L));
                i++;
            }
            a.close();
            a.commit();
            run.commitJob();
            Map<String, String> t = OutputTrees.tree(fs(out), out, keepsMetadata() ? Meta.MODE_AND_TIME : Meta.NONE);
            if (keepsMetadata()) {
                t.replaceAll((k, v) -> files.containsKey(k) && timeGiven(files, k) ? v : v.replaceAll(" [0-9]+$", ""));
            }
            trees.put(f.getSimpleName(), t.toString());
        }
        assertEquals(trees.get("PerFileOutputFormat"), trees.get("BatchFileOutputFormat"));
    }

    /**
     * The example job ({@code unpack}) on the local runner: a SequenceFile of (name, bytes) records into one
     * file per record with BatchFileOutputFormat, with the plain path's format, and with MultipleOutputs
     * (names with its part suffix): the same tree, counters that count every file.
     */
    @Test
    void theUnpackJobLeavesThePlainJobsTree(@org.junit.jupiter.api.io.TempDir java.nio.file.Path local)
            throws Exception {
        Map<String, byte[]> files = OutputTrees.files(40, 6);
        Path seq = new Path(local.resolve("in.seq").toUri());
        try (org.apache.hadoop.io.SequenceFile.Writer w = org.apache.hadoop.io.SequenceFile.createWriter(conf(),
                org.apache.hadoop.io.SequenceFile.Writer.file(seq),
                org.apache.hadoop.io.SequenceFile.Writer.keyClass(Text.class),
                org.apache.hadoop.io.SequenceFile.Writer.valueClass(BytesWritable.class))) {
            for (Map.Entry<String, byte[]> e : files.entrySet()) {
                w.append(new Text("packed/" + e.getKey()), new BytesWritable(e.getValue()));
            }
        }
        Map<String, Map<String, String>> trees = new TreeMap<>();
        for (String format : List.of("bfo", "plain", "multiple")) {
            Path out = fresh("unpack-" + format);
            int rc = org.apache.hadoop.util.ToolRunner.run(new Configuration(conf()),
                    new io.github.bfo.hadoop.examples.Unpack(), new String[] {"--output-format", format,
                        "--base", "packed", seq.toString(), out.toString()});
            assertEquals(0, rc, format);
            Map<String, String> t = OutputTrees.tree(fs(out), out, format.equals("multiple") ? Meta.NONE : meta());
            if (format.equals("multiple")) {
                Map<String, String> renamed = new TreeMap<>();
                t.forEach((k, v) -> renamed.put(k.replaceAll("-m-[0-9]{5}$", ""), v));
                t = renamed;
            }
            trees.put(format, t);
            assertNothingLeft(out, format);
        }
        assertEquals(expected(files), stripMeta(trees.get("bfo")));
        assertEquals(trees.get("plain"), trees.get("bfo"));
        assertEquals(stripMeta(trees.get("bfo")), trees.get("multiple"));
    }

    private static Map<String, String> stripMeta(Map<String, String> t) {
        Map<String, String> m = new TreeMap<>();
        t.forEach((k, v) -> m.put(k, v.startsWith("dir") ? "dir" : v.replaceAll("^([0-9]+ [0-9a-f]+).*", "$1")));
        return m;
    }

    /** Whether the metadata test gave path a modification time (the others are the time of the write). */
    private static boolean timeGiven(Map<String, byte[]> files, String path) {
        int i = new java.util.ArrayList<>(files.keySet()).indexOf(path);
        return i % 3 != 2;
    }
}

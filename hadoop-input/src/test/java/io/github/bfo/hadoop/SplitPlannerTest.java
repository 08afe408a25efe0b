/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.OtherSchemeFileSystem;
import io.github.bfo.hadoop.synth.SyntheticFileSystem;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.DataInputBuffer;
import org.apache.hadoop.io.DataOutputBuffer;
import org.apache.hadoop.mapreduce.lib.input.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Split planning: locality, determinism, the size and file-count caps, the default cap, listing rules. */
class SplitPlannerTest {
    @TempDir
    java.nio.file.Path dir;

    /** 6 hosts on 2 racks, each file on 3 hosts (2 racks), sizes 1 KiB - 1 MiB. */
    private static FileTable cluster(int files, long seed) {
        FileTable t = new FileTable();
        Random rnd = new Random(seed);
        String[] hosts = {"h1", "h2", "h3", "h4", "h5", "h6"};
        int d = t.dir("hdfs://nn:8020/data");
        for (int i = 0; i < files; i++) {
            int a = rnd.nextInt(6);
            int b = (a + 1 + rnd.nextInt(5)) % 6;
            int c = b;
            while (c == a || c == b) {
                c = rnd.nextInt(6);
            }
            String[] hs = {hosts[a], hosts[b], hosts[c]};
            String[] rs = new String[3];
            for (int k = 0; k < 3; k++) {
                rs[k] = hs[k].compareTo("h4") < 0 ? "/r1" : "/r2";
            }
            t.add(d, String.format("f%06d", i), 1024 + rnd.nextInt(1 << 20), t.location(hs, rs), false);
        }
        return t;
    }

    private static Set<String> hostsOf(FileTable t, BatchFileSplit s) {
        Map<String, Integer> idx = new HashMap<>();
        for (int i = 0; i < t.size; i++) {
            idx.put(t.path(i), i);
        }
        Set<String> common = null;
        for (int i = 0; i < s.getNumPaths(); i++) {
            Set<String> h = Set.of(t.locHosts.get(t.loc[idx.get(s.getPathString(i))]));
            if (common == null) {
                common = new HashSet<>(h);
            } else {
                common.retainAll(h);
            }
        }
        return common;
    }

    @Test
    void localityCapsAndDeterminism() {
        FileTable t = cluster(3000, 1);
        int[] order = SplitPlanner.order(t, new Configuration());
        long max = 64L << 20;
        List<BatchFileSplit> splits = SplitPlanner.pack(t, order, max, 0, 0, 100);
        // every file exactly once
        Set<String> seen = new HashSet<>();
        long total = 0;
        for (BatchFileSplit s : splits) {
            assertTrue(s.getNumPaths() <= 100, "maxfiles cap");
            assertTrue(s.getLength() <= max, "maxsize cap");
            for (int i = 0; i < s.getNumPaths(); i++) {
                assertTrue(seen.add(s.getPathString(i)), "file in two splits");
                total += s.getLength(i);
            }
        }
        assertEquals(3000, seen.size());
        assertEquals(t.totalBytes(), total);
        // node-local splits: one host, holding every file of the split; most splits are node-local
        int nodeLocal = 0;
        for (BatchFileSplit s : splits) {
            if (s.getLocations().length == 1) {
                assertTrue(hostsOf(t, s).contains(s.getLocations()[0]), "node-local split on a host with its files");
                nodeLocal++;
            }
        }
        assertTrue(nodeLocal >= splits.size() * 3 / 4, nodeLocal + " of " + splits.size() + " node-local");
        // spread over all hosts
        Set<String> used = new HashSet<>();
        for (BatchFileSplit s : splits) {
            used.add(s.getLocations()[0]);
        }
        assertEquals(6, used.size());
        // deterministic: the same input gives the same splits
        List<BatchFileSplit> again = SplitPlanner.pack(cluster(3000, 1), SplitPlanner.order(cluster(3000, 1),
                new Configuration()), max, 0, 0, 100);
        assertEquals(describe(splits), describe(again));
    }

    @Test
    void minSizePerNodeAndRack() {
        FileTable t = cluster(500, 2);
        int[] order = SplitPlanner.order(t, new Configuration());
        List<BatchFileSplit> plain = SplitPlanner.pack(t, order, 100L << 20, 0, 0, Integer.MAX_VALUE);
        List<BatchFileSplit> minNode = SplitPlanner.pack(t, order, 100L << 20, 10L << 20, 20L << 20,
                Integer.MAX_VALUE);
        long files = 0;
        for (BatchFileSplit s : minNode) {
            files += s.getNumPaths();
        }
        assertEquals(500, files);
        assertTrue(plain.size() > 0 && minNode.size() > 0);
    }

    @Test
    void largeFileIsASplitOfItsOwn() {
        FileTable t = new FileTable();
        int d = t.dir("file:/x");
        int loc = t.location(new String[] {"localhost"}, new String[] {"/default-rack"});
        t.add(d, "a", 10, loc, false);
        t.add(d, "b", 1000, loc, false);
        t.add(d, "c", 10, loc, false);
        List<BatchFileSplit> s = SplitPlanner.pack(t, new int[] {0, 1, 2}, 100, 0, 0, 10);
        assertEquals(3, s.size());
        assertEquals(1000, s.get(1).getLength());
    }

    private static List<String> describe(List<BatchFileSplit> splits) {
        List<String> r = new ArrayList<>();
        for (BatchFileSplit s : splits) {
            r.add(String.join(",", s.getLocations()) + ":" + String.join(",", List.of(s.getPaths()).stream()
                    .map(Object::toString).toList()));
        }
        return r;
    }

    @Test
    void defaultCapWhenMaxSizeUnset() throws Exception {
        Configuration conf = new Configuration();
        assertEquals(BfoInputConfig.DEFAULT_SPLIT_MAXSIZE, BfoInputConfig.maxSplitSize(conf));
        conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, 0);
        assertEquals(BfoInputConfig.DEFAULT_SPLIT_MAXSIZE, BfoInputConfig.maxSplitSize(conf));
        conf.set(BfoInputConfig.SPLIT_DEFAULT_MAXSIZE, "1k");
        assertEquals(1024, BfoInputConfig.maxSplitSize(conf));
        // on disk: 40 files of 100 bytes, default cap 1 KiB -> at least 4 splits, never one per node
        for (int i = 0; i < 40; i++) {
            TestJobs.write(dir.resolve("in/f" + i), "x".repeat(99) + "\n");
        }
        conf.set(BfoInputConfig.INPUT_DIR, dir.resolve("in").toUri().toString());
        List<BatchFileSplit> splits = SplitPlanner.getSplits(conf, null);
        assertTrue(splits.size() >= 4, splits.size() + " splits");
        for (BatchFileSplit s : splits) {
            assertTrue(s.getLength() <= 1024);
            assertArrayEquals(new String[] {"localhost"}, s.getLocations());
        }
    }

    @Test
    void localSplitsAreInInodeOrderAndDeterministic() throws Exception {
        // created in shuffled order, so inode order differs from name order
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            ids.add(i);
        }
        java.util.Collections.shuffle(ids, new Random(3));
        for (int i : ids) {
            TestJobs.write(dir.resolve("in/d" + (i % 3) + "/f" + String.format("%03d", i)), "line " + i + "\n");
        }
        Configuration conf = new Configuration();
        conf.set(BfoInputConfig.INPUT_DIR, dir.resolve("in").toUri().toString());
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        conf.setInt(BfoInputConfig.SPLIT_MAXFILES, 64);
        List<BatchFileSplit> a = SplitPlanner.getSplits(conf, null);
        assertEquals(4, a.size());
        long prev = -1;
        for (BatchFileSplit s : a) {
            for (int i = 0; i < s.getNumPaths(); i++) {
                long ino = (Long) Files.getAttribute(SplitPlanner.localPath(s.getPathString(i)), "unix:ino");
                assertTrue(ino > prev, "inode order");
                prev = ino;
            }
        }
        assertEquals(describe(a), describe(SplitPlanner.getSplits(conf, null)));
        // path order on request
        conf.set(BfoInputConfig.SPLIT_ORDER, "path");
        List<BatchFileSplit> p = SplitPlanner.getSplits(conf, null);
        assertTrue(p.get(0).getPathString(0).endsWith("/d0/f000"), p.get(0).getPathString(0));
    }

    @Test
    void splitWritableRoundTrip() throws Exception {
        BatchFileSplit.Builder b = new BatchFileSplit.Builder();
        b.add("file:/data/dir/a.txt", 10, true);
        b.add("file:/data/dir/ab.txt", 0, false);
        b.add("file:/data/other/名前 x.txt", 1L << 40, false);
        BatchFileSplit s = b.build(new String[] {"h1", "h2"});
        DataOutputBuffer out = new DataOutputBuffer();
        s.write(out);
        BatchFileSplit r = new BatchFileSplit();
        DataInputBuffer in = new DataInputBuffer();
        in.reset(out.getData(), out.getLength());
        r.readFields(in);
        assertEquals(3, r.getNumPaths());
        assertEquals("file:/data/other/名前 x.txt", r.getPathString(2));
        assertEquals(1L << 40, r.getLength(2));
        assertEquals(10 + (1L << 40), r.getLength());
        assertTrue(r.hasChecksumFile(0));
        assertArrayEquals(new String[] {"h1", "h2"}, r.getLocations());
        assertArrayEquals(new long[3], r.getStartOffsets());
    }

    @Test
    void listingRules() throws Exception {
        TestJobs.write(dir.resolve("in/a.txt"), "a\n");
        TestJobs.write(dir.resolve("in/b.skip"), "b\n");
        TestJobs.write(dir.resolve("in/_hidden"), "h\n");
        TestJobs.write(dir.resolve("in/.hidden"), "h\n");
        TestJobs.write(dir.resolve("in/sub/c.txt"), "c\n");
        Configuration conf = new Configuration();
        conf.set(BfoInputConfig.INPUT_DIR, dir.resolve("in").toUri().toString());
        assertEquals(Set.of("a.txt", "b.skip"), names(conf), "non-recursive: subdirectories skipped");
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        assertEquals(Set.of("a.txt", "b.skip", "c.txt"), names(conf));
        conf.setClass(BfoInputConfig.PATHFILTER_CLASS, SkipFilter.class, org.apache.hadoop.fs.PathFilter.class);
        assertEquals(Set.of("a.txt", "c.txt"), names(conf));
        // globs, and the same through the FileSystem-API lister with parallel listing
        conf.set(BfoInputConfig.INPUT_DIR, dir.resolve("in").toUri() + "/*.txt");
        assertEquals(Set.of("a.txt"), names(conf));
        OtherSchemeFileSystem.register(conf);
        conf.set(BfoInputConfig.INPUT_DIR, OtherSchemeFileSystem.path(dir.resolve("in")).toString());
        conf.setInt(BfoInputConfig.LIST_STATUS_NUM_THREADS, 4);
        assertEquals(Set.of("a.txt", "c.txt"), names(conf));
        // missing input: InvalidInputException naming it
        conf.set(BfoInputConfig.INPUT_DIR, dir.resolve("nope").toUri() + "," + dir.resolve("in").toUri() + "/*.none");
        InvalidInputException e = assertThrows(InvalidInputException.class, () -> names(conf));
        assertEquals(2, e.getProblems().size());
        assertTrue(e.getMessage().contains("Input path does not exist"), e.getMessage());
        assertTrue(e.getMessage().contains("matches 0 files"), e.getMessage());
    }

    /** Skips names ending in .skip. */
    public static class SkipFilter implements org.apache.hadoop.fs.PathFilter {
        @Override
        public boolean accept(org.apache.hadoop.fs.Path p) {
            return !p.getName().endsWith(".skip");
        }
    }

    private static Set<String> names(Configuration conf) throws Exception {
        Set<String> r = new HashSet<>();
        for (BatchFileSplit s : SplitPlanner.getSplits(conf, null)) {
            for (int i = 0; i < s.getNumPaths(); i++) {
                r.add(s.getPath(i).getName());
            }
        }
        return r;
    }

    /**
     * Files a rack leaves below split.minsize.per.rack go to the overflow and are taken: another rack must
     * not pack them too (they were packed twice: 20,905 paths for these 20,000 files).
     */
    @Test
    void rackLeftoversArePackedOnce() throws Exception {
        Configuration conf = new Configuration();
        org.apache.hadoop.fs.Path root = SyntheticFileSystem.configure(conf, 20_000, 1000);
        conf.set(BfoInputConfig.INPUT_DIR, root.toString());
        conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
        conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, 128L << 20);
        Set<String> seen = new HashSet<>();
        long bytes = 0;
        for (BatchFileSplit s : SplitPlanner.getSplits(conf, null)) {
            for (int i = 0; i < s.getNumPaths(); i++) {
                assertTrue(seen.add(s.getPathString(i)), "packed twice: " + s.getPathString(i));
            }
            bytes += s.getLength();
        }
        assertEquals(20_000, seen.size());
        assertEquals(SyntheticFileSystem.totalLength(20_000), bytes);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FailurePolicy;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;
import org.apache.hadoop.mapreduce.security.TokenCache;
import org.apache.hadoop.security.Credentials;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.TreeMap;

/**
 * Plans the splits of a job, for both MapReduce APIs.
 *
 * <ol>
 * <li>Lists the input into a compact {@link FileTable} ({@link InputLister}).</li>
 * <li>Orders the files: on local file systems by device and inode (one
 *     parallel metadata-only BFO batch fetches them), so each split covers a
 *     compact range of the disk; elsewhere by directory, then name. Either
 *     way the same input gives the same splits.</li>
 * <li>For text ({@link #getTextSplits}) cuts the large files as the
 *     {@code mapreduce} TextInputFormat does ({@link LargeFileCutter}): a
 *     splittable file (uncompressed, or bzip2) whose length is more than
 *     1.1 times its split size {@code max(minsize, min(maxsize, blockSize))}
 *     becomes FileSplits of that size (the last up to 1.1 times it), each on
 *     the hosts of the block where it starts, one split each, after the
 *     batches. Whole-file reading ({@link #getSplits}) never cuts.</li>
 * <li>Packs the other files whole into splits as CombineFileInputFormat packs blocks:
 *     node-local splits first (round robin over the nodes, sorted by name,
 *     one split per node per round), node leftovers of at least
 *     {@code split.minsize.per.node} as their own split, then rack-local
 *     splits likewise ({@code split.minsize.per.rack}), then the overflow in
 *     file order. A split is closed before it would pass
 *     {@code split.maxsize} (or {@code bfo.input.split.default.maxsize} when
 *     that is unset: never one giant split per node) or hold
 *     {@code bfo.input.split.maxfiles} files; a single file larger than
 *     the maximum (a large compressed file, or one within the 10% slop) is
 *     a split of its own.</li>
 * </ol>
 */
public final class SplitPlanner {
    private static final Logger LOG = LoggerFactory.getLogger(SplitPlanner.class);
    /** Hosts named by a rack-level or overflow split at most. */
    static final int MAX_SPLIT_HOSTS = 5;

    private SplitPlanner() {
    }

    /**
     * The splits of the job's input, every file whole (BatchFileInputFormat).
     *
     * @param credentials where delegation tokens for the input file systems go (null: none)
     */
    public static List<BatchFileSplit> getSplits(Configuration conf, Credentials credentials) throws IOException {
        List<BatchFileSplit> batches = new ArrayList<>();
        plan(conf, credentials, null, batches, null);
        return batches;
    }

    /**
     * The splits of the job's input for text records (BatchTextInputFormat):
     * the {@link BatchFileSplit}s of the files packed whole, then a
     * {@code mapreduce} {@link FileSplit} per piece of each large file.
     *
     * @param credentials where delegation tokens for the input file systems go (null: none)
     */
    public static List<InputSplit> getTextSplits(Configuration conf, Credentials credentials) throws IOException {
        List<BatchFileSplit> batches = new ArrayList<>();
        List<FileSplit> pieces = new ArrayList<>();
        plan(conf, credentials, new LargeFileCutter(conf), batches, pieces);
        List<InputSplit> all = new ArrayList<>(batches);
        all.addAll(pieces);
        return all;
    }

    /** Plans into batches (and, with a cutter, the large files' splits into pieces). */
    private static void plan(Configuration conf, Credentials credentials, LargeFileCutter cutter,
                             List<BatchFileSplit> batches, List<FileSplit> pieces) throws IOException {
        long maxSize = BfoInputConfig.maxSplitSize(conf);
        long minNode = conf.getLong(BfoInputConfig.SPLIT_MINSIZE_PER_NODE, 0);
        long minRack = conf.getLong(BfoInputConfig.SPLIT_MINSIZE_PER_RACK, 0);
        int maxFiles = BfoInputConfig.maxSplitFiles(conf);
        // The same checks as CombineFileInputFormat.
        if (minNode != 0 && maxSize != 0 && minNode > maxSize) {
            throw new IOException("Minimum split size pernode " + minNode + " cannot be larger than maximum split size "
                    + maxSize);
        }
        if (minRack != 0 && maxSize != 0 && minRack > maxSize) {
            throw new IOException("Minimum split size per rack " + minRack + " cannot be larger than maximum split size "
                    + maxSize);
        }
        if (minRack != 0 && minNode > minRack) {
            throw new IOException("Minimum split size per node " + minNode + " cannot be larger than minimum split "
                    + "size per rack " + minRack);
        }
        Path[] inputs = InputLister.inputPaths(conf);
        if (credentials != null && inputs.length > 0) {
            TokenCache.obtainTokensForNamenodes(credentials, inputs, conf);
        }
        long t0 = System.nanoTime();
        FileTable table = InputLister.list(conf, inputs, cutter);
        warnSkippedDirs(table);
        long t1 = System.nanoTime();
        int[] order = order(table, conf);
        long t2 = System.nanoTime();
        int whole = order.length;
        if (cutter != null) {
            order = cutLargeFiles(table, order, cutter, pieces);
        }
        batches.addAll(pack(table, order, maxSize, minNode, minRack, maxFiles));
        long t3 = System.nanoTime();
        LOG.info("BFO splits: {} files, {} bytes in {} splits (max {} bytes / {} files per split), {} large files cut "
                        + "into {} more; listing {} ms, ordering {} ms, packing {} ms", table.size, table.totalBytes(),
                batches.size(), maxSize, maxFiles, whole - order.length, pieces == null ? 0 : pieces.size(),
                (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000);
    }

    /**
     * Says on the client what a non-recursive input passed over: a directory of subdirectories otherwise
     * plans 0 splits and the job succeeds with an empty output (as CombineTextInputFormat's does).
     */
    static void warnSkippedDirs(FileTable table) {
        if (table.skippedDirs > 0) {
            LOG.warn("BFO: {} subdirector{} of the input skipped (the first: {}), {} files listed: set {}=true to "
                            + "read the files in subdirectories", table.skippedDirs,
                    table.skippedDirs == 1 ? "y" : "ies", table.firstSkippedDir, table.size,
                    BfoInputConfig.INPUT_DIR_RECURSIVE);
        }
    }

    /**
     * Cuts the large splittable files of order into pieces (in file order,
     * each file's pieces by offset); returns the files left to pack whole.
     */
    static int[] cutLargeFiles(FileTable t, int[] order, LargeFileCutter cutter, List<FileSplit> pieces)
            throws IOException {
        if (t.large.isEmpty()) {
            return order;
        }
        List<FileStatus> cut = new ArrayList<>();
        int[] rest = new int[order.length];
        int n = 0;
        for (int f : order) {
            FileStatus st = t.large.get(f);
            if (st != null && cutter.isSplitable(st.getPath())) {
                cut.add(st);
            } else {
                rest[n++] = f;
            }
        }
        pieces.addAll(cutter.cut(cut));
        return Arrays.copyOf(rest, n);
    }

    // ---------------------------------------------------------------- ordering

    static int[] order(FileTable t, Configuration conf) {
        int n = t.size;
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        // Directory ranks, so files sort by (directory path, name).
        Integer[] dirIdx = new Integer[t.dirs.size()];
        for (int i = 0; i < dirIdx.length; i++) {
            dirIdx[i] = i;
        }
        Arrays.sort(dirIdx, (a, b) -> t.dirs.get(a).compareTo(t.dirs.get(b)));
        int[] dirRank = new int[dirIdx.length];
        for (int r = 0; r < dirIdx.length; r++) {
            dirRank[dirIdx[r]] = r;
        }
        String mode = conf.getTrimmed(BfoInputConfig.SPLIT_ORDER, "auto").toLowerCase(Locale.ROOT);
        if (!mode.equals("auto") && !mode.equals("inode") && !mode.equals("path")) {
            throw new IllegalArgumentException(BfoInputConfig.SPLIT_ORDER + " must be auto, inode or path: " + mode);
        }
        boolean local = n > 0 && t.dirs.stream().allMatch(d -> d.startsWith("file:"));
        long[][] inodes = null;
        if (local && !mode.equals("path")) {
            inodes = t.ino != null ? new long[][] {t.dev, t.ino} : inodes(t, conf);
        }
        final long[][] ino = inodes;
        IntSort.sort(order, (a, b) -> {
            if (ino != null) {
                int c = Long.compare(ino[0][a], ino[0][b]);
                if (c == 0) {
                    c = Long.compareUnsigned(ino[1][a], ino[1][b]);
                }
                if (c != 0) {
                    return c;
                }
            }
            int c = Integer.compare(dirRank[t.dir[a]], dirRank[t.dir[b]]);
            return c != 0 ? c : t.compareNames(a, b);
        });
        return order;
    }

    /** {device[], inode[]} of the local files, from one metadata-only batch; null when that fails. */
    private static long[][] inodes(FileTable t, Configuration conf) {
        int n = t.size;
        long[] dev = new long[n];
        long[] ino = new long[n];
        Arrays.fill(ino, -1L);
        Iterable<java.nio.file.Path> paths = () -> new Iterator<>() {
            int i;

            @Override
            public boolean hasNext() {
                return i < n;
            }

            @Override
            public java.nio.file.Path next() {
                if (i >= n) {
                    throw new NoSuchElementException();
                }
                return localPath(t.path(i++));
            }
        };
        try (BatchFileReader r = BfoInputConfig.readerBuilder(conf).metadataOnly(true)
                .failurePolicy(FailurePolicy.PERFORM_ALL).build();
             FileBatch b = r.read(paths)) {
            for (FileData f : b) {
                int i = (int) f.index();
                if (f.isOk()) {
                    dev[i] = f.device();
                    ino[i] = f.inode();
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("BFO: could not read the inode numbers of the input ({}); files are packed in path order", e.toString());
            return null;
        }
        return new long[][] {dev, ino};
    }

    /** The local path of a {@code file:} path string. */
    static java.nio.file.Path localPath(String s) {
        if (s.startsWith("file:/") && !s.startsWith("file://")) {
            return java.nio.file.Path.of(s.substring(5));
        }
        return java.nio.file.Path.of(new Path(s).toUri().getPath());
    }

    // ---------------------------------------------------------------- packing

    static List<BatchFileSplit> pack(FileTable t, int[] order, long maxSize, long minNode, long minRack, int maxFiles) {
        boolean[] done = new boolean[t.size];
        IntList overflow = new IntList();
        for (int f : order) {
            if (t.locHosts.get(t.loc[f]).length == 0) {
                overflow.add(f);
                done[f] = true;
            }
        }
        TreeMap<String, IntList> nodeFiles = filesByPlace(t, order, done, t.locHosts);
        List<BatchFileSplit> out = new ArrayList<>();
        Packer p = new Packer(t, done, maxSize, maxFiles, out);

        // 1. node-local splits, one per node per round
        String[] nodes = nodeFiles.keySet().toArray(new String[0]);
        int[] cursor = new int[nodes.length];
        boolean[] complete = new boolean[nodes.length];
        int[] made = new int[nodes.length];
        int open = nodes.length;
        while (open > 0) {
            for (int ni = 0; ni < nodes.length; ni++) {
                if (complete[ni]) {
                    continue;
                }
                IntList list = nodeFiles.get(nodes[ni]);
                int c = p.fill(list, cursor[ni]);
                cursor[ni] = c;
                if (p.full) {
                    p.emit(new String[] {nodes[ni]});
                    made[ni]++;
                } else {
                    if (!p.acc.isEmpty() && minNode != 0 && p.bytes >= minNode && made[ni] == 0) {
                        p.emit(new String[] {nodes[ni]});
                        made[ni]++;
                    } else {
                        p.discard();
                    }
                    complete[ni] = true;
                    open--;
                }
            }
        }

        // 2. rack-local splits, one per rack per round; leftovers below minsize.per.rack go to the overflow
        TreeMap<String, IntList> rackFiles = filesByPlace(t, order, done, t.locRacks);
        String[] racks = rackFiles.keySet().toArray(new String[0]);
        int[] rcursor = new int[racks.length];
        boolean[] rcomplete = new boolean[racks.length];
        open = racks.length;
        while (open > 0) {
            for (int ri = 0; ri < racks.length; ri++) {
                if (rcomplete[ri]) {
                    continue;
                }
                int c = p.fill(rackFiles.get(racks[ri]), rcursor[ri]);
                rcursor[ri] = c;
                if (p.full) {
                    p.emit(null);
                } else {
                    if (!p.acc.isEmpty() && minRack != 0 && p.bytes >= minRack) {
                        p.emit(null);
                    } else {
                        // to the overflow, taken: not p.discard(), which would offer them to the next rack too
                        // (they were packed twice), as CombineFileInputFormat removes them from blockToNodes
                        for (int i = 0; i < p.acc.size; i++) {
                            overflow.add(p.acc.get(i));
                        }
                        p.acc.clear();
                    }
                    rcomplete[ri] = true;
                    open--;
                }
            }
        }

        // 3. the overflow, in file order
        for (int i = 0; i < overflow.size; i++) {
            done[overflow.get(i)] = false;
        }
        IntList restList = new IntList(overflow.size);
        for (int f : order) {
            if (!done[f]) {
                restList.add(f);
            }
        }
        int c = 0;
        while (c < restList.size) {
            c = p.fill(restList, c);
            p.emit(null);
        }
        return out;
    }

    /**
     * The files not yet done, in order, per host (places = t.locHosts) or per rack (t.locRacks), sorted by name.
     * Each list is allocated at its exact size (a count pass first): at millions of files a growable list per
     * place would hold up to twice the replicas' worth of ints. Rack lists are made after the node-local
     * splits, so they hold only the files those left.
     */
    static TreeMap<String, IntList> filesByPlace(FileTable t, int[] order, boolean[] done, List<String[]> places) {
        TreeMap<String, Integer> index = new TreeMap<>();
        for (String[] ps : places) {
            for (String p : ps) {
                index.putIfAbsent(p, 0);
            }
        }
        String[] names = index.keySet().toArray(new String[0]);
        for (int i = 0; i < names.length; i++) {
            index.put(names[i], i);
        }
        int[][] placesOf = new int[places.size()][];   // per location set, its distinct places
        for (int l = 0; l < placesOf.length; l++) {
            placesOf[l] = places.get(l).length == 0 ? new int[0]
                    : Arrays.stream(places.get(l)).mapToInt(index::get).distinct().toArray();
        }
        int[] count = new int[names.length];
        for (int f : order) {
            if (!done[f]) {
                for (int p : placesOf[t.loc[f]]) {
                    count[p]++;
                }
            }
        }
        IntList[] lists = new IntList[names.length];
        TreeMap<String, IntList> byName = new TreeMap<>();
        for (int i = 0; i < names.length; i++) {
            lists[i] = new IntList(count[i]);
            byName.put(names[i], lists[i]);
        }
        for (int f : order) {
            if (!done[f]) {
                for (int p : placesOf[t.loc[f]]) {
                    lists[p].add(f);
                }
            }
        }
        return byName;
    }

    /** Accumulates one split at a time. */
    private static final class Packer {
        final FileTable t;
        final boolean[] done;
        final long maxSize;
        final int maxFiles;
        final List<BatchFileSplit> out;
        final IntList acc = new IntList();
        long bytes;
        boolean full;

        Packer(FileTable t, boolean[] done, long maxSize, int maxFiles, List<BatchFileSplit> out) {
            this.t = t;
            this.done = done;
            this.maxSize = maxSize;
            this.maxFiles = maxFiles;
            this.out = out;
        }

        /** Adds files of list from cursor on until the split is full; returns the new cursor. */
        int fill(IntList list, int c) {
            acc.clear();
            bytes = 0;
            full = false;
            for (; c < list.size; c++) {
                int f = list.get(c);
                if (done[f]) {
                    continue;
                }
                long len = t.length[f];
                if (!acc.isEmpty() && bytes + len > maxSize) {
                    full = true;
                    return c;
                }
                acc.add(f);
                done[f] = true;
                bytes += len;
                if (bytes >= maxSize || acc.size >= maxFiles) {
                    full = true;
                    return c + 1;
                }
            }
            return c;
        }

        void discard() {
            for (int i = 0; i < acc.size; i++) {
                done[acc.get(i)] = false;
            }
            acc.clear();
            bytes = 0;
        }

        void emit(String[] hosts) {
            if (acc.isEmpty()) {
                return;
            }
            BatchFileSplit.Builder b = new BatchFileSplit.Builder();
            for (int i = 0; i < acc.size; i++) {
                int f = acc.get(i);
                b.add(t.path(f), t.length[f], t.crc[f] != 0);
            }
            out.add(b.build(hosts != null ? hosts : topHosts()));
            acc.clear();
            bytes = 0;
        }

        /** The hosts holding the most bytes of the accumulated files. */
        private String[] topHosts() {
            Map<String, long[]> by = new HashMap<>();
            for (int i = 0; i < acc.size; i++) {
                int f = acc.get(i);
                for (String h : t.locHosts.get(t.loc[f])) {
                    by.computeIfAbsent(h, x -> new long[1])[0] += Math.max(1, t.length[f]);
                }
            }
            List<String> hs = new ArrayList<>(by.keySet());
            hs.sort((a, b) -> {
                int c = Long.compare(by.get(b)[0], by.get(a)[0]);
                return c != 0 ? c : a.compareTo(b);
            });
            return hs.subList(0, Math.min(MAX_SPLIT_HOSTS, hs.size())).toArray(new String[0]);
        }
    }

    /** A growable int array. */
    static final class IntList {
        int[] a;
        int size;

        IntList() {
            this(16);
        }

        IntList(int capacity) {
            a = new int[Math.max(1, capacity)];
        }

        void add(int v) {
            if (size == a.length) {
                a = Arrays.copyOf(a, size * 2);
            }
            a[size++] = v;
        }

        int get(int i) {
            return a[i];
        }

        boolean isEmpty() {
            return size == 0;
        }

        void clear() {
            size = 0;
        }
    }
}

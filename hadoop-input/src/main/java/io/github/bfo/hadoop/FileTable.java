/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The files of a job's input, compactly: per file an index into a table of
 * directories, the name's UTF-8 bytes in one shared arena, the length, an
 * index into a table of distinct location sets, and a flag for a sibling
 * {@code .crc} file. About 30 bytes plus the name per file, so millions of
 * files fit where a list of FileStatus objects would not; only the few
 * <em>large</em> files (that a text format may cut into several splits, see
 * {@link LargeFileCutter}) keep their FileStatus, with its block size and
 * block locations. Not thread-safe (the lister adds under its own lock).
 */
final class FileTable {
    /** Directory paths, fully qualified, without a trailing slash (except a root). */
    final List<String> dirs = new ArrayList<>();
    private final Map<String, Integer> dirIndex = new HashMap<>();

    /** Distinct location sets: hosts, and each host's rack. */
    final List<String[]> locHosts = new ArrayList<>();
    final List<String[]> locRacks = new ArrayList<>();
    private final Map<LocationKey, Integer> locIndex = new HashMap<>();

    /**
     * A location set as a map key. Looked up once per listed file: hashing the host and rack strings (whose
     * hash codes the strings cache) is far cheaper than joining them into a new string every time.
     */
    private record LocationKey(String[] hosts, String[] racks) {
        @Override
        public boolean equals(Object o) {
            return o instanceof LocationKey k && Arrays.equals(hosts, k.hosts) && Arrays.equals(racks, k.racks);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(hosts) * 31 + Arrays.hashCode(racks);
        }
    }

    int size;
    int[] dir = new int[1024];
    int[] nameStart = new int[1025];
    long[] length = new long[1024];
    int[] loc = new int[1024];
    byte[] crc = new byte[1024];
    /** Device and inode per file when the lister knew them (local listing), else null. */
    long[] dev;
    long[] ino;
    private byte[] names = new byte[16384];
    private int namesUsed;
    /** The large files (file index to status), noted by the lister when it was asked to. */
    final Map<Integer, FileStatus> large = new HashMap<>();
    /** Subdirectories a non-recursive listing passed over, and the first of them (for the client's warning). */
    long skippedDirs;
    String firstSkippedDir;

    /** Notes a subdirectory that a non-recursive listing does not enter. */
    void skippedDir(String path) {
        if (skippedDirs++ == 0) {
            firstSkippedDir = path;
        }
    }

    int dir(String path) {
        Integer i = dirIndex.get(path);
        if (i == null) {
            i = dirs.size();
            dirs.add(path);
            dirIndex.put(path, i);
        }
        return i;
    }

    /** The location-set index of a file's blocks: the hosts holding most of its bytes first, at most 8. */
    int locations(BlockLocation[] blocks) throws IOException {
        if (blocks == null || blocks.length == 0) {
            return location(new String[0], new String[0]);
        }
        if (blocks.length == 1) {
            BlockLocation b = blocks[0];
            return location(b.getHosts(), racksOf(b));
        }
        Map<String, long[]> bytes = new HashMap<>();
        Map<String, String> rackOf = new HashMap<>();
        for (BlockLocation b : blocks) {
            String[] hosts = b.getHosts();
            String[] racks = racksOf(b);
            for (int h = 0; h < hosts.length; h++) {
                bytes.computeIfAbsent(hosts[h], k -> new long[1])[0] += b.getLength();
                rackOf.putIfAbsent(hosts[h], racks[h]);
            }
        }
        List<String> hs = new ArrayList<>(bytes.keySet());
        hs.sort((a, b) -> {
            int c = Long.compare(bytes.get(b)[0], bytes.get(a)[0]);
            return c != 0 ? c : a.compareTo(b);
        });
        if (hs.size() > 8) {
            hs = hs.subList(0, 8);
        }
        String[] racks = new String[hs.size()];
        for (int i = 0; i < racks.length; i++) {
            racks[i] = rackOf.get(hs.get(i));
        }
        return location(hs.toArray(new String[0]), racks);
    }

    private static String[] racksOf(BlockLocation b) throws IOException {
        String[] hosts = b.getHosts();
        String[] topo = b.getTopologyPaths();
        String[] racks = new String[hosts.length];
        for (int h = 0; h < hosts.length; h++) {
            String rack = "/default-rack";
            if (topo != null && topo.length == hosts.length) {
                String t = topo[h];
                int slash = t.lastIndexOf('/');
                if (slash > 0) {
                    rack = t.substring(0, slash);
                }
            }
            racks[h] = rack;
        }
        return racks;
    }

    int location(String[] hosts, String[] racks) {
        LocationKey key = new LocationKey(hosts, racks);
        Integer i = locIndex.get(key);
        if (i == null) {
            i = locHosts.size();
            locHosts.add(hosts);
            locRacks.add(racks);
            locIndex.put(key, i);
        }
        return i;
    }

    void add(int dirIdx, String name, long len, int locIdx, boolean hasCrc) {
        if (size == dir.length) {
            resize(Math.max(1024, size + (size >> 1)));
        }
        byte[] b = name.getBytes(StandardCharsets.UTF_8);
        if (namesUsed + b.length > names.length) {
            long want = Math.max((long) names.length * 3 / 2, (long) namesUsed + b.length);
            if (want > Integer.MAX_VALUE - 16) {
                throw new IllegalStateException("too many input files for one job: file names exceed 2 GiB");
            }
            names = Arrays.copyOf(names, (int) want);
        }
        System.arraycopy(b, 0, names, namesUsed, b.length);
        dir[size] = dirIdx;
        nameStart[size] = namesUsed;
        namesUsed += b.length;
        nameStart[size + 1] = namesUsed;
        length[size] = len;
        loc[size] = locIdx;
        crc[size] = (byte) (hasCrc ? 1 : 0);
        size++;
    }

    /** Adds a file whose device and inode are known (all or none of a table's files must have them). */
    void add(int dirIdx, String name, long len, int locIdx, boolean hasCrc, long device, long inode) {
        if (size == 0 && ino == null) {
            ino = new long[dir.length];
            dev = new long[dir.length];
        }
        add(dirIdx, name, len, locIdx, hasCrc);
        if (ino != null) {
            ino[size - 1] = inode;
            dev[size - 1] = device;
        }
    }

    /**
     * Drops the spare capacity of the arrays (up to a third of them, as they
     * grow by half): done once the listing is complete, before the planner's
     * own per-file arrays are made, so that they do not stack on the slack.
     */
    void trim() {
        if (dir.length != size) {
            resize(size);
        }
        if (names.length != namesUsed) {
            names = Arrays.copyOf(names, namesUsed);
        }
    }

    /** Gives the per-file arrays room for n files. */
    private void resize(int n) {
        dir = Arrays.copyOf(dir, n);
        nameStart = Arrays.copyOf(nameStart, n + 1);
        length = Arrays.copyOf(length, n);
        loc = Arrays.copyOf(loc, n);
        crc = Arrays.copyOf(crc, n);
        if (ino != null) {
            ino = Arrays.copyOf(ino, n);
            dev = Arrays.copyOf(dev, n);
        }
    }

    String name(int i) {
        return new String(names, nameStart[i], nameStart[i + 1] - nameStart[i], StandardCharsets.UTF_8);
    }

    /** Compares the names of two files as unsigned UTF-8 bytes (the order of Java strings for BMP text). */
    int compareNames(int a, int b) {
        return Arrays.compareUnsigned(names, nameStart[a], nameStart[a + 1], names, nameStart[b], nameStart[b + 1]);
    }

    /** The fully qualified path of file i. */
    String path(int i) {
        String d = dirs.get(dir[i]);
        return d.endsWith("/") ? d + name(i) : d + "/" + name(i);
    }

    long totalBytes() {
        long t = 0;
        for (int i = 0; i < size; i++) {
            t += length[i];
        }
        return t;
    }

    /** Notes the status of the file last added, when cutter deems it large (cutter null: none is). */
    void noteIfLarge(LargeFileCutter cutter, FileStatus st) {
        if (cutter != null && cutter.isLarge(st.getLen(), st.getBlockSize())) {
            large.put(size - 1, st);
        }
    }
}

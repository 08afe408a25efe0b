/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.datasources.PartitionedFile;

/**
 * The files of one task, read as one BFO batch. Shipped as a few arrays,
 * not an object per file: the local paths packed as the kernel sees them
 * (what the batch read takes as it is), and partition values once per
 * directory. Serializing (and JIT-compiling the serializer for) 10,000
 * strings and rows per task cost more than stat'ing the files.
 */
final class BfoInputPartition implements InputPartition {
    private static final long serialVersionUID = 3L;
    /** How the JDK encodes file names for the kernel (what bfo-java's Path encoding uses). */
    private static final Charset JNU = jnu();
    private static final boolean UTF8 = JNU.equals(StandardCharsets.UTF_8);
    private static final String LOCAL = "file:";

    /** Per file, its local path in JNU bytes, NUL-terminated, end to end; null when paths carries them. */
    private final byte[] localPaths;
    private final String charset;                // of localPaths: the planning JVM's sun.jnu.encoding
    /** Hadoop path strings, only when a path is not "file:" + an absolute local path the bytes give back exactly. */
    private final String[] paths;
    final long[] lengths;
    final long[] modificationTimes;              // milliseconds, from the listing (what a remote metadata read gives)
    private final InternalRow[] partitionRows;   // distinct partition values, shared by their files
    private final int[] partitionRowOf;          // per file, its index in partitionRows
    private final String[] hosts;
    private transient int[] starts;              // per file, where its local path begins in localPaths

    /** names: per file, its Hadoop path string (taken from the listing, not parsed again). */
    BfoInputPartition(PartitionedFile[] files, String[] hosts, Map<PartitionedFile, String> names) {
        int n = files.length;
        lengths = new long[n];
        modificationTimes = new long[n];
        partitionRowOf = new int[n];
        Map<InternalRow, Integer> rows = new IdentityHashMap<>();
        List<InternalRow> distinct = new ArrayList<>();
        String[] strings = new String[n];
        for (int i = 0; i < n; i++) {
            strings[i] = names.get(files[i]);
            lengths[i] = files[i].fileSize();
            modificationTimes[i] = files[i].modificationTime();
            partitionRowOf[i] = rows.computeIfAbsent(files[i].partitionValues(), r -> {
                distinct.add(r.copy());
                return distinct.size() - 1;
            });
        }
        partitionRows = distinct.toArray(new InternalRow[0]);
        localPaths = pack(strings);
        paths = localPaths == null ? strings : null;
        charset = JNU.name();
        this.hosts = hosts;
    }

    /** The local paths of "file:/..." strings packed, or null when one cannot be carried exactly so. */
    private static byte[] pack(String[] strings) {
        byte[][] encoded = new byte[strings.length][];
        int total = 0;
        for (int i = 0; i < strings.length; i++) {
            String s = strings[i];
            if (!s.startsWith("file:/") || s.startsWith("file://") || s.indexOf('\0') >= 0
                    || s.indexOf('\uFFFD') >= 0) {
                return null;
            }
            byte[] b = s.getBytes(JNU);   // "file:" takes 5 bytes in any encoding Java runs with
            // as many bytes as chars in UTF-8: ASCII, which decodes back as it is; else check the round trip
            if ((b.length != s.length() || !UTF8) && !new String(b, JNU).equals(s)) {
                return null;   // not representable in sun.jnu.encoding: the Path route decides
            }
            encoded[i] = b;
            total += b.length - LOCAL.length() + 1;
        }
        byte[] out = new byte[total];
        int pos = 0;
        for (byte[] b : encoded) {
            int len = b.length - LOCAL.length();
            System.arraycopy(b, LOCAL.length(), out, pos, len);
            pos += len + 1;
        }
        return out;
    }

    int size() {
        return lengths.length;
    }

    /** The Hadoop path string of file i ("file:/..."), the path column. */
    String path(int i) {
        if (paths != null) {
            return paths[i];
        }
        int from = start(i);
        return LOCAL + new String(localPaths, from, end(i) - 1 - from, Charset.forName(charset));
    }

    /** True when file i is on the local file system (read by libbfo), false for any other Hadoop file system. */
    boolean isLocal(int i) {
        return localPaths != null || paths[i].startsWith(LOCAL);
    }

    InternalRow partitionValues(int i) {
        return partitionRows[partitionRowOf[i]];
    }

    /**
     * The local paths of files[0, n), packed for BatchFileReader#readPacked, or null when this partition's
     * paths go as Paths ({@link #localPath}).
     */
    byte[] packedLocalPaths(int[] files, int n) {
        if (localPaths == null || !JNU.name().equals(charset)) {
            return null;   // an executor that encodes names otherwise than the driver: through Paths
        }
        if (n == size()) {
            return localPaths;   // files is 0..n-1: every file is read
        }
        int total = 0;
        for (int k = 0; k < n; k++) {
            total += end(files[k]) - start(files[k]);
        }
        byte[] out = new byte[total];
        int pos = 0;
        for (int k = 0; k < n; k++) {
            int from = start(files[k]), len = end(files[k]) - from;
            System.arraycopy(localPaths, from, out, pos, len);
            pos += len;
        }
        return out;
    }

    /**
     * The local path of file i: a local Hadoop path's string is "file:" and the decoded path (Path.toString),
     * so the listing's string gives it without parsing; anything else is parsed.
     */
    java.nio.file.Path localPath(int i) {
        String p = path(i);
        if (p.startsWith("file:/") && !p.startsWith("file://")) {
            return java.nio.file.Paths.get(p.substring(LOCAL.length()));
        }
        return java.nio.file.Paths.get(new org.apache.hadoop.fs.Path(p).toUri().getPath());
    }

    private int start(int i) {
        int[] s = starts;
        if (s == null) {
            s = new int[size() + 1];
            for (int k = 0, pos = 0; k < size(); k++) {
                s[k] = pos;
                while (localPaths[pos] != 0) {
                    pos++;
                }
                pos++;
            }
            s[size()] = localPaths.length;
            starts = s;
        }
        return s[i];
    }

    /** Where file i's path ends, after its NUL. */
    private int end(int i) {
        start(i);
        return starts[i + 1];
    }

    private static Charset jnu() {
        try {
            return Charset.forName(System.getProperty("sun.jnu.encoding", "UTF-8"));
        } catch (RuntimeException e) {
            return StandardCharsets.UTF_8;
        }
    }

    @Override
    public String[] preferredLocations() {
        return hosts;
    }

    @Override
    public String toString() {
        return "BfoInputPartition[" + size() + " files" + (localPaths != null ? ", packed" : "") + ", hosts "
                + Arrays.toString(hosts) + "]";
    }
}

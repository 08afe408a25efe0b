/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.synth;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.NoSuchElementException;

/**
 * A read-only file system of N synthetic files, for split planning at scale
 * (millions of files) without a NameNode or a disk: {@code synth:///} holds
 * directories {@code d00000, d00001, ...} of K files each, file i being
 * {@code /dNNNNN/part-NNNNNNNN} (i in 8 digits, dNNNNN = i / K). Sizes and
 * block locations are a pure function of i, made when asked for: the file
 * system holds no per-file state, so whatever memory a planner uses is its own.
 *
 * <p>Locations follow HDFS's default placement: the first replica on some host,
 * the second and third on two hosts of one other rack, so a large input has
 * tens of thousands of distinct location sets, as on a real cluster. Sizes are
 * 1 KiB - 64 KiB (one block each). Files cannot be opened: the file system
 * exists to be listed.
 *
 * <p>Shared by hadoop-input's tests and the benchmarks (test-jar); register it
 * with {@link #configure}.
 */
public class SyntheticFileSystem extends FileSystem {
    public static final String SCHEME = "synth";
    /** Number of files (default 1,000,000). */
    public static final String FILES = "fs.synth.files";
    /** Files per directory (default 1,000). */
    public static final String FILES_PER_DIR = "fs.synth.files.per.dir";
    /** Data nodes (default 100), spread over {@link #RACKS} racks. */
    public static final String HOSTS = "fs.synth.hosts";
    /** Racks (default 10). */
    public static final String RACKS = "fs.synth.racks";

    static final long BLOCK_SIZE = 128L << 20;
    private static final long MIN_SIZE = 1 << 10;
    private static final long MAX_SIZE = 64 << 10;
    private static final FsPermission FILE_PERM = new FsPermission((short) 0644);
    private static final FsPermission DIR_PERM = new FsPermission((short) 0755);

    private URI uri;
    private long files;
    private int perDir;
    private int hosts;
    private int racks;
    private Path workingDir;
    private String[] hostName;
    private String[] hostAddr;
    private String[] hostTopo;

    /** Registers the scheme in conf for n files of perDir per directory; returns the root {@code synth:///}. */
    public static Path configure(Configuration conf, long n, int perDir) {
        conf.setClass("fs." + SCHEME + ".impl", SyntheticFileSystem.class, FileSystem.class);
        conf.setBoolean("fs." + SCHEME + ".impl.disable.cache", true);   // another N in the same JVM
        conf.setLong(FILES, n);
        conf.setInt(FILES_PER_DIR, perDir);
        return new Path(SCHEME + ":///");
    }

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        super.initialize(name, conf);
        uri = URI.create(SCHEME + ":///");
        files = conf.getLong(FILES, 1_000_000);
        perDir = conf.getInt(FILES_PER_DIR, 1000);
        hosts = conf.getInt(HOSTS, 100);
        racks = conf.getInt(RACKS, 10);
        if (files < 0 || perDir < 1 || hosts < 3 || racks < 2 || hosts % racks != 0 || hosts / racks < 2) {
            throw new IOException("synth: bad shape " + files + " files, " + perDir + " per dir, " + hosts
                    + " hosts in " + racks + " racks");
        }
        workingDir = new Path(uri.toString());
        hostName = new String[hosts];
        hostAddr = new String[hosts];
        hostTopo = new String[hosts];
        for (int h = 0; h < hosts; h++) {
            hostName[h] = "host" + pad(h, 4);
            hostAddr[h] = hostName[h] + ":9866";
            hostTopo[h] = "/rack" + pad(h / (hosts / racks), 3) + "/" + hostAddr[h];
        }
    }

    @Override
    public String getScheme() {
        return SCHEME;
    }

    @Override
    public URI getUri() {
        return uri;
    }

    // ------------------------------------------------------------ the shape

    long dirCount() {
        return (files + perDir - 1) / perDir;
    }

    /** The length of file i: 1 - 64 KiB, spread by a mixing hash. */
    public static long length(long i) {
        return MIN_SIZE + Long.remainderUnsigned(mix(i), MAX_SIZE - MIN_SIZE + 1);
    }

    /** Total bytes of files 0 .. n-1. */
    public static long totalLength(long n) {
        long t = 0;
        for (long i = 0; i < n; i++) {
            t += length(i);
        }
        return t;
    }

    public static String dirName(long d) {
        return "d" + pad(d, 5);
    }

    public static String fileName(long i) {
        return "part-" + pad(i, 8);
    }

    /** v in at least w decimal digits (String.format costs a microsecond, times millions). */
    private static String pad(long v, int w) {
        String s = Long.toString(v);
        return s.length() >= w ? s : "00000000".substring(0, w - s.length()) + s;
    }

    private static long mix(long x) {   // splitmix64's finaliser
        x += 0x9E3779B97F4A7C15L;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    /** Host indices of file i's three replicas (HDFS's default placement). */
    private int[] replicas(long i) {
        long h = mix(~i);
        int perRack = hosts / racks;
        int first = (int) Long.remainderUnsigned(h, hosts);
        int rack0 = first / perRack;
        int rack1 = (rack0 + 1 + (int) Long.remainderUnsigned(h >>> 20, racks - 1)) % racks;
        int a = (int) Long.remainderUnsigned(h >>> 36, perRack);
        int b = (a + 1 + (int) Long.remainderUnsigned(h >>> 50, perRack - 1)) % perRack;
        return new int[] {first, rack1 * perRack + a, rack1 * perRack + b};
    }

    // ------------------------------------------------------------ paths

    /** -1 for the root, d for /dNNNNN, or -2 - i for file i; throws when it does not exist. */
    private long resolve(Path p) throws FileNotFoundException {
        String s = makeQualified(p).toUri().getPath();
        if (s.equals("/") || s.isEmpty()) {
            return -1;
        }
        String[] parts = s.substring(1).split("/");
        try {
            if (parts.length >= 1 && parts[0].length() == 6 && parts[0].charAt(0) == 'd') {
                long d = Long.parseLong(parts[0].substring(1));
                if (d < dirCount() && parts[0].equals(dirName(d))) {
                    if (parts.length == 1) {
                        return d;
                    }
                    if (parts.length == 2 && parts[1].startsWith("part-") && parts[1].length() == 13) {
                        long i = Long.parseLong(parts[1].substring(5));
                        if (i < files && i / perDir == d && parts[1].equals(fileName(i))) {
                            return -2 - i;
                        }
                    }
                }
            }
        } catch (NumberFormatException e) {
            // not one of ours
        }
        throw new FileNotFoundException("synth: no such file or directory: " + p);
    }

    private FileStatus dirStatus(Path p) {
        return new FileStatus(0, true, 0, 0, 0, 0, DIR_PERM, "bfo", "bfo", makeQualified(p));
    }

    private FileStatus fileStatus(long i) {
        Path p = new Path(uri.toString() + dirName(i / perDir) + "/" + fileName(i));
        return new FileStatus(length(i), false, 3, BLOCK_SIZE, i, i, FILE_PERM, "bfo", "bfo", p);
    }

    /** The index of a status of ours, from its name (callers hand back the statuses we made). */
    private long indexOf(FileStatus st) throws FileNotFoundException {
        long r = resolve(st.getPath());
        if (r > -2) {
            throw new FileNotFoundException("synth: not a file: " + st.getPath());
        }
        return -2 - r;
    }

    @Override
    public FileStatus getFileStatus(Path p) throws IOException {
        long r = resolve(p);
        return r >= -1 ? dirStatus(p) : fileStatus(-2 - r);
    }

    @Override
    public FileStatus[] listStatus(Path p) throws IOException {
        long r = resolve(p);
        if (r == -1) {
            FileStatus[] out = new FileStatus[(int) dirCount()];
            for (int d = 0; d < out.length; d++) {
                out[d] = dirStatus(new Path(uri.toString() + dirName(d)));
            }
            return out;
        }
        if (r >= 0) {
            long first = r * perDir;
            long end = Math.min(files, first + perDir);
            FileStatus[] out = new FileStatus[(int) (end - first)];
            for (long i = first; i < end; i++) {
                out[(int) (i - first)] = fileStatus(i);
            }
            return out;
        }
        return new FileStatus[] {fileStatus(-2 - r)};
    }

    /** Like FileSystem's, without parsing every file's path back into its index. */
    @Override
    public RemoteIterator<LocatedFileStatus> listLocatedStatus(Path p) throws IOException {
        long r = resolve(p);
        if (r < 0) {
            FileStatus[] all = listStatus(p);
            return new RemoteIterator<>() {
                int k;

                @Override
                public boolean hasNext() {
                    return k < all.length;
                }

                @Override
                public LocatedFileStatus next() throws IOException {
                    if (k >= all.length) {
                        throw new NoSuchElementException();
                    }
                    FileStatus st = all[k++];
                    return new LocatedFileStatus(st, st.isFile() ? blocks(indexOf(st), st) : null);
                }
            };
        }
        long end = Math.min(files, (r + 1) * perDir);
        return new RemoteIterator<>() {
            long i = r * perDir;

            @Override
            public boolean hasNext() {
                return i < end;
            }

            @Override
            public LocatedFileStatus next() throws IOException {
                if (i >= end) {
                    throw new NoSuchElementException();
                }
                FileStatus st = fileStatus(i);
                return new LocatedFileStatus(st, blocks(i++, st));
            }
        };
    }

    @Override
    public BlockLocation[] getFileBlockLocations(FileStatus st, long start, long len) throws IOException {
        if (st == null) {
            return null;
        }
        if (start < 0 || len < 0) {
            throw new IllegalArgumentException("Invalid start or len parameter");
        }
        if (st.isDirectory() || st.getLen() <= start) {
            return new BlockLocation[0];
        }
        return blocks(indexOf(st), st);
    }

    private BlockLocation[] blocks(long i, FileStatus st) {
        int[] rep = replicas(i);
        String[] names = new String[3];
        String[] hostNames = new String[3];
        String[] topo = new String[3];
        for (int k = 0; k < 3; k++) {
            hostNames[k] = hostName[rep[k]];
            names[k] = hostAddr[rep[k]];
            topo[k] = hostTopo[rep[k]];
        }
        return new BlockLocation[] {new BlockLocation(names, hostNames, topo, 0, st.getLen())};
    }

    // ------------------------------------------------------------ read-only

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        throw new IOException("synth: files exist to be listed, not read: " + f);
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        throw new IOException("synth: read-only");
    }

    @Override
    public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) throws IOException {
        throw new IOException("synth: read-only");
    }

    @Override
    public boolean rename(Path src, Path dst) throws IOException {
        throw new IOException("synth: read-only");
    }

    @Override
    public boolean delete(Path f, boolean recursive) throws IOException {
        throw new IOException("synth: read-only");
    }

    @Override
    public boolean mkdirs(Path f, FsPermission permission) throws IOException {
        throw new IOException("synth: read-only");
    }

    @Override
    public void setWorkingDirectory(Path dir) {
        workingDir = makeQualified(dir);
    }

    @Override
    public Path getWorkingDirectory() {
        return workingDir;
    }
}

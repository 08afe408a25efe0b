/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.util.functional.FutureIO;

import java.io.Closeable;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The FileSystem a reader opens its files with (Hadoop's BatchTextInputFormat
 * and BatchFileInputFormat on other file systems than the local one, and
 * Spark's {@code format("bfo")}), looked up once per scheme
 * and authority ({@code Path.getFileSystem} per file, a current-user lookup
 * and a cache probe, took 12% of the read threads' CPU on HDFS: JFR,
 * benchmark H2).
 *
 * <p>HDFS keeps the DataNode connections of finished reads for the next
 * ones in its client's peer cache, 16 by default for the whole JVM
 * ({@code dfs.client.socketcache.capacity}). With more reads in flight than
 * that, returned connections overflow it and are closed, and later reads
 * open new ones: a TCP handshake, and a thread the DataNode starts for the
 * connection. Measured (L1, Spark, 10,000 files at 0.5 ms): about 1,950
 * new connections, one read in five. Unless the user chose a capacity (or
 * a client context), hdfs: files are therefore read through a FileSystem
 * instance of this reader's own whose client context ({@code
 * dfs.client.context}, shared by the readers of the JVM) keeps as many
 * connections as {@link #peerCapacity} reads in flight; it is closed with
 * the reader. Other file systems are Hadoop's cached instances.
 *
 * <p>{@link #open} opens a listed file with what the listing said.
 */
public final class ReadFileSystems implements Closeable {
    public static final String PEER_CACHE = "dfs.client.socketcache.capacity";
    public static final String CLIENT_CONTEXT = "dfs.client.context";

    private final Configuration conf;
    private final int peers;
    private final Map<String, FileSystem> bySchemeAuthority = new ConcurrentHashMap<>();
    private final List<FileSystem> own = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    /** readsInFlight: the most files one reader reads at once. */
    public ReadFileSystems(Configuration conf, int readsInFlight) {
        this.conf = conf;
        this.peers = peerCapacity(readsInFlight);
    }

    /**
     * The peer cache for the readers of a JVM: a reader's reads in flight times the tasks that may run at
     * once (at least 2, at most one per processor), between HDFS's 16 and 4096.
     */
    public static int peerCapacity(int readsInFlight) {
        long n = (long) Math.max(1, readsInFlight) * Math.max(2, Runtime.getRuntime().availableProcessors());
        return (int) Math.max(16, Math.min(4096, n));
    }

    /** path's file system; the same instance for every path of a scheme and authority. */
    public FileSystem get(Path path) throws IOException {
        if (closed) {
            throw new IOException("bfo: reader closed");
        }
        URI u = path.toUri();
        String key = u.getScheme() + "://" + u.getAuthority();
        FileSystem fs = bySchemeAuthority.get(key);
        if (fs != null) {
            return fs;
        }
        synchronized (this) {
            if (closed) {
                throw new IOException("bfo: reader closed");
            }
            fs = bySchemeAuthority.get(key);
            if (fs == null) {
                fs = newFileSystem(path);
                bySchemeAuthority.put(key, fs);
            }
            return fs;
        }
    }

    /**
     * A listed file opened for reading whole, with what the listing said: its status (length and modification
     * time) and the same length as an option, and the whole-file read policy, so that an object store skips its
     * status request (S3A: no HEAD; one GET of the whole object) and reads without range guessing; file systems
     * that use neither (HDFS: the open asks the NameNode for the block locations anyway) ignore them.
     */
    public FSDataInputStream open(Path path, long length, long modificationTime) throws IOException {
        return FutureIO.awaitFuture(get(path).openFile(path)
                .withFileStatus(new FileStatus(length, false, 1, 0, modificationTime, path))
                .optLong(Options.OpenFileOptions.FS_OPTION_OPENFILE_LENGTH, length)
                .opt(Options.OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY,
                        Options.OpenFileOptions.FS_OPTION_OPENFILE_READ_POLICY_WHOLE_FILE)
                .build());
    }

    private FileSystem newFileSystem(Path path) throws IOException {
        if (!"hdfs".equalsIgnoreCase(path.toUri().getScheme()) || userSet(PEER_CACHE) || userSet(CLIENT_CONTEXT)) {
            return path.getFileSystem(conf);
        }
        FileSystem fs = FileSystem.newInstance(path.toUri(), ownConf());
        own.add(fs);
        return fs;
    }

    /** The configuration of the hdfs: instances this reader makes: its peer cache, in its client context. */
    public Configuration ownConf() {
        Configuration c = new Configuration(conf);
        c.setInt(PEER_CACHE, peers);
        c.set(CLIENT_CONTEXT, "bfo-reads-" + peers);   // a context per capacity: the first client sizes its cache
        return c;
    }

    /** Whether key was set by the user (anything but Hadoop's *-default.xml resources). */
    private boolean userSet(String key) {
        String[] sources = conf.getPropertySources(key);
        if (sources == null) {
            return false;
        }
        for (String s : sources) {
            if (!s.endsWith("-default.xml")) {
                return true;
            }
        }
        return false;
    }

    /** Closes the instances this reader made (reads still in flight on them fail); Hadoop's cached ones stay. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            bySchemeAuthority.clear();
        }
        for (FileSystem fs : own) {
            try {
                fs.close();
            } catch (IOException e) {
                // a read-only client: nothing of the caller's is lost
            }
        }
        own.clear();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.hadoop.fs.DirectoryWalk;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.viewfs.ViewFileSystem;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.spark.util.HadoopFSUtils;

/**
 * The leaf files of a directory root on a Hadoop file system other than the
 * local one (hdfs:, viewfs:, s3a: ...), listed on the driver by a few threads
 * with one listing call per directory, as Spark's listing lists each
 * directory ({@code HadoopFSUtils.listLeafFiles}): {@code listLocatedStatus}
 * on HDFS and viewfs unless {@code spark.sql.ignoreDataLocality},
 * {@code listStatus} elsewhere, hidden and temporary names
 * ({@link HadoopFSUtils#shouldFilterOutPathName}) dropped at every level,
 * block locations looked up for the statuses that came without them, and the
 * files in Spark's order (a directory's files, then its subdirectories',
 * depth first).
 *
 * <p>Directories are listed {@value #THREADS} at a time
 * ({@link DirectoryWalk}). Spark lists a root with more than
 * {@code spark.sql.sources.parallelPartitionDiscovery.threshold} (32)
 * subdirectories through a Spark job: a task per directory that deserializes
 * the session's Hadoop configuration, lists one directory and sends the
 * statuses back through the scheduler, which costs more than the listing
 * call it makes (spark-source/README.md has the measurement).
 *
 * <p>A root that is a file lists as itself, as in Spark. Any failure (a
 * missing root, a directory that vanished, permissions) makes {@link #list}
 * return null: Spark's listing then lists the root itself and gives its own
 * error or honours ignoreMissingFiles.
 */
final class BfoRemoteLeafFiles {
    /** Directories listed at once: listing calls in flight to the file system's server or store. */
    static final int THREADS = 16;

    private BfoRemoteLeafFiles() {
    }

    /** A listed directory: its files (already filtered) and its subdirectories. */
    private static final class Dir {
        final Path path;
        List<FileStatus> files;
        List<Dir> kids;

        Dir(Path path) {
            this.path = path;
        }
    }

    /** root's leaf files as Spark's listing gives them, or null when Spark must list root itself. */
    static FileStatus[] list(Path root, FileSystem fs, boolean ignoreLocality) {
        try {
            Dir top = new Dir(root);
            DirectoryWalk.walk(List.of(top), THREADS, "bfo-list", d -> listOne(d, fs, ignoreLocality).kids);
            List<FileStatus> out = new ArrayList<>();
            collect(top, out);
            return out.toArray(new FileStatus[0]);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** One directory: its statuses, names filtered, split into files (located) and subdirectories. */
    private static Dir listOne(Dir d, FileSystem fs, boolean ignoreLocality) throws IOException {
        FileStatus[] statuses;
        if ((fs instanceof DistributedFileSystem || fs instanceof ViewFileSystem) && !ignoreLocality) {
            List<FileStatus> l = new ArrayList<>();
            RemoteIterator<LocatedFileStatus> it = fs.listLocatedStatus(d.path);
            while (it.hasNext()) {
                l.add(it.next());
            }
            statuses = l.toArray(new FileStatus[0]);
        } else {
            statuses = fs.listStatus(d.path);
        }
        d.files = new ArrayList<>();
        d.kids = new ArrayList<>();
        for (FileStatus s : statuses) {
            if (HadoopFSUtils.shouldFilterOutPathName(s.getPath().getName())) {
                continue;
            }
            if (s.isDirectory()) {
                d.kids.add(new Dir(s.getPath()));
            } else {
                d.files.add(ignoreLocality || s instanceof LocatedFileStatus ? s : located(fs, s));
            }
        }
        return d;
    }

    /** s with its block locations, built as Spark's listing builds it (no permission lookups). */
    private static FileStatus located(FileSystem fs, FileStatus s) throws IOException {
        BlockLocation[] found = fs.getFileBlockLocations(s, 0, s.getLen());
        BlockLocation[] locations = new BlockLocation[found.length];
        for (int i = 0; i < found.length; i++) {
            BlockLocation b = found[i];
            locations[i] = b.getClass() == BlockLocation.class ? b
                    : new BlockLocation(b.getNames(), b.getHosts(), b.getOffset(), b.getLength());
        }
        LocatedFileStatus l = new LocatedFileStatus(s.getLen(), s.isDirectory(), s.getReplication(),
                s.getBlockSize(), s.getModificationTime(), 0, null, null, null, null, s.getPath(), locations);
        if (s.isSymlink()) {
            l.setSymlink(s.getSymlink());
        }
        return l;
    }

    private static void collect(Dir d, List<FileStatus> out) {
        out.addAll(d.files);
        for (Dir k : d.kids) {
            collect(k, out);
        }
    }
}

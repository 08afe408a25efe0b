/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.BatchFileReader;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.util.HadoopFSUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * The leaf files of local directory roots, listed by libbfo's parallel walk
 * with one metadata-only batch (statx on the walk's threads, in inode order),
 * and of roots on other Hadoop file systems, listed on the driver a few
 * directories at a time ({@link BfoRemoteLeafFiles}, where Spark would run a
 * listing job), handed to Spark's {@code InMemoryFileIndex} as its file status cache: the
 * index asks the cache for each root before listing it itself, so partition
 * discovery, pathGlobFilter, modifiedBefore/After and recursiveFileLookup
 * stay Spark's own and only the listing changes. Spark's listing stats every
 * file from one thread per directory (and, above 32 directories, through a
 * Spark job); on cold inodes that was most of a metadata-only query.
 *
 * <p>The result must be the file list Spark's listing would give, so a root
 * is listed natively only when that is certain, and otherwise left to Spark
 * (the cache answers "not cached"): roots that are files, trees holding
 * entries Hadoop's local file system treats differently from the walk
 * (special files, which Hadoop lists; links to directories, which it
 * follows; dangling links), directories the walk could not read or files
 * that vanished meanwhile (Spark then gives its own error or honours
 * ignoreMissingFiles), a Hadoop input path filter in the configuration, and
 * a reader without libbfo. Names are filtered as Spark's listing filters
 * them ({@link HadoopFSUtils#shouldFilterOutPathName}: hidden and temporary
 * files and directories), at every level below the root.
 *
 * <p>Each index gets its own instance (as each gets its own client of
 * Spark's shared cache). Listings Spark made itself are kept until
 * {@link #invalidateAll()} (REFRESH), after which every root is listed again.
 */
final class BfoLeafFiles extends FileStatusCache {
    private static final Logger LOG = LoggerFactory.getLogger(BfoLeafFiles.class);

    private final BfoOptions options;
    private final Configuration hadoopConf;
    private final boolean ignoreLocality;
    private final Map<Path, FileStatus[]> listedBySpark = new ConcurrentHashMap<>();
    private final AtomicLong nativeRoots = new AtomicLong();
    private final AtomicLong sparkRoots = new AtomicLong();

    /** ignoreLocality: spark.sql.ignoreDataLocality (remote roots' statuses then carry no block locations). */
    BfoLeafFiles(BfoOptions options, Configuration hadoopConf, boolean ignoreLocality) {
        this.options = options;
        this.hadoopConf = hadoopConf;
        this.ignoreLocality = ignoreLocality;
    }

    /** Roots listed by libbfo so far. */
    long nativeRoots() {
        return nativeRoots.get();
    }

    /** Roots left to Spark's listing so far. */
    long sparkRoots() {
        return sparkRoots.get();
    }

    @Override
    public Option<FileStatus[]> getLeafFiles(Path root) {
        FileStatus[] kept = listedBySpark.get(root);
        if (kept != null) {
            return Option.apply(kept);
        }
        FileStatus[] listed = listNatively(root);
        (listed != null ? nativeRoots : sparkRoots).incrementAndGet();
        return Option.apply(listed);
    }

    @Override
    public void putLeafFiles(Path root, FileStatus[] leafFiles) {
        listedBySpark.put(root, leafFiles);
    }

    @Override
    public void invalidateAll() {
        listedBySpark.clear();
    }

    /** root's leaf files as Spark's listing gives them, or null when Spark must list it. */
    private FileStatus[] listNatively(Path root) {
        String scheme = root.toUri().getScheme();
        if (hadoopConf.get(FileInputFormat.PATHFILTER_CLASS) != null) {
            return null;
        }
        if (scheme != null && !"file".equals(scheme)) {
            try {
                return BfoRemoteLeafFiles.list(root, root.getFileSystem(hadoopConf), ignoreLocality);
            } catch (IOException e) {
                return null;
            }
        }
        String rootDir = root.toUri().getPath();
        java.nio.file.Path local = java.nio.file.Paths.get(rootDir);
        long blockSize;
        try {
            blockSize = root.getFileSystem(hadoopConf).getDefaultBlockSize(root);
        } catch (IOException e) {
            return null;
        }
        rootDir = rootDir.endsWith("/") ? rootDir : rootDir + "/";
        String prefix = local.toString();
        prefix = prefix.endsWith("/") ? prefix : prefix + "/";
        List<FileStatus> out = new ArrayList<>();
        Map<String, Path> dirs = new HashMap<>();   // relative directory ("" for the root) -> its path, null: filtered
        try (BatchFileReader r = options.newReader(true)) {
            if (!r.isNative()) {
                return null;
            }
            try (FileBatch b = r.readTree(local)) {
                for (FileData f : b) {
                    String p = f.pathString();
                    if (!f.isOk() || !p.startsWith(prefix)) {
                        LOG.debug("bfo: {} left to Spark's listing: {}", root, f.isOk() ? "a file" : f.failure());
                        return null;
                    }
                    String rel = p.substring(prefix.length());
                    int slash = rel.lastIndexOf('/');
                    String relDir = slash < 0 ? "" : rel.substring(0, slash);
                    Path dir = dirs.get(relDir);
                    if (dir == null && !dirs.containsKey(relDir)) {
                        dir = dirPath(root, rootDir, relDir);
                        dirs.put(relDir, dir);
                    }
                    if (dir == null || HadoopFSUtils.shouldFilterOutPathName(rel.substring(slash + 1))) {
                        continue;
                    }
                    // Hadoop's local status: the length and millisecond mtime of the link's target
                    out.add(new FileStatus(f.size(), false, 1, blockSize, f.lastModifiedTime().toMillis(),
                            new ListedPath(new URI(scheme, null, rootDir + rel, null, null), dir)));
                }
                if (b.skippedEntries() > 0) {
                    LOG.debug("bfo: {} left to Spark's listing: {} special files or links to directories", root,
                            b.skippedEntries());
                    return null;
                }
            }
        } catch (IOException | URISyntaxException | RuntimeException e) {
            LOG.debug("bfo: {} left to Spark's listing: {}", root, e.toString());
            return null;
        }
        return out.toArray(new FileStatus[0]);
    }

    /**
     * The path of root/relDir as Hadoop's getParent() gives it, or null when one of its components is a name
     * Spark's listing filters out (the directory's files are then not listed).
     */
    private static Path dirPath(Path root, String rootDir, String relDir) throws URISyntaxException {
        if (relDir.isEmpty()) {
            return root;
        }
        for (String name : relDir.split("/")) {
            if (HadoopFSUtils.shouldFilterOutPathName(name)) {
                return null;
            }
        }
        return new Path(new URI(root.toUri().getScheme(), null, rootDir + relDir, null, null));
    }

    /**
     * A listed file's path that knows its parent: InMemoryFileIndex groups the files by getParent(), which
     * otherwise builds (and parses) a new Path per file. The path's URI is built as Hadoop's Path(parent,
     * child) builds it (quoted, no authority), without its normalizing passes: the walk's paths have no
     * empty or trailing components.
     */
    static final class ListedPath extends Path {
        private static final long serialVersionUID = 1L;
        private final Path parent;

        ListedPath(URI uri, Path parent) {
            super(uri);
            this.parent = parent;
        }

        @Override
        public Path getParent() {
            return parent;
        }
    }
}

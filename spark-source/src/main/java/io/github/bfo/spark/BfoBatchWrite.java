/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job side of the commit protocol. Tasks write their files with BFO
 * batch writes under a staging directory (DIR/_temporary-bfo-QUERYID/, hidden
 * from readers like every "_" name); a task commit (arbitrated by Spark's
 * output commit coordinator) reports its files; the job commit checks the
 * whole set (no duplicate path, nothing already there in append mode), then
 * publishes every file with a rename, and removes the staging directory.
 * An aborted job leaves the directory as it was.
 */
final class BfoBatchWrite implements Write, BatchWrite {
    private static final Logger LOG = LoggerFactory.getLogger(BfoBatchWrite.class);
    static final String STAGING_PREFIX = "_temporary-bfo-";

    private final Path dir;
    private final BfoOptions options;
    private final StructType schema;
    private final boolean truncate;
    private final Path staging;

    BfoBatchWrite(Path dir, BfoOptions options, LogicalWriteInfo info, boolean truncate) {
        this.dir = dir;
        this.options = options;
        this.schema = info.schema();
        this.truncate = truncate;
        this.staging = dir.resolve(STAGING_PREFIX + info.queryId());
    }

    @Override
    public String description() {
        return "BfoBatchWrite " + dir + (truncate ? " (overwrite)" : " (append)");
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        try {
            Files.createDirectories(staging);
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot create the staging directory " + staging + ": " + e, e);
        }
        return new BfoDataWriterFactory(staging.toString(), options, schema);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        Map<String, Path> sources = new HashMap<>();
        for (WriterCommitMessage m : messages) {
            if (m == null) {
                continue;
            }
            BfoDataWriter.Committed c = (BfoDataWriter.Committed) m;
            Path taskDir = Path.of(c.taskDir);
            for (String p : c.paths) {
                if (sources.put(p, taskDir.resolve(p)) != null) {
                    throw new IllegalArgumentException("bfo write: duplicate path '" + p
                            + "' in the DataFrame (each row must name a different file); nothing was written");
                }
            }
        }
        for (String p : sources.keySet()) {
            // "a" and "a/b" cannot both be files
            for (int k = p.indexOf('/'); k > 0; k = p.indexOf('/', k + 1)) {
                if (sources.containsKey(p.substring(0, k))) {
                    throw new IllegalArgumentException("bfo write: path '" + p.substring(0, k)
                            + "' is both a file and a directory of '" + p + "'; nothing was written");
                }
            }
        }
        try {
            if (truncate) {
                clearExceptStaging();
            } else {
                for (String p : sources.keySet()) {
                    if (Files.exists(dir.resolve(p), LinkOption.NOFOLLOW_LINKS)) {
                        throw new FileAlreadyExistsException(dir.resolve(p).toString(), null,
                                "bfo write (mode append): the file already exists; nothing was written");
                    }
                }
            }
            List<String> order = new ArrayList<>(sources.keySet());
            order.sort(null);   // directory by directory
            Path lastParent = null;
            for (String p : order) {
                Path dst = dir.resolve(p);
                Path parent = dst.getParent();
                if (!parent.equals(lastParent)) {
                    Files.createDirectories(parent);
                    lastParent = parent;
                }
                Files.move(sources.get(p), dst, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: job commit failed: " + e, e);
        } finally {
            deleteTree(staging);
        }
        LOG.info("bfo write: published {} files in {}", sources.size(), dir);
    }

    private void clearExceptStaging() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                if (!p.equals(staging)) {
                    deleteTree(p);
                }
            }
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        deleteTree(staging);
    }

    static void deleteTree(Path root) {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + root + ": " + e, e);
        }
    }
}

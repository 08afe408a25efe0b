/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.DestinationTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
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
 *
 * <p>DIR may be writable by other users (issue 16): the staging directory is
 * made exclusively, owner-only, and every create, rename and delete in DIR
 * goes through a {@link DestinationTree} (names relative to directories held
 * open, reached without following a symbolic link). A link in the way fails
 * the job with an IOException naming it; nothing outside DIR is touched.
 */
final class BfoBatchWrite implements Write, BatchWrite {
    private static final Logger LOG = LoggerFactory.getLogger(BfoBatchWrite.class);
    static final String STAGING_PREFIX = "_temporary-bfo-";

    private final Path dir;
    private final BfoOptions options;
    private final StructType schema;
    private final boolean truncate;
    private final Path staging;
    private final String stagingName;
    private DestinationTree tree;       // DIR, held open from the factory to commit or abort
    private String stagingKey;

    BfoBatchWrite(Path dir, BfoOptions options, LogicalWriteInfo info, boolean truncate) {
        this.dir = dir;
        this.options = options;
        this.schema = info.schema();
        this.truncate = truncate;
        this.stagingName = STAGING_PREFIX + info.queryId();
        this.staging = dir.resolve(stagingName);
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
            Files.createDirectories(dir);   // DIR itself: the caller's path
            closeTree();
            tree = DestinationTree.open(dir);
            stagingKey = tree.createPrivateDir(stagingName);
        } catch (IOException e) {
            closeTree();
            throw new UncheckedIOException("bfo write: cannot create the staging directory " + staging + ": " + e, e);
        }
        return new BfoDataWriterFactory(dir.toString(), stagingName, stagingKey, options, schema);
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        try {
            commitJob(messages);
        } catch (RuntimeException e) {
            try {
                deleteStaging();
            } catch (RuntimeException d) {
                e.addSuppressed(d);
            }
            throw e;
        } finally {
            closeTree();
        }
    }

    private void commitJob(WriterCommitMessage[] messages) {
        Map<String, String> sources = BfoCommittedFiles.publishPlan(messages, stagingName);
        try {
            if (tree == null) {
                throw new IOException("bfo write: the job was not set up (no staging directory)");
            }
            // the staging directory the driver made, not one put in its place
            tree.checkPrivateDir(stagingName, stagingKey);
            if (truncate) {
                clearExceptStaging();
            } else {
                for (String p : sources.keySet()) {
                    if (tree.exists(p)) {
                        throw new FileAlreadyExistsException(dir.resolve(p).toString(), null,
                                "bfo write (mode append): the file already exists; nothing was written");
                    }
                }
            }
            String lastParent = null;
            for (String p : sources.keySet()) {   // sorted: directory by directory
                int slash = p.lastIndexOf('/');
                String parent = slash < 0 ? "" : p.substring(0, slash);
                if (!parent.equals(lastParent)) {
                    if (!parent.isEmpty()) {
                        tree.mkdirs(parent);
                    }
                    lastParent = parent;
                }
                tree.move(sources.get(p), p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: job commit failed: " + e, e);
        }
        deleteStaging();
        LOG.info("bfo write: published {} files in {}", sources.size(), dir);
    }

    private void clearExceptStaging() throws IOException {
        for (String name : tree.list("")) {
            if (!name.equals(stagingName)) {
                tree.deleteTree(name);
            }
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        try {
            deleteStaging();
        } finally {
            closeTree();
        }
    }

    /** Removes the staging directory, if it is still the one this job made (never through a link). */
    private void deleteStaging() {
        if (tree == null) {
            return;
        }
        try {
            if (tree.exists(stagingName)) {
                tree.checkPrivateDir(stagingName, stagingKey);
                tree.deleteTree(stagingName);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + staging + ": " + e, e);
        }
    }

    private void closeTree() {
        if (tree != null) {
            try {
                tree.close();
            } catch (IOException e) {
                LOG.warn("bfo write: closing {}: {}", dir, e.toString());
            }
            tree = null;
        }
    }

    /**
     * Removes name in parent and everything beneath it, never following a
     * symbolic link (a link is removed, not its target); nothing when missing.
     */
    static void deleteTree(Path parent, String name) {
        try (DestinationTree t = DestinationTree.open(parent)) {
            t.deleteTree(name);
        } catch (java.nio.file.NoSuchFileException e) {
            // nothing to remove
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + parent.resolve(name) + ": " + e, e);
        }
    }
}

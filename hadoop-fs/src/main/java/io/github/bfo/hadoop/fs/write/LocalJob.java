/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import io.github.bfo.DestinationTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SortedMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit protocol of {@link StagedJob} on the local file system:
 * tasks write their files with BFO batch writes; the job commit publishes
 * each with a rename.
 *
 * <p>DIR may be writable by other users (issue 16): the staging directory is
 * made exclusively, owner-only, and every create, rename and delete in DIR
 * goes through a {@link DestinationTree} (names relative to directories held
 * open, reached without following a symbolic link). A link in the way fails
 * the job with an IOException naming it; nothing outside DIR is touched.
 */
final class LocalJob extends StagedJob {
    private static final Logger LOG = LoggerFactory.getLogger(LocalJob.class);

    private final Path dir;
    private final Path staging;
    private DestinationTree tree;       // DIR, held open from the setup to commit or abort
    private String stagingKey;          // null: a job set up elsewhere (checked owner-only, not by identity)

    LocalJob(Path dir, WriteOptions options, boolean truncate, String stagingName) {
        super(options, truncate, stagingName);
        this.dir = dir;
        this.staging = dir.resolve(stagingName);
    }

    @Override
    public String dirName() {
        return dir.toString();
    }

    @Override
    public TaskSetup setup(int partitions) throws IOException {
        try {
            Files.createDirectories(dir);   // DIR itself: the caller's path
            closeTree();
            tree = DestinationTree.open(dir);
            stagingKey = tree.createPrivateDir(stagingName);
        } catch (IOException e) {
            closeTree();
            throw new IOException("bfo write: cannot create the staging directory " + staging + ": " + e, e);
        }
        return taskSetup();
    }

    @Override
    public TaskSetup taskSetup() {
        return new TaskSetup(TaskSetup.Kind.LOCAL, dir.toString(), stagingName, stagingKey, options);
    }

    /** DIR, held open; opened here for a job set up elsewhere (a committer made again). */
    private DestinationTree tree() throws IOException {
        if (tree == null) {
            tree = DestinationTree.open(dir);
        }
        return tree;
    }

    @Override
    void publish(SortedMap<String, String> sources) throws IOException {
        DestinationTree tree = tree();
        // the staging directory the job made, not one put in its place
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
    }

    private void clearExceptStaging() throws IOException {
        DestinationTree tree = tree();
        for (String name : tree.list("")) {
            if (!name.equals(stagingName)) {
                tree.deleteTree(name);
            }
        }
    }

    /**
     * Never through a link: only the directory this job made, checked by its key. Tasks may still be writing
     * into it (Spark aborts a job without waiting for its other tasks, and a speculative attempt can outlive
     * a commit), through descriptors held inside it: a removal that walks the tree can then meet a file made
     * after it listed a directory and fail. So the directory is first renamed ({@link OutputPaths#removedName}): a
     * task's next check of the staging directory fails, its abort removes the renamed directory, and the
     * last of them to stop writing removes it whole; then it is removed here, as far as no task is writing.
     */
    @Override
    void deleteStaging() {
        try {
            if (!Files.isDirectory(dir)) {
                return;
            }
            DestinationTree tree = tree();
            if (!tree.exists(stagingName)) {
                return;
            }
            tree.checkPrivateDir(stagingName, stagingKey);
            String gone = OutputPaths.removedName(stagingName);
            try {
                tree.move(stagingName, gone);
            } catch (IOException e) {
                LOG.warn("bfo write: cannot rename {} to {} ({}); removing it in place", staging, gone, e.toString());
                gone = stagingName;
            }
            WriteTestHooks.afterStagingMoved.run();
            try {
                tree.deleteTree(gone);
            } catch (DirectoryNotEmptyException e) {
                LOG.info("bfo write: a task is still writing in {}; it removes it when it stops", dir.resolve(gone));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + staging + ": " + e, e);
        }
    }

    @Override
    void release() {
        closeTree();
    }

    @Override
    public void abortAttempt(int partition, String attempt, TaskFiles report) throws IOException {
        LocalTask.removeAttempt(dir, stagingName, stagingKey, attempt);
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
    public static void deleteTree(Path parent, String name) {
        try (DestinationTree t = DestinationTree.open(parent)) {
            t.deleteTree(name);
        } catch (java.nio.file.NoSuchFileException e) {
            // nothing to remove
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + parent.resolve(name) + ": " + e, e);
        }
    }
}

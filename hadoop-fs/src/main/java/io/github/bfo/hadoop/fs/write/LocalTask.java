/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import io.github.bfo.BatchFileWriter;
import io.github.bfo.DestinationTree;
import io.github.bfo.WriteEntry;
import io.github.bfo.WriteResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;

/**
 * One task attempt into a local directory: files under the attempt's own
 * directory in the staging area, written by BFO batch writes (one
 * durability point per batch of up to writeBatchBytes); commit reports the
 * files, abort removes them.
 *
 * <p>The staging directory is checked, relative to DIR and without following
 * a link, to be the owner-only directory the job made (by identity when the
 * job could hand its key over, as Spark's can; else owner-only and the
 * effective user's) before the task writes and again when it commits; abort
 * removes the task's directory without following a link. The job can end
 * while the task writes (see {@link #abort}).
 */
final class LocalTask extends OutputTask {
    private final Path dir;
    private final String stagingName;
    private final String stagingKey;
    private final String taskName;
    private final Path taskDir;
    private final WriteOptions options;
    private final List<String> written = new ArrayList<>();
    private final List<WriteEntry> buffer = new ArrayList<>();
    private long buffered;
    private BatchFileWriter writer;

    LocalTask(Path dir, String stagingName, String stagingKey, String taskName, WriteOptions options) {
        super(options);
        this.dir = dir;
        this.stagingName = stagingName;
        this.stagingKey = stagingKey;
        this.taskName = OutputPaths.checkAttempt(taskName);
        this.taskDir = dir.resolve(stagingName).resolve(taskName);
        this.options = options;
    }

    @Override
    void put(String path, byte[] content, int mode, long modificationTime) throws IOException {
        WriteEntry e = WriteEntry.file(path, content);
        if (mode >= 0) {
            e = e.mode(mode);
        }
        if (modificationTime >= 0) {
            e = e.lastModifiedTime(FileTime.fromMillis(modificationTime));
        }
        buffer.add(e);
        buffered += content.length;
        if (buffered >= options.writeBatchBytes()) {
            flush();
        }
    }

    private void flush() throws IOException {
        if (buffer.isEmpty()) {
            return;
        }
        if (writer == null) {
            checkStaging();
            WriteTestHooks.beforeWriterOpen.run();
            // one mkdir, and a writer that makes no missing root: after the job's end (the staging directory
            // renamed) both fail instead of making the staging directory again
            Files.createDirectory(taskDir);
            writer = BatchFileWriter.builder(taskDir).createRoot(false).durability(options.durability()).build();
        }
        List<WriteResult> results = writer.write(buffer);
        for (WriteResult r : results) {
            if (!r.isOk()) {
                throw new IOException("bfo write: cannot write '" + r.path() + "': " + r.failure().getMessage(),
                        r.failure());
            }
            written.add(r.path());
        }
        buffer.clear();
        buffered = 0;
    }

    @Override
    public TaskFiles commit() throws IOException {
        flush();
        closeWriter();
        if (!written.isEmpty()) {
            checkStaging();
        }
        return new StagedFiles(taskName, written.toArray(new String[0]));
    }

    /**
     * Removes this attempt's directory; when the job has ended meanwhile (the staging directory renamed by
     * {@link LocalJob#deleteStaging}), what it wrote went along with the renamed directory, which the
     * job cannot empty while attempts write into it: the renamed directory is removed whole, and the last
     * attempt to stop writing succeeds.
     */
    @Override
    public void abort() throws IOException {
        buffer.clear();
        try {
            closeWriter();
        } finally {
            removeAttempt(dir, stagingName, stagingKey, taskName);
        }
    }

    /** What {@link #abort} removes, for an attempt whose writer is gone (a lost or killed attempt). */
    static void removeAttempt(Path dir, String stagingName, String stagingKey, String taskName) throws IOException {
        try (DestinationTree t = DestinationTree.open(dir)) {
            String removed = OutputPaths.removedName(stagingName);
            if (t.exists(stagingName)) {
                t.checkPrivateDir(stagingName, stagingKey);
                t.deleteTree(stagingName + "/" + OutputPaths.checkAttempt(taskName));
            } else if (t.exists(removed)) {
                t.checkPrivateDir(removed, stagingKey);
                try {
                    t.deleteTree(removed);
                } catch (DirectoryNotEmptyException e) {
                    // another attempt is still writing there: it does this when it stops
                }
            }
        }
    }

    /** The staging directory is still the job's (reached from DIR without following a link). */
    private void checkStaging() throws IOException {
        try (DestinationTree t = DestinationTree.open(dir)) {
            t.checkPrivateDir(stagingName, stagingKey);
        }
    }

    private void closeWriter() throws IOException {
        if (writer != null) {
            BatchFileWriter w = writer;
            writer = null;
            w.close();
        }
    }

    @Override
    public void close() throws IOException {
        try {
            closeWriter();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }
}

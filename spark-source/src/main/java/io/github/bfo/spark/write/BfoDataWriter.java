/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.BatchFileWriter;
import io.github.bfo.DestinationTree;
import io.github.bfo.WriteEntry;
import io.github.bfo.WriteResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * One task attempt: rows become files under the attempt's own directory in
 * the staging area, written by BFO batch writes (one durability point per
 * batch of up to writeBatchBytes); commit reports the files, abort removes
 * them. Every row's path is checked first: relative, no "." or "..", no
 * empty component, unique.
 *
 * <p>The staging directory is checked, relative to DIR and without following
 * a link, to be the owner-only directory the driver made (by identity)
 * before the task writes and again when it commits; abort removes the
 * task's directory without following a link. The job can end while the
 * task writes (see {@link #abort}).
 */
final class BfoDataWriter implements DataWriter<InternalRow> {
    private final Path dir;
    private final String stagingName;
    private final String stagingKey;
    private final String taskName;
    private final Path taskDir;
    private final BfoOptions options;
    private final BfoWriteRows rows;
    private final List<String> written = new ArrayList<>();
    private final List<WriteEntry> buffer = new ArrayList<>();
    private long buffered;
    private BatchFileWriter writer;

    /** Test hook: runs after the staging directory was checked, before the attempt's directory is made. */
    static volatile Runnable beforeWriterOpen = () -> { };

    /** The staging subdirectory of one task attempt: attempts of one partition never share it. */
    static String attemptName(int partitionId, long taskId) {
        return "task-" + partitionId + "-" + taskId;
    }

    BfoDataWriter(Path dir, String stagingName, String stagingKey, String taskName, BfoOptions options,
                  StructType schema) {
        this.dir = dir;
        this.stagingName = stagingName;
        this.stagingKey = stagingKey;
        this.taskName = taskName;
        this.taskDir = dir.resolve(stagingName).resolve(taskName);
        this.options = options;
        this.rows = new BfoWriteRows(schema);
    }

    @Override
    public void write(InternalRow row) throws IOException {
        String path = rows.path(row);
        byte[] content = rows.content(row);
        buffer.add(WriteEntry.file(path, content));
        buffered += content.length;
        if (buffered >= options.writeBatchBytes) {
            flush();
        }
    }

    private void flush() throws IOException {
        if (buffer.isEmpty()) {
            return;
        }
        if (writer == null) {
            checkStaging();
            beforeWriterOpen.run();
            // one mkdir, and a writer that makes no missing root: after the job's end (the staging directory
            // renamed) both fail instead of making the staging directory again
            Files.createDirectory(taskDir);
            writer = BatchFileWriter.builder(taskDir).createRoot(false).durability(options.durability).build();
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
    public WriterCommitMessage commit() throws IOException {
        flush();
        closeWriter();
        if (!written.isEmpty()) {
            checkStaging();
        }
        return new BfoCommittedFiles(taskName, written.toArray(new String[0]));
    }

    /**
     * Removes this attempt's directory; when the job has ended meanwhile (the staging directory renamed by
     * {@link BfoBatchWrite#deleteStaging}), what it wrote went along with the renamed directory, which the
     * driver cannot empty while attempts write into it: the renamed directory is removed whole, and the last
     * attempt to stop writing succeeds.
     */
    @Override
    public void abort() throws IOException {
        buffer.clear();
        try {
            closeWriter();
        } finally {
            try (DestinationTree t = DestinationTree.open(dir)) {
                String removed = BfoStagedWrite.removedName(stagingName);
                if (t.exists(stagingName)) {
                    t.checkPrivateDir(stagingName, stagingKey);
                    t.deleteTree(stagingName + "/" + taskName);
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
    }

    /** The staging directory is still the driver's (reached from DIR without following a link). */
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

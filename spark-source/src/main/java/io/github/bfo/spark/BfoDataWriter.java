/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.BatchFileWriter;
import io.github.bfo.DestinationTree;
import io.github.bfo.WriteEntry;
import io.github.bfo.WriteResult;
import java.io.IOException;
import java.io.UncheckedIOException;
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
 * task's directory without following a link.
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
            writer = BatchFileWriter.builder(taskDir).durability(options.durability).build();
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

    @Override
    public void abort() throws IOException {
        buffer.clear();
        try {
            closeWriter();
        } finally {
            try (DestinationTree t = DestinationTree.open(dir)) {
                if (t.exists(stagingName)) {
                    t.checkPrivateDir(stagingName, stagingKey);
                    t.deleteTree(stagingName + "/" + taskName);
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

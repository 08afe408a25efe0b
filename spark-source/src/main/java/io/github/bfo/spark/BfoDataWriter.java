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
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
    private final int pathCol;
    private final int contentCol;
    private final Set<String> seen = new HashSet<>();
    private final List<String> written = new ArrayList<>();
    private final List<WriteEntry> buffer = new ArrayList<>();
    private long buffered;
    private BatchFileWriter writer;

    /** What a committed task hands to the job commit. */
    static final class Committed implements WriterCommitMessage {
        private static final long serialVersionUID = 1L;
        final String taskName;   // in the staging directory
        final String[] paths;

        Committed(String taskName, String[] paths) {
            this.taskName = taskName;
            this.paths = paths;
        }
    }

    BfoDataWriter(Path dir, String stagingName, String stagingKey, String taskName, BfoOptions options,
                  StructType schema) {
        this.dir = dir;
        this.stagingName = stagingName;
        this.stagingKey = stagingKey;
        this.taskName = taskName;
        this.taskDir = dir.resolve(stagingName).resolve(taskName);
        this.options = options;
        this.pathCol = schema.fieldIndex(BfoTable.PATH);
        this.contentCol = schema.fieldIndex(BfoTable.CONTENT);
    }

    @Override
    public void write(InternalRow row) throws IOException {
        if (row.isNullAt(pathCol)) {
            throw new IllegalArgumentException("bfo write: a row has a null path");
        }
        String path = checkPath(row.getUTF8String(pathCol).toString());
        if (row.isNullAt(contentCol)) {
            throw new IllegalArgumentException("bfo write: the row for '" + path + "' has a null content");
        }
        if (!seen.add(path)) {
            throw new IllegalArgumentException("bfo write: duplicate path '" + path
                    + "' in the DataFrame (each row must name a different file); nothing was written");
        }
        byte[] content = row.getBinary(contentCol);
        buffer.add(WriteEntry.file(path, content));
        buffered += content.length;
        if (buffered >= options.writeBatchBytes) {
            flush();
        }
    }

    /** The path, if it stays inside the output directory; a clear error otherwise. */
    static String checkPath(String path) {
        String why = null;
        if (path.isEmpty()) {
            why = "it is empty";
        } else if (path.startsWith("/")) {
            why = "it is absolute (paths are relative to the output directory)";
        } else if (path.indexOf('\0') >= 0) {
            why = "it contains a NUL character";
        } else if (path.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*") && path.contains(":/")) {
            why = "it is a URI (paths are relative to the output directory)";
        } else {
            for (String c : path.split("/", -1)) {
                if (c.equals("..")) {
                    why = "it contains '..' (paths must stay inside the output directory)";
                    break;
                }
                if (c.equals(".") || c.isEmpty()) {
                    why = "it has an empty or '.' component";
                    break;
                }
            }
            if (why == null && (path.startsWith(BfoBatchWrite.STAGING_PREFIX) || path.startsWith(".bfo-journal"))) {
                why = "the name is reserved for bfo's staging";
            }
        }
        if (why != null) {
            throw new IllegalArgumentException("bfo write: bad path '" + path + "': " + why);
        }
        return path;
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
        return new Committed(taskName, written.toArray(new String[0]));
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.BatchFileWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * One task attempt on a Hadoop file system: each row becomes a file under
 * the attempt's own directory in the staging area, created with
 * overwrite=false (nothing there is replaced) and closed before the next
 * row; what a file is worth after close() is what that file system's
 * close() promises (on HDFS: acknowledged by every DataNode of its
 * pipeline). Durability each also hsyncs every file before closing it,
 * where its stream can. Commit reports the files; abort removes the
 * attempt's directory.
 *
 * <p>The staging directory must exist before the first file and at commit:
 * create() makes missing parents, so a task still running after its job
 * was aborted would otherwise make the staging directory again.
 */
final class BfoHadoopDataWriter implements DataWriter<InternalRow> {
    private final Path dir;
    private final Path staging;
    private final String taskName;
    private final Path taskDir;
    private final Configuration conf;
    private final boolean hsync;
    private final BfoWriteRows rows;
    private final List<String> written = new ArrayList<>();
    private FileSystem fs;
    private FSDataOutputStream open;   // the file being written, if its write failed

    BfoHadoopDataWriter(Path dir, String stagingName, String taskName, Configuration conf, BfoOptions options,
                        StructType schema) {
        this.dir = dir;
        this.staging = new Path(dir, stagingName);
        this.taskName = taskName;
        this.taskDir = new Path(staging, taskName);
        this.conf = conf;
        this.hsync = options.durability == BatchFileWriter.Durability.EACH;
        this.rows = new BfoWriteRows(schema);
    }

    @Override
    public void write(InternalRow row) throws IOException {
        String path = rows.path(row);
        byte[] content = rows.content(row);
        if (fs == null) {
            fs = BfoHadoopDir.fileSystem(dir, conf);
            checkStaging();
        }
        Path file = new Path(taskDir, new Path(null, null, path));   // a ':' in a name is not a scheme
        try {
            open = fs.create(file, false);
            open.write(content);
            if (hsync && open.hasCapability(StreamCapabilities.HSYNC)) {
                open.hsync();
            }
            FSDataOutputStream out = open;
            open = null;
            out.close();
        } catch (IOException e) {
            throw new IOException("bfo write: cannot write '" + path + "' (" + file + "): " + e, e);
        }
        written.add(path);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        if (!written.isEmpty()) {
            checkStaging();
        }
        return new BfoCommittedFiles(taskName, written.toArray(new String[0]));
    }

    @Override
    public void abort() throws IOException {
        IOException closing = closeOpen();
        if (fs != null) {
            fs.delete(taskDir, true);
        }
        if (closing != null) {
            throw closing;
        }
    }

    private void checkStaging() throws IOException {
        if (!fs.exists(staging)) {
            throw new IOException("bfo write: the staging directory " + staging + " is gone (was the job aborted?)");
        }
    }

    private IOException closeOpen() {
        if (open == null) {
            return null;
        }
        FSDataOutputStream out = open;
        open = null;
        try {
            out.close();
            return null;
        } catch (IOException e) {
            return e;
        }
    }

    @Override
    public void close() throws IOException {
        IOException e = closeOpen();
        if (e != null) {
            throw e;
        }
    }
}

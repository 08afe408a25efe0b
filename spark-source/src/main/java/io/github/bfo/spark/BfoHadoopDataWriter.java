/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.BatchFileWriter;
import java.io.IOException;
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
 * overwrite=false (nothing there is replaced), written and closed, up to
 * {@code writesInFlight} files at once ({@link BfoWritePool}: each file
 * costs round trips that a task writing one after another waits out in
 * turn); what a file is worth after close() is what that file system's
 * close() promises (on HDFS: acknowledged by every DataNode of its
 * pipeline). Durability each also hsyncs every file before closing it,
 * where its stream can. Commit waits for every file and reports them;
 * abort waits for those being written and removes the attempt's directory.
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
    private final BfoWritePool<String> pool;
    private FileSystem fs;

    BfoHadoopDataWriter(Path dir, String stagingName, String taskName, Configuration conf, BfoOptions options,
                        StructType schema) {
        this.dir = dir;
        this.staging = new Path(dir, stagingName);
        this.taskName = taskName;
        this.taskDir = new Path(staging, taskName);
        this.conf = conf;
        this.hsync = options.durability == BatchFileWriter.Durability.EACH;
        this.rows = new BfoWriteRows(schema);
        this.pool = new BfoWritePool<>(options.writesInFlight, options.writeBatchBytes, "bfo-hadoop-write");
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
        FileSystem target = fs;
        pool.submit(content.length, () -> {
            try {
                writeFile(target, file, content);
            } catch (IOException e) {
                throw new IOException("bfo write: cannot write '" + path + "' (" + file + "): " + e, e);
            }
            return path;
        });
    }

    private void writeFile(FileSystem target, Path file, byte[] content) throws IOException {
        FSDataOutputStream out = target.create(file, false);
        boolean closed = false;
        try {
            out.write(content);
            if (hsync && out.hasCapability(StreamCapabilities.HSYNC)) {
                out.hsync();
            }
            closed = true;
            out.close();
        } finally {
            if (!closed) {
                try {
                    out.close();   // a failed file's stream: its error is the write's, not the close's
                } catch (IOException e) {
                    // the task fails with the write's error; abort removes the file
                }
            }
        }
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        List<String> written = pool.finish();
        if (!written.isEmpty()) {
            checkStaging();
        }
        return new BfoCommittedFiles(taskName, written.toArray(new String[0]));
    }

    @Override
    public void abort() throws IOException {
        pool.cancel();
        if (fs != null) {
            fs.delete(taskDir, true);
        }
    }

    private void checkStaging() throws IOException {
        if (!fs.exists(staging)) {
            throw new IOException("bfo write: the staging directory " + staging + " is gone (was the job aborted?)");
        }
    }

    @Override
    public void close() {
        pool.close();
    }
}

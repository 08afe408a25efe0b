/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.fs.write.OutputTask;
import io.github.bfo.hadoop.fs.write.TaskFiles;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter;

import java.io.IOException;
import java.util.Arrays;

/**
 * One task attempt's records as files, the record writer of both MapReduce
 * APIs' {@code BatchFileOutputFormat}:
 * key the path relative to the output directory (Text), value the bytes
 * (BytesWritable; a {@link FileBytesWritable} also gives the mode and
 * modification time). The bytes are copied (the framework reuses the
 * value) and written by the job's {@link OutputTask}: libbfo batches on the
 * local disk, many Hadoop streams in flight elsewhere, multipart uploads on
 * S3A. A file without a mode gets FileSystem.create's: 0666 under
 * {@code fs.permissions.umask-mode}. A bad path (absolute, {@code ..}, a
 * reserved name) or a path twice fails the task, naming it. Closing waits
 * for every file and saves the attempt's report for its task commit.
 */
public final class BatchFileRecordWriter extends RecordWriter<Text, BytesWritable>
        implements org.apache.hadoop.mapred.RecordWriter<Text, BytesWritable> {
    private final BatchFileOutput output;
    private final TaskAttemptID attempt;
    private final OutputTask task;
    private final int defaultMode;
    private long files;
    private long bytes;

    public BatchFileRecordWriter(BatchFileOutput output, TaskAttemptID attempt, Configuration conf) {
        this.output = output;
        this.attempt = attempt;
        this.task = output.openTask(attempt);
        this.defaultMode = output.isLocal()
                ? FsPermission.getFileDefault().applyUMask(FsPermission.getUMask(conf)).toShort() : -1;
    }

    @Override
    public void write(Text key, BytesWritable value) throws IOException {
        if (key == null || value == null) {
            throw new IllegalArgumentException("bfo output: a record with a null " + (key == null ? "key" : "value")
                    + " (the key is the file's path, the value its bytes)");
        }
        String path = key.toString();
        byte[] b = Arrays.copyOf(value.getBytes(), value.getLength());
        int mode = defaultMode;
        long mtime = -1;
        if (value instanceof FileBytesWritable f) {
            mode = f.getMode() >= 0 ? f.getMode() : defaultMode;
            mtime = f.getModificationTime();
        }
        task.write(path, b, mode, mtime);
        files++;
        bytes += b.length;
    }

    /** The {@code mapreduce} API's close: {@link #close(Counters)} into the task's counters. */
    @Override
    public void close(TaskAttemptContext context) throws IOException {
        close((counter, n) -> context.getCounter(counter).increment(n));
    }

    /** The {@code mapred} API's close: {@link #close(Counters)} into the reporter's counters. */
    @Override
    public void close(Reporter reporter) throws IOException {
        close(reporter::incrCounter);
    }

    /**
     * Waits for every file, then saves the report; the counters get the files and bytes written. When a file
     * failed, what the attempt wrote is undone at once (its task abort would find no report to go by).
     */
    public void close(Counters counters) throws IOException {
        try {
            TaskFiles files;
            try {
                files = task.commit();
            } catch (IOException | RuntimeException e) {
                try {
                    task.abort();
                } catch (IOException | RuntimeException a) {
                    e.addSuppressed(a);
                }
                throw e;
            }
            output.saveTask(attempt, files);
        } finally {
            task.close();
        }
        counters.add(BfoOutputCounter.FILES, files);
        counters.add(BfoOutputCounter.BYTES, bytes);
        if (output.isLocal()) {
            // libbfo's writes are not in FileSystem's statistics, which MapTask counts
            counters.add(FileOutputFormatCounter.BYTES_WRITTEN, bytes);
        }
    }

    /** Where the counters go (the two APIs' task contexts). */
    public interface Counters {
        void add(Enum<?> counter, long n);
    }
}

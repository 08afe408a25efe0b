/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import io.github.bfo.hadoop.FileBytesWritable;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.lib.output.PathOutputCommitter;

import java.io.IOException;

/**
 * What a job that must leave one file per record does without bfo, the
 * reference {@link io.github.bfo.hadoop.BatchFileOutputFormat} is compared
 * with: a RecordWriter that creates each record's file with
 * {@code FileSystem.create} in the task's work directory (key the relative
 * path, value the bytes), one after another, under FileOutputCommitter at
 * its defaults. A {@link FileBytesWritable}'s mode and modification time
 * are set after the close (setPermission, setTimes).
 */
public class PerFileOutputFormat extends FileOutputFormat<Text, BytesWritable> {
    @Override
    public RecordWriter<Text, BytesWritable> getRecordWriter(TaskAttemptContext context) throws IOException {
        Path work = ((PathOutputCommitter) getOutputCommitter(context)).getWorkPath();
        FileSystem fs = work.getFileSystem(context.getConfiguration());
        return new RecordWriter<>() {
            @Override
            public void write(Text key, BytesWritable value) throws IOException {
                Path file = new Path(work, key.toString());
                try (FSDataOutputStream out = fs.create(file, false)) {
                    out.write(value.getBytes(), 0, value.getLength());
                }
                if (value instanceof FileBytesWritable f) {
                    if (f.getMode() >= 0) {
                        fs.setPermission(file, new FsPermission((short) f.getMode()));
                    }
                    if (f.getModificationTime() >= 0) {
                        fs.setTimes(file, f.getModificationTime(), -1);
                    }
                }
            }

            @Override
            public void close(TaskAttemptContext c) {
            }
        };
    }
}

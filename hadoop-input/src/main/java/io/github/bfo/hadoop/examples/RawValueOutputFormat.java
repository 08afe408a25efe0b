/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.examples;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;

import java.io.IOException;

/**
 * The values' bytes, one after another, in the task's file: with
 * MultipleOutputs writing each record to a base path of its own, the way a
 * stock job gets one file per record (each named PATH-m-NNNNN, MultipleOutputs'
 * part suffix; every file's writer open until the task ends).
 */
public class RawValueOutputFormat extends FileOutputFormat<NullWritable, BytesWritable> {
    @Override
    public RecordWriter<NullWritable, BytesWritable> getRecordWriter(TaskAttemptContext context) throws IOException {
        Path file = getDefaultWorkFile(context, "");
        FSDataOutputStream out = file.getFileSystem(context.getConfiguration()).create(file, false);
        return new RecordWriter<>() {
            @Override
            public void write(NullWritable key, BytesWritable value) throws IOException {
                out.write(value.getBytes(), 0, value.getLength());
            }

            @Override
            public void close(TaskAttemptContext c) throws IOException {
                out.close();
            }
        };
    }
}

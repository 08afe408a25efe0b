/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.input.FileSplit;

import java.io.IOException;
import java.util.List;

/**
 * A drop-in for TextInputFormat and CombineTextInputFormat ({@code mapreduce}
 * API; {@link io.github.bfo.hadoop.mapred.BatchTextInputFormat} is the
 * {@code mapred} twin): the same records (key the byte offset of the line in
 * its file, value the line; {@code \n}, {@code \r\n}, {@code \r} or
 * {@code textinputformat.record.delimiter}; compressed files decompressed),
 * but many files per split, packed like CombineFileInputFormat
 * ({@link SplitPlanner}), and each split read as ONE BFO batch: few large
 * I/Os in device order instead of an open/read/close per file. Records come
 * file by file in the order the batch delivers the files;
 * {@code mapreduce.map.input.file} names each record's file. Large files are
 * cut as TextInputFormat cuts them, one FileSplit per piece read by Hadoop's
 * LineRecordReader ({@link LargeFileCutter}, {@link LargeFileRecordReader}).
 *
 * <pre>{@code
 * job.setInputFormatClass(BatchTextInputFormat.class);
 * FileInputFormat.addInputPath(job, new Path("/data/small-files"));
 * }</pre>
 */
public class BatchTextInputFormat extends BatchInputFormat<LongWritable, Text> {

    /** Batches of whole files, then the pieces of the large files. */
    @Override
    public List<InputSplit> getSplits(JobContext job) throws IOException {
        return SplitPlanner.getTextSplits(job.getConfiguration(), job.getCredentials());
    }

    /** A batch reader for a BatchFileSplit, Hadoop's LineRecordReader for a piece of a large file. */
    @Override
    public RecordReader<LongWritable, Text> createRecordReader(InputSplit split, TaskAttemptContext context) {
        if (split instanceof FileSplit) {
            return new LargeFileRecordReader(context.getConfiguration());
        }
        return new BatchTextRecordReader();
    }
}

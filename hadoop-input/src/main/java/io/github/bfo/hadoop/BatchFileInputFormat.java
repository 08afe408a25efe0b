/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.TaskAttemptContext;

/**
 * One record per file ({@code mapreduce} API; the {@code mapred} twin is
 * {@link io.github.bfo.hadoop.mapred.BatchFileInputFormat}): key the file's
 * fully qualified path (Text), value its bytes as stored (BytesWritable;
 * compressed files are not decompressed). Files are never split; many files
 * go in one split ({@link SplitPlanner}) and each split is read as ONE BFO
 * batch, records in the order the batch delivers the files.
 */
public class BatchFileInputFormat extends BatchInputFormat<Text, BytesWritable> {

    @Override
    public RecordReader<Text, BytesWritable> createRecordReader(InputSplit split, TaskAttemptContext context) {
        return new BatchFileRecordReader();
    }
}

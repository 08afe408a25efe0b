/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.SplitCursor;
import io.github.bfo.hadoop.WholeFileCursor;

import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchFileInputFormat}:
 * one record per file, key the path, value the bytes.
 */
public class BatchFileInputFormat extends BatchInputFormat<Text, BytesWritable> {
    public BatchFileInputFormat() {
        super(Text::new, BytesWritable::new);
    }

    @Override
    SplitCursor<Text, BytesWritable> open(BatchFileSplit split, JobConf job, Reporter reporter) throws IOException {
        return WholeFileCursor.open(split, job, reporter);
    }
}

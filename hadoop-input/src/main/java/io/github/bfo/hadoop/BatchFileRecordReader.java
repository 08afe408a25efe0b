/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;

import java.io.IOException;

/** One record per file of a {@link BatchFileSplit} ({@code mapreduce} API); see {@link WholeFileCursor}. */
public class BatchFileRecordReader extends CursorRecordReader<Text, BytesWritable> {
    public BatchFileRecordReader() {
        super(new Text(), new BytesWritable());
    }

    @Override
    SplitCursor<Text, BytesWritable> open(BatchFileSplit split, Configuration conf, CounterSink sink)
            throws IOException {
        return new WholeFileCursor(split, conf, sink);
    }
}

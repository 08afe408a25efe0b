/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;

import java.io.IOException;

/** The line records of a {@link BatchFileSplit} ({@code mapreduce} API); see {@link TextCursor}. */
public class BatchTextRecordReader extends CursorRecordReader<LongWritable, Text> {
    public BatchTextRecordReader() {
        super(new LongWritable(), new Text());
    }

    @Override
    SplitCursor<LongWritable, Text> open(BatchFileSplit split, Configuration conf, CounterSink sink)
            throws IOException {
        return new TextCursor(split, conf, sink);
    }
}

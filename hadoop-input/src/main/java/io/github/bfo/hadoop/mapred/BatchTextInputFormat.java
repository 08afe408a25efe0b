/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.SplitCursor;
import io.github.bfo.hadoop.TextCursor;

import org.apache.hadoop.io.LongWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;

/**
 * The {@code mapred} (old API) twin of {@link io.github.bfo.hadoop.BatchTextInputFormat}:
 * a drop-in for {@code org.apache.hadoop.mapred.TextInputFormat} and
 * {@code CombineTextInputFormat}, with the same records, the same splits and
 * the same batch reading.
 */
public class BatchTextInputFormat extends BatchInputFormat<LongWritable, Text> {
    public BatchTextInputFormat() {
        super(LongWritable::new, Text::new);
    }

    @Override
    SplitCursor<LongWritable, Text> open(BatchFileSplit split, JobConf job, Reporter reporter) throws IOException {
        return TextCursor.open(split, job, reporter);
    }
}

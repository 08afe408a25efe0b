/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.SplitCursor;
import io.github.bfo.hadoop.SplitPlanner;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.InvalidInputException;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.RecordReader;
import org.apache.hadoop.mapred.Reporter;

import java.io.IOException;
import java.util.List;
import java.util.function.Supplier;

/**
 * What the {@code mapred} {@link BatchFileInputFormat} and
 * {@link BatchTextInputFormat} share (the {@code mapreduce} twins share
 * {@code io.github.bfo.hadoop.BatchInputFormat}): the planner's splits, many
 * whole files each, and a record reader over one batch per split.
 */
abstract class BatchInputFormat<K, V> extends FileInputFormat<K, V> {
    private final Supplier<K> keys;
    private final Supplier<V> values;

    BatchInputFormat(Supplier<K> keys, Supplier<V> values) {
        this.keys = keys;
        this.values = values;
    }

    /** The records of split, counters going to reporter. */
    abstract SplitCursor<K, V> open(BatchFileSplit split, JobConf job, Reporter reporter) throws IOException;

    /** The planner's splits; a missing input is the old API's InvalidInputException. */
    @Override
    public InputSplit[] getSplits(JobConf job, int numSplits) throws IOException {
        List<BatchFileSplit> splits;
        try {
            splits = SplitPlanner.getSplits(job, job.getCredentials());
        } catch (org.apache.hadoop.mapreduce.lib.input.InvalidInputException e) {
            InvalidInputException old = new InvalidInputException(e.getProblems());
            old.addSuppressed(e);
            throw old;
        }
        return splits.toArray(new InputSplit[0]);
    }

    @Override
    protected boolean isSplitable(FileSystem fs, Path file) {
        return false;
    }

    @Override
    public RecordReader<K, V> getRecordReader(InputSplit split, JobConf job, Reporter reporter) throws IOException {
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException(getClass().getSimpleName() + " needs a BatchFileSplit, not "
                    + split.getClass().getName());
        }
        reporter.setStatus(split.toString());
        return new CursorRecordReader<>(open((BatchFileSplit) split, job, reporter), keys, values);
    }
}

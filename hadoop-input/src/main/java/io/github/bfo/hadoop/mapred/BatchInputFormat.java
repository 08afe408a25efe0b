/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.SplitCursor;
import io.github.bfo.hadoop.SplitPlanner;

import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapred.FileInputFormat;
import org.apache.hadoop.mapred.FileSplit;
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
 * whole files each, and a record reader over one batch per split. Splits are
 * sized by {@code split.maxsize} as in the {@code mapreduce} API (as the old
 * CombineTextInputFormat does); the numSplits hint is not used.
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

    /** The planner's splits (both kinds, {@code mapreduce} FileSplits for large files' pieces). */
    List<? extends org.apache.hadoop.mapreduce.InputSplit> plan(JobConf job) throws IOException {
        return SplitPlanner.getSplits(job, job.getCredentials());
    }

    /** The reader of a piece of a large file (only BatchTextInputFormat makes such splits). */
    RecordReader<K, V> openPiece(FileSplit split, JobConf job, Reporter reporter) throws IOException {
        throw new IOException(getClass().getSimpleName() + " reads whole files, not a FileSplit: " + split);
    }

    /** The planner's splits; a missing input is the old API's InvalidInputException. */
    @Override
    public InputSplit[] getSplits(JobConf job, int numSplits) throws IOException {
        List<? extends org.apache.hadoop.mapreduce.InputSplit> splits;
        try {
            splits = plan(job);
        } catch (org.apache.hadoop.mapreduce.lib.input.InvalidInputException e) {
            InvalidInputException old = new InvalidInputException(e.getProblems());
            old.addSuppressed(e);
            throw old;
        }
        InputSplit[] out = new InputSplit[splits.size()];
        for (int i = 0; i < out.length; i++) {
            Object s = splits.get(i);
            out[i] = s instanceof org.apache.hadoop.mapreduce.lib.input.FileSplit
                    ? new FileSplit((org.apache.hadoop.mapreduce.lib.input.FileSplit) s)
                    : (InputSplit) s;
        }
        return out;
    }

    /** Not consulted (getSplits is the planner's, which decides what to cut: see SplitPlanner). */
    @Override
    protected boolean isSplitable(FileSystem fs, Path file) {
        return false;
    }

    @Override
    public RecordReader<K, V> getRecordReader(InputSplit split, JobConf job, Reporter reporter) throws IOException {
        if (split instanceof FileSplit) {
            reporter.setStatus(split.toString());
            return openPiece((FileSplit) split, job, reporter);
        }
        if (!(split instanceof BatchFileSplit)) {
            throw new IOException(getClass().getSimpleName() + " needs a BatchFileSplit, not "
                    + split.getClass().getName());
        }
        reporter.setStatus(split.toString());
        return new CursorRecordReader<>(open((BatchFileSplit) split, job, reporter), keys, values);
    }
}

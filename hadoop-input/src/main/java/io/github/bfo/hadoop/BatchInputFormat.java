/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@link BatchFileInputFormat} and {@link BatchTextInputFormat} share
 * ({@code mapreduce} API; {@code mapred.BatchInputFormat} is the old API's):
 * the planner's splits, many whole files each, read as one batch
 * (BatchTextInputFormat adds the splits of large files).
 */
abstract class BatchInputFormat<K, V> extends FileInputFormat<K, V> {

    @Override
    public List<InputSplit> getSplits(JobContext job) throws IOException {
        return new ArrayList<>(SplitPlanner.getSplits(job.getConfiguration(), job.getCredentials()));
    }

    /** Not consulted (getSplits is the planner's, which decides what to cut: see SplitPlanner). */
    @Override
    protected boolean isSplitable(JobContext context, Path file) {
        return false;
    }
}

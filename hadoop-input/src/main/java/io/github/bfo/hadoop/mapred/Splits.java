/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.mapred;

import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.SplitPlanner;

import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.InvalidInputException;
import org.apache.hadoop.mapred.JobConf;

import java.io.IOException;
import java.util.List;

/** The planner's splits for the old API (its own InvalidInputException type). */
final class Splits {
    private Splits() {
    }

    static InputSplit[] of(JobConf job) throws IOException {
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
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.Serializable;

/**
 * What a committed task attempt hands to its job's commit: the files it
 * wrote, each by its path relative to the output directory, and where each
 * waits to be published (a staged file, or a pending upload). Spark carries
 * it in its commit messages; Hadoop's committer keeps it in the staging
 * directory ({@link TaskReports}).
 */
public sealed interface TaskFiles extends Serializable permits StagedFiles, PendingUploads {
    /** Files in the report. */
    int size();

    /** The i-th file's path, relative to the output directory. */
    String path(int i);
}

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
public abstract sealed class TaskFiles implements Serializable permits StagedFiles, PendingUploads {
    private static final long serialVersionUID = 1L;
    final String[] paths;

    TaskFiles(String[] paths) {
        this.paths = paths;
    }

    /** Files in the report. */
    public int size() {
        return paths.length;
    }

    /** The i-th file's path, relative to the output directory. */
    public String path(int i) {
        return paths[i];
    }
}

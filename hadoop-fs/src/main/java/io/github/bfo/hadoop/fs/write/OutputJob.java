/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.util.List;

/**
 * One write job's side of a commit protocol: it sets up what the tasks
 * write into, and at the end publishes what the committed tasks report
 * ({@link TaskFiles}) or undoes everything. The same protocol serves
 * Spark's V2 writes (the reports come in the commit messages) and Hadoop's
 * output committer (the reports go through the staging directory,
 * {@link TaskReports}). Made by {@link OutputDir#newJob}: {@link LocalJob}
 * (libbfo batches into a local directory), {@link StreamJob} (Hadoop
 * streams and renames), {@link UploadJob} (multipart uploads).
 */
public abstract class OutputJob {
    final WriteOptions options;
    final boolean truncate;
    final String stagingName;

    OutputJob(WriteOptions options, boolean truncate, String stagingName) {
        this.options = options;
        this.truncate = truncate;
        this.stagingName = stagingName;
    }

    /** DIR, as the user named it (qualified). */
    public abstract String dirName();

    /** What the job does, for logs and plans. */
    public String description() {
        return getClass().getSimpleName() + " " + dirName() + (truncate ? " (overwrite)" : " (append)");
    }

    /**
     * Makes what the tasks write into for partitions 0 to partitions - 1 (a task's partition number picks its
     * directory on a Hadoop file system); returns what each task needs, to be shipped to it.
     */
    public abstract TaskSetup setup(int partitions) throws IOException;

    /**
     * What a task needs, for tasks that get nothing from the job's setup but the configuration (Hadoop's): the
     * local staging directory is then checked to be owner-only and the effective user's, not by identity.
     */
    public abstract TaskSetup taskSetup();

    /**
     * Checks every task's files together (no path twice, no file that is another's directory; append: nothing
     * in the way; truncate: DIR emptied), publishes them, and removes what the job staged. A failure leaves
     * DIR as it was when it comes before the first file is published.
     */
    public abstract void commit(List<TaskFiles> tasks) throws IOException;

    /** Undoes the job: what it staged is removed, its uploads aborted; failures are logged. */
    public abstract void abort(List<TaskFiles> tasks);

    /**
     * Removes what one task attempt wrote, known by its partition and name, and its report when it made one:
     * for an attempt whose writer is gone (failed, killed, or a speculative attempt that lost).
     */
    public abstract void abortAttempt(int partition, String attempt, TaskFiles report) throws IOException;
}

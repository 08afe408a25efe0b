/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.util.List;
import java.util.SortedMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job side of the staged commit protocol, the same on every file
 * system: tasks write under DIR/_temporary-bfo-ID/ (hidden from readers
 * like every "_" name); a task commit reports its files; the job commit
 * checks the whole set ({@link StagedFiles}), publishes every file and
 * removes the staging directory; a failed commit or an abort removes the
 * staging directory and leaves DIR as it was. Subclasses say how DIR is
 * reached ({@link LocalJob}: libbfo's guarded local tree; {@link StreamJob}:
 * Hadoop's FileSystem).
 */
abstract class StagedJob extends OutputJob {
    private static final Logger LOG = LoggerFactory.getLogger(StagedJob.class);

    StagedJob(WriteOptions options, boolean truncate, String stagingName) {
        super(options, truncate, stagingName);
    }

    /**
     * Checks what the mode requires (append: nothing there; truncate: DIR
     * emptied but for the staging directory), then moves each staged file
     * (value, relative to DIR) to its path (key, relative to DIR).
     */
    abstract void publish(SortedMap<String, String> sources) throws IOException;

    /** Removes the staging directory, if it is still this job's. */
    abstract void deleteStaging();

    /** Lets go of what the job held on DIR (after commit or abort). */
    void release() {
    }

    @Override
    public void commit(List<TaskFiles> tasks) throws IOException {
        try {
            SortedMap<String, String> sources = StagedFiles.publishPlan(tasks, stagingName,
                    options.duplicateHint());
            publish(sources);
            deleteStaging();
            LOG.info("bfo write: published {} files in {}", sources.size(), dirName());
        } catch (IOException | RuntimeException e) {
            try {
                deleteStaging();
            } catch (RuntimeException d) {
                e.addSuppressed(d);
            }
            throw e;
        } finally {
            release();
        }
    }

    @Override
    public void abort(List<TaskFiles> tasks) {
        try {
            deleteStaging();
        } finally {
            release();
        }
    }
}

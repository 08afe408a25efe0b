/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.SortedMap;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job side of the commit protocol, the same on every file system: tasks
 * write under DIR/_temporary-bfo-QUERYID/ (hidden from readers like every
 * "_" name); a task commit (arbitrated by Spark's output commit coordinator)
 * reports its files; the job commit checks the whole set
 * ({@link BfoCommittedFiles}), publishes every file and removes the staging
 * directory; a failed commit or an abort removes the staging directory and
 * leaves DIR as it was. Subclasses say how DIR is reached
 * ({@link BfoBatchWrite}: libbfo's guarded local tree; {@link BfoHadoopBatchWrite}:
 * Hadoop's FileSystem).
 */
abstract class BfoStagedWrite implements Write, BatchWrite {
    private static final Logger LOG = LoggerFactory.getLogger(BfoStagedWrite.class);
    static final String STAGING_PREFIX = "_temporary-bfo-";

    /**
     * Where the local writer's staging directory goes when the job ends without publishing (hidden like it):
     * tasks still writing then fail their next check, and the last one to stop removes it (see
     * {@link BfoBatchWrite#deleteStaging}).
     */
    static String removedName(String stagingName) {
        return stagingName + "-removed";
    }

    final BfoOptions options;
    final StructType schema;
    final boolean truncate;
    final String stagingName;

    BfoStagedWrite(BfoOptions options, LogicalWriteInfo info, boolean truncate) {
        this.options = options;
        this.schema = info.schema();
        this.truncate = truncate;
        this.stagingName = STAGING_PREFIX + info.queryId();
    }

    /** DIR, as the user named it. */
    abstract String dirName();

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
    public String description() {
        return getClass().getSimpleName() + " " + dirName() + (truncate ? " (overwrite)" : " (append)");
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        try {
            SortedMap<String, String> sources = BfoCommittedFiles.publishPlan(messages, stagingName);
            try {
                publish(sources);
            } catch (IOException e) {
                throw new UncheckedIOException("bfo write: job commit failed: " + e, e);
            }
            deleteStaging();
            LOG.info("bfo write: published {} files in {}", sources.size(), dirName());
        } catch (RuntimeException e) {
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
    public void abort(WriterCommitMessage[] messages) {
        try {
            deleteStaging();
        } finally {
            release();
        }
    }
}

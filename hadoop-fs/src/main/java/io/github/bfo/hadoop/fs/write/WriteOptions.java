/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import io.github.bfo.BatchFileWriter;
import java.io.Serializable;

/**
 * How a write's tasks write their files and how its job commit publishes
 * them: the Spark source's write options and the Hadoop output format's
 * {@code bfo.output.*} settings, in one shape.
 *
 * @param durability     local directories: when the task's files are durable (bfo-java's durability); other
 *                       file systems: {@code EACH} hsyncs every file before its close, the others close only
 * @param writeBatchBytes local directories: heap bytes per BFO write batch; other file systems: the bytes of
 *                       the files a task has in flight at most
 * @param writesInFlight other file systems: files a task creates or uploads at once
 * @param commit         other file systems: how the job commit publishes (renames, or multipart completions)
 * @param commitThreads  files the job commit publishes at once (renames or completions), directories it makes
 * @param duplicateHint  the words, after the path, that say where two of a task's files named the same path
 *                       (the source's records: "in the DataFrame (each row must name a different file)")
 */
public record WriteOptions(BatchFileWriter.Durability durability, long writeBatchBytes, int writesInFlight,
                           Commit commit, int commitThreads, String duplicateHint) implements Serializable {
    public static final long DEFAULT_WRITE_BATCH_BYTES = 64L << 20;
    public static final int DEFAULT_WRITES_IN_FLIGHT = 16;
    public static final int DEFAULT_COMMIT_THREADS = 16;

    /**
     * How a job commit publishes its files on a Hadoop file system other than the local one. RENAME: tasks
     * write under a staging directory, the job commit renames each file into place (every file system; on
     * HDFS a rename is one NameNode call); MULTIPART: tasks upload each file as a multipart upload that stays
     * invisible until the job commit completes it (Hadoop's MultipartUploader: S3A; an object store copies on
     * rename). AUTO: multipart where the file system's multipart uploads are enabled and its own (S3A),
     * rename elsewhere.
     */
    public enum Commit { AUTO, RENAME, MULTIPART }

    public WriteOptions {
        if (durability == null || commit == null || duplicateHint == null) {
            throw new IllegalArgumentException("bfo write: durability, commit and duplicateHint must be given");
        }
        if (writeBatchBytes <= 0 || writesInFlight <= 0 || commitThreads <= 0) {
            throw new IllegalArgumentException("bfo write: writeBatchBytes, writesInFlight and commitThreads must "
                    + "be positive");
        }
    }
}

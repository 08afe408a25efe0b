/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.BBPartHandle;
import org.apache.hadoop.fs.BBUploadHandle;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.PartHandle;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UploadHandle;
import org.apache.hadoop.util.functional.FutureIO;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit protocol on an object store with multipart uploads (S3A), as
 * S3A's magic committer does it but with the pending uploads' handles in
 * Spark's commit messages instead of files in the store: tasks upload each
 * file to its final name as a multipart upload left pending (invisible);
 * a task commit (arbitrated by Spark's output commit coordinator) reports
 * its uploads; the job commit checks the whole set as every other write
 * does (duplicates, a file that is another's directory), and in append mode
 * that no file is there already and no directory the files go into is a
 * file, or in truncate mode removes everything in DIR; then it completes
 * the uploads, {@code commitThreads} at a time: one request per file, where
 * a rename is a copy and a delete of each object. A failed or aborted job
 * aborts the uploads; nothing of it was visible.
 *
 * <p>Uploads of task attempts that could not abort their own (an executor
 * lost) are aborted at the end of the job, as S3A's committers do, by
 * aborting every pending upload under DIR unless
 * {@code fs.s3a.committer.abort.pending.uploads} is false (set it so when
 * other jobs write into DIR at the same time). A completion overwrites an
 * object that appeared at its name after the check (S3 has no
 * complete-if-absent in Hadoop's API).
 */
final class BfoUploadWrite implements Write, BatchWrite {
    private static final Logger LOG = LoggerFactory.getLogger(BfoUploadWrite.class);
    static final String ABORT_PENDING = "fs.s3a.committer.abort.pending.uploads";

    private final Path dir;
    private final SerializableConfiguration conf;
    private final BfoOptions options;
    private final StructType schema;
    private final boolean truncate;
    private volatile boolean settled;   // committed or aborted: what was pending is dealt with

    BfoUploadWrite(Path dir, SerializableConfiguration conf, BfoOptions options, LogicalWriteInfo info,
                   boolean truncate) {
        this.dir = dir;
        this.conf = conf;
        this.options = options;
        this.schema = info.schema();
        this.truncate = truncate;
    }

    static UploadHandle uploadHandle(byte[] b) {
        return BBUploadHandle.from(ByteBuffer.wrap(b));
    }

    static PartHandle partHandle(byte[] b) {
        return BBPartHandle.from(ByteBuffer.wrap(b));
    }

    @Override
    public String description() {
        return "BfoUploadWrite " + dir + (truncate ? " (overwrite)" : " (append)");
    }

    @Override
    public BatchWrite toBatch() {
        return this;
    }

    private FileSystem fs() {
        return BfoHadoopDir.fileSystem(dir, conf.value());
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
        return new BfoUploadDataWriterFactory(dir.toString(), conf, options, schema);
    }

    /**
     * Every committed upload by its path in DIR, sorted; fails when two rows name the same file or when a
     * file is also another one's directory ("a" and "a/b").
     */
    static SortedMap<String, BfoPendingUploads.Upload> plan(WriterCommitMessage[] messages) {
        SortedMap<String, BfoPendingUploads.Upload> all = new TreeMap<>();
        for (WriterCommitMessage m : messages) {
            if (m == null) {
                continue;
            }
            BfoPendingUploads c = (BfoPendingUploads) m;
            for (int i = 0; i < c.size(); i++) {
                if (all.put(c.paths[i], c.get(i)) != null) {
                    throw new IllegalArgumentException("bfo write: duplicate path '" + c.paths[i]
                            + "' in the DataFrame (each row must name a different file); nothing was written");
                }
            }
        }
        BfoCommittedFiles.checkNoFileIsADirectory(all.keySet());
        return all;
    }

    @Override
    public void commit(WriterCommitMessage[] messages) {
        FileSystem fs = fs();
        List<BfoPendingUploads.Upload> pending = uploads(messages);
        Set<String> completed = ConcurrentHashMap.newKeySet();
        try (MultipartUploader up = BfoUploadDataWriter.uploader(fs, dir)) {
            SortedMap<String, BfoPendingUploads.Upload> plan = plan(messages);
            if (truncate) {
                BfoHadoopTree.clear(fs, dir, null);
            } else {
                BfoHadoopTree.checkFree(fs, dir, plan.keySet());
            }
            complete(up, plan, completed);
            LOG.info("bfo write: published {} files in {} (multipart uploads completed)", plan.size(), dir);
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: job commit failed: " + e, e);
        } finally {
            // Spark calls abort after a failed commit too: what is left is aborted here, once
            settled = true;
            pending.removeIf(u -> completed.contains(u.path()));
            abortAll(pending);
        }
    }

    /**
     * Completes the uploads, commitThreads at a time, noting each path done; at the first failure, the ones
     * not yet completed are left for the caller to abort (those completed stay published, as renames done
     * before a refused one).
     */
    private void complete(MultipartUploader up, SortedMap<String, BfoPendingUploads.Upload> plan,
                          Set<String> completed) throws IOException {
        try (BfoWritePool<Void> pool = new BfoWritePool<>(options.commitThreads, Long.MAX_VALUE, "bfo-commit")) {
            for (Map.Entry<String, BfoPendingUploads.Upload> e : plan.entrySet()) {
                Path file = BfoHadoopTree.child(dir, e.getKey());
                BfoPendingUploads.Upload u = e.getValue();
                pool.submit(0, () -> {
                    FutureIO.awaitFuture(up.complete(uploadHandle(u.upload()), file, Map.of(1, partHandle(u.part()))));
                    completed.add(u.path());
                    return null;
                });
            }
            pool.finish();
        }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
        if (!settled) {
            settled = true;
            abortAll(uploads(messages));
        }
    }

    private static List<BfoPendingUploads.Upload> uploads(WriterCommitMessage[] messages) {
        List<BfoPendingUploads.Upload> all = new ArrayList<>();
        for (WriterCommitMessage m : messages) {
            if (m instanceof BfoPendingUploads c) {
                for (int i = 0; i < c.size(); i++) {
                    all.add(c.get(i));
                }
            }
        }
        return all;
    }

    /**
     * Aborts the given uploads (those of the commit messages, after a failure) and then, unless
     * fs.s3a.committer.abort.pending.uploads is false, every upload still pending under DIR (those of attempts
     * that could not abort their own). Failures are logged: the job's outcome is decided already. A completed
     * upload (its file published) cannot be aborted any more: the store's refusal is expected then.
     */
    private void abortAll(List<BfoPendingUploads.Upload> uploads) {
        boolean purge = conf.value().getBoolean(ABORT_PENDING, true);
        if (uploads.isEmpty() && !purge) {
            return;
        }
        FileSystem fs = fs();
        try (MultipartUploader up = BfoUploadDataWriter.uploader(fs, dir);
             BfoWritePool<Void> pool = new BfoWritePool<>(options.commitThreads, Long.MAX_VALUE, "bfo-abort")) {
            for (BfoPendingUploads.Upload u : uploads) {
                Path file = BfoHadoopTree.child(dir, u.path());
                pool.submit(0, () -> {
                    try {
                        FutureIO.awaitFuture(up.abort(uploadHandle(u.upload()), file));
                    } catch (IOException | RuntimeException e) {
                        LOG.warn("bfo write: cannot abort the upload of {}: {}", file, e.toString());
                    }
                    return null;
                });
            }
            pool.finish();
            if (purge) {
                Integer n = FutureIO.awaitFuture(up.abortUploadsUnderPath(dir));
                if (n != null && n > 0) {
                    LOG.info("bfo write: aborted {} pending uploads under {} ({})", n, dir, ABORT_PENDING);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("bfo write: cannot abort the pending uploads under {}: {}", dir, e.toString());
        }
    }
}

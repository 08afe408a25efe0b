/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BBPartHandle;
import org.apache.hadoop.fs.BBUploadHandle;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.PartHandle;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UploadHandle;
import org.apache.hadoop.util.functional.FutureIO;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit protocol on an object store with multipart uploads (S3A), as
 * S3A's magic committer does it but with the pending uploads' handles in
 * the tasks' reports (Spark's commit messages, or Hadoop's task reports in
 * the staging directory) instead of a .pending file per file: tasks upload
 * each file to its final name as a multipart upload left pending
 * (invisible); a task commit reports its uploads; the job commit checks the
 * whole set as every other write does (duplicates, a file that is another's
 * directory), and in append mode that no file is there already and no
 * directory the files go into is a file, or in truncate mode removes
 * everything in DIR (but the staging directory of Hadoop's task reports);
 * then it completes the uploads, {@code commitThreads} at a time: one
 * request per file, where a rename is a copy and a delete of each object.
 * A failed or aborted job aborts the uploads; nothing of it was visible.
 *
 * <p>Uploads of task attempts that could not abort their own (an executor
 * or a container lost) are aborted at the end of the job, as S3A's
 * committers do, by aborting every pending upload under DIR unless
 * {@code fs.s3a.committer.abort.pending.uploads} is false (set it so when
 * other jobs write into DIR at the same time). A completion overwrites an
 * object that appeared at its name after the check (S3 has no
 * complete-if-absent in Hadoop's API).
 */
final class UploadJob extends OutputJob {
    private static final Logger LOG = LoggerFactory.getLogger(UploadJob.class);

    private final Path dir;
    private final Configuration conf;
    private volatile boolean settled;   // committed or aborted: what was pending is dealt with

    UploadJob(Path dir, Configuration conf, WriteOptions options, boolean truncate, String stagingName) {
        super(options, truncate, stagingName);
        this.dir = dir;
        this.conf = conf;
    }

    static UploadHandle uploadHandle(byte[] b) {
        return BBUploadHandle.from(ByteBuffer.wrap(b));
    }

    static PartHandle partHandle(byte[] b) {
        return BBPartHandle.from(ByteBuffer.wrap(b));
    }

    @Override
    public String dirName() {
        return dir.toString();
    }

    private FileSystem fs() {
        return HadoopOutputDir.fileSystem(dir, conf);
    }

    /** Nothing to make: the uploads go to their final names. */
    @Override
    public TaskSetup setup(int partitions) {
        return taskSetup();
    }

    @Override
    public TaskSetup taskSetup() {
        return new TaskSetup(TaskSetup.Kind.UPLOADS, dir.toString(), stagingName, null, options);
    }

    @Override
    public void commit(List<TaskFiles> tasks) throws IOException {
        FileSystem fs = fs();
        List<PendingUploads.Upload> pending = uploads(tasks);
        Set<String> completed = ConcurrentHashMap.newKeySet();
        try (MultipartUploader up = UploadTask.uploader(fs, dir)) {
            SortedMap<String, PendingUploads.Upload> plan = PendingUploads.plan(tasks, options.duplicateHint());
            if (truncate) {
                HadoopTree.clear(fs, dir, stagingName);
            } else {
                HadoopTree.checkFree(fs, dir, plan.keySet());
            }
            complete(up, plan, completed);
            LOG.info("bfo write: published {} files in {} (multipart uploads completed)", plan.size(), dir);
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
    private void complete(MultipartUploader up, SortedMap<String, PendingUploads.Upload> plan,
                          Set<String> completed) throws IOException {
        try (WritePool<Void> pool = new WritePool<>(options.commitThreads(), Long.MAX_VALUE, "bfo-commit")) {
            for (Map.Entry<String, PendingUploads.Upload> e : plan.entrySet()) {
                Path file = HadoopTree.child(dir, e.getKey());
                PendingUploads.Upload u = e.getValue();
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
    public void abort(List<TaskFiles> tasks) {
        if (!settled) {
            settled = true;
            abortAll(uploads(tasks));
        }
    }

    /** The attempt's uploads that its report names; those it could not report are aborted at the job's end. */
    @Override
    public void abortAttempt(int partition, String attempt, TaskFiles report) throws IOException {
        if (!(report instanceof PendingUploads p) || p.size() == 0) {
            return;
        }
        try (MultipartUploader up = UploadTask.uploader(fs(), dir)) {
            for (int i = 0; i < p.size(); i++) {
                PendingUploads.Upload u = p.get(i);
                UploadTask.abortQuietly(up, HadoopTree.child(dir, u.path()), u.upload(), new IOException());
            }
        }
    }

    private static List<PendingUploads.Upload> uploads(List<TaskFiles> tasks) {
        List<PendingUploads.Upload> all = new ArrayList<>();
        for (TaskFiles m : tasks) {
            if (m instanceof PendingUploads c) {
                for (int i = 0; i < c.size(); i++) {
                    all.add(c.get(i));
                }
            }
        }
        return all;
    }

    /**
     * Aborts the given uploads (those of the reports, after a failure) and then, unless
     * fs.s3a.committer.abort.pending.uploads is false, every upload still pending under DIR (those of attempts
     * that could not abort their own). Failures are logged: the job's outcome is decided already. A completed
     * upload (its file published) cannot be aborted any more: the store's refusal is expected then.
     */
    private void abortAll(List<PendingUploads.Upload> uploads) {
        boolean purge = conf.getBoolean(OutputDir.ABORT_PENDING_UPLOADS, true);
        if (uploads.isEmpty() && !purge) {
            return;
        }
        FileSystem fs = fs();
        try (MultipartUploader up = UploadTask.uploader(fs, dir);
             WritePool<Void> pool = new WritePool<>(options.commitThreads(), Long.MAX_VALUE, "bfo-abort")) {
            for (PendingUploads.Upload u : uploads) {
                Path file = HadoopTree.child(dir, u.path());
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
                    LOG.info("bfo write: aborted {} pending uploads under {} ({})", n, dir, OutputDir.ABORT_PENDING_UPLOADS);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("bfo write: cannot abort the pending uploads under {}: {}", dir, e.toString());
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.PartHandle;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UploadHandle;
import org.apache.hadoop.util.functional.FutureIO;

/**
 * One task attempt of a multipart write (an object store, S3A): each file
 * becomes a multipart upload to its final name in the output directory,
 * started and given its bytes as one part, up to {@code writesInFlight}
 * files at once, and left pending: nothing is visible until the job commit
 * completes it ({@link UploadJob}). Commit waits for every upload and
 * reports the handles; abort waits for those under way and aborts every
 * upload this attempt started. A mode or modification time is not applied:
 * an object store keeps neither (S3A's setPermission and setTimes do
 * nothing either).
 */
final class UploadTask extends OutputTask {
    private final Path dir;
    private final Configuration conf;
    private final WritePool<PendingUploads.Upload> pool;
    private MultipartUploader uploader;

    UploadTask(Path dir, Configuration conf, WriteOptions options) {
        super(options);
        this.dir = dir;
        this.conf = conf;
        this.pool = new WritePool<>(options.writesInFlight(), options.writeBatchBytes(), "bfo-upload");
    }

    @Override
    void put(String path, byte[] content, int mode, long modificationTime) throws IOException {
        if (uploader == null) {
            uploader = uploader(HadoopOutputDir.fileSystem(dir, conf), dir);
        }
        Path file = HadoopTree.child(dir, path);
        MultipartUploader up = uploader;
        pool.submit(content.length, () -> {
            UploadHandle u = FutureIO.awaitFuture(up.startUpload(file));
            try {
                PartHandle p = FutureIO.awaitFuture(up.putPart(u, 1, file, new ByteArrayInputStream(content),
                        content.length));
                return new PendingUploads.Upload(path, u.toByteArray(), p.toByteArray());
            } catch (IOException | RuntimeException e) {
                abortQuietly(up, file, u.toByteArray(), e);
                throw new IOException("bfo write: cannot upload '" + path + "' (" + file + "): " + e, e);
            }
        });
    }

    static MultipartUploader uploader(FileSystem fs, Path dir) throws IOException {
        return fs.createMultipartUploader(dir).build();
    }

    /** Aborts an upload; a failure to do so is added to cause, not thrown (the write has failed already). */
    static void abortQuietly(MultipartUploader up, Path file, byte[] upload, Throwable cause) {
        try {
            FutureIO.awaitFuture(up.abort(UploadJob.uploadHandle(upload), file));
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    @Override
    public TaskFiles commit() throws IOException {
        return new PendingUploads(pool.finish());
    }

    @Override
    public void abort() throws IOException {
        IOException failed = null;
        for (PendingUploads.Upload u : pool.cancel()) {
            try {
                FutureIO.awaitFuture(uploader.abort(UploadJob.uploadHandle(u.upload()),
                        HadoopTree.child(dir, u.path())));
            } catch (IOException | RuntimeException e) {
                if (failed == null) {
                    failed = new IOException("bfo write: cannot abort the upload of '" + u.path() + "': " + e, e);
                } else {
                    failed.addSuppressed(e);
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    @Override
    public void close() throws IOException {
        pool.close();
        if (uploader != null) {
            uploader.close();
            uploader = null;
        }
    }
}

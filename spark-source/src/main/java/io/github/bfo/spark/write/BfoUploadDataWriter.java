/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.MultipartUploader;
import org.apache.hadoop.fs.PartHandle;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.UploadHandle;
import org.apache.hadoop.util.functional.FutureIO;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * One task attempt of a multipart write (an object store, S3A): each row
 * becomes a multipart upload to its final name in the output directory,
 * started and given its bytes as one part, up to {@code writesInFlight}
 * files at once, and left pending: nothing is visible until the job commit
 * completes it ({@link BfoUploadWrite}). Commit waits for every upload and
 * reports the handles; abort waits for those under way and aborts every
 * upload this attempt started.
 */
final class BfoUploadDataWriter implements DataWriter<InternalRow> {
    private final Path dir;
    private final Configuration conf;
    private final BfoWriteRows rows;
    private final BfoWritePool<BfoPendingUploads.Upload> pool;
    private MultipartUploader uploader;

    BfoUploadDataWriter(Path dir, Configuration conf, BfoOptions options, StructType schema) {
        this.dir = dir;
        this.conf = conf;
        this.rows = new BfoWriteRows(schema);
        this.pool = new BfoWritePool<>(options.writesInFlight, options.writeBatchBytes, "bfo-upload");
    }

    @Override
    public void write(InternalRow row) throws IOException {
        String path = rows.path(row);
        byte[] content = rows.content(row);
        if (uploader == null) {
            uploader = uploader(BfoHadoopDir.fileSystem(dir, conf), dir);
        }
        Path file = BfoHadoopTree.child(dir, path);
        MultipartUploader up = uploader;
        pool.submit(content.length, () -> {
            UploadHandle u = FutureIO.awaitFuture(up.startUpload(file));
            try {
                PartHandle p = FutureIO.awaitFuture(up.putPart(u, 1, file, new ByteArrayInputStream(content),
                        content.length));
                return new BfoPendingUploads.Upload(path, u.toByteArray(), p.toByteArray());
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
            FutureIO.awaitFuture(up.abort(BfoUploadWrite.uploadHandle(upload), file));
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        return new BfoPendingUploads(pool.finish());
    }

    @Override
    public void abort() throws IOException {
        IOException failed = null;
        for (BfoPendingUploads.Upload u : pool.cancel()) {
            try {
                FutureIO.awaitFuture(uploader.abort(BfoUploadWrite.uploadHandle(u.upload()),
                        BfoHadoopTree.child(dir, u.path())));
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import java.util.List;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What a committed task of a multipart write hands to the job commit: the
 * files it uploaded (paths relative to the output directory), each with its
 * pending upload's handle and its one part's handle (Hadoop's
 * MultipartUploader serializations), to complete or abort.
 */
final class BfoPendingUploads implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final String[] paths;
    final byte[][] uploads;
    final byte[][] parts;

    BfoPendingUploads(List<Upload> done) {
        int n = done.size();
        paths = new String[n];
        uploads = new byte[n][];
        parts = new byte[n][];
        for (int i = 0; i < n; i++) {
            paths[i] = done.get(i).path();
            uploads[i] = done.get(i).upload();
            parts[i] = done.get(i).part();
        }
    }

    int size() {
        return paths.length;
    }

    Upload get(int i) {
        return new Upload(paths[i], uploads[i], parts[i]);
    }

    /** One file's pending upload: its path relative to the output directory, its handles. */
    record Upload(String path, byte[] upload, byte[] part) {
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local disk under the scheme "bfofailcreate:", where creating a file
 * whose name starts with "fail" fails (as a write refused by a server): the
 * failure of one file among many written at once.
 */
public final class FailingCreateFileSystem extends RawLocalFileSystem {
    static final String SCHEME = "bfofailcreate";

    @Override
    public URI getUri() {
        return URI.create(SCHEME + ":///");
    }

    @Override
    public String getScheme() {
        return SCHEME;
    }

    @Override
    public FSDataOutputStream create(Path f, boolean overwrite, int bufferSize, short replication, long blockSize,
                                     Progressable progress) throws IOException {
        refuse(f);
        return super.create(f, overwrite, bufferSize, replication, blockSize, progress);
    }

    private static void refuse(Path f) throws IOException {
        if (f.getName().startsWith("fail")) {
            throw new IOException("refused by the test file system: " + f.getName());
        }
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        refuse(f);
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local disk under the scheme "bfofailcreate:", where creating a file
 * fails (as a write refused by a server) when its name starts with "fail",
 * or when it is the bfo Hadoop writer's staged file of row 57 of partition
 * 0 (TASK.57, TASK = task-0-ATTEMPT: the writer stages files under numbers,
 * not their names): the failure of one file among many written at once.
 */
public class FailingCreateFileSystem extends RawLocalFileSystem {
    static final String SCHEME = "bfofailcreate";

    @Override
    public URI getUri() {
        return URI.create(getScheme() + ":///");
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

    static void refuse(Path f) throws IOException {
        if (f.getName().startsWith("fail") || f.getName().matches("task-0-[0-9]+\\.57")) {
            throw new IOException("refused by the test file system: " + f.getName());
        }
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        refuse(f);
        return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    @Override
    public FSDataOutputStream createNonRecursive(Path f, FsPermission permission, EnumSet<CreateFlag> flags,
                                                 int bufferSize, short replication, long blockSize,
                                                 Progressable progress) throws IOException {
        refuse(f);
        return super.createNonRecursive(f, permission, flags, bufferSize, replication, blockSize, progress);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import java.io.IOException;
import java.util.EnumSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * {@link FailingCreateFileSystem}'s refusals under the scheme "bfolatecreate:",
 * where the first recursive delete of a bfo staging directory meets a file
 * created while it walked: it removes what it listed, the late file stays,
 * and it returns false, as the local disk's walk does when a task's create
 * comes after its listing (and before its rmdir).
 */
public final class LateCreateFileSystem extends FailingCreateFileSystem {
    static final String SCHEME = "bfolatecreate";
    static final AtomicInteger raced = new AtomicInteger();

    @Override
    public String getScheme() {
        return SCHEME;
    }

    @Override
    public boolean delete(Path p, boolean recursive) throws IOException {
        boolean staging = p.getName().startsWith(io.github.bfo.hadoop.fs.write.OutputPaths.STAGING_PREFIX) && !p.getName().contains("-removed-");
        if (!recursive || !staging || raced.get() > 0) {
            return super.delete(p, recursive);
        }
        super.delete(p, true);
        raced.incrementAndGet();
        mkdirs(p);
        try (FSDataOutputStream late = super.createNonRecursive(new Path(p, "task-1-9.3"),
                FsPermission.getFileDefault(), EnumSet.of(CreateFlag.CREATE), 4096, (short) 1, 1 << 20, null)) {
            late.write('x');
        }
        return false;
    }
}

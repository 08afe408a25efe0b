/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;

/** A local output directory: written by libbfo batch writes, published through a DestinationTree. */
final class BfoLocalDir implements BfoOutputDir {
    private final Path dir;

    BfoLocalDir(Path dir) {
        this.dir = dir;
    }

    @Override
    public String qualified() {
        return new org.apache.hadoop.fs.Path(dir.toUri()).toString();
    }

    @Override
    public boolean exists() {
        return Files.exists(dir);
    }

    @Override
    public void create() {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot create " + dir + ": " + e, e);
        }
    }

    @Override
    public void remove() {
        BfoBatchWrite.deleteTree(dir.getParent(), dir.getFileName().toString());
    }

    @Override
    public Write newWrite(BfoOptions options, LogicalWriteInfo info, boolean truncate) {
        return new BfoBatchWrite(dir, options, info, truncate);
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}

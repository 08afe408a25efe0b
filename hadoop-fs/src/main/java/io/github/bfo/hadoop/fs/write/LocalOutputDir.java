/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A local output directory: written by libbfo batch writes, published through a DestinationTree. */
final class LocalOutputDir implements OutputDir {
    private final Path dir;

    LocalOutputDir(Path dir) {
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
        LocalJob.deleteTree(dir.getParent(), dir.getFileName().toString());
    }

    @Override
    public OutputJob newJob(String stagingName, WriteOptions options, boolean truncate) {
        return new LocalJob(dir, options, truncate, stagingName);
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}

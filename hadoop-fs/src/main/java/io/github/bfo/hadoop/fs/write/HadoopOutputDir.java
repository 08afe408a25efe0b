/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * An output directory on a Hadoop file system other than the local one
 * (hdfs:, s3a:, abfs:, viewfs: ...): written through its FileSystem API
 * ({@link StreamJob}, or {@link UploadJob}), with the job's Hadoop
 * configuration.
 */
final class HadoopOutputDir implements OutputDir {
    private final Path dir;
    private final Configuration conf;

    HadoopOutputDir(Path dir, Configuration conf) {
        this.dir = dir;
        this.conf = conf;
    }

    /** The directory's file system; an error naming the directory when it cannot be had or reached. */
    static FileSystem fileSystem(Path dir, Configuration conf) {
        try {
            return dir.getFileSystem(conf);
        } catch (IOException | RuntimeException e) {
            throw unreachable(dir, conf, e);
        }
    }

    static RuntimeException unreachable(Path dir, Configuration conf, Exception e) {
        return new IllegalArgumentException("bfo write: cannot reach the output directory " + dir
                + " (fs.defaultFS=" + conf.get("fs.defaultFS") + "): " + e, e);
    }

    @Override
    public String qualified() {
        return dir.toString();
    }

    @Override
    public boolean exists() {
        FileSystem fs = fileSystem(dir, conf);
        try {
            return fs.exists(dir);
        } catch (IOException | RuntimeException e) {
            throw unreachable(dir, conf, e);
        }
    }

    @Override
    public void create() {
        try {
            if (!fileSystem(dir, conf).mkdirs(dir)) {
                throw new IOException("mkdirs returned false");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot create " + dir + ": " + e, e);
        }
    }

    @Override
    public void remove() {
        try {
            fileSystem(dir, conf).delete(dir, true);
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + dir + ": " + e, e);
        }
    }

    /**
     * rename (a staging directory, renamed into place at the job commit: {@link StreamJob}) or multipart
     * (pending uploads, completed at the job commit: {@link UploadJob}); auto takes multipart where the file
     * system says its own multipart uploads are enabled (S3A), where a rename is a copy.
     */
    @Override
    public OutputJob newJob(String stagingName, WriteOptions options, boolean truncate) {
        return multipart(options) ? new UploadJob(dir, conf, options, truncate, stagingName)
                : new StreamJob(dir, conf, options, truncate, stagingName);
    }

    /** S3A's path capability "multipart uploads enabled" (fs.s3a.multipart.uploads.enabled, true by default). */
    static final String S3A_MULTIPART = "fs.s3a.capability.multipart.uploads.enabled";

    private boolean multipart(WriteOptions options) {
        if (options.commit() == WriteOptions.Commit.RENAME) {
            return false;
        }
        FileSystem fs = fileSystem(dir, conf);
        boolean can;
        try {
            can = fs.hasPathCapability(dir, org.apache.hadoop.fs.CommonPathCapabilities.FS_MULTIPART_UPLOADER);
            if (options.commit() == WriteOptions.Commit.AUTO) {
                can = can && fs.hasPathCapability(dir, S3A_MULTIPART);
            }
        } catch (IOException e) {
            throw unreachable(dir, conf, e);
        }
        if (!can && options.commit() == WriteOptions.Commit.MULTIPART) {
            throw new IllegalArgumentException("bfo write: commit=multipart, but " + fs.getUri()
                    + " has no multipart uploader for " + dir);
        }
        return can;
    }

    @Override
    public String toString() {
        return dir.toString();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The directory a write goes to, qualified as Spark's file writers and
 * Hadoop's FileOutputFormat qualify it (against its file system's URI and
 * working directory, so a schemeless path is on fs.defaultFS and a relative
 * one under the working directory): the file system a read of the same
 * path would list is the one written. A local (file:) directory is written
 * through libbfo ({@link LocalOutputDir}), any other file system through
 * Hadoop's FileSystem API ({@link HadoopOutputDir}); all publish through
 * the same commit protocol ({@link OutputJob}).
 */
public interface OutputDir {
    /**
     * S3A's committers' setting, honoured by the multipart write: unless false, the job's end aborts every
     * upload still pending under DIR (those of attempts that could not abort their own).
     */
    String ABORT_PENDING_UPLOADS = "fs.s3a.committer.abort.pending.uploads";

    /** dir qualified, and the writer for its file system; conf is the job's (Spark: the session's and options). */
    static OutputDir of(String dir, Configuration conf) {
        Path q = qualified(new Path(dir), conf);
        if ("file".equals(q.toUri().getScheme())) {
            return new LocalOutputDir(Paths.get(q.toUri().getPath()).normalize());
        }
        return new HadoopOutputDir(q, conf);
    }

    /**
     * p qualified as Spark's DataSource qualifies an output path. When its file system cannot be had (an unknown
     * host, a missing client), an absolute path is qualified against the file system's URI alone: it needs
     * no working directory, and the error that follows should name it rather than pass Hadoop's error on.
     */
    private static Path qualified(Path p, Configuration conf) {
        try {
            FileSystem fs = p.getFileSystem(conf);
            return p.makeQualified(fs.getUri(), fs.getWorkingDirectory());
        } catch (IOException | RuntimeException e) {
            URI fsUri = p.toUri().getScheme() != null ? p.toUri() : FileSystem.getDefaultUri(conf);
            if ("file".equals(fsUri.getScheme()) || !p.isUriPathAbsolute()) {
                throw new IllegalArgumentException("bfo write: cannot resolve the output path " + p
                        + " (fs.defaultFS=" + conf.get("fs.defaultFS") + "): " + e, e);
            }
            return p.makeQualified(fsUri, null);
        }
    }

    /** The qualified path (the "path" option of Spark's V2 write). */
    String qualified();

    boolean exists();

    /** Makes the directory and its parents. */
    void create();

    /** Removes the directory and everything in it: after a failed job into a directory it made. */
    void remove();

    /**
     * The job side of a write into this directory (append, or truncate: replace its contents), staging under
     * stagingName ({@link OutputPaths#stagingName}).
     */
    OutputJob newJob(String stagingName, WriteOptions options, boolean truncate);
}

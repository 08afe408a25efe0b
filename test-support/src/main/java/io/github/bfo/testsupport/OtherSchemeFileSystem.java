/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.testsupport;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

import java.io.IOException;
import java.net.URI;

/**
 * The local disk under the scheme {@value #SCHEME} (or any other scheme
 * fs.SCHEME.impl names it for): a file system the
 * input formats do not take for the local one, so their FileSystem-API
 * listing and reading (the hdfs:, s3a: path) run on local test files.
 * {@link #register} sets {@code fs.bfotest.impl}, Hadoop's standard way.
 */
public class OtherSchemeFileSystem extends RawLocalFileSystem {
    public static final String SCHEME = "bfotest";

    /** The scheme it was made for (fs.SCHEME.impl may name this class for any scheme). */
    private String scheme = SCHEME;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
        if (name.getScheme() != null) {
            scheme = name.getScheme();
        }
        super.initialize(name, conf);
    }

    @Override
    public URI getUri() {
        return URI.create(scheme + ":///");
    }

    @Override
    public String getScheme() {
        return scheme;
    }

    // RawLocalFileSystem's statuses load their permissions from a java.io.File of their path, which needs file:
    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return plain(super.getFileStatus(f));
    }

    @Override
    public FileStatus[] listStatus(Path f) throws IOException {
        FileStatus[] s = super.listStatus(f);
        for (int i = 0; i < s.length; i++) {
            s[i] = plain(s[i]);
        }
        return s;
    }

    private static FileStatus plain(FileStatus s) {
        return new FileStatus(s.getLen(), s.isDirectory(), s.getReplication(), s.getBlockSize(),
                s.getModificationTime(), s.getAccessTime(), FsPermission.getDefault(), "", "", s.getPath());
    }

    /** conf, with the scheme registered. */
    public static Configuration register(Configuration conf) {
        return register(conf, SCHEME, OtherSchemeFileSystem.class);
    }

    /** A local path under this scheme. */
    public static Path path(java.nio.file.Path local) {
        return path(SCHEME, local);
    }

    /** conf, with impl (this class or one extending it) registered for scheme. */
    protected static Configuration register(Configuration conf, String scheme,
            Class<? extends OtherSchemeFileSystem> impl) {
        conf.set("fs." + scheme + ".impl", impl.getName());
        return conf;
    }

    /** A local path under scheme. */
    protected static Path path(String scheme, java.nio.file.Path local) {
        return new Path(scheme + "://" + local.toAbsolutePath().toUri().getRawPath());
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.testsupport.OtherSchemeFileSystem;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * BatchFileOutputFormat through Hadoop's FileSystem streams and renames (the
 * path HDFS and every file system but the local disk and S3A take), on the
 * local disk under another scheme, against the plain path.
 */
class OtherSchemeOutputTest extends OutputContractTest {
    @TempDir
    static java.nio.file.Path work;
    static Configuration conf;
    static final AtomicInteger DIRS = new AtomicInteger();

    @BeforeAll
    static void setUp() {
        conf = TestJobs.localConf(work);
        conf.set("fs." + OtherSchemeFileSystem.SCHEME + ".impl", OtherSchemeFileSystem.class.getName());
    }

    @Override
    Configuration conf() {
        return conf;
    }

    @Override
    Path fresh(String name) {
        return new Path(OtherSchemeFileSystem.SCHEME + "://" + work.resolve("out").resolve(name + "-"
                + DIRS.incrementAndGet()));
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * The local disk under another scheme ("fakefs:", or any scheme it is set
 * for as fs.SCHEME.impl), to stand for a non-local file system in tests.
 */
public final class FakeSchemeFileSystem extends RawLocalFileSystem {
    static final String SCHEME = "fakefs";

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
}

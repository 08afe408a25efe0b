/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.net.URI;
import org.apache.hadoop.fs.RawLocalFileSystem;

/** The local disk under another scheme ("fakefs:"), to stand for a non-local fs.defaultFS in tests. */
public final class FakeSchemeFileSystem extends RawLocalFileSystem {
    static final String SCHEME = "fakefs";

    @Override
    public URI getUri() {
        return URI.create(SCHEME + ":///");
    }

    @Override
    public String getScheme() {
        return SCHEME;
    }
}

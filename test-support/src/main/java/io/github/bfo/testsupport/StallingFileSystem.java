/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.testsupport;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The local disk under the scheme {@value #SCHEME}, where opening a file
 * whose name starts with "stall" waits until {@link #release} (as a read from
 * a server that stopped answering without closing its connections waits): a
 * deterministic stand-in for a hung server.
 */
public final class StallingFileSystem extends OtherSchemeFileSystem {
    public static final String SCHEME = "bfostall";
    private static volatile CountDownLatch gate = new CountDownLatch(1);
    public static final AtomicInteger STALLED = new AtomicInteger();

    @Override
    public FSDataInputStream open(Path f, int bufferSize) throws IOException {
        if (f.getName().startsWith("stall")) {
            STALLED.incrementAndGet();
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("stalled open of " + f + " interrupted");
            }
        }
        return super.open(f, bufferSize);
    }

    /** Lets the stalled opens go on, and makes the next ones stall again. */
    public static void release() {
        CountDownLatch g = gate;
        gate = new CountDownLatch(1);
        g.countDown();
    }

    /** conf, with this scheme registered. */
    public static Configuration register(Configuration conf) {
        return register(conf, SCHEME, StallingFileSystem.class);
    }

    /** A local path under this scheme. */
    public static Path path(java.nio.file.Path local) {
        return path(SCHEME, local);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.time.Duration;

/**
 * What a copy did so far (native {@code struct bfo_copy_stats}, or the Java
 * engine's counts). Immutable.
 *
 * @param files       regular files copied
 * @param others      directories, links and special files created
 * @param bytes       file bytes copied
 * @param errors      entries that failed
 * @param batches     writer batches
 * @param totalTime   wall-clock time of the run
 * @param readEngine  the read engine that read most bytes ("raw", "uring", "portable", "none" or "java")
 * @param writeEngine the writer engine ("stem", "batched" or "java")
 */
public record CopyStats(long files, long others, long bytes, long errors, long batches, Duration totalTime,
                        String readEngine, String writeEngine) {

    static CopyStats fromNative(com.sun.jna.Pointer p) {
        int re = p.getInt(BfoNative.CSTATS_read_engine);
        int we = p.getInt(BfoNative.CSTATS_write_engine);
        return new CopyStats(p.getLong(BfoNative.CSTATS_files), p.getLong(BfoNative.CSTATS_others),
                p.getLong(BfoNative.CSTATS_bytes), p.getLong(BfoNative.CSTATS_errors),
                p.getLong(BfoNative.CSTATS_batches), Duration.ofNanos(p.getLong(BfoNative.CSTATS_ns_total)),
                BfoNative.engineName(re),
                BfoNative.wengineName(we));
    }
}

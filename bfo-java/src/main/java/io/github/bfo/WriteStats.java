/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * What a writer did over all its batches (native {@code struct
 * bfo_write_stats}, or the Java engine's own counts). Immutable.
 *
 * @param engine        "stem", "batched", "uring" or "java"
 * @param batches       batches written (native batches: a list larger than the staging bound counts several)
 * @param files         entries written successfully
 * @param failed        entries that failed
 * @param bytes         file bytes written
 * @param syncs         durability points (syncfs/fsync calls)
 * @param clones        stem engine: FICLONERANGE calls
 * @param manifestTime  time writing manifests
 * @param dataTime      time writing data
 * @param metadataTime  time applying metadata
 * @param syncTime      time in durability points
 */
public record WriteStats(String engine, long batches, long files, long failed, long bytes, long syncs, long clones,
                         Duration manifestTime, Duration dataTime, Duration metadataTime, Duration syncTime) {

    static WriteStats fromNative(ByteBuffer b) {
        int e = b.getInt(BfoNative.WSTATS_engine);
        return new WriteStats(BfoNative.wengineName(e), b.getLong(BfoNative.WSTATS_batches),
                b.getLong(BfoNative.WSTATS_files), b.getLong(BfoNative.WSTATS_failed),
                b.getLong(BfoNative.WSTATS_bytes), b.getLong(BfoNative.WSTATS_syncs),
                b.getLong(BfoNative.WSTATS_clones), Duration.ofNanos(b.getLong(BfoNative.WSTATS_ns_manifest)),
                Duration.ofNanos(b.getLong(BfoNative.WSTATS_ns_data)), Duration.ofNanos(b.getLong(BfoNative.WSTATS_ns_meta)),
                Duration.ofNanos(b.getLong(BfoNative.WSTATS_ns_sync)));
    }
}

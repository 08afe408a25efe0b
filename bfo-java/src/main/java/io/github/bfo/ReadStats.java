/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * What a read batch did (native {@code struct bfo_stats}, or the portable
 * Java engine's own counts). Immutable.
 *
 * @param engine         the engine that read most bytes: "raw", "uring", "portable", "none" (nothing read) or
 *                       "java" (the pure-Java engine, when the native library is not in use)
 * @param engines        every engine that ran
 * @param files          paths submitted
 * @param filesOk        files delivered completely
 * @param filesFailed    files delivered with a failure
 * @param bytes          file bytes delivered
 * @param deviceBytes    bytes read by I/Os, merged gaps included
 * @param ios            data read I/Os issued
 * @param regions        raw engine: merged regions read
 * @param extents        extents mapped (FIEMAP)
 * @param gapBytes       raw engine: bytes read through and discarded
 * @param fallbackFiles  files that left the raw or uring path for a per-file read
 * @param windows        planning windows
 * @param metadataTime   time during which at least one window was in the metadata phase
 * @param dataTime       time during which at least one window was in the data phase (overlaps metadataTime)
 * @param totalTime      wall-clock time of the batch
 * @param filesByEngine  files per engine name
 * @param filesRawmeta   raw engine on ext4: files whose metadata and extents were read from the inode tables on the
 *                       device, with no per-file stat, open or FIEMAP
 */
public record ReadStats(String engine, Set<String> engines, long files, long filesOk, long filesFailed, long bytes,
                        long deviceBytes, long ios, long regions, long extents, long gapBytes, long fallbackFiles,
                        long windows, Duration metadataTime, Duration dataTime, Duration totalTime,
                        Map<String, Long> filesByEngine, long filesRawmeta) {

    static ReadStats fromNative(ByteBuffer b) {
        Set<String> engines = new LinkedHashSet<>();
        int mask = b.getInt(BfoNative.STATS_engines);
        Map<String, Long> by = new LinkedHashMap<>();
        for (int i = 0; i < BfoNative.ENGINE_NAMES.length; i++) {
            if ((mask & (1 << i)) != 0) {
                engines.add(BfoNative.ENGINE_NAMES[i]);
            }
            long n = b.getLong(BfoNative.STATS_files_by_engine + 8 * i);
            if (n != 0) {
                by.put(BfoNative.ENGINE_NAMES[i], n);
            }
        }
        int e = b.getInt(BfoNative.STATS_engine);
        return new ReadStats(BfoNative.engineName(e), Collections.unmodifiableSet(engines),
                b.getLong(BfoNative.STATS_files), b.getLong(BfoNative.STATS_files_ok),
                b.getLong(BfoNative.STATS_files_failed), b.getLong(BfoNative.STATS_bytes),
                b.getLong(BfoNative.STATS_device_bytes), b.getLong(BfoNative.STATS_ios),
                b.getLong(BfoNative.STATS_regions), b.getLong(BfoNative.STATS_extents),
                b.getLong(BfoNative.STATS_gap_bytes), b.getLong(BfoNative.STATS_fallback_files),
                b.getLong(BfoNative.STATS_windows), Duration.ofNanos(b.getLong(BfoNative.STATS_ns_meta)),
                Duration.ofNanos(b.getLong(BfoNative.STATS_ns_data)), Duration.ofNanos(b.getLong(BfoNative.STATS_ns_total)),
                Collections.unmodifiableMap(by), b.getLong(BfoNative.STATS_files_rawmeta));
    }

    static ReadStats empty(String engine) {
        return new ReadStats(engine, Set.of(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, Duration.ZERO, Duration.ZERO,
                Duration.ZERO, Map.of(), 0);
    }

    /** True when the pure-Java engine ran (the native library was not in use). */
    public boolean isJavaEngine() {
        return "java".equals(engine);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

/**
 * What the BFO input formats did, per task, summed per job (group "BFO
 * input"). Files per engine are in the group {@value #ENGINE_GROUP}, one
 * counter per engine: raw, uring, portable, java (bfo-java's engines) or
 * hadoop-fs (the FileSystem API path).
 */
public enum BfoCounter {
    /** Files read. */
    FILES,
    /** File bytes delivered. */
    BYTES,
    /** Bytes read from the device, merged gaps included (native engines). */
    DEVICE_BYTES,
    /** Read requests issued. */
    IO_REQUESTS,
    /** Merged regions read (raw engine). */
    MERGED_REGIONS,
    /** Files that left the raw or uring path for a per-file read. */
    FALLBACK_FILES,
    /** Files whose metadata the raw engine read from ext4's inode tables (no per-file stat, open or FIEMAP). */
    RAW_INODE_FILES,
    /** Checksum ({@code .crc}) files read and verified against. */
    CHECKSUM_FILES,
    /** Milliseconds spent in the batch reads (wall clock, overlapping the map work). */
    READ_MILLIS,
    /** Splits that were a piece of a large file, read by Hadoop's LineRecordReader (not in a batch). */
    LARGE_FILE_SPLITS,
    /** Bytes of those pieces (their split lengths; BYTES_READ has what the reader read). */
    LARGE_FILE_SPLIT_BYTES;

    /** The counter group of the files read per engine. */
    public static final String ENGINE_GROUP = "BFO engine (files)";
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.internal.SQLConf;

/**
 * How the files of a scan are grouped into input partitions (files are never
 * split, as with binaryFile).
 *
 * <p>When the user set any packing knob for this read (in the session conf:
 * {@value #MAX_PARTITION_BYTES_CONF}, {@value #OPEN_COST_CONF} or
 * {@value #MAX_PARTITION_NUM_CONF}; as a source option: the same keys, their
 * short names, or {@link BfoOptions#MAX_FILES_PER_PARTITION}), the files are
 * packed exactly as Spark's file scans pack them (FilePartition.maxSplitBytes
 * and getFilePartitions: largest first, next fit, a partition closed when
 * the next file's bytes would pass maxSplitBytes, each file costing its
 * length plus openCostInBytes, rescaled to maxPartitionNum), with the
 * option values in place of the conf's, and then cut into runs of at most
 * maxFilesPerPartition files if that is set.
 *
 * <p>Otherwise bfo's own model: the same packing with a file costing its
 * length plus {@link #BFO_OPEN_COST_BYTES} (what a file costs inside one BFO
 * batch, measured, instead of Spark's 4 MiB per opened file), at most
 * {@link #BFO_MAX_FILES_PER_PARTITION} files a partition, and never fewer
 * partitions than Spark's parallelism (spark.sql.files.minPartitionNum, else
 * the leaf-node default parallelism) when there are at least that many files:
 * a packing that gives fewer is replaced by that many partitions of even
 * cost (largest file first into the cheapest partition).
 */
public final class BfoPacking {
    public static final String MAX_PARTITION_BYTES_CONF = "spark.sql.files.maxPartitionBytes";
    public static final String OPEN_COST_CONF = "spark.sql.files.openCostInBytes";
    public static final String MAX_PARTITION_NUM_CONF = "spark.sql.files.maxPartitionNum";
    static final String LEAF_PARALLELISM_CONF = "spark.sql.leafNodeDefaultParallelism";

    /**
     * What one more file costs inside a BFO batch, in bytes of data read: a
     * batch of 20,000 files of 4 KiB through BatchFileReader (engine auto,
     * warm cache) took about 28 us a file beyond its bytes, while large
     * files streamed at about 5 GB/s, i.e. about 140 KB a file; rounded to
     * 128 KiB. Spark's default openCostInBytes (4 MiB) models a task opening
     * each file on its own, 32 times this.
     */
    static final long BFO_OPEN_COST_BYTES = 128L << 10;

    /**
     * At most this many files in a partition under bfo's model: bounds the
     * arrays a task ships and the work a failed task redoes. With
     * BFO_OPEN_COST_BYTES and the 128 MiB default of maxPartitionBytes a
     * partition holds at most 1,024 files anyway, so this binds only if the
     * cost constant is lowered.
     */
    static final int BFO_MAX_FILES_PER_PARTITION = 4096;

    final boolean sparkRule;
    final long maxPartitionBytes;
    final long openCost;
    final int maxFiles;              // Integer.MAX_VALUE: no cap
    final Integer maxPartitionNum;   // null: none
    final int minPartitionNum;

    private BfoPacking(boolean sparkRule, long maxPartitionBytes, long openCost, int maxFiles,
                       Integer maxPartitionNum, int minPartitionNum) {
        this.sparkRule = sparkRule;
        this.maxPartitionBytes = maxPartitionBytes;
        this.openCost = openCost;
        this.maxFiles = maxFiles;
        this.maxPartitionNum = maxPartitionNum;
        this.minPartitionNum = minPartitionNum;
    }

    /** The rule for a read with these options in this session (conf read now, as Spark's scans read it when planning). */
    static BfoPacking of(SparkSession spark, BfoOptions o) {
        SQLConf conf = SQLConf.get();
        boolean userSet = spark.conf().contains(MAX_PARTITION_BYTES_CONF) || spark.conf().contains(OPEN_COST_CONF)
                || spark.conf().contains(MAX_PARTITION_NUM_CONF) || o.maxPartitionBytes != null
                || o.openCostInBytes != null || o.maxPartitionNum != null || o.maxFilesPerPartition != null;
        int minParts = conf.filesMinPartitionNum().isDefined()
                ? ((Number) conf.filesMinPartitionNum().get()).intValue() : leafParallelism(spark);
        long maxBytes = o.maxPartitionBytes != null ? o.maxPartitionBytes : conf.filesMaxPartitionBytes();
        if (!userSet) {
            return new BfoPacking(false, maxBytes, BFO_OPEN_COST_BYTES, BFO_MAX_FILES_PER_PARTITION, null, minParts);
        }
        long open = o.openCostInBytes != null ? o.openCostInBytes : conf.filesOpenCostInBytes();
        Integer maxNum = o.maxPartitionNum;
        if (maxNum == null && conf.filesMaxPartitionNum().isDefined()) {
            maxNum = ((Number) conf.filesMaxPartitionNum().get()).intValue();
        }
        int files = o.maxFilesPerPartition != null ? o.maxFilesPerPartition : Integer.MAX_VALUE;
        return new BfoPacking(true, maxBytes, open, files, maxNum, minParts);
    }

    /** Spark's SparkSession.leafNodeDefaultParallelism: its conf, else the context's default parallelism. */
    private static int leafParallelism(SparkSession spark) {
        return spark.conf().contains(LEAF_PARALLELISM_CONF)
                ? Integer.parseInt(spark.conf().get(LEAF_PARALLELISM_CONF))
                : spark.sparkContext().defaultParallelism();
    }

    /** The files (sorted largest first, as Spark's scans sort them) grouped into partitions. */
    List<List<PartitionedFile>> pack(List<PartitionedFile> files) {
        long total = 0;
        for (PartitionedFile f : files) {
            total += f.length() + openCost;
        }
        long maxSplit = Math.min(maxPartitionBytes, Math.max(openCost, total / minPartitionNum));
        if (sparkRule) {
            List<List<PartitionedFile>> parts = nextFit(files, maxSplit, Integer.MAX_VALUE);
            if (maxPartitionNum != null && parts.size() > maxPartitionNum) {
                // FilePartition.getFilePartitions: the total over maxPartitionNum, rounded up, as the split size
                parts = nextFit(files, (total + maxPartitionNum - 1) / maxPartitionNum, Integer.MAX_VALUE);
            }
            return maxFiles == Integer.MAX_VALUE ? parts : capped(parts);
        }
        List<List<PartitionedFile>> parts = nextFit(files, maxSplit, maxFiles);
        int wanted = Math.min(minPartitionNum, files.size());
        return parts.size() >= wanted ? parts : even(files, wanted);
    }

    /** "Next fit decreasing" of FilePartition.getFilePartitions, also closing a partition at maxFiles files. */
    private List<List<PartitionedFile>> nextFit(List<PartitionedFile> files, long maxSplit, int cap) {
        List<List<PartitionedFile>> out = new ArrayList<>();
        List<PartitionedFile> current = new ArrayList<>();
        long size = 0;
        for (PartitionedFile f : files) {
            if (!current.isEmpty() && (size + f.length() > maxSplit || current.size() >= cap)) {
                out.add(current);
                current = new ArrayList<>();
                size = 0;
            }
            size += f.length() + openCost;
            current.add(f);
        }
        if (!current.isEmpty()) {
            out.add(current);
        }
        return out;
    }

    /** Each partition cut into runs of at most maxFiles files, in order. */
    private List<List<PartitionedFile>> capped(List<List<PartitionedFile>> parts) {
        List<List<PartitionedFile>> out = new ArrayList<>();
        for (List<PartitionedFile> p : parts) {
            for (int from = 0; from < p.size(); from += maxFiles) {
                out.add(p.subList(from, (int) Math.min(p.size(), (long) from + maxFiles)));
            }
        }
        return out;
    }

    /**
     * Exactly n partitions of near-even cost: files largest first, each into
     * the cheapest partition that has room (n <= files; n * maxFiles is above
     * the file count since the cost packing gave fewer than n partitions).
     */
    private List<List<PartitionedFile>> even(List<PartitionedFile> files, int n) {
        List<List<PartitionedFile>> out = new ArrayList<>(n);
        long[] cost = new long[n];
        PriorityQueue<Integer> cheapest = new PriorityQueue<>(
                Comparator.<Integer>comparingLong(i -> cost[i]).thenComparingInt(i -> i));
        for (int i = 0; i < n; i++) {
            out.add(new ArrayList<>());
            cheapest.add(i);
        }
        for (PartitionedFile f : files) {
            int i = cheapest.poll();
            out.get(i).add(f);
            cost[i] += f.length() + openCost;
            if (out.get(i).size() < maxFiles) {
                cheapest.add(i);
            }
        }
        return out;
    }

    /** For the scan's description. */
    @Override
    public String toString() {
        return (sparkRule ? "spark" : "bfo") + "(maxPartitionBytes=" + maxPartitionBytes + ", openCostInBytes="
                + openCost + (maxFiles == Integer.MAX_VALUE ? "" : ", maxFilesPerPartition=" + maxFiles)
                + (maxPartitionNum == null ? "" : ", maxPartitionNum=" + maxPartitionNum) + ", minPartitionNum="
                + minPartitionNum + ")";
    }
}

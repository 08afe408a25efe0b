/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import io.github.bfo.hadoop.BatchFileSplit;
import io.github.bfo.hadoop.BatchTextInputFormat;
import io.github.bfo.hadoop.synth.SyntheticFileSystem;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.Writable;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.lib.input.CombineFileSplit;
import org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;

import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * H3: one {@code getSplits} of BatchTextInputFormat ({@code bfo}) or
 * CombineTextInputFormat ({@code combine}, at its defaults but for the same
 * {@code split.maxsize}) on a recursive input, in this JVM (start it with the
 * heap to test, e.g. {@code -Xmx1g}; one JVM per measurement).
 *
 * <pre>
 * java -Xmx1g -cp benchmarks.jar:$(cat classpath.txt) io.github.bfo.bench.SplitPlanBench \
 *     --format bfo|combine --synthetic N [--per-dir K] | --input file:///DIR [--expect-files N]
 * </pre>
 *
 * <p>The last stdout line is JSON: seconds of getSplits, splits, the files and
 * bytes the splits cover (checked against the input), and heap:
 * {@code peak_used} is the most heap in use at any time, i.e. the largest
 * total of the heap pools just before a collection (from GC notifications)
 * or at the end, so it includes garbage not yet collected and depends on the
 * collector's laziness; {@code max_live} is the largest total just after a
 * collection (an upper bound of what the planner really held); both count
 * from the JVM's start, and {@code baseline} (after a full GC before the call)
 * is Hadoop's classes and configuration. {@code retained} is the heap after a
 * full GC with the splits still referenced (what the job client keeps).
 * An OutOfMemoryError is reported as {@code "status":"oom"} with the seconds
 * it took.
 */
public final class SplitPlanBench {
    private static final Set<String> HEAP_POOLS = new HashSet<>();
    private static final AtomicLong PEAK = new AtomicLong();
    private static final AtomicLong MAX_LIVE = new AtomicLong();
    private static final AtomicLong GCS = new AtomicLong();

    private SplitPlanBench() {
    }

    public static void main(String[] args) throws Exception {
        String format = null;
        String input = null;
        long synthetic = -1;
        int perDir = 1000;
        long expectFiles = -1;
        long maxSize = 128L << 20;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--format" -> format = args[++i];
                case "--input" -> input = args[++i];
                case "--synthetic" -> synthetic = Long.parseLong(args[++i]);
                case "--per-dir" -> perDir = Integer.parseInt(args[++i]);
                case "--expect-files" -> expectFiles = Long.parseLong(args[++i]);
                case "--split-maxsize" -> maxSize = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (format == null || !format.equals("bfo") && !format.equals("combine") || (input == null) == (synthetic < 0)) {
            System.err.println("usage: SplitPlanBench --format bfo|combine (--synthetic N [--per-dir K] | --input DIR "
                    + "[--expect-files N]) [--split-maxsize BYTES]");
            System.exit(2);
        }
        Configuration conf = new Configuration();
        long expectBytes = -1;
        if (synthetic >= 0) {
            input = SyntheticFileSystem.configure(conf, synthetic, perDir).toString();
            expectFiles = synthetic;
            expectBytes = SyntheticFileSystem.totalLength(synthetic);
        }
        conf.setBoolean("mapreduce.input.fileinputformat.input.dir.recursive", true);
        conf.setLong("mapreduce.input.fileinputformat.split.maxsize", maxSize);
        Job job = Job.getInstance(conf);
        FileInputFormat.setInputPaths(job, new Path(input));
        watchCollections();

        System.gc();
        long baseline = heapUsed();
        PEAK.set(baseline);
        MAX_LIVE.set(baseline);
        StringBuilder json = new StringBuilder("{\"format\":\"").append(format).append("\",\"input\":\"")
                .append(input).append("\",\"max_heap\":").append(Runtime.getRuntime().maxMemory())
                .append(",\"baseline\":").append(baseline);
        long t0 = System.nanoTime();
        List<InputSplit> splits = null;
        try {
            splits = format.equals("bfo") ? new BatchTextInputFormat().getSplits(job)
                    : new CombineTextInputFormat().getSplits(job);
        } catch (OutOfMemoryError e) {
            double s = (System.nanoTime() - t0) / 1e9;
            splits = null;
            json.append(",\"status\":\"oom\",\"seconds\":").append(fmt(s)).append(",\"error\":\"")
                    .append(String.valueOf(e.getMessage()).replace("\"", "'")).append('"');
        }
        if (splits != null) {
            double s = (System.nanoTime() - t0) / 1e9;
            PEAK.accumulateAndGet(heapUsed(), Math::max);
            System.gc();
            long retained = heapUsed();
            long files = 0;
            long bytes = 0;
            for (InputSplit sp : splits) {
                if (sp instanceof BatchFileSplit b) {
                    files += b.getNumPaths();
                    bytes += b.getLength();
                } else {
                    CombineFileSplit c = (CombineFileSplit) sp;
                    files += c.getNumPaths();
                    bytes += c.getLength();
                }
            }
            String digest = digest(splits);
            boolean ok = (expectFiles < 0 || files == expectFiles) && (expectBytes < 0 || bytes == expectBytes);
            json.append(",\"status\":\"").append(ok ? "ok" : "wrong").append("\",\"seconds\":").append(fmt(s))
                    .append(",\"splits\":").append(splits.size()).append(",\"split_files\":").append(files)
                    .append(",\"split_bytes\":").append(bytes).append(",\"expect_files\":").append(expectFiles)
                    .append(",\"expect_bytes\":").append(expectBytes).append(",\"retained\":").append(retained)
                    .append(",\"splits_sha256\":\"").append(digest).append('"');
        }
        Thread.sleep(300);   // GC notifications arrive on another thread
        json.append(",\"peak_used\":").append(PEAK.get()).append(",\"max_live\":").append(MAX_LIVE.get())
                .append(",\"gcs\":").append(GCS.get()).append(",\"gc\":\"")
                .append(String.join("+", ManagementFactory.getGarbageCollectorMXBeans().stream()
                        .map(GarbageCollectorMXBean::getName).toList())).append("\"}");
        System.out.println(json);
        System.exit(0);
    }

    /** SHA-256 of the splits as the job client would write them (the same input must give the same plan). */
    private static String digest(List<InputSplit> splits) throws IOException, NoSuchAlgorithmException {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (DataOutputStream out = new DataOutputStream(new DigestOutputStream(OutputStream.nullOutputStream(), md))) {
            for (InputSplit sp : splits) {
                ((Writable) sp).write(out);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    private static String fmt(double s) {
        return String.format(Locale.ROOT, "%.3f", s);
    }

    private static long heapUsed() {
        long u = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                u += p.getUsage().getUsed();
            }
        }
        return u;
    }

    /** Heap totals before (peak) and after (live) every collection, from the collectors' notifications. */
    private static void watchCollections() {
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                HEAP_POOLS.add(p.getName());
            }
        }
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            ((NotificationEmitter) gc).addNotificationListener((n, hb) -> {
                if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                    return;
                }
                var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData()).getGcInfo();
                PEAK.accumulateAndGet(total(info.getMemoryUsageBeforeGc()), Math::max);
                MAX_LIVE.accumulateAndGet(total(info.getMemoryUsageAfterGc()), Math::max);
                GCS.incrementAndGet();
            }, null, null);
        }
    }

    private static long total(Map<String, MemoryUsage> byPool) {
        long t = 0;
        for (Map.Entry<String, MemoryUsage> e : byPool.entrySet()) {
            if (HEAP_POOLS.contains(e.getKey())) {
                t += e.getValue().getUsed();
            }
        }
        return t;
    }
}

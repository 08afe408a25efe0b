/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.bench;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;
import io.github.bfo.ReadStats;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * One cold-cache run of a Java way of reading every file of a tree, for the
 * benchmark harness (benchmarks/harness/javaread.py):
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar io.github.bfo.bench.JavaRead DIR METHOD [--sha256 | --rounds N]
 * </pre>
 *
 * METHOD is one of
 * <ul>
 * <li>{@code bfo-java}: {@link BatchFileReader#readTree} over DIR (the engine tells files from directories, no
 *     Java stat per entry), every byte consumed;</li>
 * <li>{@code bfo-java-list}: {@code Files.walk} (a stat per entry, as most Java code lists a tree) into a list,
 *     then {@link BatchFileReader#read} over it;</li>
 * <li>{@code readallbytes-loop}: {@code Files.walk} in walk order, {@code Files.readAllBytes} per file, 1 thread;</li>
 * <li>{@code readallbytes-parallel}: {@code Files.walk(DIR).parallel().map(Files::readAllBytes)} (common pool).</li>
 * </ul>
 * Every byte read is consumed (summed as longs, or hashed with --sha256,
 * which prints {@code <sha256>  <path>} per file for the harness's
 * same-bytes check). The last stdout line is one JSON object: method,
 * files, bytes, seconds (the read itself, walk included, measured inside
 * the JVM), setup_seconds (bfo methods: loading JNA and libbfo and making
 * the reader, before the read), jvm_seconds (JVM start to the end of the
 * read), later_seconds (the rounds after the first, see below) and, for
 * the bfo methods, the engine and I/O counts (of the last round).
 *
 * <p>{@code --rounds N} reads the tree N times in one JVM with one reader,
 * dropping the caches before each round after the first (root only, as the
 * harness drops them before the first): "seconds" stays the first round's,
 * a fresh JVM's, and later_seconds lists the others, read cold as well but
 * with the JIT warm, which is what a long-lived JVM (a Spark executor, a
 * Hadoop task reused) pays per read.
 */
public final class JavaRead {
    private JavaRead() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || (args.length > 2 && !args[2].equals("--sha256")
                && !(args[2].equals("--rounds") && args.length == 4))) {
            System.err.println("usage: JavaRead DIR bfo-java|bfo-java-list|readallbytes-loop|readallbytes-parallel "
                    + "[--sha256 | --rounds N]");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        String method = args[1];
        boolean sha = args.length > 2 && args[2].equals("--sha256");
        int rounds = 1;
        if (args.length == 4) {
            try {
                rounds = Integer.parseInt(args[3]);
            } catch (NumberFormatException e) {
                rounds = -1;   // said below
            }
        }
        if (!List.of("bfo-java", "bfo-java-list", "readallbytes-loop", "readallbytes-parallel").contains(method)) {
            System.err.println("JavaRead: unknown method " + method);
            System.exit(2);
        }
        if (rounds < 1 || rounds > 100) {
            System.err.println("JavaRead: --rounds " + args[3] + " is not a number in 1..100");
            System.exit(2);
        }
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
        long t0 = System.nanoTime();
        long setup = 0;
        BatchFileReader reader = null;
        if (method.startsWith("bfo-java")) {
            // setup: loading JNA and libbfo (extracted from the jar), the native context
            reader = BatchFileReader.builder().build();
            setup = System.nanoTime() - t0;
        }
        Consumer c = null;
        String extra = "";
        double first = 0;
        StringBuilder later = new StringBuilder();
        try {
            for (int round = 0; round < rounds; round++) {
                if (round > 0) {
                    dropCaches();   // every round reads cold, as the first: only the JVM is warm
                }
                c = new Consumer(sha, out);
                long t = System.nanoTime();
                extra = readOnce(method, dir, reader, c);
                double secs = (System.nanoTime() - t) / 1e9;
                if (round == 0) {
                    first = secs;
                } else {
                    later.append(later.length() == 0 ? "" : ",").append(String.format("%.3f", secs));
                }
                if (c.failed != 0) {
                    break;
                }
            }
        } finally {
            if (reader != null) {
                reader.close();
            }
        }
        double jvm = ManagementFactory.getRuntimeMXBean().getUptime() / 1e3;
        out.printf("{\"method\":\"%s\",\"files\":%d,\"failed\":%d,\"bytes\":%d,\"seconds\":%.3f,"
                + "\"setup_seconds\":%.3f,\"jvm_seconds\":%.3f,\"later_seconds\":[%s],\"sum\":%d%s}%n", method,
                c.files, c.failed, c.bytes, first, setup / 1e9, jvm, later, c.sum, extra);
        out.flush();
        System.exit(c.failed == 0 ? 0 : 1);
    }

    /** One read of every file under dir into c; returns the JSON fields of the bfo methods' statistics. */
    static String readOnce(String method, Path dir, BatchFileReader r, Consumer c) throws IOException {
        switch (method) {
            case "bfo-java":
            case "bfo-java-list": {
                FileBatch b;
                if (method.equals("bfo-java")) {
                    b = r.readTree(dir);
                } else {
                    List<Path> paths;
                    try (Stream<Path> s = Files.walk(dir)) {
                        paths = s.filter(Files::isRegularFile).collect(Collectors.toList());
                    }
                    b = r.read(paths);
                }
                try (b) {
                    for (FileData f : b) {
                        if (!f.isOk()) {
                            System.err.println("JavaRead: " + f.failure());
                            c.failed++;
                            continue;
                        }
                        c.piece(f.index(), f.path(), f.data(), f.isLast());
                    }
                    ReadStats st = b.stats();
                    return String.format(",\"engine\":\"%s\",\"ios\":%d,\"regions\":%d,\"meta_seconds\":%.3f,"
                                    + "\"data_seconds\":%.3f,\"native\":%s", st.engine(), st.ios(), st.regions(),
                            st.metadataTime().toNanos() / 1e9, st.dataTime().toNanos() / 1e9, r.isNative());
                }
            }
            case "readallbytes-loop": {
                try (Stream<Path> s = Files.walk(dir)) {
                    s.filter(Files::isRegularFile).forEach(p -> c.whole(p, readAll(p)));
                }
                return "";
            }
            default: {   // readallbytes-parallel
                AtomicLong files = new AtomicLong(), bytes = new AtomicLong(), sum = new AtomicLong();
                try (Stream<Path> s = Files.walk(dir)) {
                    if (c.sha) {
                        s.parallel().filter(Files::isRegularFile).map(p -> Map.entry(p, readAll(p)))
                                .sequential().forEach(e -> c.whole(e.getKey(), e.getValue()));
                    } else {
                        s.parallel().filter(Files::isRegularFile).map(JavaRead::readAll).forEach(b -> {
                            files.incrementAndGet();
                            bytes.addAndGet(b.length);
                            sum.addAndGet(Consumer.sum(ByteBuffer.wrap(b)));
                        });
                        c.files += files.get();
                        c.bytes += bytes.get();
                        c.sum += sum.get();
                    }
                }
                return "";
            }
        }
    }

    /** sync, then drop the page, dentry and inode caches (root only), as the harness does before each run. */
    static void dropCaches() throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sync").inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("sync failed (exit " + p.exitValue() + ")");
        }
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
    }

    static byte[] readAll(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Consumes every byte: a sum of longs, or SHA-256 per file (pieces of large files in order). */
    static final class Consumer {
        final boolean sha;
        final PrintStream out;
        final Map<Long, MessageDigest> partial = new HashMap<>();
        long files, failed, bytes, sum;

        Consumer(boolean sha, PrintStream out) {
            this.sha = sha;
            this.out = out;
        }

        private static final ThreadLocal<long[]> CHUNK = ThreadLocal.withInitial(() -> new long[8192]);

        /** Sum of the bytes as little-endian longs (bulk copies into a long[], then a loop C2 vectorises). */
        static long sum(ByteBuffer b) {
            ByteBuffer d = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            long[] chunk = CHUNK.get();
            long s = 0;
            java.nio.LongBuffer lb = d.asLongBuffer();
            while (lb.hasRemaining()) {
                int k = Math.min(chunk.length, lb.remaining());
                lb.get(chunk, 0, k);
                for (int i = 0; i < k; i++) {
                    s += chunk[i];
                }
            }
            for (int i = d.limit() & ~7; i < d.limit(); i++) {
                s += d.get(i);
            }
            return s;
        }

        void whole(Path p, byte[] b) {
            piece(-1, p, ByteBuffer.wrap(b), true);
        }

        void piece(long index, Path p, ByteBuffer data, boolean last) {
            bytes += data.remaining();
            if (!sha) {
                sum += sum(data);
                if (last) {
                    files++;
                }
                return;
            }
            MessageDigest md = index < 0 ? null : partial.remove(index);
            if (md == null) {
                md = digest();
            }
            md.update(data);
            if (!last) {
                partial.put(index, md);
                return;
            }
            files++;
            StringBuilder hex = new StringBuilder(64);
            for (byte x : md.digest()) {
                hex.append(Character.forDigit((x >> 4) & 15, 16)).append(Character.forDigit(x & 15, 16));
            }
            out.println(hex + "  " + p);
        }

        static MessageDigest digest() {
            try {
                return MessageDigest.getInstance("SHA-256");
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}

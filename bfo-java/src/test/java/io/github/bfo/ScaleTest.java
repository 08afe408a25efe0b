/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Bounded memory: 1,000,000 paths streamed through one batch (surefire runs
 * the tests with -Xmx256m), native memory checked through VmRSS; no native
 * memory or thread leak over 50 create/read/close rounds; closing from
 * another thread while a read is in flight.
 */
class ScaleTest {
    static final int REAL = 2000;
    static final int MILLION = 1_000_000;
    @TempDir
    static Path dir;
    static List<Path> files;
    static long[] sizes;

    @BeforeAll
    static void setUp() throws IOException {
        files = TestSupport.tree(dir, REAL, 20, 300, 7);
        sizes = new long[REAL];
        for (int i = 0; i < REAL; i++) {
            sizes[i] = Files.size(files.get(i));
        }
    }

    /** 1,000,000 fresh Path objects, made on demand (never a list). */
    static Iterable<Path> million() {
        return () -> new Iterator<>() {
            int i;

            @Override
            public boolean hasNext() {
                return i < MILLION;
            }

            @Override
            public Path next() {
                return Path.of(files.get(i++ % REAL).toString());
            }
        };
    }

    @Test
    void millionPathsInBoundedMemory() throws IOException {
        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        long maxHeap = Runtime.getRuntime().maxMemory();
        try (BatchFileReader r = BatchFileReader.builder().arenaBytes(16 << 20).build()) {
            long rss0 = -1, rssMax = 0, heapMax = 0, n = 0, bytes = 0, sum = 0;
            long expectBytes = 0;
            for (int i = 0; i < MILLION; i++) {
                expectBytes += sizes[i % REAL];
            }
            long t0 = System.nanoTime();
            try (FileBatch b = r.read(million())) {
                for (FileData f : b) {
                    assertTrue(f.isOk(), () -> String.valueOf(f.failure()));
                    ByteBuffer d = f.data();
                    while (d.remaining() >= 8) {
                        sum += d.getLong();
                    }
                    while (d.hasRemaining()) {
                        sum += d.get();
                    }
                    bytes += f.length();
                    n++;
                    if (n == 50_000) {
                        System.gc();
                        rss0 = TestSupport.rss();
                    }
                    if (n % 100_000 == 0) {
                        rssMax = Math.max(rssMax, TestSupport.rss());
                        heapMax = Math.max(heapMax, mem.getHeapMemoryUsage().getUsed());
                    }
                }
                ReadStats st = b.stats();
                assertEquals(MILLION, st.files());
                assertEquals(MILLION, st.filesOk());
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("1M paths (%s): %.1f s, RSS after 50k %d MiB, max %d MiB, heap max %d MiB of %d, sum %d%n",
                    r.engine(), secs, rss0 >> 20, rssMax >> 20, heapMax >> 20, maxHeap >> 20, sum);
            assertEquals(MILLION, n);
            assertEquals(expectBytes, bytes);
            // Native memory stays bounded: no growth with the number of paths beyond noise
            // (arena 16 MiB, bounded queues); the heap is capped by -Xmx256m anyway.
            assertTrue(rssMax - rss0 < (96L << 20), "RSS grew by " + ((rssMax - rss0) >> 20) + " MiB");
        }
    }

    /**
     * A tree whose paths fill several of the walk's buffers and of the engine's submit buffers, and wrap its
     * ring of paths in flight many times: every file once, with its own path and stat.
     */
    @Test
    void readTreeOverManyBuffers() throws IOException {
        Path root = dir.resolve("wide");
        String pad = "n".repeat(200);   // long directory names: long paths (short file names: fast to create)
        java.util.Map<Path, Long> want = new java.util.HashMap<>();
        for (int d = 0; d < 3; d++) {
            Path sub = Files.createDirectories(root.resolve(d + pad).resolve(pad));
            for (int i = 0; i < 1200; i++) {
                Path f = sub.resolve("f" + i);
                Files.write(f, new byte[i % 3]);
                want.put(f, (long) (i % 3));
            }
        }
        java.util.Map<Path, Long> got = new java.util.HashMap<>();
        try (BatchFileReader r = BatchFileReader.builder().metadataOnly(true).windowFiles(256).build();
             FileBatch b = r.readTree(root)) {
            for (FileData f : b) {
                assertTrue(f.isOk(), () -> String.valueOf(f.failure()));
                assertEquals(f.path().toString(), f.pathString());
                assertEquals(null, got.put(f.path(), f.size()), "twice: " + f.path());
            }
        }
        assertEquals(want, got);
    }

    @Test
    void noLeakOverRepeatedReaders() throws IOException {
        List<Path> some = files.subList(0, 300);
        long rssWarm = 0;
        for (int round = 0; round < 70; round++) {   // 20 to warm up (JIT, malloc arenas), then 50 measured
            try (BatchFileReader r = BatchFileReader.builder().arenaBytes(8 << 20).threads(4).build()) {
                long n = 0;
                try (FileBatch b = r.read(some)) {
                    for (FileData f : b) {
                        f.data();
                        n++;
                    }
                }
                assertEquals(some.size(), n);
                // half a batch, then close the reader with the batch open
                FileBatch b = r.read(some);
                b.next();
            }
            if (round == 19) {
                System.gc();
                rssWarm = TestSupport.rss();
            }
        }
        System.gc();
        long rssEnd = TestSupport.rss();
        System.out.printf("readers: RSS after 20 %d MiB, after 70 %d MiB%n", rssWarm >> 20, rssEnd >> 20);
        assertTrue(rssEnd - rssWarm < (24L << 20), "RSS grew by " + ((rssEnd - rssWarm) >> 20) + " MiB over 50 readers");
        Set<String> threads = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(s -> s.startsWith("bfo-java-read")).collect(Collectors.toSet());
        assertTrue(threads.size() <= 8, "Java engine threads left: " + threads);
    }

    @Test
    void closeTheBatchFromAnotherThread() throws Exception {
        try (BatchFileReader r = BatchFileReader.builder().arenaBytes(4 << 20).build()) {
            for (int round = 0; round < 10; round++) {
                FileBatch b = r.read(million());
                AtomicReference<Throwable> seen = new AtomicReference<>();
                long[] count = new long[1];
                Thread t = new Thread(() -> {
                    try {
                        for (FileData f : b) {
                            f.data();
                            count[0]++;
                        }
                    } catch (Throwable e) {
                        seen.set(e);
                    }
                });
                t.start();
                Thread.sleep(10 + round * 5);
                b.close();
                t.join(30_000);
                assertTrue(!t.isAlive(), "the iterating thread did not stop");
                Throwable e = seen.get();
                // the iteration just ends (or the entry in hand was invalidated under it)
                assertTrue(e == null || e instanceof IllegalStateException, String.valueOf(e));
                assertTrue(count[0] < MILLION);
                // the reader goes on
                long n = 0;
                try (FileBatch again = r.read(files.subList(0, 100))) {
                    for (FileData f : again) {
                        assertTrue(f.isOk());
                        n++;
                    }
                }
                assertEquals(100, n);
            }
        }
    }

    @Test
    void closeFromAnotherThreadWhileReading() throws Exception {
        for (int round = 0; round < 20; round++) {
            BatchFileReader r = BatchFileReader.builder().arenaBytes(4 << 20).build();
            AtomicReference<Throwable> seen = new AtomicReference<>();
            long[] count = new long[1];
            FileData[] held = new FileData[1];
            Thread t = new Thread(() -> {
                try (FileBatch b = r.read(million())) {
                    for (FileData f : b) {
                        held[0] = f;
                        f.data();
                        count[0]++;
                    }
                } catch (Throwable e) {
                    seen.set(e);
                }
            });
            t.start();
            Thread.sleep(20 + round * 7);
            long t0 = System.nanoTime();
            r.close();
            t.join(30_000);
            assertTrue(!t.isAlive(), "the reading thread did not stop");
            assertTrue(System.nanoTime() - t0 < 30_000_000_000L);
            Throwable e = seen.get();
            assertTrue(e instanceof IllegalStateException, "expected IllegalStateException, got " + e
                    + " after " + count[0] + " entries");
            if (held[0] != null) {
                FileData h = held[0];
                org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class, h::data);
            }
        }
    }
}

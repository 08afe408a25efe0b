/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Native contexts reused across readers through {@link ContextPool}: every
 * reader's batch equals Files.readAllBytes whatever the previous reader of
 * its context did (stopped on an error, cancelled, closed with entries
 * held), concurrent readers each have their own context, the pool keeps
 * no more idle contexts than its bound, and a closed pool keeps none.
 */
class ContextPoolTest {
    @TempDir
    static Path dir;
    static List<Path> files = new ArrayList<>();
    static Path missing;

    @BeforeAll
    static void setUp() throws IOException {
        Random r = new Random(17);
        for (int i = 0; i < 32; i++) {
            files.add(TestSupport.write(dir.resolve("f" + i), TestSupport.random(r, 1 + r.nextInt(12000))));
        }
        missing = dir.resolve("missing");
    }

    private static BatchFileReader reader(FailurePolicy p) throws IOException {
        return BatchFileReader.builder().engine(BatchFileReader.Engine.AUTO).threads(3).failurePolicy(p).build();
    }

    /** One reader, one batch, as a Spark task does; checked against the plain read, stats included. */
    private static void cleanBatch(FailurePolicy p, String what) throws IOException {
        try (BatchFileReader r = reader(p)) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, files);
            assertEquals(files.size(), got.size(), what);
            for (int i = 0; i < files.size(); i++) {
                TestSupport.Result res = got.get((long) i);
                assertTrue(res.last.isOk(), what + ": " + res.last);
                assertArrayEquals(Files.readAllBytes(files.get(i)), res.bytes, what + ": " + files.get(i));
            }
            ReadStats st = r.lastStats();
            assertEquals(files.size(), st.files(), what + ": " + st);
            assertEquals(files.size(), st.filesOk(), what + ": " + st);
            assertEquals(0, st.filesFailed(), what + ": " + st);
        }
    }

    @Test
    void manyReadersInTurnSeeTheirOwnBatch() throws IOException {
        for (int k = 0; k < 200; k++) {
            cleanBatch(FailurePolicy.PERFORM_ALL, "reader " + k);
        }
        if (TestSupport.nativeRun()) {
            assertTrue(ContextPool.shared().idleCount() >= 1, "closed readers' contexts are kept for reuse");
        }
    }

    @Test
    void aStoppedBatchDoesNotStopTheNextReaders() throws IOException {
        for (int k = 0; k < 20; k++) {
            List<Path> bad = new ArrayList<>(files);
            bad.add(0, missing);
            try (BatchFileReader r = reader(FailurePolicy.STOP_ON_FIRST_FAILURE); FileBatch b = r.read(bad)) {
                boolean failed = false;
                for (FileData f : b) {
                    failed |= !f.isOk();
                }
                assertTrue(failed, "the missing file fails");
            }
            cleanBatch(FailurePolicy.STOP_ON_FIRST_FAILURE, "after a stopped batch, round " + k);
        }
    }

    @Test
    void aCancelledOrAbandonedBatchLeavesNothingBehind() throws IOException {
        for (int k = 0; k < 50; k++) {
            FileData held;
            BatchFileReader r = reader(FailurePolicy.PERFORM_ALL);
            FileBatch b = r.read(files);
            Iterator<FileData> it = b.iterator();
            held = it.next();
            if (k % 2 == 0) {
                b.close();          // cancelled by the batch
            }
            r.close();              // or abandoned mid-batch with an entry held
            FileData h = held;
            if (TestSupport.nativeRun() && h.isOk() && h.length() > 0) {
                assertThrows(IllegalStateException.class, h::data, "an entry of a closed reader");
            }
            cleanBatch(FailurePolicy.PERFORM_ALL, "after an abandoned batch, round " + k);
        }
    }

    @Test
    void concurrentReadersEachGetTheirOwnContext() throws Exception {
        ExecutorService ex = Executors.newFixedThreadPool(6);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                fs.add(ex.submit(() -> {
                    for (int k = 0; k < 40; k++) {
                        cleanBatch(FailurePolicy.PERFORM_ALL, Thread.currentThread().getName() + " batch " + k);
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        } finally {
            ex.shutdown();
        }
        assertTrue(ContextPool.shared().idleCount() <= Integer.getInteger(BfoNative.POOL_MAX_IDLE_PROPERTY,
                Math.max(4, 2 * Runtime.getRuntime().availableProcessors())), "idle contexts beyond the bound");
    }

    @Test
    void theBoundAndShutdownHold() throws IOException {
        assumeTrue(TestSupport.nativeRun(), "native contexts only");
        ContextPool pool = new ContextPool(2, 60_000);
        List<NativeContext> made = new ArrayList<>();
        BatchFileReader.Builder b = BatchFileReader.builder().threads(2);
        for (int i = 0; i < 5; i++) {
            // made the way a reader makes one: the options as bytes are the key
            try (BatchFileReader r = b.build()) {
                assertTrue(r.isNative());
            }
            NativeContext c = ContextPool.shared().take(keyOf(b));
            assertTrue(c != null, "a closed reader's context is in the shared pool");
            made.add(c);
        }
        long threadsBefore = threads();
        for (NativeContext c : made) {
            pool.give(c);
        }
        assertEquals(2, pool.idleCount(), "at most maxIdle kept");
        NativeContext again = pool.take(keyOf(b));
        assertTrue(again != null && pool.take(new NativeContext.Key(new byte[] {1})) == null, "taken by key");
        pool.shutdown();
        assertEquals(0, pool.idleCount(), "shutdown destroys the idle");
        pool.give(again);
        assertEquals(0, pool.idleCount(), "a context given back after shutdown is destroyed");
        assertTrue(threads() < threadsBefore, "the destroyed contexts' threads are gone: " + threads() + " vs "
                + threadsBefore);
    }

    @Test
    void idleContextsExpire() throws Exception {
        assumeTrue(TestSupport.nativeRun(), "native contexts only");
        ContextPool pool = new ContextPool(4, 50);
        BatchFileReader.Builder b = BatchFileReader.builder().threads(2);
        try (BatchFileReader r = b.build()) {
            assertTrue(r.isNative());
        }
        pool.give(ContextPool.shared().take(keyOf(b)));
        assertEquals(1, pool.idleCount());
        // expired by the pool's daemon thread: waited for up to a minute (a busy machine runs it late)
        for (int i = 0; i < 6000 && pool.idleCount() > 0; i++) {
            Thread.sleep(10);
        }
        assertEquals(0, pool.idleCount(), "an idle context outlived the timeout");
    }

    @Test
    void aJvmExitsWithIdleContexts() throws Exception {
        String out = TestSupport.child(List.of(), List.of(), System.getProperty("java.class.path"),
                ChildProbe.class.getName(), "load");
        assertTrue(out.contains("--exit 0"), out);
    }

    /** The pool key a reader made with b uses (the options as libbfo sees them). */
    private static NativeContext.Key keyOf(BatchFileReader.Builder b) throws IOException {
        return NativeReadEngine.keyOf(b);
    }

    private static long threads() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/task"))) {
            return s.count();
        }
    }
}

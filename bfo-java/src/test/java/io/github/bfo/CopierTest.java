/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The copier against what cp -a keeps: bytes, type, mode, mtime, link targets, hard links. */
class CopierTest {
    static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    @TempDir
    Path dir;

    Path source() throws IOException {
        Random r = new Random(3);
        Path src = dir.resolve("src");
        TestSupport.tree(src, 300, 6, 30000, 11);
        Files.createDirectories(src.resolve("empty/deeper"));
        TestSupport.write(src.resolve("big"), TestSupport.random(r, (3 << 20) + 17));
        TestSupport.write(src.resolve("zero"), new byte[0]);
        Path m = TestSupport.write(src.resolve("modes/x"), TestSupport.random(r, 100));
        Files.setAttribute(m, "unix:mode", 0751);
        Files.setLastModifiedTime(m, FileTime.from(Instant.parse("2005-05-05T05:05:05.5Z")));
        Files.createSymbolicLink(src.resolve("link"), Path.of("modes/x"));
        Files.createSymbolicLink(src.resolve("dangling"), Path.of("nowhere"));
        Files.createLink(src.resolve("hard"), m);
        Files.setAttribute(src.resolve("modes"), "unix:mode", 0700);
        Files.setLastModifiedTime(src.resolve("modes"), FileTime.from(Instant.parse("2004-04-04T04:04:04Z")));
        return src;
    }

    /** relative path -> description (type, bytes, mode, mtime, link target) for the comparison. */
    static Map<String, String> describe(Path root, boolean times) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (var s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String rel = root.relativize(p).toString();
                StringBuilder d = new StringBuilder();
                if (Files.isSymbolicLink(p)) {
                    d.append("link->").append(Files.readSymbolicLink(p));
                } else if (Files.isDirectory(p, NOFOLLOW)) {
                    d.append("dir mode=").append(Integer.toOctalString(mode(p)));
                    if (times && !rel.isEmpty()) {
                        d.append(" mtime=").append(Files.getLastModifiedTime(p, NOFOLLOW));
                    }
                } else {
                    d.append("file mode=").append(Integer.toOctalString(mode(p))).append(" sha=")
                            .append(java.util.Arrays.hashCode(Files.readAllBytes(p))).append(" size=").append(Files.size(p));
                    if (times) {
                        d.append(" mtime=").append(Files.getLastModifiedTime(p, NOFOLLOW));
                    }
                }
                out.put(rel, d.toString());
            }
        }
        return out;
    }

    static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW) & 07777;
    }

    @Test
    void archiveCopyIsLikeCpA() throws IOException {
        Path src = source();
        Path dst = dir.resolve("dst");
        AtomicInteger progress = new AtomicInteger();
        List<Path> errors = new ArrayList<>();
        CopyListener l = new CopyListener() {
            @Override
            public void progress(CopyStats s) {
                progress.incrementAndGet();
            }

            @Override
            public void error(Path p, IOException e) {
                errors.add(p);
            }
        };
        try (BatchCopier c = BatchCopier.builder().archive(true).listener(l).build()) {
            assertEquals(TestSupport.expectNative(), c.isNative());
            CopyResult r = c.copy(List.of(src), dst);
            assertTrue(r.isOk(), r.failures().toString());
            r.orThrow();
            assertEquals(304, r.stats().files() + 1, r.stats().toString());  // 303 regular paths, 1 of them a hard link
            assertTrue(r.stats().bytes() > 3 << 20);
            if (c.isNative()) {
                assertTrue(List.of("uring", "portable", "raw").contains(r.stats().readEngine()), r.stats().toString());
            } else {
                assertEquals("java", r.stats().readEngine());
            }
        }
        assertTrue(progress.get() >= 1, "progress reported at least at the end");
        assertTrue(errors.isEmpty(), errors.toString());
        assertEquals(describe(src, true), describe(dst, true));
        assertEquals(Files.getAttribute(dst.resolve("modes/x"), "unix:ino"), Files.getAttribute(dst.resolve("hard"), "unix:ino"),
                "hard links stay links");
        assertArrayEquals(Files.readAllBytes(src.resolve("big")), Files.readAllBytes(dst.resolve("big")));
    }

    @Test
    void plainCopyAndCpDestinationRules() throws IOException {
        Path src = source();
        Path into = Files.createDirectories(dir.resolve("into"));
        try (BatchCopier c = BatchCopier.builder().durability(BatchFileWriter.Durability.NONE).build()) {
            // the target exists as a directory: src goes to into/src
            c.copy(List.of(src), into).orThrow();
            Map<String, String> want = describe(src, false);
            Map<String, String> got = describe(into.resolve("src"), false);
            assertEquals(want.keySet(), got.keySet());
            int umask = 0777 & ~WriteEntry.defaultMode(WriteEntry.Type.DIRECTORY);
            assertEquals(0751 & ~umask, mode(into.resolve("src/modes/x")), "cp -r: mode less the umask");
            // one file to a new name
            c.copy(List.of(src.resolve("zero")), dir.resolve("z2")).orThrow();
            assertTrue(Files.isRegularFile(dir.resolve("z2")));
            // several sources need a directory
            assertThrows(NotDirectoryException.class,
                    () -> c.copy(List.of(src.resolve("zero"), src.resolve("big")), dir.resolve("nope")));
            // again without replace: every existing file is an error, reported per entry
            CopyResult again = c.copy(List.of(src.resolve("modes")), into.resolve("src"));
            assertTrue(!again.isOk());
            assertInstanceOf(FileAlreadyExistsException.class, again.failures().get(0), again.failures().toString());
            assertThrows(IOException.class, again::orThrow);
        }
        try (BatchCopier c = BatchCopier.builder().replace(true).archive(true).build()) {
            c.copy(List.of(src.resolve("modes")), into.resolve("src")).orThrow();
            assertEquals(0751, mode(into.resolve("src/modes/x")));
        }
    }

    @Test
    void missingSourceIsAFailureNotAnAbort() throws IOException {
        Path src = source();
        Path dst = Files.createDirectories(dir.resolve("d2"));
        try (BatchCopier c = BatchCopier.builder().build()) {
            CopyResult r = c.copy(List.of(src.resolve("zero"), dir.resolve("missing")), dst);
            assertEquals(1, r.failures().size(), r.failures().toString());
            assertTrue(Files.exists(dst.resolve("zero")));
        }
    }

    @Test
    void closeCancelsARunningCopy() throws Exception {
        Path src = dir.resolve("many");
        TestSupport.tree(src, 6000, 60, 2000, 9);
        for (int round = 0; round < 3; round++) {
            Path dst = dir.resolve("cancel" + round);
            BatchCopier c = BatchCopier.builder().archive(true).durability(BatchFileWriter.Durability.NONE).build();
            CountDownLatch started = new CountDownLatch(1);
            AtomicReference<Object> outcome = new AtomicReference<>();
            Thread t = new Thread(() -> {
                started.countDown();
                try {
                    outcome.set(c.copy(List.of(src), dst));
                } catch (Throwable e) {
                    outcome.set(e);
                }
            });
            t.start();
            started.await();
            Thread.sleep(round * 30);
            long t0 = System.nanoTime();
            c.close();
            t.join(60_000);
            assertTrue(!t.isAlive());
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(60));
            Object o = outcome.get();
            System.out.println("close during copy, round " + round + ": " + (o == null ? null : o.getClass().getSimpleName())
                    + " after " + (System.nanoTime() - t0) / 1_000_000 + " ms");
            // cancelled, or it finished first (a fast machine), or close came before the run began
            assertTrue(o instanceof CancellationException || o instanceof CopyResult || o instanceof IllegalStateException,
                    String.valueOf(o));
            assertThrows(IllegalStateException.class, () -> c.copy(List.of(src), dst));
        }
    }

    @Test
    void aCopyAfterACancelledOneIsWhole() throws IOException {
        Path src = source();
        AtomicReference<BatchCopier> self = new AtomicReference<>();
        AtomicInteger rounds = new AtomicInteger();
        CopyListener l = new CopyListener() {
            @Override
            public void progress(CopyStats s) {
                if (rounds.get() == 0) {
                    self.get().cancel();     // each call, the last (as the run ends) too
                }
            }
        };
        try (BatchCopier c = BatchCopier.builder().archive(true).listener(l).build()) {
            self.set(c);
            try {
                c.copy(List.of(src), dir.resolve("first"));
            } catch (CancellationException e) {
                // cancelled mid-run, or the cancel came with the last progress: either way the next is whole
            }
            rounds.incrementAndGet();
            Path dst = dir.resolve("second");
            CopyResult r = c.copy(List.of(src), dst);
            assertTrue(r.isOk(), r.failures().toString());
            assertEquals(describe(src, true), describe(dst, true));
        }
    }

    @Test
    void argumentChecks() throws IOException {
        try (BatchCopier c = BatchCopier.builder().build()) {
            assertThrows(NullPointerException.class, () -> c.copy(null, dir));
            assertThrows(NullPointerException.class, () -> c.copy(List.of(dir), null));
            assertThrows(IllegalArgumentException.class, () -> c.copy(List.of(), dir));
        }
        assertThrows(IllegalArgumentException.class, () -> BatchCopier.builder().arenaBytes(5));
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Content equality with Files.readAllBytes over a tree with every edge case
 * of the read engine. Runs with libbfo in one surefire execution and with
 * -Dbfo.native=false (the Java engine) in the other.
 */
class ReadTest {
    static final long LARGE_FILE = 64 << 10;   // pieces above this
    @TempDir
    static Path dir;
    static List<Path> files;                   // regular files (readable)
    static Path empty, sparse, big, link, dirLink, dangling, fifo, subdir, missing, underFile, weird;

    @BeforeAll
    static void tree() throws Exception {
        Random r = new Random(42);
        files = new ArrayList<>(TestSupport.tree(dir.resolve("t"), 400, 7, 20000, 1));
        empty = TestSupport.write(dir.resolve("empty"), new byte[0]);
        sparse = TestSupport.sparse(dir.resolve("sparse"), r);
        big = TestSupport.write(dir.resolve("big"), TestSupport.random(r, (int) (LARGE_FILE * 5 + 777)));
        Path exact = TestSupport.write(dir.resolve("exact"), TestSupport.random(r, (int) LARGE_FILE));
        Path plusOne = TestSupport.write(dir.resolve("plus1"), TestSupport.random(r, (int) LARGE_FILE + 1));
        weird = TestSupport.nonUtf8(dir, "-name");
        Files.write(weird, TestSupport.random(r, 3333));
        assertTrue(weird.toString().contains("\uFFFD") || !weird.toString().equals(weird.getFileName().toString()));
        files.addAll(List.of(empty, sparse, big, exact, plusOne, weird));
        link = Files.createSymbolicLink(dir.resolve("link"), files.get(3));
        subdir = Files.createDirectories(dir.resolve("sub"));
        dirLink = Files.createSymbolicLink(dir.resolve("dirlink"), subdir);
        dangling = Files.createSymbolicLink(dir.resolve("dangling"), dir.resolve("nowhere"));
        fifo = dir.resolve("fifo");
        TestSupport.mkfifo(fifo);
        missing = dir.resolve("missing");
        underFile = files.get(0).resolve("x");
    }

    static BatchFileReader.Builder builder() {
        return BatchFileReader.builder().largeFile(LARGE_FILE).arenaBytes(4 << 20).windowFiles(128).threads(4);
    }

    @Test
    void engineIsTheExpectedOne() throws IOException {
        assertEquals(TestSupport.expectNative(), Bfo.isNativeAvailable(),
                "native availability: " + Bfo.nativeUnavailableReason().orElse("loaded"));
        try (BatchFileReader r = builder().build()) {
            assertEquals(TestSupport.expectNative(), r.isNative());
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, files.subList(0, 10));
            assertEquals(10, got.size());
            ReadStats st = r.lastStats();
            if (r.isNative()) {
                assertFalse(st.isJavaEngine());
                assertTrue(List.of("uring", "portable", "raw").contains(st.engine()), st.toString());
            } else {
                assertEquals("java", st.engine());
                assertTrue(r.describe().contains("java"), r.describe());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = BatchFileReader.Engine.class, names = {"AUTO", "PORTABLE", "JAVA"})
    void sameBytesAsReadAllBytes(BatchFileReader.Engine engine) throws IOException {
        List<Path> paths = new ArrayList<>(files);
        paths.add(files.get(5));   // duplicates: delivered twice, same bytes
        paths.add(files.get(5));
        paths.add(link);
        try (BatchFileReader r = builder().engine(engine).build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, paths);
            assertEquals(paths.size(), got.size());
            for (int i = 0; i < paths.size(); i++) {
                TestSupport.Result res = got.get((long) i);
                Path p = paths.get(i);
                assertNotNull(res, "no entry for " + p);
                assertTrue(res.last.isOk(), p + ": " + res.last.failure());
                assertSame(p, res.last.path());
                byte[] want = Files.readAllBytes(p);
                assertArrayEquals(want, res.bytes, "bytes of " + p);
                assertEquals(want.length, res.last.size());
                assertEquals(Files.getLastModifiedTime(p), res.last.lastModifiedTime(), "mtime of " + p);
                assertEquals(Files.getAttribute(p, "unix:mode"), res.last.mode());
                assertEquals(Files.getAttribute(p, "unix:ino"), res.last.inode());
            }
            ReadStats st = r.lastStats();
            assertEquals(paths.size(), st.files());
            assertEquals(paths.size(), st.filesOk());
            assertEquals(0, st.filesFailed());
            long total = 0;
            for (Path p : paths) {
                total += Files.size(p);
            }
            assertEquals(total, st.bytes());
            if (!r.isNative()) {
                assertEquals("java", st.engine());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = BatchFileReader.Engine.class, names = {"AUTO", "JAVA"})
    void readPackedGivesWhatReadGives(BatchFileReader.Engine engine) throws IOException {
        List<Path> paths = new ArrayList<>(files);   // with a large file, an empty one and a non-UTF-8 name
        paths.add(missing);
        paths.add(link);
        paths.add(Path.of("").toAbsolutePath().relativize(files.get(1)));   // relative to the working directory
        java.io.ByteArrayOutputStream packed = new java.io.ByteArrayOutputStream();
        for (Path p : paths) {
            packed.write(PathBytes.of(p));
            packed.write(0);
        }
        try (BatchFileReader r = builder().engine(engine).build()) {
            Map<Long, TestSupport.Result> want = TestSupport.readAll(r, paths);
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r.readPacked(packed.toByteArray()), paths);
            assertEquals(want.keySet(), got.keySet());
            for (long i = 0; i < paths.size(); i++) {
                FileData w = want.get(i).last, g = got.get(i).last;
                assertEquals(w.status(), g.status(), paths.get((int) i).toString());
                assertEquals(w.size(), g.size());
                assertEquals(w.lastModifiedTime(), g.lastModifiedTime());
                assertEquals(w.inode(), g.inode());
                assertEquals(g.path().toString(), g.pathString());
                assertArrayEquals(want.get(i).bytes, got.get(i).bytes, paths.get((int) i).toString());
            }
            assertEquals(paths.size(), r.lastStats().files());
            try (FileBatch b = r.readPacked(new byte[0])) {
                assertFalse(b.hasNext());
            }
            assertThrows(NullPointerException.class, () -> r.readPacked(null));
            assertThrows(IllegalArgumentException.class, () -> r.readPacked("/a\0\0/b\0".getBytes()));
            assertThrows(IllegalArgumentException.class, () -> r.readPacked("\0".getBytes()));
            assertThrows(IllegalArgumentException.class, () -> r.readPacked("/a\0/b".getBytes()));
        }
    }

    @Test
    void largeFilesComeInOrderedPieces() throws IOException {
        try (BatchFileReader r = builder().build(); FileBatch b = r.read(List.of(big, sparse))) {
            int pieces = 0;
            for (FileData f : b) {
                assertTrue(f.isOk(), String.valueOf(f.failure()));
                assertTrue(f.length() <= LARGE_FILE, f.toString());
                assertEquals(f.offset() + f.length() == f.size(), f.isLast(), f.toString());
                assertFalse(f.isWhole());
                pieces++;
            }
            assertEquals((Files.size(big) + LARGE_FILE - 1) / LARGE_FILE + (Files.size(sparse) + LARGE_FILE - 1) / LARGE_FILE,
                    pieces);
        }
    }

    @Test
    void failuresMapToNioExceptions() throws IOException {
        List<Path> paths = List.of(missing, subdir, fifo, dangling, underFile, dirLink, files.get(1));
        try (BatchFileReader r = builder().build()) {
            Map<Long, TestSupport.Result> got = assertTimeoutPreemptively(java.time.Duration.ofSeconds(60),
                    () -> TestSupport.readAll(r, paths), "a FIFO must not block the batch");
            assertInstanceOf(NoSuchFileException.class, got.get(0L).last.failure());
            assertEquals(-Errno.ENOENT, got.get(0L).last.status());
            IOException dirErr = got.get(1L).last.failure();
            assertInstanceOf(FileSystemException.class, dirErr);
            assertEquals(-Errno.EISDIR, got.get(1L).last.status());
            assertEquals(0040000, got.get(1L).last.mode() & 0170000);
            assertEquals(-Errno.EINVAL, got.get(2L).last.status(), "FIFO");
            assertTrue(got.get(2L).last.failure().getMessage().contains("not a regular file"),
                    got.get(2L).last.failure().getMessage());
            assertEquals(0010000, got.get(2L).last.mode() & 0170000);
            assertInstanceOf(NoSuchFileException.class, got.get(3L).last.failure(), "dangling symlink");
            assertInstanceOf(NotDirectoryException.class, got.get(4L).last.failure());
            assertEquals(-Errno.EISDIR, got.get(5L).last.status(), "link to a directory");
            assertTrue(got.get(6L).last.isOk());
            FileData bad = got.get(0L).last;
            assertThrows(NoSuchFileException.class, bad::orThrow);
            assertThrows(UncheckedIOException.class, bad::data);
            assertThrows(UncheckedIOException.class, bad::bytes);
            assertEquals(0, bad.length());
            assertEquals(6, r.lastStats().filesFailed());
            assertEquals(1, r.lastStats().filesOk());
        }
    }

    @Test
    void noFollowRefusesSymlinks() throws IOException {
        try (BatchFileReader r = builder().noFollow(true).build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, List.of(link, files.get(3), dangling));
            assertEquals(-Errno.ELOOP, got.get(0L).last.status());
            assertTrue(got.get(0L).last.failure().getMessage().contains("symbolic link"),
                    got.get(0L).last.failure().getMessage());
            assertArrayEquals(Files.readAllBytes(files.get(3)), got.get(1L).bytes);
            assertEquals(-Errno.ELOOP, got.get(2L).last.status());
        }
    }

    @Test
    void unreadableFile() throws Exception {
        Path secret = TestSupport.write(dir.resolve("secret"), new byte[] {1, 2, 3});
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("---------"));
        if (!TestSupport.isRoot()) {
            try (BatchFileReader r = builder().build()) {
                FileData f = TestSupport.readAll(r, List.of(secret)).get(0L).last;
                assertEquals(-Errno.EACCES, f.status());
                assertInstanceOf(AccessDeniedException.class, f.failure());
            }
            return;
        }
        // As root the file is readable: read it as nobody in a child JVM (setpriv), when possible.
        String out = probeAsNobody("read", secret.toString(), files.get(0).toString());
        assertTrue(out.contains("status=-13 " + secret + " java.nio.file.AccessDeniedException"), out);
        assertTrue(out.contains("status=0 " + files.get(0)), out);
    }

    /** ChildProbe's output for args, run as nobody in a child JVM with this run's engine (skips without setpriv). */
    private static String probeAsNobody(String... args) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "no setpriv");
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp"));
        return TestSupport.child(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"),
                List.of("-Dbfo.native=" + System.getProperty("bfo.native", "true"),
                        "-Djava.io.tmpdir=" + dir.resolve("cp")),
                cp + "/classes:" + cp + "/jna.jar", "io.github.bfo.ChildProbe", args);
    }

    @Test
    void viewsAreReadOnlyAndEndWhenTheIteratorMovesOn() throws IOException {
        try (BatchFileReader r = builder().build(); FileBatch b = r.read(files.subList(0, 50))) {
            FileData first = b.next();
            ByteBuffer v = first.data();
            assertTrue(v.isReadOnly());
            assertThrows(ReadOnlyBufferException.class, () -> v.put(0, (byte) 1));
            byte[] copy = first.bytes();
            assertArrayEquals(Files.readAllBytes(first.path()), copy);
            assertTrue(first.isValid());
            FileData second = b.next();
            assertFalse(first.isValid());
            assertThrows(IllegalStateException.class, first::data);
            assertThrows(IllegalStateException.class, first::bytes);
            assertArrayEquals(copy, Files.readAllBytes(first.path()), "metadata and copies stay usable");
            assertTrue(second.isValid());
            second.release();
            assertThrows(IllegalStateException.class, second::data);
            FileData third = b.next();
            b.close();
            assertThrows(IllegalStateException.class, third::data);
            assertFalse(b.hasNext());
        }
    }

    @Test
    void dataAfterReaderCloseThrows() throws IOException {
        BatchFileReader r = builder().build();
        FileBatch b = r.read(files.subList(0, 50));
        FileData f = b.next();
        r.close();
        assertThrows(IllegalStateException.class, f::data);
        assertThrows(IllegalStateException.class, b::hasNext);
        assertThrows(IllegalStateException.class, () -> r.read(files));
        r.close();   // idempotent
    }

    /**
     * Another thread closes the batch between the iterating thread's
     * hasNext() (true) and its next(): next() still hands out the entry it
     * promised, invalidated, and the iteration then ends. (A for-each loop
     * whose batch was closed from elsewhere once failed with
     * NoSuchElementException: ScaleTest met it 1 run in ~10.)
     */
    @Test
    void closeFromAnotherThreadBetweenHasNextAndNext() throws Exception {
        try (BatchFileReader r = builder().build()) {
            FileBatch b = r.read(files.subList(0, 50));
            assertTrue(b.hasNext());
            Thread t = new Thread(b::close);
            t.start();
            t.join();
            FileData f = b.next();
            assertThrows(IllegalStateException.class, f::data);
            assertFalse(b.hasNext());
        }
    }

    @Test
    void streamApi() throws IOException {
        List<Path> paths = files.subList(0, 200);
        long want = 0;
        for (Path p : paths) {
            want += Files.size(p);
        }
        try (BatchFileReader r = builder().build()) {
            long sum;
            try (var s = r.read(paths).stream()) {
                sum = s.mapToLong(FileData::length).sum();
            }
            assertEquals(want, sum);
            // parallel() does not split: still correct
            try (var s = r.read(paths).stream().parallel()) {
                assertEquals(paths.size(), s.filter(FileData::isOk).map(FileData::bytes).count());
            }
            // a stream of paths in
            try (FileBatch b = r.read(paths.stream())) {
                assertEquals(paths.size(), b.stream().count());
            }
        }
    }

    @Test
    void stopOnFirstFailure() throws IOException {
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            paths.add(files.get(i));
            if (i == 20) {
                paths.add(missing);
            }
        }
        try (BatchFileReader r = builder().failurePolicy(FailurePolicy.STOP_ON_FIRST_FAILURE).build();
             FileBatch b = r.read(paths)) {
            int failures = 0, n = 0;
            FileData lastSeen = null;
            for (FileData f : b) {
                n++;
                if (!f.isOk()) {
                    failures++;
                }
                lastSeen = f;
            }
            assertEquals(1, failures);
            assertFalse(lastSeen.isOk() && n == paths.size(), "the batch went on after the failure");
            assertTrue(n <= paths.size());
        }
        // perform-all goes on
        try (BatchFileReader r = builder().build()) {
            assertEquals(paths.size(), TestSupport.readAll(r, paths).size());
        }
    }

    @Test
    void metadataOnly() throws IOException {
        try (BatchFileReader r = builder().metadataOnly(true).build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, files.subList(0, 30));
            for (TestSupport.Result res : got.values()) {
                assertTrue(res.last.isOk());
                assertEquals(0, res.last.length());
                assertEquals(Files.size(res.last.path()), res.last.size());
            }
            assertEquals(0, r.lastStats().bytes());
        }
    }

    @Test
    void emptyBatchesAndReuse() throws IOException {
        try (BatchFileReader r = builder().build()) {
            for (int round = 0; round < 3; round++) {
                try (FileBatch b = r.read(List.of())) {
                    assertFalse(b.hasNext());
                }
                assertEquals(5, TestSupport.readAll(r, files.subList(0, 5)).size());
                // abandoned mid-way: the next read ends it
                FileBatch b = r.read(files);
                b.next();
                b.next();
            }
            assertEquals(files.size(), TestSupport.readAll(r, files).size());
        }
    }

    @Test
    void argumentChecks() throws IOException {
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().arenaBytes(1000));
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().threads(-1));
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().windowBytes(-5));
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().maxIo(4097));
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().largeFile(10));
        assertThrows(IllegalArgumentException.class, () -> BatchFileReader.builder().largeFile(2L << 30));
        assertThrows(NullPointerException.class, () -> BatchFileReader.builder().engine(null));
        try (BatchFileReader r = builder().build()) {
            assertThrows(NullPointerException.class, () -> r.read((Iterable<Path>) null));
            List<Path> withNull = Arrays.asList(files.get(0), null);
            FileBatch b = r.read(withNull);
            assertThrows(NullPointerException.class, () -> {
                while (b.hasNext()) {
                    b.next();
                }
            });
            b.close();
            Path zip = java.nio.file.FileSystems.newFileSystem(
                    TestSupport.write(dir.resolve("z.zip"), zipBytes()), (ClassLoader) null).getPath("/a");
            FileBatch z = r.read(List.of(zip));
            assertThrows(ProviderMismatchException.class, z::hasNext);
            z.close();
            // the reader is still usable
            assertEquals(3, TestSupport.readAll(r, files.subList(0, 3)).size());
        }
    }

    private static byte[] zipBytes() throws IOException {
        java.io.ByteArrayOutputStream bo = new java.io.ByteArrayOutputStream();
        try (java.util.zip.ZipOutputStream z = new java.util.zip.ZipOutputStream(bo)) {
            z.putNextEntry(new java.util.zip.ZipEntry("a"));
            z.write(1);
            z.closeEntry();
        }
        return bo.toByteArray();
    }

    @Test
    void relativePathsAndLazyIterables() throws IOException {
        Path cwd = Path.of("").toAbsolutePath();
        List<Path> rel = files.subList(0, 20).stream().map(cwd::relativize).collect(Collectors.toList());
        try (BatchFileReader r = builder().build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, rel);
            for (int i = 0; i < rel.size(); i++) {
                assertArrayEquals(Files.readAllBytes(rel.get(i)), got.get((long) i).bytes);
            }
            // an Iterable that makes its paths on demand, 20,000 of them
            Iterable<Path> lazy = () -> new Iterator<>() {
                int i;

                public boolean hasNext() {
                    return i < 20000;
                }

                public Path next() {
                    return Path.of(files.get(i++ % 300).toString());
                }
            };
            long n = 0;
            try (FileBatch b = r.read(lazy)) {
                for (FileData f : b) {
                    assertTrue(f.isOk());
                    n++;
                }
            }
            assertEquals(20000, n);
        }
    }

    @Test
    void statsWhileRunning() throws IOException {
        try (BatchFileReader r = builder().build(); FileBatch b = r.read(files)) {
            b.next();
            ReadStats mid = b.stats();
            assertTrue(mid.files() >= 1, mid.toString());
            b.forEachRemaining(f -> { });
            ReadStats end = b.stats();
            assertEquals(files.size(), end.files());
            assertTrue(end.totalTime().toNanos() > 0);
        }
    }

    @Test
    void manyWaitsWorthOfTinyFiles() throws IOException {
        // More entries than one wait returns, paths longer than one submit buffer in total.
        List<Path> paths = IntStream.range(0, 5000).mapToObj(i -> files.get(i % 50)).collect(Collectors.toList());
        try (BatchFileReader r = BatchFileReader.builder().build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, paths);
            assertEquals(5000, got.size());
            for (int i = 0; i < 50; i++) {
                assertArrayEquals(Files.readAllBytes(files.get(i)), got.get((long) i).bytes);
            }
        }
    }

    @Test
    void readTreeReadsEveryRegularFile() throws Exception {
        Path t2 = Files.createDirectories(dir.resolve("t2/a/b"));
        TestSupport.write(t2.resolve("f1"), new byte[] {1, 2});
        TestSupport.write(dir.resolve("t2/a/f2"), TestSupport.random(new Random(1), (int) LARGE_FILE * 3));
        Files.createSymbolicLink(dir.resolve("t2/linkfile"), files.get(7));
        Files.createSymbolicLink(dir.resolve("t2/linkdir"), dir.resolve("t"));
        Files.createSymbolicLink(dir.resolve("t2/dangling"), dir.resolve("t2/none"));
        TestSupport.mkfifo(dir.resolve("t2/a/fifo"));
        Files.createDirectories(dir.resolve("t2/emptydir"));
        Files.write(TestSupport.nonUtf8(dir.resolve("t2/a/"), "-walked"), new byte[] {7});
        java.util.Set<Path> want = new java.util.HashSet<>();
        try (var s = java.util.stream.Stream.concat(Files.walk(dir.resolve("t")), Files.walk(dir.resolve("t2")))) {
            s.filter(Files::isRegularFile).forEach(want::add);   // follows links to files, like readTree
        }
        try (BatchFileReader r = builder().build(); FileBatch b = r.readTree(dir.resolve("t"), dir.resolve("t2"))) {
            java.util.Map<Path, java.io.ByteArrayOutputStream> got = new java.util.HashMap<>();
            java.util.Set<Long> indices = new java.util.HashSet<>();
            for (FileData f : b) {
                assertTrue(f.isOk(), f + ": " + f.failure());
                assertEquals(f.path().toString(), f.pathString());
                got.computeIfAbsent(f.path(), k -> new java.io.ByteArrayOutputStream()).write(f.bytes(), 0, (int) f.length());
                if (f.isLast()) {
                    assertTrue(indices.add(f.index()), "index twice: " + f);
                }
            }
            assertEquals(want, got.keySet());
            for (Path p : want) {
                assertArrayEquals(Files.readAllBytes(p), got.get(p).toByteArray(), p.toString());
            }
            assertEquals(want.size(), b.stats().files(), b.stats().toString());
            assertEquals(0, b.stats().filesFailed());
            assertEquals(3, b.skippedEntries(), "linkdir, dangling and fifo");
        }
        // a file as a root, and a missing root
        try (BatchFileReader r = builder().build(); FileBatch b = r.readTree(files.get(0), missing)) {
            List<FileData> all = new ArrayList<>();
            for (FileData f : b) {
                all.add(f);
            }
            assertEquals(2, all.size());
            assertTrue(all.stream().anyMatch(f -> f.isOk() && f.path().equals(files.get(0))));
            assertTrue(all.stream().anyMatch(f -> f.failure() instanceof NoSuchFileException));
        }
    }

    /**
     * readTree with libbfo hands the walk's buffers to the engine whole and
     * makes each entry's path from its buffer only when asked: over a tree
     * whose paths fill several walk buffers (each taken by the library over
     * several submissions: windows of 128 files), with file roots before and
     * after it, nested directories, symbolic links, a missing root and a
     * directory that cannot be listed, every file is delivered once under
     * its own path with the bytes of Files.readAllBytes, and the failures are
     * entries. The directory is unreadable only to a user other than root:
     * as root the same read runs again as nobody in a child JVM.
     */
    @Test
    void readTreeOverSeveralWalkBuffersComparesEveryFile() throws Exception {
        Path t = Files.createDirectories(dir.resolve("walked"));
        Random rnd = new Random(37);
        String pad = "p".repeat(150);   // long names: few files fill a walk buffer
        long pathBytes = 0;
        for (int i = 0; i < 1800; i++) {
            Path f = t.resolve("d" + (i % 3) + pad).resolve("e" + (i % 2) + pad).resolve("f" + i);
            TestSupport.write(f, TestSupport.random(rnd, rnd.nextInt(300)));
            pathBytes += PathBytes.of(f).length + 1;
        }
        assertTrue(pathBytes > 2 * NativeReadEngine.PATH_BUF, "paths fill three walk buffers: " + pathBytes);
        TestSupport.write(t.resolve("x/y/z/deep"), TestSupport.random(rnd, 5000));
        Files.createSymbolicLink(t.resolve("x/linkfile"), files.get(9));
        Files.createSymbolicLink(t.resolve("x/linkdir"), t.resolve("x/y"));
        Files.createSymbolicLink(t.resolve("x/dangling"), t.resolve("x/none"));
        Path locked = Files.createDirectories(t.resolve("x/locked"));
        TestSupport.write(locked.resolve("inside"), new byte[] {4, 5, 6});
        Path rootA = TestSupport.write(dir.resolve("rootA"), TestSupport.random(rnd, 777));
        Path rootB = files.get(11);
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
        try {
            java.util.Set<Path> want = new java.util.HashSet<>(List.of(rootA, rootB));
            try (var st = Files.walk(t)) {
                st.filter(Files::isRegularFile).forEach(want::add);   // root: also locked/inside
            }
            boolean listable = Files.isReadable(locked);
            try (BatchFileReader r = builder().build()) {
                for (int round = 0; round < 2; round++) {   // the second after a batch closed half way
                    Map<Path, FileData> got = new java.util.HashMap<>();
                    List<FileData> failed = new ArrayList<>();
                    java.util.Set<Long> indices = new java.util.HashSet<>();
                    try (FileBatch b = r.readTree(rootA, t, missing, rootB)) {
                        for (FileData f : b) {
                            assertTrue(indices.add(f.index()), "index twice: " + f);
                            if (!f.isOk()) {
                                failed.add(f);
                                continue;
                            }
                            assertTrue(f.isWhole(), f.toString());
                            assertEquals(f.path().toString(), f.pathString());
                            assertArrayEquals(Files.readAllBytes(f.path()), f.bytes(), f.pathString());
                            assertNull(got.put(f.path(), f), "twice: " + f.path());
                        }
                    }
                    java.util.Set<Path> expect = new java.util.HashSet<>(want);
                    if (!listable) {
                        expect.remove(locked.resolve("inside"));
                    }
                    assertEquals(expect, got.keySet());
                    assertEquals(listable ? 1 : 2, failed.size(), failed.toString());
                    assertTrue(failed.stream().anyMatch(f -> f.path().equals(missing)
                            && f.failure() instanceof NoSuchFileException), failed.toString());
                    assertTrue(listable || failed.stream().anyMatch(f -> f.path().equals(locked)
                            && f.failure() instanceof AccessDeniedException), failed.toString());
                    try (FileBatch b = r.readTree(t)) {   // half a batch, then the next round on the same reader
                        for (int i = 0; i < 700 && b.hasNext(); i++) {
                            b.next();
                        }
                    }
                }
            }
            if (!TestSupport.isRoot()) {
                return;
            }
            // As root the directory is listable: the same read as nobody, in a child JVM (setpriv), when possible.
            String out = probeAsNobody("tree", rootA.toString(), t.toString(), missing.toString(), rootB.toString());
            assertTrue(out.contains("status=-13 " + locked + " java.nio.file.AccessDeniedException -"), out);
            assertTrue(out.contains("status=-2 " + missing + " java.nio.file.NoSuchFileException -"), out);
            want.remove(locked.resolve("inside"));
            for (Path p : want) {
                assertTrue(out.contains("status=0 " + p + "  same\n"), p + " in\n" + out);
            }
            assertEquals(want.size() + 2, out.lines().filter(l -> l.startsWith("status=")).count(), out);
        } finally {
            Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    /** readPacked over more paths than one submission holds, and one path longer than the submit buffer. */
    @ParameterizedTest
    @EnumSource(value = BatchFileReader.Engine.class, names = {"AUTO", "JAVA"})
    void readPackedOverSeveralSubmissions(BatchFileReader.Engine engine) throws IOException {
        List<Path> paths = new ArrayList<>();
        java.io.ByteArrayOutputStream packed = new java.io.ByteArrayOutputStream();
        for (int i = 0; packed.size() <= 3 * NativeReadEngine.PATH_BUF; i++) {
            Path p = i == 1000 ? Path.of("/" + "n/".repeat(NativeReadEngine.PATH_BUF) + "x") : files.get(i % 40);
            paths.add(p);
            packed.write(PathBytes.of(p));
            packed.write(0);
        }
        try (BatchFileReader r = builder().engine(engine).build(); FileBatch b = r.readPacked(packed.toByteArray())) {
            int n = 0;
            for (FileData f : b) {
                Path p = paths.get((int) f.index());
                assertEquals(p, f.path(), "path of index " + f.index());
                if (f.index() == 1000) {
                    assertFalse(f.isOk(), f.toString());   // too long a name for the kernel
                } else {
                    assertTrue(f.isOk() && f.isWhole(), f.toString());
                    assertArrayEquals(Files.readAllBytes(p), f.bytes(), p.toString());
                }
                n++;
            }
            assertEquals(paths.size(), n);
            assertEquals(paths.size(), b.stats().files());
        }
    }

    /**
     * The raw engine's inode-table path reaches Java's statistics: where the
     * reader says it reads inodes from the device (root, ext4 on a block
     * device it may open), every file of a synced, quiet directory of 300 is
     * counted in filesRawmeta; elsewhere none, and the test is skipped after
     * the bytes were compared with Files.readAllBytes.
     */
    @Test
    void rawInodeFilesAreCounted() throws Exception {
        Path d = Files.createDirectories(dir.resolve("rawmeta"));
        List<Path> want = new ArrayList<>();
        Random rnd = new Random(20);
        for (int i = 0; i < 300; i++) {
            Path p = d.resolve("f" + i);
            TestSupport.write(p, TestSupport.random(rnd, 1 + rnd.nextInt(9000)));
            try (java.nio.channels.FileChannel c = java.nio.channels.FileChannel.open(p,
                    java.nio.file.StandardOpenOption.WRITE)) {
                c.force(true);   // on the device: an inode never written out takes the VFS path
            }
            want.add(p);
        }
        Thread.sleep(60);        // the directory is listed only once it has been quiet for 20 ms
        try (BatchFileReader r = BatchFileReader.builder().build(); FileBatch b = r.readTree(d)) {
            java.util.Set<Path> got = new java.util.HashSet<>();
            for (FileData f : b) {
                assertTrue(f.isOk() && f.isWhole(), f + ": " + f.failure());
                assertArrayEquals(Files.readAllBytes(f.path()), f.bytes(), f.pathString());
                got.add(f.path());
            }
            assertEquals(new java.util.HashSet<>(want), got);
            ReadStats st = b.stats();
            boolean raw = r.describe().contains("inodes from the device");
            if (!raw) {
                assertEquals(0, st.filesRawmeta(), st.toString());
            }
            org.junit.jupiter.api.Assumptions.assumeTrue(raw, "inode tables not read here: " + r.describe());
            assertEquals(300, st.filesRawmeta(), r.describe() + "; " + st);
        }
    }

    @Test
    void fifoDoesNotBlockWithLinkOptions() throws Exception {
        assertTrue(Files.exists(fifo, LinkOption.NOFOLLOW_LINKS));
        try (BatchFileReader r = builder().noFollow(true).build()) {
            long t0 = System.nanoTime();
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, List.of(fifo, fifo, files.get(2)));
            assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(30));
            assertEquals(-Errno.EINVAL, got.get(0L).last.status());
            assertTrue(got.get(2L).last.isOk());
        }
    }
}

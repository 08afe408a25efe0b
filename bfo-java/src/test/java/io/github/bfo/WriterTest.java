/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Writer round trips (write, then read back and compare), in both executions (libbfo / Java engine). */
class WriterTest {
    static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    @TempDir
    Path dir;
    final Random rnd = new Random(5);

    BatchFileWriter.Builder builder(Path root) {
        return BatchFileWriter.builder(root);
    }

    static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW) & 07777;
    }

    @Test
    void everyEntryTypeRoundTrips() throws IOException {
        Path root = dir.resolve("out");
        byte[] a = TestSupport.random(rnd, 10_000);
        byte[] b = TestSupport.random(rnd, 4096);
        byte[] c = TestSupport.random(rnd, 70_000);
        ByteBuffer direct = ByteBuffer.allocateDirect(c.length);
        direct.put(c).flip();
        byte[] sliceSrc = TestSupport.random(rnd, 1000);
        FileTime t1 = FileTime.from(Instant.parse("2001-02-03T04:05:06.123456789Z"));
        FileTime t2 = FileTime.from(Instant.parse("2011-12-13T14:15:16Z"));
        List<WriteEntry> es = List.of(
                WriteEntry.directory("d").mode(0750).lastModifiedTime(t2),
                WriteEntry.file("d/a", a).mode(0640).lastModifiedTime(t1),
                WriteEntry.file(Path.of("d/e/b"), ByteBuffer.wrap(b)),
                WriteEntry.file("c", direct).mode(0600),
                WriteEntry.file("slice", sliceSrc, 100, 500),
                WriteEntry.file("empty", new byte[0]),
                WriteEntry.symlink("d/link", "a"),
                WriteEntry.hardlink("hard", "d/a"),
                WriteEntry.fifo("fifo"));
        try (BatchFileWriter w = builder(root).build()) {
            assertEquals(TestSupport.expectNative(), w.isNative());
            List<WriteResult> rs = w.write(es);
            assertEquals(es.size(), rs.size());
            for (int i = 0; i < rs.size() - 1; i++) {
                assertTrue(rs.get(i).isOk(), rs.get(i) + ": " + rs.get(i).failure());
                assertEquals(w.engine(), rs.get(i).engine());
            }
            WriteResult fifo = rs.get(rs.size() - 1);
            if (w.isNative()) {
                assertTrue(fifo.isOk(), String.valueOf(fifo.failure()));
            } else {
                assertEquals(-Errno.EOPNOTSUPP, fifo.status());
            }
            WriteStats st = w.stats();
            assertTrue(st.files() >= es.size() - 1, st.toString());
            assertEquals(a.length + b.length + c.length + 500, st.bytes());
        }
        assertArrayEquals(a, Files.readAllBytes(root.resolve("d/a")));
        assertArrayEquals(b, Files.readAllBytes(root.resolve("d/e/b")));
        assertArrayEquals(c, Files.readAllBytes(root.resolve("c")));
        assertArrayEquals(java.util.Arrays.copyOfRange(sliceSrc, 100, 600), Files.readAllBytes(root.resolve("slice")));
        assertEquals(0, Files.size(root.resolve("empty")));
        assertEquals(0640, mode(root.resolve("d/a")));
        assertEquals(0600, mode(root.resolve("c")));
        assertEquals(0750, mode(root.resolve("d")));
        assertEquals(t1, Files.getLastModifiedTime(root.resolve("d/a")));
        assertEquals(t2, Files.getLastModifiedTime(root.resolve("d")), "directory times are applied at close");
        assertEquals(Path.of("a"), Files.readSymbolicLink(root.resolve("d/link")));
        assertEquals(Files.getAttribute(root.resolve("d/a"), "unix:ino"), Files.getAttribute(root.resolve("hard"), "unix:ino"));
        if (TestSupport.nativeRun()) {
            assertTrue((Integer) Files.getAttribute(root.resolve("fifo"), "unix:mode", NOFOLLOW) >> 12 == 1);
        }
        assertFalse(Files.exists(root.resolve(".bfo-journal")), "the journal goes away with the writer");
        // and the batch reader reads back the same
        List<Path> back = List.of(root.resolve("d/a"), root.resolve("d/e/b"), root.resolve("c"), root.resolve("d/link"));
        try (BatchFileReader r = BatchFileReader.builder().build()) {
            Map<Long, TestSupport.Result> got = TestSupport.readAll(r, back);
            assertArrayEquals(a, got.get(0L).bytes);
            assertArrayEquals(b, got.get(1L).bytes);
            assertArrayEquals(c, got.get(2L).bytes);
            assertArrayEquals(a, got.get(3L).bytes);
        }
    }

    @Test
    void existingTargetAndReplace() throws IOException {
        Path root = dir.resolve("r");
        byte[] one = {1}, two = {2, 2};
        try (BatchFileWriter w = builder(root).build()) {
            w.writeAll(List.of(WriteEntry.file("x", one)));
            WriteResult again = w.write(List.of(WriteEntry.file("x", two))).get(0);
            assertEquals(-Errno.EEXIST, again.status());
            assertInstanceOf(FileAlreadyExistsException.class, again.failure());
            assertThrows(FileAlreadyExistsException.class, again::orThrow);
        }
        assertArrayEquals(one, Files.readAllBytes(root.resolve("x")));
        try (BatchFileWriter w = builder(root).replace(true).build()) {
            w.writeAll(List.of(WriteEntry.file("x", two), WriteEntry.file("y", one)));
        }
        assertArrayEquals(two, Files.readAllBytes(root.resolve("x")));
        try (var s = Files.list(root)) {
            assertEquals(2, s.count(), "no temporaries left");
        }
    }

    @Test
    void badPathsAreRefused() throws IOException {
        Path root = dir.resolve("b");
        Path outside = Files.createDirectories(dir.resolve("outside"));
        Files.createDirectories(root);
        Files.createSymbolicLink(root.resolve("escape"), outside);
        List<String> bad = List.of("../x", "/abs", "", "a/../b", "./a", "a//b", ".bfo-journal/x", "a/", "..");
        List<WriteEntry> es = new ArrayList<>();
        for (String p : bad) {
            es.add(WriteEntry.file(p, new byte[] {1}));
        }
        es.add(WriteEntry.file("escape/f", new byte[] {1}));
        es.add(WriteEntry.file("fine", new byte[] {1}));
        try (BatchFileWriter w = builder(root).build()) {
            List<WriteResult> rs = w.write(es);
            for (int i = 0; i < bad.size(); i++) {
                WriteResult r = rs.get(i);
                assertEquals(-Errno.EINVAL, r.status(), bad.get(i));
                assertTrue(r.failure().getMessage().contains("escape the root or is invalid"), r.failure().getMessage());
            }
            assertEquals(-Errno.ELOOP, rs.get(bad.size()).status(), "a symlink in the destination path");
            assertTrue(rs.get(bad.size()).failure().getMessage().contains("symbolic link"));
            assertTrue(rs.get(bad.size() + 1).isOk());
        }
        try (var s = Files.list(outside)) {
            assertEquals(0, s.count(), "nothing written through the symlink");
        }
        assertFalse(Files.exists(dir.resolve("x")));
    }

    @ParameterizedTest
    @EnumSource(BatchFileWriter.Durability.class)
    void durabilityModes(BatchFileWriter.Durability d) throws IOException {
        Path root = dir.resolve("dur-" + d);
        List<WriteEntry> es = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            byte[] b = TestSupport.random(rnd, rnd.nextInt(9000));
            data.add(b);
            es.add(WriteEntry.file("d" + (i % 4) + "/f" + i, b));
        }
        try (BatchFileWriter w = builder(root).durability(d).build()) {
            w.writeAll(es);
            WriteStats st = w.stats();
            assertEquals(60, st.files());
            if (d == BatchFileWriter.Durability.NONE) {
                assertEquals(0, st.syncs());
            } else if (d != BatchFileWriter.Durability.CLOSE) {
                assertTrue(st.syncs() > 0, st.toString());
            }
            // CLOSE: the batch's durability point may come at close (closeSharesDurabilityPoints)
        }
        for (int i = 0; i < 60; i++) {
            assertArrayEquals(data.get(i), Files.readAllBytes(root.resolve("d" + (i % 4) + "/f" + i)));
        }
    }

    /** CLOSE: batches share durability points (fewer than one per batch while open), BATCH has one per batch. */
    @Test
    void closeSharesDurabilityPoints() throws IOException {
        int batches = 8;
        long[] syncs = new long[2];
        BatchFileWriter.Durability[] ds = {BatchFileWriter.Durability.BATCH, BatchFileWriter.Durability.CLOSE};
        for (int k = 0; k < 2; k++) {
            Path root = dir.resolve("share-" + ds[k]);
            try (BatchFileWriter w = builder(root).durability(ds[k]).build()) {
                for (int b = 0; b < batches; b++) {
                    w.writeAll(List.of(WriteEntry.file("d" + b + "/f", new byte[] {(byte) b})));
                }
                syncs[k] = w.stats().syncs();
            }
            for (int b = 0; b < batches; b++) {
                assertArrayEquals(new byte[] {(byte) b}, Files.readAllBytes(root.resolve("d" + b + "/f")));
            }
        }
        assertTrue(syncs[0] >= batches, "BATCH: " + syncs[0]);
        assertTrue(syncs[1] < batches, "CLOSE: " + syncs[1]);
    }

    /** The native engines chosen by name write what the plain path reads back, and report themselves. */
    @ParameterizedTest
    @EnumSource(value = BatchFileWriter.Engine.class, names = {"BATCHED", "URING"})
    void nativeEnginesByName(BatchFileWriter.Engine e) throws IOException {
        Assumptions.assumeTrue(BfoNative.available(), "libbfo is not available");
        Path root = dir.resolve("eng-" + e);
        List<WriteEntry> es = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            byte[] b = TestSupport.random(rnd, rnd.nextInt(20_000));
            data.add(b);
            es.add(WriteEntry.file("d" + (i % 3) + "/f" + i, b).mode(0600 | (i % 2) * 040));
        }
        try (BatchFileWriter w = builder(root).engine(e).build()) {
            for (WriteResult r : w.write(es)) {
                assertTrue(r.isOk(), r + ": " + r.failure());
            }
            assertEquals(e.name().toLowerCase(java.util.Locale.ROOT), w.engine());
            assertEquals(w.engine(), w.stats().engine());
        }
        for (int i = 0; i < 40; i++) {
            Path p = root.resolve("d" + (i % 3) + "/f" + i);
            assertArrayEquals(data.get(i), Files.readAllBytes(p));
            assertEquals(0600 | (i % 2) * 040, mode(p));
        }
    }

    /** createRoot(false): a missing root (or its parent) fails with nothing made; an existing one is written. */
    @Test
    void rootNotCreatedWhenAskedNot() throws IOException {
        Path parent = dir.resolve("gone");
        Path root = parent.resolve("root");
        assertThrows(java.nio.file.NoSuchFileException.class, () -> builder(root).createRoot(false).build());
        assertFalse(Files.exists(parent, NOFOLLOW), "the root's parent was made");
        Files.createDirectory(parent);
        assertThrows(java.nio.file.NoSuchFileException.class, () -> builder(root).createRoot(false).build());
        assertFalse(Files.exists(root, NOFOLLOW), "the root was made");
        Files.createDirectory(root);
        try (BatchFileWriter w = builder(root).createRoot(false).build()) {
            assertTrue(w.write(List.of(WriteEntry.file("a/f", new byte[] {1, 2}))).get(0).isOk());
        }
        assertArrayEquals(new byte[] {1, 2}, Files.readAllBytes(root.resolve("a/f")));
    }

    @Test
    void stopOnError() throws IOException {
        Path root = dir.resolve("s");
        try (BatchFileWriter w = builder(root).build()) {
            w.writeAll(List.of(WriteEntry.file("exists", new byte[] {1})));
        }
        try (BatchFileWriter w = builder(root).stopOnError(true).build()) {
            List<WriteEntry> es = new ArrayList<>();
            es.add(WriteEntry.file("first", new byte[] {1}));
            es.add(WriteEntry.file("exists", new byte[] {2}));
            for (int i = 0; i < 5; i++) {
                es.add(WriteEntry.file("later" + i, new byte[] {3}));
            }
            List<WriteResult> rs = w.write(es);
            assertTrue(rs.get(0).isOk());
            assertEquals(-Errno.EEXIST, rs.get(1).status());
            for (int i = 2; i < es.size(); i++) {
                assertEquals(-Errno.ECANCELED, rs.get(i).status(), es.get(i).toString());
                assertFalse(Files.exists(root.resolve("later" + (i - 2))));
            }
        }
    }

    @Test
    void streamsWriteLargeFilesInPieces() throws IOException {
        Path root = dir.resolve("st");
        byte[] big = TestSupport.random(rnd, (5 << 20) + 321);
        try (BatchFileWriter w = builder(root).pieceBytes(64 << 10).build()) {
            try (OutputStream out = w.openStream(WriteEntry.stream("big/file.bin").mode(0604))) {
                for (int off = 0; off < big.length; off += 10_000) {
                    out.write(big, off, Math.min(10_000, big.length - off));
                }
                assertFalse(Files.exists(root.resolve("big/file.bin")), "appears only when complete");
                // other writes go on meanwhile
                w.writeAll(List.of(WriteEntry.file("small", new byte[] {9})));
            }
            BatchFileWriter.PieceStream aborted = w.openStream("dropped");
            aborted.write(big, 0, 200_000);
            aborted.abort();
            try (OutputStream empty = w.openStream("empty")) {
                assertTrue(empty != null);
            }
            BatchFileWriter.PieceStream unclosed = w.openStream("unclosed");
            unclosed.write(big, 0, 100_000);
            w.close();
            assertThrows(IOException.class, () -> unclosed.write(1));
        }
        assertArrayEquals(big, Files.readAllBytes(root.resolve("big/file.bin")));
        assertEquals(0604, mode(root.resolve("big/file.bin")));
        assertFalse(Files.exists(root.resolve("dropped")));
        assertFalse(Files.exists(root.resolve("unclosed")));
        assertEquals(0, Files.size(root.resolve("empty")));
        try (var s = Files.list(root)) {
            assertEquals(List.of("big", "empty", "small"), s.map(p -> p.getFileName().toString()).sorted().toList());
        }
    }

    @Test
    void heapDataBeyondStagingIsSplitOrPieced() throws IOException {
        Path root = dir.resolve("stg");
        byte[] huge = TestSupport.random(rnd, (3 << 20) + 5);
        List<WriteEntry> es = new ArrayList<>();
        List<byte[]> data = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            byte[] b = TestSupport.random(rnd, 100_000);
            data.add(b);
            es.add(WriteEntry.file("many/f" + i, b));
        }
        es.add(WriteEntry.file("huge", huge));
        ByteBuffer heapBuf = ByteBuffer.wrap(huge, 7, (2 << 20));
        es.add(WriteEntry.file("hugebuf", heapBuf));
        try (BatchFileWriter w = builder(root).stagingBytes(1 << 20).build()) {
            w.writeAll(es);
            assertTrue(w.stats().batches() >= 4, w.stats().toString());
        }
        for (int i = 0; i < 40; i++) {
            assertArrayEquals(data.get(i), Files.readAllBytes(root.resolve("many/f" + i)));
        }
        assertArrayEquals(huge, Files.readAllBytes(root.resolve("huge")));
        assertArrayEquals(java.util.Arrays.copyOfRange(huge, 7, 7 + (2 << 20)), Files.readAllBytes(root.resolve("hugebuf")));
    }

    @Test
    void ownerAsRoot() throws IOException {
        Assumptions.assumeTrue(TestSupport.isRoot(), "setting owners needs root");
        Path root = dir.resolve("own");
        try (BatchFileWriter w = builder(root).build()) {
            w.writeAll(List.of(WriteEntry.file("o", new byte[] {1}).owner(12345, 23456).mode(0644)));
        }
        assertEquals(12345, Files.getAttribute(root.resolve("o"), "unix:uid"));
        assertEquals(23456, Files.getAttribute(root.resolve("o"), "unix:gid"));
        assertEquals(0644, mode(root.resolve("o")));
    }

    @Test
    void argumentChecksAndClose() throws IOException {
        assertThrows(NullPointerException.class, () -> BatchFileWriter.builder(null));
        assertThrows(IllegalArgumentException.class, () -> WriteEntry.file("a", new byte[1]).mode(010000));
        assertThrows(IllegalArgumentException.class, () -> WriteEntry.file("a", new byte[1]).owner(-1, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> WriteEntry.file("a", new byte[4], 3, 2));
        assertThrows(NullPointerException.class, () -> WriteEntry.file("a", (byte[]) null));
        assertThrows(IllegalArgumentException.class, () -> BatchFileWriter.builder(dir).threads(-1));
        BatchFileWriter w = builder(dir.resolve("c")).build();
        assertThrows(NullPointerException.class, () -> w.write(null));
        List<WriteEntry> withNull = new ArrayList<>();
        withNull.add(null);
        assertThrows(NullPointerException.class, () -> w.write(withNull));
        assertThrows(IllegalArgumentException.class, () -> w.openStream(WriteEntry.directory("d")));
        w.close();
        w.close();
        assertThrows(IllegalStateException.class, () -> w.write(List.of()));
        // a root that is a file
        Path file = TestSupport.write(dir.resolve("plain"), new byte[] {1});
        assertThrows(IOException.class, () -> builder(file).build());
        assertEquals(new BatchFileWriter.RecoverStats(0, 0, 0, 0), BatchFileWriter.recover(dir.resolve("c")));
    }

    /**
     * In a user namespace that maps root alone (unshare -r, a rootless container) owner 1000 cannot be
     * given: libbfo keeps the entry as cp -a does (the caller's, mode &amp; 0700) and says so in ownerStatus;
     * root's own owner is given with the whole mode. Run in a child JVM inside the namespace.
     */
    @Test
    void anOwnerTheNamespaceCannotGiveIsReported() throws Exception {
        Assumptions.assumeTrue(Boolean.parseBoolean(System.getProperty("bfo.native", "true")),
                "libbfo's behaviour: the Java engine fails such entries");
        Assumptions.assumeTrue(TestSupport.isRoot(), "the copy's owners are checked against root's: needs root");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/unshare")), "no unshare");
        Path root = dir.resolve("ns");
        String out = TestSupport.child(List.of("unshare", "-U", "-r"), List.of("-Dbfo.native=true"),
                System.getProperty("java.class.path"), ChildProbe.class.getName(), "owner", root.toString());
        Assumptions.assumeFalse(out.contains("unshare: unshare failed"), "no user namespace here: " + out);
        assertTrue(out.contains("--exit 0"), out);
        assertFalse(out.contains("engine=java"), "the child ran the Java engine: " + out);
        assertTrue(out.contains("mine status=0 owner=0 "), out);
        assertTrue(out.contains("theirs status=0 owner=-22 "), out);
        assertTrue(out.contains("big status=0 owner=-22 "), out);
        assertTrue(out.contains("d status=0 owner=-22 "), out);
        assertEquals(04755, mode(root.resolve("mine")));
        assertEquals(0700, mode(root.resolve("theirs")));
        assertEquals(0600, mode(root.resolve("big")));
        assertEquals(0700, mode(root.resolve("d")));
        for (String n : List.of("mine", "theirs", "big", "d")) {
            assertEquals(0, Files.getAttribute(root.resolve(n), "unix:uid", NOFOLLOW), n);
        }
        assertEquals(200_000, Files.size(root.resolve("big")));
    }
}

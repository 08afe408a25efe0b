/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Java writer and copier in a destination another user can write (issue
 * 16): no symbolic link followed, nothing made or changed outside the tree,
 * no file the engine did not make chmodded, chowned or made set-id.
 */
class HostileDestinationTest {
    static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    static final byte[] SECRET = "secret".getBytes();
    static final int NOBODY = 65534;
    @TempDir
    Path dir;
    Path victim, outside;
    Map<String, Object> victimWas;

    @BeforeEach
    void victims() throws IOException {
        outside = Files.createDirectories(dir.resolve("outside"));
        victim = TestSupport.write(outside.resolve("victim"), SECRET);
        Files.setAttribute(victim, "unix:mode", 0600);
        Files.setLastModifiedTime(victim, FileTime.from(Instant.parse("2001-01-01T00:00:00Z")));
        victimWas = state(victim);
    }

    static Map<String, Object> state(Path p) throws IOException {
        Map<String, Object> m = new TreeMap<>(Files.readAttributes(p, "unix:mode,uid,gid,ino,lastModifiedTime", NOFOLLOW));
        m.put("bytes", Arrays.toString(Files.readAllBytes(p)));
        return m;
    }

    void assertOutsideUntouched() throws IOException {
        assertEquals(victimWas, state(victim), "the victim behind the links");
        try (var s = Files.list(outside)) {
            assertEquals(List.of("victim"), s.map(p -> p.getFileName().toString()).toList(), "nothing made outside");
        }
    }

    static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW) & 07777;
    }

    static BatchFileWriter writer(Path root, boolean replace) throws IOException {
        return BatchFileWriter.builder(root).engine(BatchFileWriter.Engine.JAVA).replace(replace).build();
    }

    static BatchCopier copier(boolean replace) throws IOException {
        return BatchCopier.builder().writeEngine(BatchFileWriter.Engine.JAVA).archive(true).replace(replace).build();
    }

    /** A directory other users can write (mode 0777, not sticky; nobody's as root). */
    Path untrusted(String name) throws IOException {
        Path u = Files.createDirectories(dir.resolve(name));
        Files.setAttribute(u, "unix:mode", 0777);
        if (TestSupport.isRoot()) {
            Files.setAttribute(u, "unix:uid", NOBODY);
        }
        return u;
    }

    @Test
    void writerLinkAtTheDestinationOrInItsDirectories() throws IOException {
        for (Path root : List.of(Files.createDirectories(dir.resolve("w")), untrusted("u"))) {
            Files.createSymbolicLink(root.resolve("x"), victim);
            Files.createSymbolicLink(root.resolve("d"), outside);
            try (BatchFileWriter w = writer(root, false)) {
                List<WriteResult> rs = w.write(List.of(
                        WriteEntry.file("x", new byte[] {1}).mode(0666),
                        WriteEntry.directory("x").mode(0777),
                        WriteEntry.file("d/f", new byte[] {1}).mode(0666),
                        WriteEntry.directory("d/e"),
                        WriteEntry.symlink("d/l", "t"),
                        WriteEntry.hardlink("d/h", "x"),
                        WriteEntry.file("d/victim", new byte[] {1}).mode(0666)));
                assertEquals(-Errno.EEXIST, rs.get(0).status(), "without replace the link stays");
                assertEquals(-Errno.ELOOP, rs.get(1).status());
                for (int i = 2; i < rs.size(); i++) {
                    assertEquals(-Errno.ELOOP, rs.get(i).status(), rs.get(i).toString());
                }
            }
            assertOutsideUntouched();
            try (BatchFileWriter w = writer(root, true)) {
                w.writeAll(List.of(WriteEntry.file("x", new byte[] {2}).mode(0666)));
                assertEquals(-Errno.ELOOP, w.write(List.of(WriteEntry.file("d/victim", new byte[] {2}).mode(0666)))
                        .get(0).status());
            }
            assertFalse(Files.isSymbolicLink(root.resolve("x")), "the link itself is replaced");
            assertArrayEquals(new byte[] {2}, Files.readAllBytes(root.resolve("x")));
            assertOutsideUntouched();
            try (var s = Files.list(root)) {
                assertEquals(List.of("d", "x"), s.map(p -> p.getFileName().toString()).sorted().toList(),
                        "no private directory left");
            }
        }
    }

    @Test
    void writerNeverChangesAFileItDidNotMake() throws IOException {
        Path u = untrusted("u");
        Path old = TestSupport.write(u.resolve("x"), SECRET);
        Files.setAttribute(old, "unix:mode", 0600);
        Files.createLink(u.resolve("keep"), old);
        Path oldDir = Files.createDirectory(u.resolve("d"));
        Files.setAttribute(oldDir, "unix:mode", 0700);
        if (TestSupport.isRoot()) {
            Files.setAttribute(old, "unix:uid", NOBODY);
            Files.setAttribute(oldDir, "unix:uid", NOBODY);
        }
        Map<String, Object> was = state(old);
        Map<String, Object> dirWas = new TreeMap<>(Files.readAttributes(oldDir, "unix:mode,uid,gid,ino", NOFOLLOW));
        BatchFileWriter w = writer(u, false);
        WriteEntry x = WriteEntry.file("x", new byte[] {1}).mode(0666);
        if (TestSupport.isRoot()) {
            x = x.owner(0, 0);
        }
        WriteResult r = w.write(List.of(x, WriteEntry.directory("d").mode(0777))).get(0);
        assertEquals(-Errno.EEXIST, r.status());
        IOException closing = assertThrows(IOException.class, w::close, "metadata of a directory it did not make");
        assertInstanceOf(SafeTree.Refused.class, closing);
        assertEquals(was, state(old));
        assertEquals(dirWas, new TreeMap<>(Files.readAttributes(oldDir, "unix:mode,uid,gid,ino", NOFOLLOW)));
        try (BatchFileWriter w2 = writer(u, true)) {
            w2.writeAll(List.of(x));
        }
        assertEquals(was, state(u.resolve("keep")), "replaced by a new file: the old one is as it was");
        assertEquals(0666, mode(u.resolve("x")));
        assertOutsideUntouched();
    }

    @Test
    void setIdBitsOnlyWhereNobodyElseCanWrite() throws IOException {
        Path u = untrusted("u");
        try (BatchFileWriter w = writer(u, false)) {
            List<WriteResult> rs = w.write(List.of(WriteEntry.file("s", new byte[] {1}).mode(04755),
                    WriteEntry.file("plain", new byte[] {1}).mode(0755)));
            assertEquals(-Errno.EPERM, rs.get(0).status());
            assertInstanceOf(SafeTree.Refused.class, rs.get(0).failure());
            assertTrue(rs.get(0).failure().getMessage().contains("native engine"), rs.get(0).failure().getMessage());
            assertTrue(rs.get(1).isOk());
        }
        assertFalse(Files.exists(u.resolve("s"), NOFOLLOW), "a refused entry leaves nothing");
        assertEquals(0755, mode(u.resolve("plain")));
        // where only root and this user can write, the bits are applied
        Path t = dir.resolve("trusted");
        try (BatchFileWriter w = writer(t, false)) {
            w.writeAll(List.of(WriteEntry.file("s", new byte[] {1}).mode(04755), WriteEntry.directory("g").mode(02775)));
        }
        assertEquals(04755, mode(t.resolve("s")));
        assertEquals(02775, mode(t.resolve("g")));
        // the copier: the same file into both
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.setAttribute(TestSupport.write(src.resolve("s"), new byte[] {1}), "unix:mode", 04755);
        try (BatchCopier c = copier(false)) {
            CopyResult r = c.copy(List.of(src), u);
            assertEquals(1, r.failures().size(), r.failures().toString());
            assertInstanceOf(SafeTree.Refused.class, r.failures().get(0));
            assertFalse(Files.exists(u.resolve("src/s"), NOFOLLOW));
            c.copy(List.of(src), t).orThrow();
            assertEquals(04755, mode(t.resolve("src/s")));
        }
    }

    @Test
    void copierLinkAtTheDestinationOrInItsDirectories() throws IOException {
        Path src = Files.createDirectories(dir.resolve("src"));
        TestSupport.write(src.resolve("sub/f"), new byte[] {1});
        TestSupport.write(src.resolve("victim"), new byte[] {1});
        Files.setAttribute(src.resolve("victim"), "unix:mode", 0666);
        for (Path root : List.of(Files.createDirectories(dir.resolve("w")), untrusted("u"))) {
            Files.createDirectories(root.resolve("src"));
            Files.createSymbolicLink(root.resolve("src/sub"), outside);
            Files.createSymbolicLink(root.resolve("src/victim"), victim);
            try (BatchCopier c = copier(false)) {
                List<IOException> fs = real(c.copy(List.of(src), root));
                assertEquals(2, fs.size(), fs.toString());
                assertEquals(1, fs.stream().filter(e -> e.getMessage().contains("symbolic link")).count(), fs.toString());
                assertEquals(1, fs.stream().filter(e -> e instanceof FileAlreadyExistsException).count(), fs.toString());
            }
            assertOutsideUntouched();
            try (BatchCopier c = copier(true)) {
                List<IOException> fs = real(c.copy(List.of(src), root));
                assertEquals(1, fs.size(), "the link in the way of a directory: " + fs);
                assertTrue(fs.get(0).getMessage().contains("symbolic link"), fs.toString());
            }
            assertFalse(Files.isSymbolicLink(root.resolve("src/victim")), "the link itself is replaced");
            assertEquals(0666, mode(root.resolve("src/victim")));
            assertOutsideUntouched();
        }
    }

    /** The failures but those for the metadata of "src", which the test made (refused where others can write). */
    static List<IOException> real(CopyResult r) {
        List<IOException> out = new ArrayList<>();
        for (IOException e : r.failures()) {
            if (!(e instanceof SafeTree.Refused && e.getMessage().contains("did not make"))) {
                out.add(e);
            }
        }
        return out;
    }

    @Test
    void ownersAsRootInADirectoryOfAnotherUser() throws IOException {
        Assumptions.assumeTrue(TestSupport.isRoot(), "setting owners needs root");
        Path u = untrusted("u");
        try (BatchFileWriter w = writer(u, false)) {
            List<WriteResult> rs = w.write(List.of(WriteEntry.file("o", new byte[] {1}).owner(12345, 23456).mode(0640),
                    WriteEntry.symlink("l", "o").owner(12345, 23456)));
            assertTrue(rs.get(0).isOk(), String.valueOf(rs.get(0).failure()));
            assertEquals(-Errno.EPERM, rs.get(1).status(), "a link's owner is set by path only");
        }
        assertEquals(12345, Files.getAttribute(u.resolve("o"), "unix:uid", NOFOLLOW));
        assertEquals(23456, Files.getAttribute(u.resolve("o"), "unix:gid", NOFOLLOW));
        assertEquals(0640, mode(u.resolve("o")));
        assertFalse(Files.exists(u.resolve("l"), NOFOLLOW));
        // the copier keeps owners of files and directories; a link's only where it is safe (else left as made)
        Path src = Files.createDirectories(dir.resolve("src"));
        Path f = TestSupport.write(src.resolve("d/f"), new byte[] {1});
        Files.setAttribute(f, "unix:uid", 4321);
        Files.setAttribute(src.resolve("d"), "unix:uid", 4322);
        Files.createSymbolicLink(src.resolve("l"), Path.of("d/f"));
        Files.setAttribute(src.resolve("l"), "unix:uid", 4323, NOFOLLOW);
        try (BatchCopier c = copier(false)) {
            c.copy(List.of(src), u).orThrow();
            c.copy(List.of(src), dir.resolve("t0")).orThrow();
        }
        assertEquals(4321, Files.getAttribute(u.resolve("src/d/f"), "unix:uid", NOFOLLOW));
        assertEquals(4322, Files.getAttribute(u.resolve("src/d"), "unix:uid", NOFOLLOW));
        assertEquals(0, Files.getAttribute(u.resolve("src/l"), "unix:uid", NOFOLLOW));
        assertEquals(4323, Files.getAttribute(dir.resolve("t0/l"), "unix:uid", NOFOLLOW));
    }

    // ---- the race: another user swaps paths while the engine runs ----

    /** Runs the attacker as nobody in u; returns its process (stopped by creating stop). */
    Process attacker(Path u, Path stop, List<String> dirs, List<String> files) throws Exception {
        Assumptions.assumeTrue(TestSupport.isRoot(), "the other user is nobody: needs root");
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "no setpriv");
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp"));
        Files.setAttribute(dir, "unix:mode", 0755);
        Files.setAttribute(outside, "unix:mode", 0755);
        Path ready = cp.resolve("ready");
        List<String> cmd = new ArrayList<>(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx64m", "-cp",
                cp.resolve("classes").toString(), "io.github.bfo.SwapAttacker", u.toString(), victim.toString(),
                outside.toString(), ready.toString(), stop.toString(), String.join(",", dirs), String.join(",", files)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        for (int i = 0; i < 2400 && !Files.exists(ready); i++) {   // a JVM's start: 2 minutes at most
            assertTrue(p.isAlive(), () -> "the attacker died: " + new String(readQuietly(p)));
            Thread.sleep(50);
        }
        assertTrue(Files.exists(ready), "the attacker did not start");
        return p;
    }

    static byte[] readQuietly(Process p) {
        try {
            return p.getInputStream().readAllBytes();
        } catch (IOException e) {
            return new byte[0];
        }
    }

    static String stopAttacker(Process p, Path stop) throws Exception {
        Files.createFile(stop);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new String(p.getInputStream().readAllBytes());
    }

    /**
     * After the race: nothing outside changed; every file in u is the
     * attacker's (still its owner, mode and content) or one the engine made
     * (our content); no set-id bit anywhere.
     */
    void assertRaceLost(Path u, Set<String> ours) throws IOException {
        assertOutsideUntouched();
        int mine = 0, engine = 0;
        try (var s = Files.walk(u)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                int m = (Integer) Files.getAttribute(p, "unix:mode", NOFOLLOW);
                assertEquals(0, m & 06000, "set-id bits on " + p);
                if (!Files.isRegularFile(p, NOFOLLOW)) {
                    continue;
                }
                String content = new String(Files.readAllBytes(p));
                int uid = (Integer) Files.getAttribute(p, "unix:uid", NOFOLLOW);
                if (uid == NOBODY) {
                    assertEquals(0644, m & 07777, "the attacker's file was chmodded: " + p);
                    mine++;
                } else {
                    assertEquals(0, uid, "chowned: " + p);
                    assertTrue(ours.contains(content), "a root-owned file the engine did not write: " + p + " " + content);
                    engine++;
                }
            }
        }
        System.out.println("race: " + mine + " files of the attacker, " + engine + " of the engine in " + u);
    }

    @Test
    void writerRace() throws Exception {
        Path u = untrusted("u");
        Path stop = dir.resolve("stop");
        List<String> names = new ArrayList<>();
        for (int k = 0; k < 16; k++) {
            names.add("f" + k);
            names.add("sub/g" + k);
        }
        Files.createDirectories(u.resolve("sub"));
        Files.setAttribute(u.resolve("sub"), "unix:uid", NOBODY);
        Process p = attacker(u, stop, List.of("sub"), names);
        Set<String> ours = new HashSet<>();
        int ok = 0;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        try (BatchFileWriter w = writer(u, true)) {
            for (int round = 0; System.nanoTime() < end || round < 20; round++) {
                List<WriteEntry> es = new ArrayList<>();
                for (int k = 0; k < 16; k++) {
                    for (String n : List.of("f" + k, "sub/g" + k)) {
                        String c = "ours " + round + " " + n;
                        ours.add(c);
                        es.add(WriteEntry.file(n, c.getBytes()).owner(0, 0).mode(k % 2 == 0 ? 0755 : 0666)
                                .lastModifiedTime(FileTime.fromMillis(1000)));
                    }
                    es.add(WriteEntry.symlink("l" + k, victim.toString()).lastModifiedTime(FileTime.fromMillis(1000)));
                    es.add(WriteEntry.directory("dd" + round % 4 + "/e" + k).mode(0777).owner(0, 0));
                }
                for (WriteResult r : w.write(es)) {
                    ok += r.isOk() ? 1 : 0;
                }
            }
        } catch (IOException e) {
            // close may report directories the attacker replaced
        }
        String out = stopAttacker(p, stop);
        System.out.println("writer race: " + ok + " entries written; attacker: " + out.trim());
        assertTrue(ok > 0);
        assertRaceLost(u, ours);
    }

    @Test
    void copierRace() throws Exception {
        Path u = untrusted("u");
        Path stop = dir.resolve("stop");
        Path src = Files.createDirectories(dir.resolve("src"));
        List<String> names = new ArrayList<>();
        Set<String> ours = new HashSet<>();
        for (int k = 0; k < 16; k++) {
            for (String n : List.of("f" + k, "sub/g" + k)) {
                Path f = TestSupport.write(src.resolve(n), ("ours " + n).getBytes());
                Files.setAttribute(f, "unix:mode", k % 2 == 0 ? 0755 : 0666);
                ours.add("ours " + n);
                names.add("src/" + n);
            }
            Files.createSymbolicLink(src.resolve("l" + k), victim);
        }
        Files.setAttribute(src.resolve("sub"), "unix:mode", 0777);
        Process p = attacker(u, stop, List.of("src/sub", "src"), names);
        int failures = 0;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
        try (BatchCopier c = copier(true)) {
            for (int round = 0; System.nanoTime() < end || round < 20; round++) {
                failures += c.copy(List.of(src), u).failures().size();
            }
        }
        String out = stopAttacker(p, stop);
        System.out.println("copier race: " + failures + " failures; attacker: " + out.trim());
        assertRaceLost(u, ours);
    }

    @Test
    void copierRefusesAnExistingFileWithoutReplace() throws IOException {
        Path u = untrusted("u");
        Path src = Files.createDirectories(dir.resolve("src"));
        Files.setAttribute(TestSupport.write(src.resolve("x"), new byte[] {1}), "unix:mode", 0777);
        Path old = TestSupport.write(u.resolve("src/x"), SECRET);
        Files.setAttribute(old, "unix:mode", 0600);
        Map<String, Object> was = state(old);
        try (BatchCopier c = copier(false)) {
            CopyResult r = c.copy(List.of(src), u);
            assertInstanceOf(FileAlreadyExistsException.class, r.failures().get(0), r.failures().toString());
        }
        assertEquals(was, state(old));
    }
}

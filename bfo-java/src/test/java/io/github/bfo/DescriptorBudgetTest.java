/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The descriptor budget of the engines ({@link Descriptors}, and libbfo's through JNA): sizing from what the
 * limit leaves free; then child JVMs as uid 65534 (as root) under {@code ulimit -n} 1024 and 256 (soft and hard:
 * HotSpot raises a soft limit to the hard one itself) reading 5,200 files with the Java and the native engine,
 * each equal to {@link Files#readAllBytes}, and copying them with both copiers, the copy equal to the source in
 * what cp -a keeps; and a read whose only thread meets EMFILE for a descriptor the test holds: it waits for it.
 */
class DescriptorBudgetTest {
    @TempDir
    Path dir;

    @Test
    void sharesAQuarterOfWhatIsFree() throws IOException {
        assertEquals(10, Descriptors.share(64, 1, 40));
        assertEquals(8, Descriptors.share(8, 1, 1000));
        assertEquals(16, Descriptors.share(64, 16, 40));        // at least least
        assertEquals(4, Descriptors.share(4, 16, 0));           // never more than wanted
        assertEquals(1, Descriptors.share(8, 1, 0));
        long free = Descriptors.free();
        assertTrue(free > 0, "free descriptors: " + free);
        assertEquals(Descriptors.share(64, 1, free), Descriptors.share(64, 1));
        try (BatchFileReader r = BatchFileReader.builder().engine(BatchFileReader.Engine.JAVA).threads(8).build()) {
            assertTrue(r.describe().contains(" " + Descriptors.share(8, 1) + " threads"), r.describe());
        }
    }

    /** The tree: 26 directories of 200 files, 0 to 16 KiB, modes and mtimes of their own, links. */
    Path tree() throws IOException {
        Path src = dir.resolve("src");
        List<Path> files = TestSupport.tree(src, 5200, 26, 16384, 34);
        for (int i = 0; i < files.size(); i++) {
            Path p = files.get(i);
            Files.setAttribute(p, "unix:mode", i % 7 == 0 ? 0444 : i % 5 == 0 ? 0755 : 0644);
            Files.setLastModifiedTime(p, FileTime.from(Instant.ofEpochSecond(1_500_000_000L + i * 977L, i * 104_729L)));
        }
        for (int d = 0; d < 26; d++) {
            Files.createSymbolicLink(src.resolve("d" + d).resolve("link"), Path.of("f" + d));
            Files.setLastModifiedTime(src.resolve("d" + d), FileTime.from(Instant.ofEpochSecond(1_400_000_000L + d)));
        }
        ChildProbe.publicClassPath(dir.resolve("cp"));
        for (Path p = dir; p != null && p.getNameCount() > 1 && p.startsWith(System.getProperty("java.io.tmpdir"));
             p = p.getParent()) {
            if (!p.toString().equals(System.getProperty("java.io.tmpdir"))) {
                Files.setAttribute(p, "unix:mode", 0755);
            }
        }
        return src;
    }

    /** The probe in a child JVM at limit (soft and hard), as uid 65534 when root; its output. */
    String probe(int limit, String... args) throws Exception {
        List<String> prefix = new ArrayList<>();
        if (TestSupport.isRoot()) {
            Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/setpriv")), "no setpriv");
            prefix.addAll(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"));
        }
        prefix.addAll(List.of("bash", "-c", "ulimit -n " + limit + " && exec \"$@\"", "probe"));
        Path cp = dir.resolve("cp");
        return TestSupport.child(prefix, List.of("-Xmx256m"), cp.resolve("classes") + ":" + cp.resolve("jna.jar"),
                "io.github.bfo.NofileProbe", args);
    }

    static void expectOk(String out, int lines) {
        assertFalse(out.contains("FAIL"), out);
        assertTrue(out.contains("--exit 0"), out);
        assertEquals(lines, out.lines().filter(l -> l.startsWith("ok ")).count(), out);
    }

    @Test
    void childJvmsAtOrdinaryLimits() throws Exception {
        Path src = tree();
        for (int limit : new int[] {1024, 256}) {
            for (String engine : new String[] {"java", "auto"}) {
                expectOk(probe(limit, "read", engine, src.toString()), 1);
                Path dst = dir.resolve("dst-" + limit + "-" + engine);
                Files.createDirectories(dst);
                if (TestSupport.isRoot()) {
                    Files.setAttribute(dst, "unix:uid", 65534);
                }
                expectOk(probe(limit, "copy", engine, src.toString(), dst.toString()), 1);
            }
        }
    }

    /** The Java writer's directory cache shrinks when its opens meet EMFILE (before: "Too many open files"). */
    @Test
    void copierClosesCachedDirectoriesWhenShort() throws Exception {
        Path src = tree();
        Path dst = dir.resolve("dst-tight");
        Files.createDirectories(dst);
        if (TestSupport.isRoot()) {
            Files.setAttribute(dst, "unix:uid", 65534);
        }
        // 40 free: the tree's 27 directories (two descriptors each) do not fit, and the JVM keeps room of its own
        expectOk(probe(256, "copy-tight", "40", src.toString(), dst.toString()), 1);
    }

    @Test
    void anOpenWaitsForTheEnginesOwnDescriptor() throws Exception {
        Path src = tree();
        expectOk(probe(256, "wait", src.toString()), 3);
    }
}

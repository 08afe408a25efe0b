/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Shared helpers of the tests. */
final class TestSupport {
    private TestSupport() {
    }

    /** True in the surefire execution that must find libbfo (linux-x86-64 / linux-aarch64 builds). */
    static boolean expectNative() {
        return Boolean.getBoolean("bfo.test.expectNative");
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** The engine name the stats must report for an AUTO reader in this execution. */
    static boolean nativeRun() {
        return Bfo.isNativeAvailable();
    }

    static byte[] random(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    static Path write(Path p, byte[] b) throws IOException {
        Files.createDirectories(p.getParent());
        Files.write(p, b);
        return p;
    }

    /** A sparse file: data, a hole, data, and a hole at the end. */
    static Path sparse(Path p, Random r) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
            f.write(random(r, 5000));
            f.seek(3 << 20);
            f.write(random(r, 7000));
            f.setLength((5 << 20) + 123);
        }
        return p;
    }

    static void mkfifo(Path p) throws IOException, InterruptedException {
        Process pr = new ProcessBuilder("mkfifo", p.toString()).inheritIO().start();
        assertTrue(pr.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, pr.exitValue(), "mkfifo " + p);
    }

    /** A path whose name is not valid UTF-8 (bytes 0xff 0xfe), made through a URI. */
    static Path nonUtf8(Path dir, String suffix) {
        return Path.of(URI.create(dir.toAbsolutePath().toUri().toString() + "bad%FF%FE" + suffix));
    }

    /**
     * Reads a whole batch, assembling pieces by index. Checks each index's
     * pieces come in order and end with one last entry.
     */
    static Map<Long, Result> readAll(BatchFileReader r, List<Path> paths) {
        return readAll(r.read(paths), paths);
    }

    /** {@link #readAll(BatchFileReader, List)} of a batch over paths started otherwise (closed here). */
    static Map<Long, Result> readAll(FileBatch batch, List<Path> paths) {
        Map<Long, Result> out = new HashMap<>();
        Map<Long, java.io.ByteArrayOutputStream> partial = new HashMap<>();
        try (FileBatch b = batch) {
            for (FileData f : b) {
                Result prev = out.get(f.index());
                assertTrue(prev == null, "index delivered twice: " + f);
                assertEquals(paths.get((int) f.index()), f.path(), "path of index " + f.index());
                java.io.ByteArrayOutputStream acc = partial.computeIfAbsent(f.index(),
                        k -> new java.io.ByteArrayOutputStream());
                if (f.isOk()) {
                    assertEquals(acc.size(), f.offset(), "pieces in order: " + f);
                    acc.write(f.bytes(), 0, (int) f.length());
                }
                if (f.isLast()) {
                    partial.remove(f.index());
                    out.put(f.index(), new Result(f, f.isOk() ? acc.toByteArray() : null));
                }
            }
            assertTrue(partial.isEmpty(), "files without a last entry: " + partial.keySet());
        }
        return out;
    }

    /** One file's outcome. */
    static final class Result {
        final FileData last;
        final byte[] bytes;

        Result(FileData last, byte[] bytes) {
            this.last = last;
            this.bytes = bytes;
        }
    }

    /** VmRSS of this process in bytes. */
    static long rss() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    /** Files of a simple tree: n files of 0..maxSize bytes in d directories. */
    static List<Path> tree(Path root, int n, int dirs, int maxSize, long seed) throws IOException {
        Random r = new Random(seed);
        List<Path> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Path p = root.resolve("d" + (i % dirs)).resolve("f" + i);
            write(p, random(r, r.nextInt(maxSize + 1)));
            out.add(p);
        }
        return out;
    }

    /** Runs a test-side main class in a child JVM; returns its stdout (stderr appended after a marker). */
    static String child(List<String> prefix, List<String> jvmArgs, String classPath, String main, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(prefix);
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(classPath);
        cmd.add(main);
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        byte[] out = p.getInputStream().readAllBytes();
        byte[] err = p.getErrorStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM timed out");
        return new String(out) + "\n--stderr--\n" + new String(err) + "\n--exit " + p.exitValue();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A main class {@link DescriptorBudgetTest} runs in child JVMs under a lowered descriptor limit; each mode prints
 * {@code ok ...} or {@code FAIL ...} lines, having compared what the engine did with the plain Java path:
 * <ul>
 * <li>{@code read ENGINE DIR}: every regular file below DIR through a reader (java or auto), each equal to
 * {@link Files#readAllBytes};</li>
 * <li>{@code copy ENGINE SRC DST}: SRC copied into DST with {@code archive}, the copy described like SRC (type,
 * mode, bytes, mtime, link targets: what cp -a keeps, {@link CopierTest#describe});</li>
 * <li>{@code copy-tight FREE SRC DST}: the Java copier with FREE descriptors left free, fewer than its
 * directory cache holds at least: its opens meet EMFILE, it closes cached directories and goes on; the copy
 * equal to the source;</li>
 * <li>{@code wait DIR}: the read engine's one thread meets EMFILE at its first open, this thread holding a
 * counted descriptor and the table full; it waits for that descriptor (without the wait, the first file fails
 * with EMFILE), and every file is read.</li>
 * </ul>
 */
public final class NofileProbe {
    public static void main(String[] args) throws Exception {
        System.out.println("limit free=" + Descriptors.free());
        switch (args[0]) {
            case "read":
                read(engine(args[1]), Path.of(args[2]), 0);
                break;
            case "copy":
                copy(args[1], Path.of(args[2]), Path.of(args[3]));
                break;
            case "wait":
                waitForOwn(Path.of(args[1]));
                break;
            case "copy-tight":
                copyTight(Integer.parseInt(args[1]), Path.of(args[2]), Path.of(args[3]));
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }

    static BatchFileReader.Engine engine(String e) {
        return e.equals("java") ? BatchFileReader.Engine.JAVA : BatchFileReader.Engine.AUTO;
    }

    static List<Path> files(Path dir) throws IOException {
        try (var s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
        }
    }

    /** Reads the files below dir with threads (0: the default); prints ok or FAIL lines. */
    static void read(BatchFileReader.Engine e, Path dir, int threads) throws IOException {
        List<Path> paths = files(dir);
        BatchFileReader.Builder b = BatchFileReader.builder().engine(e);
        if (threads > 0) {
            b.threads(threads);
        }
        Map<Long, byte[]> got;
        String engine;
        try (BatchFileReader r = b.build()) {
            engine = r.engine();
            got = readAll(r, paths);
        }
        check(paths, got, engine);
    }

    private static final Map<Long, String> failed = new java.util.concurrent.ConcurrentHashMap<>();

    /** A whole batch by index (pieces joined in order); failures kept in failed, not in the map. */
    static Map<Long, byte[]> readAll(BatchFileReader r, List<Path> paths) throws IOException {
        Map<Long, byte[]> out = new java.util.HashMap<>();
        Map<Long, java.io.ByteArrayOutputStream> partial = new java.util.HashMap<>();
        try (FileBatch b = r.read(paths)) {
            for (FileData f : b) {
                java.io.ByteArrayOutputStream acc = partial.computeIfAbsent(f.index(),
                        k -> new java.io.ByteArrayOutputStream());
                if (f.isOk() && f.offset() == acc.size()) {
                    acc.write(f.bytes(), 0, (int) f.length());
                } else {
                    failed.put(f.index(), f.isOk() ? "pieces out of order" : String.valueOf(f.failure()));
                }
                if (f.isLast()) {
                    partial.remove(f.index());
                    if (!failed.containsKey(f.index())) {
                        out.put(f.index(), acc.toByteArray());
                    }
                }
            }
        }
        return out;
    }

    static void check(List<Path> paths, Map<Long, byte[]> got, String engine) throws IOException {
        int bad = 0;
        for (int i = 0; i < paths.size(); i++) {
            byte[] r = got.get((long) i);
            byte[] plain = Files.readAllBytes(paths.get(i));
            if (r == null || !Arrays.equals(plain, r)) {
                if (bad++ < 5) {
                    System.out.println("FAIL " + paths.get(i) + ": " + (r == null ? failed.get((long) i)
                            : "bytes differ"));
                }
            }
        }
        System.out.println(bad == 0 ? "ok read " + paths.size() + " files, engine " + engine
                : "FAIL " + bad + " of " + paths.size() + " files, engine " + engine);
    }

    static void copy(String engine, Path src, Path dst) throws IOException {
        copy(engine, src, dst, true);
    }

    static void copy(String engine, Path src, Path dst, boolean say) throws IOException {
        BatchCopier.Builder b = BatchCopier.builder().archive(true);
        if (engine.equals("java")) {
            b.readEngine(BatchFileReader.Engine.JAVA);
        }
        CopyResult r;
        try (BatchCopier c = b.build()) {
            r = c.copy(List.of(src), dst);
        }
        if (!say) {
            return;
        }
        if (!r.failures().isEmpty()) {
            System.out.println("FAIL " + r.failures().size() + " failures, the first: " + r.failures().get(0));
        }
        Map<String, String> want = CopierTest.describe(src, true), have = CopierTest.describe(dst.resolve(src.getFileName()), true);
        System.out.println(want.equals(have) ? "ok copy " + want.size() + " entries, engine " + r.stats().readEngine()
                : "FAIL the copy differs from the source: " + diff(want, have));
    }

    /**
     * The Java copier with only free descriptors left: fewer than the writer's directory cache holds at least
     * (two a directory), so its opens meet EMFILE and it closes cached directories and goes on.
     */
    static void copyTight(int free, Path src, Path dst) throws IOException {
        Path warm = dst.resolve("warm");
        Files.createDirectories(warm.resolve("in/a"));
        Files.createDirectories(warm.resolve("out"));
        Files.write(warm.resolve("in/a/f"), new byte[10]);
        copy("java", warm.resolve("in"), warm.resolve("out"), false);      // the classes, loaded now
        CopierTest.describe(warm, true);
        loadErrorClasses();
        SafeTree.SHEDS.set(0);
        Deque<FileChannel> fill = new ArrayDeque<>();
        try {
            for (;;) {
                fill.push(FileChannel.open(Path.of("/dev/null")));
            }
        } catch (IOException e) {
            if (!Descriptors.exhausted(e)) {
                throw e;
            }
        }
        for (int i = 0; i < free && !fill.isEmpty(); i++) {
            fill.pop().close();
        }
        CopyResult r;
        try (BatchCopier c = BatchCopier.builder().archive(true).readEngine(BatchFileReader.Engine.JAVA).build()) {
            r = c.copy(List.of(src), dst);
        } finally {
            while (!fill.isEmpty()) {
                fill.pop().close();
            }
        }
        if (!r.failures().isEmpty()) {
            System.out.println("FAIL " + r.failures().size() + " failures with " + free + " descriptors free, the first: "
                    + r.failures().get(0));
        }
        Map<String, String> want = CopierTest.describe(src, true), have = CopierTest.describe(dst.resolve(src.getFileName()), true);
        long sheds = SafeTree.SHEDS.get();
        System.out.println(!want.equals(have) ? "FAIL the copy differs from the source: " + diff(want, have)
                : sheds == 0 ? "FAIL the tree never met EMFILE with " + free + " descriptors free: nothing was tested"
                : "ok copy with " + free + " descriptors free, " + want.size() + " entries, cached directories closed "
                + sheds + " times");
    }

    /** The classes of the EMFILE path, loaded while a class file can still be opened. */
    static void loadErrorClasses() {
        java.nio.file.FileSystemException e = new java.nio.file.FileSystemException("x", null, "Too many open files");
        if (!Descriptors.exhausted(e) || Errno.forCopy(-Errno.EMFILE, "x") == null || Errno.text(-Errno.EMFILE) == null) {
            throw new AssertionError("EMFILE not recognized");
        }
    }

    static String diff(Map<String, String> a, Map<String, String> b) {
        for (Map.Entry<String, String> e : a.entrySet()) {
            if (!e.getValue().equals(b.get(e.getKey()))) {
                return e.getKey() + ": " + e.getValue() + " vs " + b.get(e.getKey());
            }
        }
        return "entries only in the copy: " + b.size() + " vs " + a.size();
    }

    static void waitForOwn(Path dir) throws Exception {
        List<Path> paths = files(dir);
        // every class the run needs, loaded now: nothing can be loaded once the table is full
        read(BatchFileReader.Engine.JAVA, dir, 1);
        loadErrorClasses();
        CountDownLatch waiting = new CountDownLatch(1);
        Path devNull = Path.of("/dev/null");
        Descriptors.Held<FileChannel> mine = Descriptors.open(() -> FileChannel.open(devNull));
        Deque<FileChannel> fill = new ArrayDeque<>();
        try {
            for (;;) {
                fill.push(FileChannel.open(devNull));
            }
        } catch (IOException e) {
            if (!Descriptors.exhausted(e)) {
                throw e;
            }
        }
        Descriptors.waitHook = waiting::countDown;
        Map<Long, byte[]>[] got = new Map[1];
        String[] engine = new String[1];
        Throwable[] thrown = new Throwable[1];
        Thread t = new Thread(() -> {
            try (BatchFileReader r = BatchFileReader.builder().engine(BatchFileReader.Engine.JAVA).threads(1).build()) {
                engine[0] = r.engine();
                got[0] = readAll(r, paths);
            } catch (Throwable x) {
                thrown[0] = x;
            }
            waiting.countDown();
        });
        t.start();
        boolean waited = waiting.await(300, TimeUnit.SECONDS) && Descriptors.waitHook == null;
        // the table emptied first, then the counted descriptor back. The reader wakes only for a counted close,
        // so it still waits here; in the other order the one descriptor given back could go to the JVM itself
        // (a class, a compiler thread) before the reader's retry, which then met EMFILE with nothing counted held
        // and failed, as it should (the limit is then the application's): one CI run in a few
        while (!fill.isEmpty()) {
            fill.pop().close();
        }
        mine.close();
        t.join();
        System.out.println(waited ? "ok an open waited for the descriptor held" : "FAIL no open waited");
        if (thrown[0] != null) {
            System.out.println("FAIL " + thrown[0]);
            return;
        }
        check(paths, got[0], engine[0]);
    }

    static List<String> lines(String out) {
        return new ArrayList<>(List.of(out.split("\n")));
    }
}

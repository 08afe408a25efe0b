/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

/**
 * A main class the tests run in child JVMs (another user, other system
 * properties, another class path):
 * <ul>
 * <li>{@code read PATH...}: one line per entry, {@code status=N PATH EXCEPTION};</li>
 * <li>{@code tree ROOT...}: readTree over the roots, one line per entry, {@code status=N PATH EXCEPTION SAME},
 *     SAME telling whether the bytes (whole files only) are those of {@code Files.readAllBytes};</li>
 * <li>{@code load}: the native state and the engine a reader gets;</li>
 * <li>{@code owner ROOT}: writes under ROOT a file of root's and, owned by uid/gid 1000, a set-id file, one
 *     in pieces and a directory, one line each, {@code PATH status=N owner=N engine=E} (run in a user
 *     namespace that maps root alone, 1000 cannot be given).</li>
 * </ul>
 */
public final class ChildProbe {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("load")) {
            System.out.println("native=" + Bfo.isNativeAvailable());
            System.out.println("reason=" + Bfo.nativeUnavailableReason().orElse(""));
            for (int i = 0; i < 3; i++) {
                try (BatchFileReader r = BatchFileReader.builder().build()) {
                    System.out.println("engine=" + r.engine());
                }
            }
            return;
        }
        if (args[0].equals("owner")) {
            owner(Path.of(args[1]));
            return;
        }
        List<java.nio.file.Path> paths = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            paths.add(Path.of(args[i]));
        }
        if (args[0].equals("tree")) {
            tree(paths);
            return;
        }
        try (BatchFileReader r = BatchFileReader.builder().build(); FileBatch b = r.read(paths)) {
            for (FileData f : b) {
                System.out.println("status=" + f.status() + " " + f.path() + " "
                        + (f.failure() == null ? "" : f.failure().getClass().getName()));
            }
        }
    }

    private static void owner(Path root) throws IOException {
        byte[] big = new byte[200_000];     // above pieceBytes: written in pieces
        java.util.Arrays.fill(big, (byte) 'b');
        try (BatchFileWriter w = BatchFileWriter.builder(root).pieceBytes(64 << 10).build()) {
            List<WriteResult> rs = w.write(List.of(
                    WriteEntry.file("mine", new byte[] {'m'}).mode(04755).owner(0, 0),
                    WriteEntry.file("theirs", new byte[] {'t'}).mode(04755).owner(1000, 1000),
                    WriteEntry.file("big", big).mode(0644).owner(1000, 1000),
                    WriteEntry.directory("d").mode(02775).owner(1000, 1000)));
            for (WriteResult r : rs) {
                System.out.println(r.path() + " status=" + r.status() + " owner=" + r.ownerStatus()
                        + " engine=" + r.engine());
            }
        }
    }

    private static void tree(List<Path> roots) throws IOException {
        // a small window: the walk's buffers go in over several submissions
        try (BatchFileReader r = BatchFileReader.builder().windowFiles(128).build();
             FileBatch b = r.readTree(roots.toArray(new Path[0]))) {
            for (FileData f : b) {
                String same = !f.isOk() ? "-" : java.util.Arrays.equals(f.bytes(), Files.readAllBytes(f.path()))
                        ? "same" : "differs";
                System.out.println("status=" + f.status() + " " + f.path() + " "
                        + (f.failure() == null ? "" : f.failure().getClass().getName()) + " " + same);
            }
        }
    }

    /**
     * A class path another user can read: the classes directories (world
     * readable under the build tree) and a copy of the JNA jar in dir,
     * which is made world-writable for JNA's own temporary files.
     */
    static Path publicClassPath(Path dir) throws IOException {
        Files.createDirectories(dir);
        for (Path p = dir; p != null && p.getNameCount() > 1; p = p.getParent()) {
            if (p.startsWith(System.getProperty("java.io.tmpdir")) && !p.toString().equals(System.getProperty("java.io.tmpdir"))) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path classes = dir.resolve("classes");
        Files.createDirectories(classes);
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(e);
            if (p.getFileName().toString().startsWith("jna-") && e.endsWith(".jar")) {
                Files.copy(p, dir.resolve("jna.jar"), StandardCopyOption.REPLACE_EXISTING);
            } else if (Files.isDirectory(p) && (p.endsWith("classes") || p.endsWith("test-classes"))) {
                copyTree(p, classes);
            }
        }
        return dir;
    }

    static void copyTree(Path from, Path to) throws IOException {
        try (var s = Files.walk(from)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path d = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(d);
                } else {
                    Files.copy(p, d, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }
}

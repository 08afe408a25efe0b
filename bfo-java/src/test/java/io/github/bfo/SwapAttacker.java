/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The other user of the security tests, run in a child JVM as nobody in a
 * directory U it owns: until STOP exists it keeps swapping what the engine
 * works on for its own files and for links to VICTIM and OUTSIDE, and it
 * puts its own directory, full of such links, in place of every private
 * directory of the engine it sees.
 *
 * <p>Arguments: U VICTIM OUTSIDE READY STOP DIRS FILES, where DIRS and FILES
 * are comma-separated paths relative to U (DIRS: directories it swaps for a
 * link to OUTSIDE; FILES: names it swaps for a link to VICTIM or its own file).
 */
public final class SwapAttacker {
    static final byte[] MINE = "attacker".getBytes();

    public static void main(String[] args) throws Exception {
        Path u = Path.of(args[0]), victim = Path.of(args[1]), outside = Path.of(args[2]);
        Path ready = Path.of(args[3]), stop = Path.of(args[4]);
        String[] dirs = args[5].split(","), files = args[6].split(",");
        Files.createFile(ready);
        long i = 0;
        while (!Files.exists(stop)) {
            i++;
            stages(u, victim, i);
            for (String d : dirs) {
                swapDir(u.resolve(d), outside, i);
            }
            for (String f : files) {
                swapFile(u.resolve(f), victim, i);
            }
        }
        System.out.println("rounds=" + i);
    }

    private static void quietly(IoRun r) {
        try {
            r.run();
        } catch (IOException | RuntimeException ignored) {
            // racing the engine: most steps fail now and then
        }
    }

    interface IoRun {
        void run() throws IOException;
    }

    /** Every private directory of the engine: moved aside, its name taken by a directory of links and own files. */
    private static void stages(Path u, Path victim, long i) {
        quietly(() -> {
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(u, ".bfo-stage.*")) {
                for (Path s : ds) {
                    if (Files.isSymbolicLink(s) || Files.getAttribute(s, "unix:uid", LinkOption.NOFOLLOW_LINKS).equals(65534)) {
                        continue;
                    }
                    quietly(() -> {
                        Files.move(s, u.resolve(".aside-" + i + "-" + s.getFileName()));
                        Files.createDirectory(s, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
                        for (int k = 0; k < 64; k++) {
                            Path t = s.resolve(".t" + Long.toHexString(k));
                            if (k % 2 == 0) {
                                Files.createSymbolicLink(t, victim);
                            } else {
                                Files.write(t, MINE);
                                Files.setAttribute(t, "unix:mode", 0644);
                            }
                        }
                    });
                }
            }
        });
    }

    private static void swapDir(Path d, Path outside, long i) {
        Path aside = d.resolveSibling(d.getFileName() + ".aside");
        if (i % 2 == 1) {
            quietly(() -> Files.move(d, aside, StandardCopyOption.REPLACE_EXISTING));
            quietly(() -> Files.createSymbolicLink(d, outside));
        } else {
            quietly(() -> {
                if (Files.isSymbolicLink(d)) {
                    Files.delete(d);
                }
            });
            quietly(() -> Files.move(aside, d));
        }
    }

    private static void swapFile(Path f, Path victim, long i) {
        if (i % 2 == 1) {
            Path own = f.resolveSibling(".own-" + f.getFileName());
            quietly(() -> {
                Files.write(own, MINE);
                Files.setAttribute(own, "unix:mode", 0644);
                Files.move(own, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            });
        } else {
            Path link = f.resolveSibling(".lnk-" + f.getFileName());
            quietly(() -> {
                Files.deleteIfExists(link);
                Files.createSymbolicLink(link, victim);
                Files.move(link, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            });
        }
    }
}

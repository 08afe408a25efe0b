/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.BooleanSupplier;

/**
 * The portable pure-Java copier: a walk of each source (symbolic links not
 * followed) with {@link Files#copy}; directories' metadata applied last,
 * deepest first. No FIFOs, device nodes or xattrs (reported as failures).
 */
final class JavaCopier {
    private static final boolean UNIX = FileSystems.getDefault().supportedFileAttributeViews().contains("unix");
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;
    private static final int UMASK = NativeWriter.defaultMode(WriteEntry.Type.DIRECTORY) ^ 0777;
    private static final boolean ROOT = "root".equals(System.getProperty("user.name"));

    private final boolean archive, replace;
    private final BatchFileWriter.Durability durability;

    JavaCopier(BatchCopier.Builder b) {
        this.archive = b.archive;
        this.replace = b.replace;
        this.durability = b.durability;
    }

    private static final class Run {
        final List<IOException> failures = new ArrayList<>();
        final Deque<Path[]> dirs = new ArrayDeque<>();    // {src, dst}, in pre-order
        final Map<Object, Path> links = new HashMap<>();  // fileKey -> first copy
        final List<Path> written = new ArrayList<>();
        long files, others, bytes, batches;
        final long t0 = System.nanoTime();
        long lastProgress;
        CopyListener listener;
        BooleanSupplier cancelled;

        CopyStats stats() {
            return new CopyStats(files, others, bytes, failures.size(), batches, Duration.ofNanos(System.nanoTime() - t0),
                    "java", "java");
        }
    }

    CopyResult copy(List<Path> sources, Path target, CopyListener listener, BooleanSupplier cancelled)
            throws IOException {
        boolean dstIsDir = Files.isDirectory(target);
        if (sources.size() > 1 && !dstIsDir) {
            throw new NotDirectoryException(target.toString());
        }
        Run run = new Run();
        run.listener = listener;
        run.cancelled = cancelled;
        for (Path src : sources) {
            if (cancelled.getAsBoolean()) {
                break;
            }
            Path dst = dstIsDir ? target.resolve(src.getFileName() == null ? src : src.getFileName()) : target;
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(src, BasicFileAttributes.class, NOFOLLOW);
            } catch (IOException e) {
                fail(run, src, e);
                continue;
            }
            if (a.isDirectory()) {
                walk(run, src, dst);
            } else {
                one(run, src, dst, a);
            }
        }
        if (cancelled.getAsBoolean()) {
            throw new CancellationException("copy cancelled (" + run.files + " files copied)");
        }
        // directories: metadata deepest first (their times change while files are written in them)
        List<Path[]> ds = new ArrayList<>(run.dirs);
        for (int i = ds.size() - 1; i >= 0; i--) {
            try {
                dirMeta(ds.get(i)[0], ds.get(i)[1]);
            } catch (IOException e) {
                fail(run, ds.get(i)[1], e);
            }
        }
        if (durability != BatchFileWriter.Durability.NONE) {
            for (Path p : run.written) {
                force(p);
            }
            for (Path[] d : ds) {
                force(d[1]);
            }
        }
        run.batches = 1;
        CopyStats st = run.stats();
        if (listener != null) {
            listener.progress(st);
        }
        return new CopyResult(st, run.failures);
    }

    private void walk(Run run, Path src, Path dst) throws IOException {
        Files.walkFileTree(src, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                if (run.cancelled.getAsBoolean()) {
                    return FileVisitResult.TERMINATE;
                }
                Path d = dst.resolve(src.relativize(dir).toString());
                try {
                    if (Files.isSymbolicLink(d)) {
                        throw new FileAlreadyExistsException(d.toString(), null, "a symbolic link is in the way");
                    }
                    if (!Files.isDirectory(d, NOFOLLOW)) {
                        Files.createDirectory(d);
                    }
                    run.dirs.add(new Path[] {dir, d});
                    run.others++;
                    return FileVisitResult.CONTINUE;
                } catch (IOException e) {
                    fail(run, d, e);
                    return FileVisitResult.SKIP_SUBTREE;
                }
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                if (run.cancelled.getAsBoolean()) {
                    return FileVisitResult.TERMINATE;
                }
                one(run, file, dst.resolve(src.relativize(file).toString()), attrs);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
                fail(run, file, e);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private void one(Run run, Path src, Path dst, BasicFileAttributes a) {
        try {
            if (!a.isRegularFile() && !a.isSymbolicLink()) {
                fail(run, src, Errno.forCopy(-Errno.EOPNOTSUPP, src.toString()));
                return;
            }
            if (archive && a.isRegularFile() && a.fileKey() != null && UNIX
                    && ((Integer) Files.getAttribute(src, "unix:nlink", NOFOLLOW)) > 1) {
                Path first = run.links.get(a.fileKey());
                if (first != null) {
                    if (replace) {
                        Files.deleteIfExists(dst);
                    }
                    Files.createLink(dst, first);
                    run.others++;
                    return;
                }
                run.links.put(a.fileKey(), dst);
            }
            List<java.nio.file.CopyOption> opts = new ArrayList<>();
            opts.add(NOFOLLOW);
            if (replace) {
                opts.add(StandardCopyOption.REPLACE_EXISTING);
            }
            if (archive) {
                opts.add(StandardCopyOption.COPY_ATTRIBUTES);
            }
            Files.copy(src, dst, opts.toArray(new java.nio.file.CopyOption[0]));
            if (a.isSymbolicLink()) {
                run.others++;
            } else {
                if (archive && ROOT && UNIX) {
                    Files.setAttribute(dst, "unix:uid", Files.getAttribute(src, "unix:uid", NOFOLLOW), NOFOLLOW);
                    Files.setAttribute(dst, "unix:gid", Files.getAttribute(src, "unix:gid", NOFOLLOW), NOFOLLOW);
                    Files.setAttribute(dst, "unix:mode", (Integer) Files.getAttribute(src, "unix:mode") & 07777);
                    Files.getFileAttributeView(dst, BasicFileAttributeView.class)
                            .setTimes(a.lastModifiedTime(), a.lastAccessTime(), null);
                } else if (!archive && UNIX) {
                    int mode = (Integer) Files.getAttribute(src, "unix:mode") & 0777 & ~UMASK;
                    Files.setAttribute(dst, "unix:mode", mode);
                }
                run.files++;
                run.bytes += a.size();
                run.written.add(dst);
            }
            progress(run);
        } catch (IOException e) {
            fail(run, e instanceof FileAlreadyExistsException ? dst : src, e);
        }
    }

    private void dirMeta(Path src, Path dst) throws IOException {
        if (!UNIX) {
            return;
        }
        int mode = (Integer) Files.getAttribute(src, "unix:mode", NOFOLLOW) & 07777;
        if (!archive) {
            Files.setAttribute(dst, "unix:mode", mode & 0777 & ~UMASK);
            return;
        }
        if (ROOT) {
            Files.setAttribute(dst, "unix:uid", Files.getAttribute(src, "unix:uid", NOFOLLOW), NOFOLLOW);
            Files.setAttribute(dst, "unix:gid", Files.getAttribute(src, "unix:gid", NOFOLLOW), NOFOLLOW);
        }
        Files.setAttribute(dst, "unix:mode", mode);
        BasicFileAttributes a = Files.readAttributes(src, BasicFileAttributes.class, NOFOLLOW);
        FileTime m = a.lastModifiedTime();
        Files.getFileAttributeView(dst, BasicFileAttributeView.class).setTimes(m, a.lastAccessTime(), null);
    }

    private static void force(Path p) {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | RuntimeException e) {
            // best effort
        }
    }

    private void fail(Run run, Path p, IOException e) {
        int st = Errno.fromException(e);
        IOException x = st == -Errno.EIO || e instanceof FileAlreadyExistsException ? e : Errno.forCopy(st, p.toString());
        run.failures.add(x);
        if (run.listener != null) {
            run.listener.error(p, x);
        }
    }

    private void progress(Run run) {
        long now = System.nanoTime();
        if (run.listener != null && now - run.lastProgress > 250_000_000L) {
            run.lastProgress = now;
            run.listener.progress(run.stats());
        }
    }
}

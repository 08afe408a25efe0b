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
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
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
 * followed); every file, link and directory is made in the destination
 * through {@link SafeTree} (made privately, metadata through a descriptor,
 * renamed into place; no symbolic link followed in the destination), and
 * directories' metadata applied last, deepest first, only to directories
 * this run made (or whose path no other user can write). Owners are
 * restored as root; set-id and sticky bits only where no other user can
 * write the destination's path (else that entry fails with -EPERM), a
 * symbolic link's owner only there too (else it is left as made, as
 * {@link Files#copy} leaves it when it cannot). No FIFOs, device nodes or
 * xattrs (reported as failures).
 */
final class JavaCopier {
    private static final boolean UNIX = FileSystems.getDefault().supportedFileAttributeViews().contains("unix");
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private final boolean archive, replace;
    private final BatchFileWriter.Durability durability;

    JavaCopier(BatchCopier.Builder b) {
        this.archive = b.archive;
        this.replace = b.replace;
        this.durability = b.durability;
    }

    private static final class Run {
        final List<IOException> failures = new ArrayList<>();
        final Deque<Path[]> dirs = new ArrayDeque<>();    // {src, rel}, in pre-order
        final Map<Object, Object[]> links = new HashMap<>();  // source fileKey -> {rel, fileKey} of the first copy
        SafeTree tree;
        Path shown;                                        // the root as given, for messages
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
        // The tree is the target directory, or the one that will hold the target.
        Path abs = target.toAbsolutePath();
        run.shown = dstIsDir || abs.getParent() == null ? target : abs.getParent();
        try (SafeTree tree = SafeTree.open(dstIsDir || abs.getParent() == null ? abs : abs.getParent(), false)) {
            run.tree = tree;
            copyAll(run, sources, dstIsDir ? null : abs.getFileName());
        }
        if (cancelled.getAsBoolean()) {
            throw new CancellationException("copy cancelled (" + run.files + " files copied)");
        }
        run.batches = 1;
        CopyStats st = run.stats();
        if (listener != null) {
            listener.progress(st);
        }
        return new CopyResult(st, run.failures);
    }

    private void copyAll(Run run, List<Path> sources, Path as) throws IOException {
        for (Path src : sources) {
            if (run.cancelled.getAsBoolean()) {
                break;
            }
            Path rel = as != null ? as : Path.of(src.getFileName() == null ? src.toString() : src.getFileName().toString());
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(src, BasicFileAttributes.class, NOFOLLOW);
            } catch (IOException e) {
                fail(run, src, e);
                continue;
            }
            if (a.isDirectory()) {
                walk(run, src, rel);
            } else {
                one(run, src, rel, a);
            }
        }
        if (run.cancelled.getAsBoolean()) {
            return;
        }
        // directories: metadata deepest first (their times change while files are written in them)
        List<Path[]> ds = new ArrayList<>(run.dirs);
        for (int i = ds.size() - 1; i >= 0; i--) {
            try {
                dirMeta(run, ds.get(i)[0], ds.get(i)[1]);
            } catch (IOException e) {
                fail(run, run.shown.resolve(ds.get(i)[1].toString()), e);
            }
        }
        if (durability != BatchFileWriter.Durability.NONE) {
            // files were forced as they were written; their directories now
            List<Path> sync = new ArrayList<>();
            sync.add(null);
            for (Path[] d : ds) {
                sync.add(d[1]);
            }
            for (Path d : sync) {
                try {
                    run.tree.syncDir(d);
                } catch (IOException | RuntimeException e) {
                    // best effort
                }
            }
        }
    }

    private void walk(Run run, Path src, Path base) throws IOException {
        Files.walkFileTree(src, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                if (run.cancelled.getAsBoolean()) {
                    return FileVisitResult.TERMINATE;
                }
                Path rel = resolve(base, src.relativize(dir));
                try {
                    run.tree.mkdir(rel);
                    run.dirs.add(new Path[] {dir, rel});
                    run.others++;
                    return FileVisitResult.CONTINUE;
                } catch (IOException e) {
                    fail(run, run.shown.resolve(rel.toString()), e);
                    return FileVisitResult.SKIP_SUBTREE;
                }
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                if (run.cancelled.getAsBoolean()) {
                    return FileVisitResult.TERMINATE;
                }
                one(run, file, resolve(base, src.relativize(file)), attrs);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
                fail(run, file, e);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static Path resolve(Path base, Path rel) {
        return rel.toString().isEmpty() ? base : base.resolve(rel.toString());
    }

    /** What archive (or cp -r) keeps of a source: mode, owner as root, times. */
    private SafeTree.Meta meta(Path src, BasicFileAttributes a, boolean link) throws IOException {
        if (!UNIX) {
            return new SafeTree.Meta(-1, -1, -1, null, null);
        }
        Map<String, Object> u = Files.readAttributes(src, "unix:mode,uid,gid", NOFOLLOW);
        int mode = (Integer) u.get("mode");
        if (!archive) {
            return new SafeTree.Meta(link ? -1 : mode & 0777 & ~WriteEntry.UMASK, -1, -1, null, null);
        }
        boolean owner = SafeTree.euid() == 0;
        return new SafeTree.Meta(link ? -1 : mode & 07777, owner ? (Integer) u.get("uid") : -1,
                owner ? (Integer) u.get("gid") : -1, a.lastModifiedTime(), a.lastAccessTime());
    }

    private void one(Run run, Path src, Path rel, BasicFileAttributes a) {
        try {
            if (!a.isRegularFile() && !a.isSymbolicLink()) {
                fail(run, src, Errno.forCopy(-Errno.EOPNOTSUPP, src.toString()));
                return;
            }
            if (archive && a.isRegularFile() && a.fileKey() != null && UNIX
                    && ((Integer) Files.getAttribute(src, "unix:nlink", NOFOLLOW)) > 1) {
                Object[] first = run.links.get(a.fileKey());
                if (first != null) {
                    run.tree.hardlink(rel, (Path) first[0], first[1], replace);
                    run.others++;
                    return;
                }
            }
            if (a.isSymbolicLink()) {
                SafeTree.Meta m = meta(src, a, true);
                if (m.uid >= 0 && !run.tree.trusted()) {
                    // as Files.copy: a link's owner is kept where it can be, here only where it is safe
                    m = new SafeTree.Meta(-1, -1, -1, m.mtime, m.atime);
                }
                run.tree.symlink(rel, Files.readSymbolicLink(src), m, replace);
                run.others++;
            } else {
                SafeTree.Meta m = meta(src, a, false);
                // O_NOFOLLOW: a source swapped for a link is not read through it
                try (Descriptors.Held<FileChannel> h = openSource(run, src, rel);
                     SafeTree.Temp t = run.tree.newFile(rel)) {
                    FileChannel in = h.get();
                    long n = 0, size = in.size();
                    while (n < size) {
                        long k = in.transferTo(n, size - n, t.ch);
                        if (k <= 0) {
                            break;
                        }
                        n += k;
                    }
                    if (durability != BatchFileWriter.Durability.NONE) {
                        t.ch.force(true);
                    }
                    t.finish(m, replace);
                    if (archive && a.fileKey() != null && UNIX
                            && ((Integer) Files.getAttribute(src, "unix:nlink", NOFOLLOW)) > 1) {
                        run.links.put(a.fileKey(), new Object[] {rel, t.key});
                    }
                    run.bytes += n;
                }
                run.files++;
            }
            progress(run);
        } catch (IOException e) {
            fail(run, e instanceof FileAlreadyExistsException || e instanceof SafeTree.Refused
                    ? run.shown.resolve(rel.toString()) : src, e);
        }
    }

    /** src for reading, counted; short of descriptors, once more after the tree closed cached directories. */
    private static Descriptors.Held<FileChannel> openSource(Run run, Path src, Path rel) throws IOException {
        Descriptors.Opener<FileChannel> o = () -> FileChannel.open(src, StandardOpenOption.READ, NOFOLLOW);
        try {
            return Descriptors.open(o);
        } catch (IOException e) {
            if (!Descriptors.exhausted(e) || !run.tree.shed(rel.getParent())) {
                throw e;
            }
            return Descriptors.open(o);
        }
    }

    private void dirMeta(Run run, Path src, Path rel) throws IOException {
        if (!UNIX) {
            return;
        }
        BasicFileAttributes a = Files.readAttributes(src, BasicFileAttributes.class, NOFOLLOW);
        run.tree.applyDir(rel, meta(src, a, false));
    }

    private void fail(Run run, Path p, IOException e) {
        int st = Errno.fromException(e);
        IOException x = st == -Errno.EIO || e instanceof FileAlreadyExistsException || e instanceof SafeTree.Refused
                ? e : Errno.forCopy(st, p.toString());
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

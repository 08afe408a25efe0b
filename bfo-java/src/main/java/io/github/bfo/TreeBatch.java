/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * Every regular file beneath some roots, without a stat per entry in Java.
 * With libbfo: one batch fed by a {@link TreeWalker} (libbfo's parallel
 * walk, files handed out in inode order a sort buffer at a time, like
 * {@code bfo read DIR}). Without it (the Java engine): level by level, each
 * level (the entries of the directories found in the previous one, listed
 * with DirectoryStream) one batch, the engine's metadata phase telling
 * files from directories (-EISDIR).
 * Directories, special files and symbolic links to directories are skipped
 * (links to directories are not followed, like the {@code bfo} command).
 */
final class TreeBatch extends FileBatch {
    private final BatchFileReader reader;
    private final Deque<FileData> failures = new ArrayDeque<>();
    private List<Path> level;          // roots of the current level's listing (directories), or files
    private boolean levelIsFiles;
    private List<Path> nextDirs = new ArrayList<>();
    private FileBatch inner;
    private long base;                 // indices of earlier levels (and delivered listing failures)
    private long submitted;            // paths handed to the current level
    private long skipped;              // directories and special files met (not delivered)
    private long skippedEntries;       // of those, the non-directories (see FileBatch#skippedEntries)
    private ReadStats stats;
    // walker mode (libbfo loaded): files in inode order from libbfo's walk, no Java stat
    private final boolean walk;
    private final boolean noFollow;
    private TreeWalker walker;
    private List<Path> walkFiles = new ArrayList<>();

    /** Files sorted together by inode (the walk's sort buffer). */
    static final int SORT_BUFFER = 0;   // libbfo's default (that of bfo read DIR)

    TreeBatch(BatchFileReader reader, List<Path> roots, boolean noFollow) {
        this.reader = reader;
        this.noFollow = noFollow;
        this.walk = reader.isNative();
        List<Path> files = new ArrayList<>();
        List<Path> dirs = new ArrayList<>();
        for (Path r : roots) {
            try {
                BasicFileAttributes a = Files.readAttributes(r, BasicFileAttributes.class);
                (a.isDirectory() ? dirs : files).add(r);
            } catch (IOException e) {
                failures.add(failed(r, e));
            }
        }
        if (walk) {
            walkFiles = files;
            nextDirs = dirs;
        } else if (!files.isEmpty()) {
            level = files;
            levelIsFiles = true;
            nextDirs = dirs;
        } else {
            level = dirs;
        }
    }

    private FileData failed(Path p, IOException e) {
        return new FileData(this, p, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                Errno.fromException(e), "none", true, false, 0, ByteBuffer.allocate(0), e);
    }

    @Override
    boolean readerClosed() {
        return reader.isClosedInternal();
    }

    @Override
    FileData advance() {
        for (;;) {
            if (inner == null) {
                if (!failures.isEmpty()) {   // listing failures of the level just read
                    FileData f = failures.poll();
                    f.setIndex(base++);
                    return f;
                }
                if (walk) {
                    if (nextDirs.isEmpty() && walkFiles.isEmpty()) {
                        return null;
                    }
                    // one batch over the whole walk (again only for directories of unknown type found in it)
                    walker = new TreeWalker(nextDirs, walkFiles, SORT_BUFFER, noFollow);
                    nextDirs = new ArrayList<>();
                    walkFiles = new ArrayList<>();
                    submitted = 0;
                    inner = reader.readChunks(walker);
                } else {
                    if (level == null || level.isEmpty()) {
                        if (nextDirs.isEmpty()) {
                            return null;
                        }
                        level = nextDirs;
                        levelIsFiles = false;
                        nextDirs = new ArrayList<>();
                    }
                    List<Path> l = level;
                    level = null;
                    submitted = 0;
                    inner = reader.read(levelIsFiles ? counted(l.iterator()) : listing(l));
                    levelIsFiles = false;
                }
            }
            if (!inner.hasNext()) {
                stats = add(stats, inner.stats());
                if (walker != null) {
                    submitted = inner.submitted();
                }
                inner.close();
                inner = null;
                base += submitted;
                if (walker != null) {
                    for (TreeWalker.Failure f : walker.takeFailures()) {
                        failures.add(failed(f.dir, Errno.generic(f.status, f.dir.toString(), null)));
                    }
                    skippedEntries += walker.skipped();
                    walker.close();
                    walker = null;
                }
                continue;
            }
            FileData f = inner.next();
            int st = f.status();
            if (st == -Errno.EISDIR) {
                skipped++;
                if (!Files.isSymbolicLink(f.path())) {
                    nextDirs.add(f.path());
                } else {
                    skippedEntries++;
                }
                continue;
            }
            if (st == -Errno.EINVAL || (st == -Errno.ELOOP && (f.mode() & 0170000) == 0120000)
                    || (st == -Errno.ENOENT && Files.isSymbolicLink(f.path()))) {
                skipped++;
                skippedEntries++;
                continue;   // special files; symbolic links under noFollow; dangling symbolic links
            }
            f.setIndex(base + f.index());
            return f;
        }
    }

    private Iterable<Path> counted(Iterator<Path> it) {
        return () -> new Iterator<>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public Path next() {
                submitted++;
                return it.next();
            }
        };
    }

    /** The entries of dirs, one directory stream open at a time. */
    private Iterable<Path> listing(List<Path> dirs) {
        return () -> new Iterator<>() {
            int i;
            DirectoryStream<Path> ds;
            Iterator<Path> cur;

            @Override
            public boolean hasNext() {
                for (;;) {
                    if (cur != null && cur.hasNext()) {
                        return true;
                    }
                    closeCurrent();
                    if (i >= dirs.size()) {
                        return false;
                    }
                    Path d = dirs.get(i++);
                    try {
                        ds = Files.newDirectoryStream(d);
                        cur = ds.iterator();
                    } catch (IOException e) {
                        failures.add(failed(d, e));
                    }
                }
            }

            @Override
            public Path next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                submitted++;
                return cur.next();
            }

            private void closeCurrent() {
                if (ds != null) {
                    try {
                        ds.close();
                    } catch (IOException ignored) {
                        // read-only stream
                    }
                    ds = null;
                    cur = null;
                }
            }
        };
    }

    private static ReadStats add(ReadStats a, ReadStats b) {
        if (a == null) {
            return b;
        }
        java.util.Set<String> engines = new java.util.LinkedHashSet<>(a.engines());
        engines.addAll(b.engines());
        java.util.Map<String, Long> by = new java.util.LinkedHashMap<>(a.filesByEngine());
        b.filesByEngine().forEach((k, v) -> by.merge(k, v, Long::sum));
        String engine = b.bytes() >= a.bytes() ? b.engine() : a.engine();
        return new ReadStats(engine, java.util.Collections.unmodifiableSet(engines), a.files() + b.files(),
                a.filesOk() + b.filesOk(), a.filesFailed() + b.filesFailed(), a.bytes() + b.bytes(),
                a.deviceBytes() + b.deviceBytes(), a.ios() + b.ios(), a.regions() + b.regions(),
                a.extents() + b.extents(), a.gapBytes() + b.gapBytes(), a.fallbackFiles() + b.fallbackFiles(),
                a.windows() + b.windows(), a.metadataTime().plus(b.metadataTime()), a.dataTime().plus(b.dataTime()),
                a.totalTime().plus(b.totalTime()), java.util.Collections.unmodifiableMap(by),
                a.filesRawmeta() + b.filesRawmeta());
    }

    /** The levels' statistics added up, without the directories and special files skipped. */
    @Override
    public ReadStats stats() {
        FileBatch i = inner;
        ReadStats s = i != null ? add(stats, i.stats()) : stats;
        if (s == null) {
            return ReadStats.empty("none");
        }
        long k = skipped;
        return new ReadStats(s.engine(), s.engines(), s.files() - k, s.filesOk(), s.filesFailed() - k, s.bytes(),
                s.deviceBytes(), s.ios(), s.regions(), s.extents(), s.gapBytes(), s.fallbackFiles(), s.windows(),
                s.metadataTime(), s.dataTime(), s.totalTime(), s.filesByEngine(), s.filesRawmeta());
    }

    @Override
    public long skippedEntries() {
        return skippedEntries;
    }

    @Override
    void cancelAsync() {
        FileBatch i = inner;
        if (i != null) {
            i.close();   // from another thread: cancels it; the iterating thread cleans up
        }
    }

    @Override
    void doClose() {
        if (inner != null) {
            inner.close();
            inner = null;
        }
        if (walker != null) {
            walker.close();
            walker = null;
        }
        failures.clear();
    }

}

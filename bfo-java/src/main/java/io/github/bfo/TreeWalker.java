/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The files of a tree in inode order, a sort buffer at a time, for
 * {@link BatchFileReader#readTree}: libbfo's own walk ({@code bfo_walk_*},
 * the one {@code bfo read DIR} uses) lists directories on its threads with
 * no stat per entry and hands out paths sorted by inode, which is close to
 * disk order on ext4 and XFS, so the engine's metadata phase reads the inode
 * tables sequentially. One native call per buffer of paths.
 *
 * <p>Regular files and symbolic links to them are handed out (links are
 * skipped with {@code skipLinks}); special files, links to directories and
 * dangling links are skipped by the walk. Memory: the walk's two sort
 * buffers plus one path buffer here. Not thread-safe (one consumer).
 */
final class TreeWalker implements Iterator<Path>, AutoCloseable {
    /** Bytes of paths fetched per native call. */
    private static final int PATH_BUFFER = 1 << 20;
    private static final int FAILURE_PATH_MAX = 1 << 16;
    /** struct bfo_walk_stats: files, skipped, failures, reserved[5] (uint64 each). */
    private static final int WALK_STATS_SIZE = 8 * 8, WALK_STATS_SKIPPED = 8;

    /** A directory that could not be listed. */
    static final class Failure {
        final Path dir;
        final int status;

        Failure(Path dir, int status) {
            this.dir = dir;
            this.status = status;
        }
    }

    private final ArrayDeque<Path> files;
    private final ArrayDeque<Path> dirs;
    private final int sortFiles;
    private final int flags;
    private final List<Failure> failures = new ArrayList<>();
    private final ArrayDeque<Path> ready = new ArrayDeque<>();
    private Memory buf;
    private Pointer walk;
    private Path root;        // of the walk in progress
    private boolean closed;
    private long skipped;     // of the walks ended so far

    TreeWalker(List<Path> dirs, List<Path> files, int sortFiles, boolean skipLinks) {
        this.files = new ArrayDeque<>(files);
        this.dirs = new ArrayDeque<>(dirs);
        this.sortFiles = sortFiles;
        this.flags = skipLinks ? BfoNative.WALK_NOFOLLOW : 0;
    }

    /** Special files, links to directories and dangling links the ended walks met (not handed out). */
    long skipped() {
        return skipped;
    }

    /** Directories that could not be listed (taken once). */
    List<Failure> takeFailures() {
        List<Failure> f = new ArrayList<>(failures);
        failures.clear();
        return f;
    }

    @Override
    public boolean hasNext() {
        while (ready.isEmpty() && !closed) {
            if (!files.isEmpty()) {
                ready.add(files.poll());
            } else if (walk != null) {
                fetch();
            } else if (!dirs.isEmpty()) {
                start(dirs.poll());
            } else {
                return false;
            }
        }
        return !ready.isEmpty();
    }

    private void start(Path dir) {
        PointerByReference ref = new PointerByReference();
        int rc = BfoNative.bfo_walk_start(ref, BfoNative.cString(PathBytes.of(dir)), sortFiles, flags);
        if (rc < 0) {
            failures.add(new Failure(dir, rc));
            return;
        }
        walk = ref.getValue();
        root = dir;
        if (buf == null) {
            buf = new Memory(PATH_BUFFER);
        }
    }

    private void fetch() {
        long n = BfoNative.bfo_walk_next(walk, buf, PATH_BUFFER);
        if (n > 0) {
            byte[] b = buf.getByteArray(0, (int) n);
            int start = 0;
            for (int i = 0; i < b.length; i++) {
                if (b[i] == 0) {
                    ready.add(toPath(b, start, i));
                    start = i + 1;
                }
            }
            return;
        }
        // Over (0), or a path longer than PATH_MAX-sized buffers can hold (-ENOBUFS): end this walk.
        endWalk(n < 0 ? (int) n : 0);
    }

    private void endWalk(int status) {
        Memory path = new Memory(FAILURE_PATH_MAX);
        IntByReference st = new IntByReference();
        while (BfoNative.bfo_walk_failure(walk, path, FAILURE_PATH_MAX, st) == 1) {
            failures.add(new Failure(PathBytes.toPath(path.getByteArray(0, (int) strlen(path))), st.getValue()));
        }
        countSkipped();
        BfoNative.bfo_walk_destroy(walk);
        walk = null;
        if (status < 0) {
            failures.add(new Failure(root, status));
        }
    }

    private void countSkipped() {
        try (Memory st = new Memory(WALK_STATS_SIZE)) {
            BfoNative.bfo_walk_stats(walk, st);
            skipped += st.getLong(WALK_STATS_SKIPPED);
        }
    }

    private static long strlen(Pointer p) {
        return p.indexOf(0, (byte) 0);
    }

    /** b[from..to) as a Path: through a Latin-1 string when ASCII (most names), else exactly. */
    private static Path toPath(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) {
            if (b[i] < 0) {
                byte[] raw = new byte[to - from];
                System.arraycopy(b, from, raw, 0, raw.length);
                return PathBytes.toPath(raw);
            }
        }
        return Path.of(new String(b, from, to - from, StandardCharsets.ISO_8859_1));
    }

    @Override
    public Path next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        return ready.poll();
    }

    @Override
    public void close() {
        closed = true;
        ready.clear();
        if (walk != null) {
            BfoNative.bfo_walk_destroy(walk);
            walk = null;
        }
    }
}

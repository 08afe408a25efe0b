/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The files of a tree in inode order, a sort buffer at a time, for
 * {@link BatchFileReader#readTree}: libbfo's own walk ({@code bfo_walk_*},
 * the one {@code bfo read DIR} uses) lists directories on its threads with
 * no stat per entry and hands out paths sorted by inode, which is close to
 * disk order on ext4 and XFS, so the engine's metadata phase reads the inode
 * tables sequentially. One native call per buffer of paths, and the
 * buffer goes to the batch as it is: copied out once (the entries' paths
 * are made from it when asked) and submitted whole, with nothing done per
 * path in Java, as {@code bfo read DIR} hands the walk's buffer over.
 *
 * <p>Regular files and symbolic links to them are handed out (links are
 * skipped with {@code skipLinks}); special files, links to directories and
 * dangling links are skipped by the walk. Memory: the walk's two sort
 * buffers, one path buffer here, and the buffers handed out while entries
 * of theirs are in flight or kept. Not thread-safe (one consumer).
 */
final class TreeWalker implements BatchFileReader.PackedPaths, AutoCloseable {
    /** Bytes of paths fetched per native call: the command's buffer, and one submission's worth. */
    private static final int PATH_BUFFER = NativeReadEngine.PATH_BUF;
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
    private Memory buf;
    private Pointer walk;
    private Path root;        // of the walk in progress
    private boolean closed;
    private long skipped;     // of the walks ended so far

    TreeWalker(List<Path> dirs, List<Path> files, int sortFiles, boolean skipLinks) {
        this.files = new ArrayDeque<>(files);
        this.dirs = new ArrayDeque<>(dirs);
        this.sortFiles = sortFiles;
        this.flags = (skipLinks ? BfoNative.WALK_NOFOLLOW : 0) | BfoNative.WALK_LISTINGS;
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

    /**
     * The next paths, NUL-terminated and packed as the walk hands them out
     * (the root files first, one per chunk), or null when the walk is over.
     */
    @Override
    public PathChunk nextChunk() {
        while (!closed) {
            if (!files.isEmpty()) {
                byte[] b = PathBytes.of(files.poll());
                return new PathChunk(Arrays.copyOf(b, b.length + 1));
            } else if (walk != null) {
                byte[] chunk = fetch();
                if (chunk != null) {
                    return new PathChunk(chunk);
                }
            } else if (!dirs.isEmpty()) {
                start(dirs.poll());
            } else {
                return null;
            }
        }
        return null;
    }

    /** The walk's directory listings, so the raw engine need not list the directories again. */
    @Override
    public void shareWith(Pointer ctx) {
        if (walk != null) {
            BfoNative.bfo_walk_share(walk, ctx);
        }
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

    /** The walk's next buffer of paths, or null when this walk ended. */
    private byte[] fetch() {
        long n = BfoNative.bfo_walk_next(walk, buf, PATH_BUFFER);
        if (n > 0) {
            return buf.getByteArray(0, (int) n);
        }
        // Over (0), or a path longer than PATH_MAX-sized buffers can hold (-ENOBUFS): end this walk.
        endWalk(n < 0 ? (int) n : 0);
        return null;
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

    @Override
    public void close() {
        closed = true;
        if (walk != null) {
            BfoNative.bfo_walk_destroy(walk);
            walk = null;
        }
    }
}

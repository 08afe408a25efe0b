/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.Objects;

/**
 * One entry of a {@link BatchFileWriter} batch: a regular file with its
 * bytes, a directory, a symbolic link, a hard link or a FIFO, at a path
 * relative to the writer's root, with optional attributes.
 *
 * <p>Paths are relative ("a/b/c.txt"): no leading '/', no '.' or '..'
 * component, not the writer's journal ({@code .bfo-journal}); the writer
 * never follows a symbolic link in a destination path. Attributes not set
 * get the defaults of the writer: mode 0644 for files and symbolic links,
 * 0755 for directories (as the umask allows), the current time, the
 * process's owner.
 *
 * <p>Data: a {@code byte[]} is referenced, not copied, until the batch is
 * written (then copied into native memory, per batch); a direct
 * {@link ByteBuffer} is passed to the library as it is (its remaining
 * bytes), a heap buffer is treated like an array. Do not change either
 * while the batch is written.
 *
 * <p>Immutable and thread-safe (the data it refers to is the caller's).
 * Modifiers return a new entry.
 */
public final class WriteEntry {
    /** What the entry creates (native {@code enum bfo_wtype}). */
    public enum Type {
        FILE, DIRECTORY, SYMLINK, HARDLINK, FIFO
    }

    static final int UNSET = -1;

    /** The process's umask, read once (the kernel applies it to what it creates; the engines apply it to modes they set). */
    static final int UMASK = readUmask();

    final Type type;
    final String display;     // for messages and results
    final byte[] pathBytes;   // relative, as the kernel sees it
    final byte[] array;       // FILE: heap data (whole array range below)
    final int arrayOff, arrayLen;
    final ByteBuffer buffer;  // FILE: data as a buffer (duplicate; remaining bytes)
    final byte[] target;      // SYMLINK target / HARDLINK existing path, bytes
    final String targetDisplay;
    final int mode;           // UNSET: default
    final long mtimeNanos, atimeNanos;   // Long.MIN_VALUE: unset
    final int uid, gid;       // UNSET: unset
    final Path pathObj;       // the Path given, or null (a String)
    final Path targetObj;

    private WriteEntry(Path pathObj, Path targetObj, Type type, String display, byte[] pathBytes, byte[] array, int arrayOff, int arrayLen,
                       ByteBuffer buffer, byte[] target, String targetDisplay, int mode, long mtimeNanos,
                       long atimeNanos, int uid, int gid) {
        this.pathObj = pathObj;
        this.targetObj = targetObj;
        this.type = type;
        this.display = display;
        this.pathBytes = pathBytes;
        this.array = array;
        this.arrayOff = arrayOff;
        this.arrayLen = arrayLen;
        this.buffer = buffer;
        this.target = target;
        this.targetDisplay = targetDisplay;
        this.mode = mode;
        this.mtimeNanos = mtimeNanos;
        this.atimeNanos = atimeNanos;
        this.uid = uid;
        this.gid = gid;
    }

    private static WriteEntry of(Type type, Object path, byte[] array, int off, int len, ByteBuffer buffer,
                                 Object target) {
        Objects.requireNonNull(path, "path");
        byte[] pb = bytesOf(path);
        byte[] tb = target == null ? null : bytesOf(target);
        return new WriteEntry(path instanceof Path ? (Path) path : null,
                target instanceof Path ? (Path) target : null, type, path.toString(), pb, array, off, len, buffer, tb,
                target == null ? null : target.toString(), UNSET, Long.MIN_VALUE, Long.MIN_VALUE, UNSET, UNSET);
    }

    private static byte[] bytesOf(Object p) {
        if (p instanceof Path) {
            PathBytes.checkDefault((Path) p);
            return PathBytes.of((Path) p);
        }
        return PathBytes.ofString((String) p);
    }

    /** A regular file holding data (not copied until written). */
    public static WriteEntry file(String path, byte[] data) {
        Objects.requireNonNull(data, "data");
        return of(Type.FILE, path, data, 0, data.length, null, null);
    }

    /** A regular file holding data (not copied until written). */
    public static WriteEntry file(Path path, byte[] data) {
        Objects.requireNonNull(data, "data");
        return of(Type.FILE, path, data, 0, data.length, null, null);
    }

    /** A regular file holding data[off, off + len). */
    public static WriteEntry file(String path, byte[] data, int off, int len) {
        Objects.requireNonNull(data, "data");
        Objects.checkFromIndexSize(off, len, data.length);
        return of(Type.FILE, path, data, off, len, null, null);
    }

    /** A regular file holding the remaining bytes of data (position to limit, as of now). */
    public static WriteEntry file(String path, ByteBuffer data) {
        Objects.requireNonNull(data, "data");
        return of(Type.FILE, path, null, 0, 0, data.duplicate(), null);
    }

    /** A regular file holding the remaining bytes of data (position to limit, as of now). */
    public static WriteEntry file(Path path, ByteBuffer data) {
        Objects.requireNonNull(data, "data");
        return of(Type.FILE, path, null, 0, 0, data.duplicate(), null);
    }

    /** A directory, created if missing (its attributes are applied when the writer closes). */
    public static WriteEntry directory(String path) {
        return of(Type.DIRECTORY, path, null, 0, 0, null, null);
    }

    public static WriteEntry directory(Path path) {
        return of(Type.DIRECTORY, path, null, 0, 0, null, null);
    }

    /** A symbolic link to target (any text; not resolved by the writer). */
    public static WriteEntry symlink(String path, String target) {
        Objects.requireNonNull(target, "target");
        if (target.isEmpty()) {
            throw new IllegalArgumentException("empty symbolic link target for " + path);
        }
        return of(Type.SYMLINK, path, null, 0, 0, null, target);
    }

    public static WriteEntry symlink(Path path, Path target) {
        Objects.requireNonNull(target, "target");
        return of(Type.SYMLINK, path, null, 0, 0, null, target);
    }

    /** A hard link to existing, another path beneath the writer's root (written earlier or in this batch, before it). */
    public static WriteEntry hardlink(String path, String existing) {
        Objects.requireNonNull(existing, "existing");
        return of(Type.HARDLINK, path, null, 0, 0, null, existing);
    }

    public static WriteEntry hardlink(Path path, Path existing) {
        Objects.requireNonNull(existing, "existing");
        return of(Type.HARDLINK, path, null, 0, 0, null, existing);
    }

    /** A FIFO (named pipe). */
    public static WriteEntry fifo(String path) {
        return of(Type.FIFO, path, null, 0, 0, null, null);
    }

    /** A regular file template without data, for {@link BatchFileWriter#openStream(WriteEntry)}. */
    public static WriteEntry stream(String path) {
        return of(Type.FILE, path, new byte[0], 0, 0, null, null);
    }

    public static WriteEntry stream(Path path) {
        return of(Type.FILE, path, new byte[0], 0, 0, null, null);
    }

    private WriteEntry with(int mode, long mtime, long atime, int uid, int gid) {
        return new WriteEntry(pathObj, targetObj, type, display, pathBytes, array, arrayOff, arrayLen, buffer, target, targetDisplay,
                mode, mtime, atime, uid, gid);
    }

    /** Permission bits (07777). */
    public WriteEntry mode(int mode) {
        if ((mode & ~07777) != 0) {
            throw new IllegalArgumentException("mode has bits outside 07777: " + Integer.toOctalString(mode));
        }
        return with(mode, mtimeNanos, atimeNanos, uid, gid);
    }

    /** Modification time (the access time becomes the same unless set too). */
    public WriteEntry lastModifiedTime(FileTime t) {
        return with(mode, nanos(t), atimeNanos, uid, gid);
    }

    public WriteEntry lastAccessTime(FileTime t) {
        return with(mode, mtimeNanos, nanos(t), uid, gid);
    }

    /** Owner and group ids (needs root, else the entry fails with AccessDeniedException). */
    public WriteEntry owner(int uid, int gid) {
        if (uid < 0 || gid < 0) {
            throw new IllegalArgumentException("uid and gid must not be negative: " + uid + ", " + gid);
        }
        return with(mode, mtimeNanos, atimeNanos, uid, gid);
    }

    private static long nanos(FileTime t) {
        Objects.requireNonNull(t, "time");
        Instant i = t.toInstant();
        return Math.addExact(Math.multiplyExact(i.getEpochSecond(), 1_000_000_000L), i.getNano());
    }

    public Type type() {
        return type;
    }

    /** The destination path as given. */
    public String path() {
        return display;
    }

    /** Data bytes of a FILE entry. */
    public long length() {
        return buffer != null ? buffer.remaining() : arrayLen;
    }

    boolean hasTimes() {
        return mtimeNanos != Long.MIN_VALUE || atimeNanos != Long.MIN_VALUE;
    }

    long effMtime() {
        return mtimeNanos != Long.MIN_VALUE ? mtimeNanos : atimeNanos;
    }

    long effAtime() {
        return atimeNanos != Long.MIN_VALUE ? atimeNanos : mtimeNanos;
    }

    /** Bytes that must be copied into native memory to write this entry. */
    long stagedBytes() {
        long n = BfoNative.WENTRY_SIZE + pathBytes.length + 8L + (target != null ? target.length + 8L : 0);
        if (type == Type.FILE && (buffer == null || !buffer.isDirect())) {
            n += length();
        }
        return n;
    }

    @Override
    public String toString() {
        return "WriteEntry[" + type + " " + display + (type == Type.FILE ? " " + length() + " bytes" : "")
                + (target != null ? " -> " + targetDisplay : "") + "]";
    }

    /** The mode an entry without one gets: what open/mkdir would give under the umask (a link's is not applied). */
    static int defaultMode(Type t) {
        switch (t) {
            case DIRECTORY:
                return 0777 & ~UMASK;
            case SYMLINK:
                return 0777;
            default:
                return 0666 & ~UMASK;
        }
    }

    private static int readUmask() {
        try {
            for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Umask:")) {
                    return Integer.parseInt(line.substring(6).trim(), 8);
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // no /proc: the usual default
        }
        return 022;
    }
}

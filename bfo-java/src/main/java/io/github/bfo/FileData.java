/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Pointer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;

/**
 * One delivered entry of a read batch: a whole file, or one piece of a file
 * larger than the reader's {@code largeFile} threshold.
 *
 * <h2>Whole files and pieces</h2>
 * A file of at most {@code largeFile} bytes arrives as one entry with
 * {@link #offset()} 0, {@link #length()} == {@link #size()} and
 * {@link #isLast()} true ({@link #isWhole()}). A larger file arrives as
 * consecutive pieces of at most {@code largeFile} bytes, in offset order,
 * the last one with {@link #isLast()}; pieces of different files may
 * interleave, so key them by {@link #index()}. Pieces keep memory bounded
 * whatever the file size. If a piece fails, an entry with a failure and
 * {@code isLast()} ends the file and the pieces before it must be discarded.
 * Nothing is assembled behind your back: a caller that wants whole large
 * files concatenates the pieces (or raises {@code largeFile}, at most an
 * eighth of {@code arenaBytes}).
 *
 * <h2>Lifetime</h2>
 * {@link #data()} is a read-only view of the bytes where the engine put them
 * (the native arena for the native engines). It is valid until the iterator
 * moves on (the next {@code hasNext()} or {@code next()} call on the batch),
 * until {@link #release()}, or until the batch or the reader is closed,
 * whichever comes first. After that {@code data()} throws
 * {@link IllegalStateException}; a view obtained earlier must not be used any
 * more (its memory is reused, or unmapped after the reader is closed).
 * {@link #bytes()} and {@link #copyTo(ByteBuffer)} copy the bytes out for
 * keeping. The metadata accessors stay usable forever.
 *
 * <h2>Failures</h2>
 * {@link #status()} is 0 or a negative errno value; {@link #failure()} the
 * matching java.nio.file exception (NoSuchFileException for -ENOENT,
 * AccessDeniedException for -EACCES and -EPERM, NotDirectoryException for
 * -ENOTDIR, FileSystemException with the text otherwise: "not a regular
 * file" for -EINVAL, "file changed while it was being read" for -ESTALE).
 * {@link #orThrow()} is the strict accessor; {@code data()}, {@code bytes()}
 * and {@code copyTo} of a failed entry throw {@link UncheckedIOException}.
 *
 * <p><b>Thread safety:</b> an instance may be read from any thread, but its
 * data only while it is valid (see above), which the iterating thread decides.
 */
public final class FileData {
    private Path path;                   // null until asked for, for a path given as bytes (rawPath)
    private final PathChunk rawPath;     // packed paths (libbfo's walk, readPacked): the chunk's rawOrdinal-th path
    private final int rawOrdinal;
    private long index;
    private final long offset;
    private final long length;
    private final long size;
    private final long mtimeSec, ctimeSec, atimeSec;
    private final int mtimeNsec, ctimeNsec, atimeNsec;
    private final long ino, dev;
    private final int mode, uid, gid, nlink;
    private final int status;
    private final String engine;
    private final boolean last;
    private final boolean noFollow;
    private final long address;          // native engines: address of the bytes
    private final ByteBuffer heap;       // java engine: the bytes
    private final FileBatch owner;
    private volatile boolean valid = true;
    private ByteBuffer view;
    private IOException failure;

    FileData(FileBatch owner, Path path, long index, long offset, long length, long size, long mtimeSec,
             int mtimeNsec, long ctimeSec, int ctimeNsec, long atimeSec, int atimeNsec, long ino, long dev, int mode,
             int uid, int gid, int nlink, int status, String engine, boolean last, boolean noFollow, long address,
             ByteBuffer heap, IOException failure) {
        this(owner, path, null, 0, index, offset, length, size, mtimeSec, mtimeNsec, ctimeSec, ctimeNsec, atimeSec,
                atimeNsec, ino, dev, mode, uid, gid, nlink, status, engine, last, noFollow, address, heap, failure);
    }

    /** An entry whose path is path, or (path null) the rawOrdinal-th path of rawPath, made a Path when asked. */
    FileData(FileBatch owner, Path path, PathChunk rawPath, int rawOrdinal, long index, long offset, long length,
             long size, long mtimeSec, int mtimeNsec, long ctimeSec, int ctimeNsec, long atimeSec, int atimeNsec,
             long ino, long dev, int mode, int uid, int gid, int nlink, int status, String engine, boolean last,
             boolean noFollow, long address, ByteBuffer heap, IOException failure) {
        this.owner = owner;
        this.path = path;
        this.rawPath = rawPath;
        this.rawOrdinal = rawOrdinal;
        this.index = index;
        this.offset = offset;
        this.length = length;
        this.size = size;
        this.mtimeSec = mtimeSec;
        this.mtimeNsec = mtimeNsec;
        this.ctimeSec = ctimeSec;
        this.ctimeNsec = ctimeNsec;
        this.atimeSec = atimeSec;
        this.atimeNsec = atimeNsec;
        this.ino = ino;
        this.dev = dev;
        this.mode = mode;
        this.uid = uid;
        this.gid = gid;
        this.nlink = nlink;
        this.status = status;
        this.engine = engine;
        this.last = last;
        this.noFollow = noFollow;
        this.address = address;
        this.heap = heap;
        this.failure = failure;
    }

    /**
     * The path exactly as submitted (the same object); for the files of
     * {@link BatchFileReader#readTree}, the path the walk found (the root
     * as given, then the names below it); for {@link BatchFileReader#readPacked},
     * the Path of the bytes given.
     */
    public Path path() {
        Path p = path;
        if (p == null) {
            p = rawPath.path(rawOrdinal);
            path = p;   // immutable: a racing thread makes an equal one
        }
        return p;
    }

    /**
     * {@code path().toString()}, without making the Path when the path came
     * as bytes (readTree, readPacked): a listing of many files needs only
     * the strings.
     */
    public String pathString() {
        Path p = path;
        if (p == null) {
            String s = rawPath.string(rawOrdinal);
            if (s != null) {
                return s;
            }
            p = path();
        }
        return p.toString();
    }

    /** Position of the path in the batch, from 0. */
    public long index() {
        return index;
    }

    /** Offset of these bytes within the file (0 except for pieces after the first). */
    public long offset() {
        return offset;
    }

    /** Number of bytes in this entry (0 for failures and metadata-only batches). */
    public long length() {
        return length;
    }

    /** The file's size as stat'ed before its bytes were read. */
    public long size() {
        return size;
    }

    /** True for the last (or only) entry of a file. */
    public boolean isLast() {
        return last;
    }

    /** True when this entry holds the whole file (offset 0 and last). */
    public boolean isWhole() {
        return last && offset == 0;
    }

    /** True when the file was read (status 0). */
    public boolean isOk() {
        return status == 0;
    }

    /** 0, or the negative errno value of the failure. */
    public int status() {
        return status;
    }

    /** The exception of a failed entry, or null when it was read. */
    public synchronized IOException failure() {
        if (status == 0) {
            return null;
        }
        if (failure == null) {
            failure = Errno.forRead(status, pathString(), mode, noFollow);
        }
        return failure;
    }

    /** This entry, or its failure thrown. */
    public FileData orThrow() throws IOException {
        if (status != 0) {
            throw failure();
        }
        return this;
    }

    public FileTime lastModifiedTime() {
        return time(mtimeSec, mtimeNsec);
    }

    public FileTime lastAccessTime() {
        return time(atimeSec, atimeNsec);
    }

    /** The inode change time (ctime). */
    public FileTime changeTime() {
        return time(ctimeSec, ctimeNsec);
    }

    /** st_mode: file type and permission bits (also set for refused file types). */
    public int mode() {
        return mode;
    }

    public int uid() {
        return uid;
    }

    public int gid() {
        return gid;
    }

    public int linkCount() {
        return nlink;
    }

    public long inode() {
        return ino;
    }

    /** The device, major &lt;&lt; 32 | minor. */
    public long device() {
        return dev;
    }

    /** The engine that produced this entry: "raw", "uring", "portable", "none" or "java". */
    public String engine() {
        return engine;
    }

    /** True while {@link #data()} may be called (see the class comment). */
    public boolean isValid() {
        return valid && !owner.isClosed();
    }

    /**
     * Ends this entry's validity now (the memory goes back with the batch's
     * next release). Idempotent.
     */
    public void release() {
        valid = false;
        view = null;
    }

    void setIndex(long i) {
        index = i;
    }

    void invalidate() {
        valid = false;
        view = null;
    }

    /**
     * A read-only view of the bytes, position 0, limit {@link #length()}.
     *
     * @throws IllegalStateException when the entry is no longer valid (the iterator moved on, released, closed)
     * @throws UncheckedIOException  when the file failed (its {@link #failure()})
     */
    public ByteBuffer data() {
        if (status != 0) {
            throw new UncheckedIOException(failure());
        }
        synchronized (owner) {
            if (!isValid()) {
                throw new IllegalStateException("the data of " + pathString() + " is no longer valid: the iterator moved on, "
                        + "the entry was released, or the batch or reader was closed (copy with bytes() to keep it)");
            }
            ByteBuffer v = view;
            if (v == null) {
                if (heap != null) {
                    v = heap.asReadOnlyBuffer();
                } else if (length == 0) {
                    v = ByteBuffer.allocate(0).asReadOnlyBuffer();
                } else {
                    v = new Pointer(address).getByteBuffer(0, length).asReadOnlyBuffer();
                }
                view = v;
            }
            return v.duplicate();
        }
    }

    /** A copy of the bytes (of this entry: the whole file, or this piece). */
    public byte[] bytes() {
        if (length > Integer.MAX_VALUE - 16) {
            throw new UnsupportedOperationException("entry too large for one array: " + length + " bytes");
        }
        byte[] b = new byte[(int) length];
        data().get(b);
        return b;
    }

    /**
     * Copies the bytes into dst (which must have room for {@link #length()}
     * bytes) and returns how many were copied.
     */
    public int copyTo(ByteBuffer dst) {
        ByteBuffer d = data();
        int n = d.remaining();
        dst.put(d);
        return n;
    }

    private static FileTime time(long sec, int nsec) {
        return FileTime.from(Instant.ofEpochSecond(sec, nsec));
    }

    @Override
    public String toString() {
        return "FileData[" + pathString() + (status == 0 ? "" : " status=" + status) + " size=" + size
                + (isWhole() ? "" : " piece " + offset + "+" + length + (last ? " last" : "")) + " engine=" + engine + "]";
    }
}

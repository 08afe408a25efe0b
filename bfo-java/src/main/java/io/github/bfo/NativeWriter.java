/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** BatchFileWriter on a native bfo_writer: one bfo_writer_write per batch. */
final class NativeWriter implements BatchFileWriter.Impl {
    private Pointer w;
    private final String engine;
    private final Memory opts = new Memory(BfoNative.WOPTS_SIZE);
    private Memory staging;
    private int lastOwnerStatus;    // of the last piece written whole (piece, more false)
    private final ByteBuffer statsBuf = BfoNative.direct(BfoNative.WSTATS_SIZE);
    private WriteStats lastStats;

    NativeWriter(BatchFileWriter.Builder b) throws IOException {
        if (b.createRoot) {
            Files.createDirectories(b.root);   // as the library would; gives the JDK's exceptions for a bad root
        }
        opts.clear();
        opts.setInt(BfoNative.WOPTS_size, BfoNative.WOPTS_SIZE);
        int flags = (b.replace ? BfoNative.WRITE_REPLACE : 0) | (b.stopOnError ? BfoNative.WRITE_STOP_ON_ERROR : 0)
                | (b.createRoot ? 0 : BfoNative.WRITE_NO_MKROOT);
        opts.setInt(BfoNative.WOPTS_flags, flags);
        opts.setInt(BfoNative.WOPTS_engine, BfoNative.code(b.engine));
        opts.setInt(BfoNative.WOPTS_durability, BfoNative.code(b.durability));
        opts.setInt(BfoNative.WOPTS_threads, b.threads);
        PointerByReference ref = new PointerByReference();
        Memory root = BfoNative.cString(PathBytes.of(b.root));
        int r = BfoNative.bfo_writer_open(ref, root, opts);
        if (r < 0) {
            if (r == -Errno.EOPNOTSUPP) {
                throw new IOException("cannot open a writer on " + b.root + ": the stem engine needs a file system "
                        + "that shares blocks (XFS with reflink, btrfs)");
            }
            throw Errno.generic(r, b.root.toString(), null);
        }
        w = ref.getValue();
        engine = BfoNative.wengineName(readStats().getInt(BfoNative.WSTATS_engine));
    }

    @Override
    public String engineName() {
        return engine;
    }

    private ByteBuffer readStats() {
        BfoNative.bfo_writer_stats(w, BfoNative.pointer(statsBuf));
        return statsBuf;
    }

    @Override
    public WriteStats stats() {
        if (w == null) {
            return lastStats;
        }
        return WriteStats.fromNative(readStats());
    }

    private static long align8(long n) {
        return (n + 7) & ~7L;
    }

    /** Fills one 128-byte bfo_wentry at base (everything but path/data pointers). */
    private static void fillEntry(ByteBuffer m, int base, WriteEntry e, int type, long pathAddr, long dataAddr,
                                  long length, long offset, int extraFlags) {
        for (int k = 0; k < BfoNative.WENTRY_SIZE; k += 8) {
            m.putLong(base + k, 0);
        }
        m.putLong(base + BfoNative.WE_path, pathAddr);
        m.putLong(base + BfoNative.WE_data, dataAddr);
        m.putLong(base + BfoNative.WE_length, length);
        m.putLong(base + BfoNative.WE_offset, offset);
        m.putInt(base + BfoNative.WE_type, type);
        m.putInt(base + BfoNative.WE_mode, e.mode != WriteEntry.UNSET ? e.mode : WriteEntry.defaultMode(e.type));
        int flags = extraFlags;
        if (e.uid != WriteEntry.UNSET) {
            flags |= BfoNative.WENTRY_OWNER;
            m.putInt(base + BfoNative.WE_uid, e.uid);
            m.putInt(base + BfoNative.WE_gid, e.gid);
        }
        if (e.hasTimes()) {
            flags |= BfoNative.WENTRY_TIMES;
            long mt = e.effMtime(), at = e.effAtime();
            m.putLong(base + BfoNative.WE_mtime_sec, Math.floorDiv(mt, 1_000_000_000L));
            m.putInt(base + BfoNative.WE_mtime_nsec, (int) Math.floorMod(mt, 1_000_000_000L));
            m.putLong(base + BfoNative.WE_atime_sec, Math.floorDiv(at, 1_000_000_000L));
            m.putInt(base + BfoNative.WE_atime_nsec, (int) Math.floorMod(at, 1_000_000_000L));
        }
        m.putInt(base + BfoNative.WE_flags, flags);
    }

    private Memory staging(long bytes) {
        if (staging == null || staging.size() < bytes) {
            if (staging != null) {
                staging.close();
            }
            staging = new Memory(Math.max(bytes, 1 << 16));
        }
        return staging;
    }

    @Override
    public int writeBatch(List<WriteEntry> entries, int from, int to, WriteResult[] out) {
        int n = to - from;
        long need = (long) n * BfoNative.WENTRY_SIZE;
        for (int i = from; i < to; i++) {
            WriteEntry e = entries.get(i);
            need += align8(e.pathBytes.length + 1L) + (e.target != null ? align8(e.target.length + 1L) : 0);
            if (e.type == WriteEntry.Type.FILE && (e.buffer == null || !e.buffer.isDirect())) {
                need += align8(e.length());
            }
        }
        Memory mem = staging(need);
        long baseAddr = Pointer.nativeValue(mem);
        ByteBuffer m = mem.getByteBuffer(0, need).order(BfoNative.ORDER);
        List<ByteBuffer> keep = new ArrayList<>();
        long off = (long) n * BfoNative.WENTRY_SIZE;
        for (int i = from; i < to; i++) {
            WriteEntry e = entries.get(i);
            int base = (i - from) * BfoNative.WENTRY_SIZE;
            long pathAddr = baseAddr + off;
            m.position((int) off);
            m.put(e.pathBytes).put((byte) 0);
            off += align8(e.pathBytes.length + 1L);
            long dataAddr = 0, length = 0;
            if (e.type == WriteEntry.Type.FILE) {
                length = e.length();
                if (e.buffer != null && e.buffer.isDirect()) {
                    dataAddr = length == 0 ? 0 : Pointer.nativeValue(Native.getDirectBufferPointer(e.buffer))
                            + e.buffer.position();
                    keep.add(e.buffer);
                } else if (length > 0) {
                    dataAddr = baseAddr + off;
                    m.position((int) off);
                    if (e.buffer != null) {
                        m.put(e.buffer.duplicate());
                    } else {
                        m.put(e.array, e.arrayOff, e.arrayLen);
                    }
                    off += align8(length);
                }
            } else if (e.target != null) {
                dataAddr = baseAddr + off;
                m.position((int) off);
                m.put(e.target).put((byte) 0);
                off += align8(e.target.length + 1L);
            }
            fillEntry(m, base, e, BfoNative.code(e.type), pathAddr, dataAddr, length, 0, 0);
        }
        int r = BfoNative.bfo_writer_write(w, mem, n);
        Reference.reachabilityFence(keep);
        for (int i = from; i < to; i++) {
            int base = (i - from) * BfoNative.WENTRY_SIZE;
            int st = m.getInt(base + BfoNative.WE_status);
            int eng = m.getShort(base + BfoNative.WE_engine) & 0xffff;
            WriteEntry e = entries.get(i);
            out[i] = new WriteResult(e, st, st == 0 ? null : Errno.forWrite(st, e.display, e.targetDisplay),
                    BfoNative.wengineName(eng), st == 0 ? m.getInt(base + BfoNative.WE_owner_status) : 0);
        }
        return r;
    }

    @Override
    public int lastOwnerStatus() {
        return lastOwnerStatus;
    }

    @Override
    public ByteBuffer pieceBuffer(int bytes) {
        return BfoNative.direct(bytes);
    }

    @Override
    public int piece(WriteEntry t, ByteBuffer data, long offset, boolean more, boolean abort) {
        long need = BfoNative.WENTRY_SIZE + align8(t.pathBytes.length + 1L);
        Memory mem = staging(need);
        long baseAddr = Pointer.nativeValue(mem);
        ByteBuffer m = mem.getByteBuffer(0, need).order(BfoNative.ORDER);
        m.position(BfoNative.WENTRY_SIZE);
        m.put(t.pathBytes).put((byte) 0);
        int len = data.remaining();
        long dataAddr = len == 0 ? 0 : Pointer.nativeValue(Native.getDirectBufferPointer(data)) + data.position();
        fillEntry(m, 0, t, BfoNative.WTYPE_FILE, baseAddr + BfoNative.WENTRY_SIZE, dataAddr, len, offset,
                (more ? BfoNative.WENTRY_MORE : 0) | (abort ? BfoNative.WENTRY_ABORT : 0));
        int r = BfoNative.bfo_writer_write(w, mem, 1);
        Reference.reachabilityFence(data);
        int st = m.getInt(BfoNative.WE_status);
        lastOwnerStatus = st == 0 && !more ? m.getInt(BfoNative.WE_owner_status) : 0;
        return r < 0 && st == 0 ? r : st;
    }

    @Override
    public void close() throws IOException {
        if (w == null) {
            return;
        }
        lastStats = WriteStats.fromNative(readStats());
        int r = BfoNative.bfo_writer_close(w);
        w = null;
        if (staging != null) {
            staging.close();
            staging = null;
        }
        if (r < 0) {
            throw Errno.generic(r, "bfo_writer_close", null);
        }
    }

    static BatchFileWriter.RecoverStats recover(Path root) throws IOException {
        Memory st = new Memory(BfoNative.RSTATS_SIZE);
        st.clear();
        int r = BfoNative.bfo_journal_recover(BfoNative.cString(PathBytes.of(root)), st);
        if (r < 0) {
            throw Errno.generic(r, root.toString(), null);
        }
        return new BatchFileWriter.RecoverStats(st.getLong(0), st.getLong(8), st.getLong(16), st.getLong(24));
    }
}

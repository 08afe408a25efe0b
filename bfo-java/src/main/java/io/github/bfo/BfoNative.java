/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Callback;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The only binding to libbfo: JNA direct mapping ({@link Native#register}) of
 * the functions of {@code bfo.h}, the fixed struct layouts as byte offsets,
 * and the loader.
 *
 * <p>Calls are coarse: one per batch or window (paths go in as one buffer of
 * NUL-terminated strings, results come back as arrays of 160-byte
 * {@code struct bfo_file} in one direct buffer, writer entries go out as an
 * array of 128-byte {@code struct bfo_wentry}); nothing here is called once
 * per file. Pointers are JNA {@link Pointer}s; {@code size_t}, {@code long}
 * and {@code uint64_t} are Java {@code long} (LP64 Linux only: the jar packs
 * the library for linux-x86-64 and linux-aarch64).
 *
 * <p>Loading order: {@code -Dbfo.library.path=DIR} (a directory holding
 * libbfo.so, or the file itself; only there when set), else the copy inside
 * the jar (JNA's resource prefix, e.g. {@code linux-x86-64/libbfo.so},
 * extracted by JNA), else the system's search path ({@code libbfo.so.0}).
 * The first library that loads, has {@link #EXPECTED_MAJOR}.{@link
 * #EXPECTED_MINOR} as its version and exports every function wins; when none
 * does, {@link #unavailableReason()} names every place tried and why.
 * {@code -Dbfo.native=false} skips loading altogether.
 */
final class BfoNative {
    /** The libbfo version this jar is written against: BFO_VERSION_MAJOR/MINOR of bfo.h (a test keeps them in step). */
    static final int EXPECTED_MAJOR = 0;
    static final int EXPECTED_MINOR = 1;

    static final ByteOrder ORDER = ByteOrder.nativeOrder();

    // ---------------------------------------------------------------- system properties read by bfo-java
    /** false (or 0, no): libbfo is not loaded, the Java engines run. */
    static final String NATIVE_PROPERTY = "bfo.native";
    /** Directories holding libbfo.so (or the file itself), separated by File.pathSeparator: only there when set. */
    static final String LIBRARY_PATH_PROPERTY = "bfo.library.path";
    /** Idle native read contexts kept, at most (default: 2 x available processors, at least 4; 0: no pooling). */
    static final String POOL_MAX_IDLE_PROPERTY = "bfo.contextPool.maxIdle";
    /** Milliseconds an idle native read context is kept (default 60,000). */
    static final String POOL_IDLE_TIMEOUT_PROPERTY = "bfo.contextPool.idleTimeoutMs";
    /** The JDK's: the charset it encodes file names with (PathBytes gives the kernel the same bytes). */
    static final String JNU_ENCODING_PROPERTY = "sun.jnu.encoding";

    // ---------------------------------------------------------------- enum codes and their names (bfo.h)
    // Each Java enum has one mapping to its C enum, here; the names are bfo_engine_name/bfo_wengine_name's,
    // known without a native call (statistics are read per batch, the Java engines have no library).

    /** enum bfo_engine, by code. */
    static final String[] ENGINE_NAMES = {"auto", "raw", "uring", "portable", "none"};
    static final int ENGINE_AUTO = 0, ENGINE_RAW = 1, ENGINE_URING = 2, ENGINE_PORTABLE = 3, ENGINE_NONE = 4;
    /** enum bfo_order. */
    static final int ORDER_AUTO = 0, ORDER_INODE = 1, ORDER_PHYSICAL = 2;
    /** enum bfo_wengine, by code. */
    static final String[] WENGINE_NAMES = {"auto", "stem", "batched", "uring"};
    static final int WENGINE_AUTO = 0, WENGINE_STEM = 1, WENGINE_BATCHED = 2, WENGINE_URING = 3;
    /** enum bfo_durability. */
    static final int DURABILITY_BATCH = 0, DURABILITY_NONE = 1, DURABILITY_EACH = 2, DURABILITY_CLOSE = 3;

    /** The read engine's enum bfo_engine (JAVA never reaches the library). */
    static int code(BatchFileReader.Engine e) {
        switch (e) {
            case AUTO: return ENGINE_AUTO;
            case RAW: return ENGINE_RAW;
            case URING: return ENGINE_URING;
            case PORTABLE: return ENGINE_PORTABLE;
            default: throw new IllegalArgumentException("no native read engine: " + e);
        }
    }

    static int code(BatchFileReader.Order o) {
        switch (o) {
            case AUTO: return ORDER_AUTO;
            case INODE: return ORDER_INODE;
            case PHYSICAL: return ORDER_PHYSICAL;
            default: throw new IllegalArgumentException("no native order: " + o);
        }
    }

    /** The write engine's enum bfo_wengine (JAVA never reaches the library). */
    static int code(BatchFileWriter.Engine e) {
        switch (e) {
            case AUTO: return WENGINE_AUTO;
            case STEM: return WENGINE_STEM;
            case BATCHED: return WENGINE_BATCHED;
            case URING: return WENGINE_URING;
            default: throw new IllegalArgumentException("no native write engine: " + e);
        }
    }

    static int code(BatchFileWriter.Durability d) {
        switch (d) {
            case BATCH: return DURABILITY_BATCH;
            case NONE: return DURABILITY_NONE;
            case EACH: return DURABILITY_EACH;
            case CLOSE: return DURABILITY_CLOSE;
            default: throw new IllegalArgumentException("no native durability: " + d);
        }
    }

    /** An entry's enum bfo_wtype. */
    static int code(WriteEntry.Type t) {
        switch (t) {
            case FILE: return WTYPE_FILE;
            case DIRECTORY: return WTYPE_DIR;
            case SYMLINK: return WTYPE_SYMLINK;
            case HARDLINK: return WTYPE_HARDLINK;
            case FIFO: return WTYPE_FIFO;
            default: throw new IllegalArgumentException("no native entry type: " + t);
        }
    }

    /** A read engine's name by its enum bfo_engine code, "?" for a code this jar does not know. */
    static String engineName(int code) {
        return code >= 0 && code < ENGINE_NAMES.length ? ENGINE_NAMES[code] : "?";
    }

    /** A write engine's name by its enum bfo_wengine code, "?" for a code this jar does not know. */
    static String wengineName(int code) {
        return code >= 0 && code < WENGINE_NAMES.length ? WENGINE_NAMES[code] : "?";
    }

    // ---------------------------------------------------------------- struct bfo_opts (144 bytes)
    static final int OPTS_SIZE = 144;
    static final int OPTS_size = 0, OPTS_flags = 4, OPTS_engine = 8, OPTS_order = 12, OPTS_window_files = 16,
            OPTS_queue_depth = 20, OPTS_threads = 24, OPTS_window_bytes = 32, OPTS_arena_bytes = 40,
            OPTS_merge_gap = 48, OPTS_max_io = 56, OPTS_large_extent = 64, OPTS_large_file = 72;
    static final int READ_NOFOLLOW = 1, READ_STOP_ON_ERROR = 2, READ_METADATA_ONLY = 4;

    // ---------------------------------------------------------------- struct bfo_file (160 bytes)
    static final int FILE_SIZE = 160;
    static final int FILE_index = 0, FILE_path = 8, FILE_data = 16, FILE_offset = 24, FILE_length = 32,
            FILE_size = 40, FILE_mtime_sec = 48, FILE_ctime_sec = 56, FILE_atime_sec = 64, FILE_ino = 72,
            FILE_dev = 80, FILE_cookie = 88, FILE_mtime_nsec = 96, FILE_ctime_nsec = 100, FILE_atime_nsec = 104,
            FILE_mode = 108, FILE_uid = 112, FILE_gid = 116, FILE_nlink = 120, FILE_status = 124,
            FILE_engine = 128, FILE_flags = 130;
    static final int FILE_LAST = 1;

    // ---------------------------------------------------------------- struct bfo_stats (224 bytes)
    static final int STATS_SIZE = 224;
    static final int STATS_files = 0, STATS_files_ok = 8, STATS_files_failed = 16, STATS_bytes = 24,
            STATS_device_bytes = 32, STATS_ios = 40, STATS_regions = 48, STATS_extents = 56, STATS_gap_bytes = 64,
            STATS_fallback_files = 72, STATS_windows = 80, STATS_ns_meta = 88, STATS_ns_data = 96,
            STATS_ns_total = 104, STATS_engine = 112, STATS_engines = 116, STATS_files_by_engine = 120,
            STATS_files_rawmeta = 168;

    // ---------------------------------------------------------------- struct bfo_write_opts (88 bytes)
    static final int WOPTS_SIZE = 88;
    static final int WOPTS_size = 0, WOPTS_flags = 4, WOPTS_engine = 8, WOPTS_durability = 12, WOPTS_threads = 16,
            WOPTS_queue_depth = 20;
    static final int WRITE_REPLACE = 1, WRITE_STOP_ON_ERROR = 2, WRITE_NO_MKROOT = 8;

    // ---------------------------------------------------------------- struct bfo_wentry (128 bytes)
    static final int WENTRY_SIZE = 128;
    static final int WE_path = 0, WE_data = 8, WE_length = 16, WE_offset = 24, WE_rdev = 32, WE_atime_sec = 40,
            WE_mtime_sec = 48, WE_atime_nsec = 56, WE_mtime_nsec = 60, WE_type = 64, WE_mode = 68, WE_uid = 72,
            WE_gid = 76, WE_flags = 80, WE_status = 84, WE_engine = 88, WE_owner_status = 92, WE_xattrs = 96,
            WE_xattrs_len = 104;
    static final int WTYPE_FILE = 0, WTYPE_DIR = 1, WTYPE_SYMLINK = 2, WTYPE_HARDLINK = 3, WTYPE_FIFO = 4,
            WTYPE_CHR = 5, WTYPE_BLK = 6, WTYPE_SOCK = 7;
    static final int WENTRY_OWNER = 1, WENTRY_TIMES = 2, WENTRY_MORE = 4, WENTRY_ABORT = 8;

    // ---------------------------------------------------------------- struct bfo_write_stats (152 bytes)
    static final int WSTATS_SIZE = 152;
    static final int WSTATS_batches = 0, WSTATS_files = 8, WSTATS_failed = 16, WSTATS_bytes = 24, WSTATS_syncs = 32,
            WSTATS_clones = 40, WSTATS_ns_manifest = 48, WSTATS_ns_data = 56, WSTATS_ns_meta = 64,
            WSTATS_ns_sync = 72, WSTATS_engine = 80;

    // ---------------------------------------------------------------- struct bfo_recover_stats (64 bytes)
    static final int RSTATS_SIZE = 64;

    // ---------------------------------------------------------------- struct bfo_copy_stats (144 bytes)
    static final int CSTATS_SIZE = 144;
    static final int CSTATS_files = 0, CSTATS_others = 8, CSTATS_bytes = 16, CSTATS_errors = 24, CSTATS_batches = 32,
            CSTATS_ns_total = 40, CSTATS_read_engine = 48, CSTATS_write_engine = 52;
    static final int COPY_ARCHIVE = 1, COPY_REPLACE = 2;
    static final int WALK_NOFOLLOW = 1, WALK_LISTINGS = 4;

    // ---------------------------------------------------------------- struct bfo_copy_callbacks (24 bytes)
    static final int CB_SIZE = 24;
    static final int CB_error = 0, CB_progress = 8, CB_arg = 16;

    // ---------------------------------------------------------------- functions (bfo.h)
    static native int bfo_version();
    static native void bfo_opts_init(Pointer opts);
    static native int bfo_ctx_create(PointerByReference ctx, Pointer opts);
    static native void bfo_ctx_destroy(Pointer ctx);
    static native int bfo_ctx_reset(Pointer ctx);
    static native int bfo_ctx_describe(Pointer ctx, Pointer buf, long len);
    static native int bfo_read_submit(Pointer ctx, Pointer paths, int n);
    static native long bfo_read_submit_packed(Pointer ctx, Pointer buf, long len);
    static native int bfo_read_finish(Pointer ctx);
    static native int bfo_read_wait(Pointer ctx, Pointer files, int max, int timeoutMs);
    static native int bfo_read_release(Pointer ctx, Pointer files, int n);
    static native int bfo_read_cancel(Pointer ctx);
    static native int bfo_read_stats(Pointer ctx, Pointer stats);
    static native Pointer bfo_engine_name(int engine);
    static native Pointer bfo_strerror(int status);

    static native int bfo_writer_open(PointerByReference w, Pointer root, Pointer opts);
    static native int bfo_writer_write(Pointer w, Pointer entries, int n);
    static native int bfo_writer_stats(Pointer w, Pointer stats);
    static native int bfo_writer_close(Pointer w);
    static native int bfo_journal_recover(Pointer root, Pointer stats);
    static native Pointer bfo_wengine_name(int engine);

    static native int bfo_copier_create(PointerByReference c, Pointer ropts, Pointer wopts, int flags, Pointer cb);
    static native int bfo_copier_run(Pointer c, Pointer srcs, int n, Pointer dst);
    static native int bfo_copier_stats(Pointer c, Pointer stats);
    static native int bfo_copier_cancel(Pointer c);
    static native void bfo_copier_destroy(Pointer c);

    static native int bfo_walk_start(PointerByReference w, Pointer root, long sortFiles, int flags);
    static native long bfo_walk_next(Pointer w, Pointer buf, long len);
    static native int bfo_walk_failure(Pointer w, Pointer buf, long len, IntByReference status);
    static native int bfo_walk_stats(Pointer w, Pointer stats);
    static native void bfo_walk_destroy(Pointer w);
    static native int bfo_walk_share(Pointer w, Pointer ctx);

    /** void (*error)(void *arg, const char *path, int status) */
    interface ErrorCallback extends Callback {
        void invoke(Pointer arg, Pointer path, int status);
    }

    /** void (*progress)(void *arg, const struct bfo_copy_stats *stats) */
    interface ProgressCallback extends Callback {
        void invoke(Pointer arg, Pointer stats);
    }

    // ---------------------------------------------------------------- loading
    private static final String UNAVAILABLE;
    private static final String LOCATION;
    private static final int VERSION;

    static {
        String[] where = new String[1];
        int[] version = new int[1];
        String reason;
        try {
            reason = load(where, version);
        } catch (Throwable t) {   // JNA itself may not load here (no jnidispatch for this platform...)
            reason = "JNA cannot run here: " + t;
        }
        UNAVAILABLE = reason;
        LOCATION = where[0];
        VERSION = version[0];
    }

    private BfoNative() {
    }

    /** True when libbfo is loaded and registered. */
    static boolean available() {
        return UNAVAILABLE == null;
    }

    /** Why libbfo is not in use (every place tried), or null when it is. */
    static String unavailableReason() {
        return UNAVAILABLE;
    }

    /** Where the library was loaded from, or null. */
    static String location() {
        return LOCATION;
    }

    /** bfo_version() of the loaded library, or 0. */
    static int version() {
        return VERSION;
    }

    static String versionString(int v) {
        return (v / 10000) + "." + (v / 100 % 100) + "." + (v % 100);
    }

    private static String load(String[] where, int[] version) {
        String prop = System.getProperty(NATIVE_PROPERTY, "true").trim();
        if (prop.equalsIgnoreCase("false") || prop.equals("0") || prop.equalsIgnoreCase("no")) {
            return "native library disabled by -Dbfo.native=" + prop;
        }
        List<String> tried = new ArrayList<>();
        String override = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (override != null && !override.isBlank()) {
            for (String dir : override.split(File.pathSeparator)) {
                if (dir.isBlank()) {
                    continue;
                }
                File d = new File(dir.trim());
                List<File> candidates = d.isFile() ? List.of(d)
                        : List.of(new File(d, "libbfo.so"), new File(d, "libbfo.so.0"));
                for (File f : candidates) {
                    String desc = "-Dbfo.library.path: " + f.getAbsolutePath();
                    if (!f.exists()) {
                        tried.add(desc + ": no such file");
                        continue;
                    }
                    if (attempt(desc, f.getAbsolutePath(), tried, where, version)) {
                        return null;
                    }
                }
            }
            return "libbfo could not be loaded (only -Dbfo.library.path=" + override + " was tried): "
                    + String.join("; ", tried);
        }

        // The jar's copy, under JNA's resource prefix.
        String resource = Platform.RESOURCE_PREFIX + "/" + System.mapLibraryName("bfo");
        File extracted = null;
        boolean temporary = false;
        ClassLoader loader = BfoNative.class.getClassLoader();
        try {
            java.net.URL url = loader == null ? null : loader.getResource(resource);
            temporary = url != null && !"file".equals(url.getProtocol());
            extracted = Native.extractFromResourcePath("bfo", loader);
        } catch (Throwable e) {
            tried.add("class path resource " + resource + ": " + message(e));
        }
        if (extracted != null) {
            try {
                if (attempt("class path resource " + resource, extracted.getAbsolutePath(), tried, where, version)) {
                    return null;
                }
            } finally {
                if (temporary) {
                    extracted.delete();   // mapped already (or useless): the extracted copy is not needed
                }
            }
        }

        // The system's search path (LD_LIBRARY_PATH, ld.so.cache, /usr/lib...).
        for (String name : new String[] {"libbfo.so.0", "libbfo.so"}) {
            if (attempt("system library " + name, name, tried, where, version)) {
                return null;
            }
        }
        return "libbfo could not be loaded; tried: " + String.join("; ", tried);
    }

    private static boolean attempt(String desc, String name, List<String> tried, String[] where, int[] version) {
        NativeLibrary lib;
        try {
            lib = NativeLibrary.getInstance(name);
        } catch (Throwable e) {
            tried.add(desc + ": " + message(e));
            return false;
        }
        try {
            int v = lib.getFunction("bfo_version").invokeInt(new Object[0]);
            if (v / 10000 != EXPECTED_MAJOR || v / 100 % 100 != EXPECTED_MINOR) {
                tried.add(desc + ": version " + versionString(v) + ", this jar needs " + EXPECTED_MAJOR + "."
                        + EXPECTED_MINOR + ".x");
                lib.close();
                return false;
            }
            Native.register(BfoNative.class, lib);
            where[0] = desc + " (" + lib.getFile() + ")";
            version[0] = v;
            return true;
        } catch (Throwable e) {
            tried.add(desc + ": " + message(e));
            try {
                Native.unregister(BfoNative.class);
            } catch (Throwable ignored) {
                // nothing registered
            }
            lib.close();
            return false;
        }
    }

    private static String message(Throwable e) {
        String m = e.getMessage();
        if (m == null) {
            return e.getClass().getName();
        }
        return m.replace(System.lineSeparator(), " ").replace('\n', ' ').trim();
    }

    // ---------------------------------------------------------------- helpers

    private static final Map<Integer, String> STRERROR = new ConcurrentHashMap<>();

    /** bfo_strerror text, one native call per distinct status. */
    static String strerror(int status) {
        return STRERROR.computeIfAbsent(status, s -> {
            Pointer p = bfo_strerror(s);
            return p == null ? "error " + s : p.getString(0, "UTF-8");
        });
    }

    /** A direct buffer in native byte order. */
    static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ORDER);
    }

    static Pointer pointer(ByteBuffer direct) {
        return Native.getDirectBufferPointer(direct);
    }

    /** A NUL-terminated copy of bytes in native memory. */
    static Memory cString(byte[] bytes) {
        Memory m = new Memory(bytes.length + 1L);
        m.write(0, bytes, 0, bytes.length);
        m.setByte(bytes.length, (byte) 0);
        return m;
    }

    static String cStringUtf8(Pointer p) {
        return p == null ? null : p.getString(0, StandardCharsets.UTF_8.name());
    }
}

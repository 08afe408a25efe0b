/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import com.sun.jna.Memory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Loading libbfo, the version check, the fixed layouts, and the errno mapping. */
class LoaderTest {
    @TempDir
    Path dir;

    @Test
    void versionConstantsMatchTheHeader() throws IOException {
        Path h = Path.of(System.getProperty("user.dir")).resolve("../bfo-native/include/bfo.h");
        Assumptions.assumeTrue(Files.exists(h), "bfo.h not beside this module");
        String s = Files.readString(h);
        assertEquals(BfoNative.EXPECTED_MAJOR, define(s, "BFO_VERSION_MAJOR"));
        assertEquals(BfoNative.EXPECTED_MINOR, define(s, "BFO_VERSION_MINOR"));
        if (Bfo.isNativeAvailable()) {
            assertEquals(BfoNative.EXPECTED_MAJOR + "." + BfoNative.EXPECTED_MINOR + "." + define(s, "BFO_VERSION_PATCH"),
                    Bfo.nativeVersion().orElseThrow());
        }
    }

    private static int define(String header, String name) {
        Matcher m = Pattern.compile("#define\\s+" + name + "\\s+(\\d+)").matcher(header);
        assertTrue(m.find(), name);
        return Integer.parseInt(m.group(1));
    }

    @Test
    void loadedAsExpected() {
        if (TestSupport.expectNative()) {
            assertTrue(Bfo.isNativeAvailable(), Bfo.nativeUnavailableReason().orElse(""));
            assertTrue(Bfo.nativeLocation().orElseThrow().contains("libbfo"), Bfo.nativeLocation().orElseThrow());
        } else {
            assertFalse(Bfo.isNativeAvailable());
            assertTrue(Bfo.nativeUnavailableReason().isPresent());
        }
        if ("false".equals(System.getProperty("bfo.native"))) {
            assertTrue(Bfo.nativeUnavailableReason().orElseThrow().contains("-Dbfo.native=false"));
        }
    }

    @Test
    void layoutsMatchTheLibrary() {
        Assumptions.assumeTrue(Bfo.isNativeAvailable());
        Memory o = new Memory(BfoNative.OPTS_SIZE);
        o.clear();
        BfoNative.bfo_opts_init(o);
        assertEquals(BfoNative.OPTS_SIZE, o.getInt(BfoNative.OPTS_size));
        assertEquals(65536, o.getInt(BfoNative.OPTS_window_files));
        assertEquals(128, o.getInt(BfoNative.OPTS_queue_depth));
        assertEquals(16, o.getInt(BfoNative.OPTS_threads));
        assertEquals(16L << 20, o.getLong(BfoNative.OPTS_window_bytes));
        assertEquals(64L << 20, o.getLong(BfoNative.OPTS_arena_bytes));
        assertEquals(64L << 10, o.getLong(BfoNative.OPTS_merge_gap));
        assertEquals(1L << 20, o.getLong(BfoNative.OPTS_max_io));
        assertEquals(1L << 20, o.getLong(BfoNative.OPTS_large_extent));
        assertEquals(16L << 20, o.getLong(BfoNative.OPTS_large_file));
        assertEquals("uring", BfoNative.engineName(2));
        assertEquals("batched", BfoNative.wengineName(2));
        assertEquals("file changed while it was being read", BfoNative.strerror(-Errno.ESTALE));
        assertEquals("No such file or directory", BfoNative.strerror(-Errno.ENOENT));
    }

    /** BfoNative's enum codes and names are bfo.h's: every name as the library spells it, one past the end unknown. */
    @Test
    void enumCodesMatchTheLibrary() {
        Assumptions.assumeTrue(Bfo.isNativeAvailable());
        for (int c = 0; c <= BfoNative.ENGINE_NAMES.length; c++) {
            assertEquals(BfoNative.cStringUtf8(BfoNative.bfo_engine_name(c)), BfoNative.engineName(c), "engine " + c);
        }
        for (int c = 0; c <= BfoNative.WENGINE_NAMES.length; c++) {
            assertEquals(BfoNative.cStringUtf8(BfoNative.bfo_wengine_name(c)), BfoNative.wengineName(c),
                    "write engine " + c);
        }
        for (BatchFileReader.Engine e : BatchFileReader.Engine.values()) {
            if (e != BatchFileReader.Engine.JAVA) {
                assertEquals(e.name().toLowerCase(java.util.Locale.ROOT), BfoNative.engineName(BfoNative.code(e)));
            }
        }
        for (BatchFileWriter.Engine e : BatchFileWriter.Engine.values()) {
            if (e != BatchFileWriter.Engine.JAVA) {
                assertEquals(e.name().toLowerCase(java.util.Locale.ROOT), BfoNative.wengineName(BfoNative.code(e)));
            }
        }
        assertEquals(BfoNative.DURABILITY_CLOSE, BfoNative.code(BatchFileWriter.Durability.CLOSE));
    }

    @Test
    void errnoMapping() {
        assertInstanceOf(NoSuchFileException.class, Errno.forRead(-Errno.ENOENT, "/p", 0, false));
        assertInstanceOf(AccessDeniedException.class, Errno.forRead(-Errno.EACCES, "/p", 0, false));
        assertInstanceOf(AccessDeniedException.class, Errno.forRead(-Errno.EPERM, "/p", 0, false));
        assertInstanceOf(NotDirectoryException.class, Errno.forRead(-Errno.ENOTDIR, "/p", 0, false));
        IOException inval = Errno.forRead(-Errno.EINVAL, "/p", 0010000, false);
        assertEquals(FileSystemException.class, inval.getClass());
        assertTrue(inval.getMessage().contains("not a regular file (it is a FIFO)"), inval.getMessage());
        assertTrue(Errno.forRead(-Errno.ESTALE, "/p", 0, false).getMessage().contains("changed while it was being read"));
        assertTrue(Errno.forRead(-Errno.ELOOP, "/p", 0, true).getMessage().contains("symbolic link"));
        IOException eio = Errno.forRead(-Errno.EIO, "/p", 0, false);
        assertEquals(FileSystemException.class, eio.getClass());
        assertTrue(eio.getMessage().contains("Input/output error"), eio.getMessage());
        assertEquals("/p", ((FileSystemException) eio).getFile());
        assertInstanceOf(FileAlreadyExistsException.class, Errno.forWrite(-Errno.EEXIST, "a", null));
        assertTrue(Errno.forWrite(-Errno.EINVAL, "../a", null).getMessage().contains("escape"));
        assertTrue(Errno.forWrite(-Errno.ENOSPC, "a", null).getMessage().contains("No space left on device"));
        assertTrue(Errno.forWrite(-Errno.EDQUOT, "a", null).getMessage().contains("quota"));
        // the JDK's exceptions back to statuses (the Java engines)
        assertEquals(-Errno.ENOENT, Errno.fromException(new NoSuchFileException("x")));
        assertEquals(-Errno.EACCES, Errno.fromException(new AccessDeniedException("x")));
        assertEquals(-Errno.ENOTDIR, Errno.fromException(new FileSystemException("x", null, "Not a directory")));
        assertEquals(-Errno.ELOOP, Errno.fromException(new FileSystemException("x", null,
                "Too many levels of symbolic links or unable to access attributes of symbolic link")));
        assertEquals(-Errno.EIO, Errno.fromException(new IOException("?")));
    }

    /** A -Dbfo.library.path that does not hold the library: every place tried is named, the Java engine serves. */
    @Test
    void badLibraryPathIsReportedAndFallsBack() throws Exception {
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp"));
        String out = TestSupport.child(List.of(), List.of("-Dbfo.library.path=" + dir.resolve("nothing-here")),
                cp.resolve("classes") + ":" + cp.resolve("jna.jar"), "io.github.bfo.ChildProbe", "load");
        assertTrue(out.contains("native=false"), out);
        assertTrue(out.contains(dir.resolve("nothing-here").resolve("libbfo.so") + ": no such file"), out);
        assertTrue(out.contains("engine=java"), out);
        // logged once per JVM, not once per reader
        assertEquals(1, count(out, "using the portable Java engines"), out);
    }

    /** No library in the class path and none on the system: the message names both places. */
    @Test
    void missingResourceIsReported() throws Exception {
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp2"));
        for (String plat : new String[] {"linux-x86-64", "linux-aarch64"}) {
            Path lib = cp.resolve("classes").resolve(plat).resolve("libbfo.so");
            Files.deleteIfExists(lib);
        }
        String out = TestSupport.child(List.of(), List.of(), cp.resolve("classes") + ":" + cp.resolve("jna.jar"),
                "io.github.bfo.ChildProbe", "load");
        assertTrue(out.contains("native=false"), out);
        assertTrue(out.contains("class path resource"), out);
        assertTrue(out.contains("system library libbfo.so.0"), out);
        assertTrue(out.contains("engine=java"), out);
    }

    /** A library of another version is refused, with both versions in the message. */
    @Test
    void versionMismatchIsRefused() throws Exception {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/cc")), "no C compiler");
        Path src = dir.resolve("fake.c");
        Files.writeString(src, "int bfo_version(void) { return 909; }\n");
        Path lib = dir.resolve("fake").resolve("libbfo.so");
        Files.createDirectories(lib.getParent());
        Process p = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", lib.toString(), src.toString()).inheritIO().start();
        assertEquals(0, p.waitFor());
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp4"));
        String out = TestSupport.child(List.of(), List.of("-Dbfo.library.path=" + lib.getParent()),
                cp.resolve("classes") + ":" + cp.resolve("jna.jar"), "io.github.bfo.ChildProbe", "load");
        assertTrue(out.contains("native=false"), out);
        assertTrue(out.contains("version 0.9.9, this jar needs " + BfoNative.EXPECTED_MAJOR + "." + BfoNative.EXPECTED_MINOR
                + ".x"), out);
        assertTrue(out.contains("engine=java"), out);
    }

    /** -Dbfo.library.path pointing at the build's library loads it. */
    @Test
    void libraryPathOverride() throws Exception {
        Assumptions.assumeTrue(TestSupport.expectNative());
        Path built = Path.of(Bfo.nativeLocation().orElseThrow().replaceAll(".*\\((.*)\\)$", "$1"));
        Path cp = ChildProbe.publicClassPath(dir.resolve("cp3"));
        String out = TestSupport.child(List.of(), List.of("-Dbfo.library.path=" + built.getParent()),
                cp.resolve("classes") + ":" + cp.resolve("jna.jar"), "io.github.bfo.ChildProbe", "load");
        assertTrue(out.contains("native=true"), out);
        assertTrue(out.contains("engine=auto"), out);
    }

    private static int count(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
            n++;
        }
        return n;
    }
}

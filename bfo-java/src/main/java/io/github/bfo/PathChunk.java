/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Paths as the kernel takes them, each NUL-terminated, laid end to end: a
 * buffer of libbfo's walk, or the array given to
 * {@link BatchFileReader#readPacked}. The native engine submits the bytes
 * as they are and looks nothing up per path; a delivered entry names its
 * path by its ordinal here, and the chunk finds where the paths start only
 * when a path is first asked for (one scan of the chunk, not one per entry).
 * The bytes are then also kept as a Latin-1 string so that finding each
 * NUL, and making each path's string, is a vectorized String operation
 * rather than a loop over bytes (a listing of 100,000 files runs mostly
 * before the JIT has compiled such loops).
 *
 * <p>Thread safety: immutable but for its lazily made views, which any
 * thread may make (an entry's path may be asked for from any thread).
 */
final class PathChunk {
    final byte[] bytes;
    /** The text view, made on first use (volatile: published to entries read from other threads). */
    private volatile Text text;
    /** Where each path starts, then the length (where a next one would start); made on the first ordinal asked for. */
    private volatile int[] starts;

    /** The bytes as a string, one char per byte, and whether every path prints as its bytes. */
    private static final class Text {
        final String chars;
        final boolean plain;   // ASCII, no "//": Path prints each path as its bytes

        Text(byte[] bytes) {
            String utf8 = new String(bytes, StandardCharsets.UTF_8);
            // as many chars as bytes and no replacement char: ASCII (the decoder then copies the bytes as they are)
            boolean ascii = utf8.length() == bytes.length && utf8.indexOf('\uFFFD') < 0;
            this.chars = ascii ? utf8 : new String(bytes, StandardCharsets.ISO_8859_1);
            this.plain = ascii && PathBytes.asciiCompatible() && chars.indexOf("//") < 0;
        }
    }

    PathChunk(byte[] bytes) {
        this.bytes = bytes;
    }

    int length() {
        return bytes.length;
    }

    private Text text() {
        Text t = text;
        if (t == null) {
            t = new Text(bytes);   // a racing thread makes an equal one
            text = t;
        }
        return t;
    }

    /** Where the path starting at from ends (its NUL), or -1 when there is no NUL after from. */
    int end(int from) {
        return text().chars.indexOf(0, from);
    }

    /** Where the first empty path (a NUL at the start or right after another) is, or -1. */
    int firstEmpty() {
        if (bytes.length > 0 && bytes[0] == 0) {
            return 0;
        }
        int i = text().chars.indexOf("\0\0");
        return i < 0 ? -1 : i + 1;
    }

    /** Paths ending before byte pos. */
    int countBefore(int pos) {
        int n = 0;
        for (int i = end(0); i >= 0 && i < pos; i = end(i + 1)) {
            n++;
        }
        return n;
    }

    /**
     * Where a run of whole paths starting at from ends when it may take at most max bytes: the byte after the
     * last NUL in [from, from + max), or from when the path at from alone is longer than max.
     */
    int wholePathsEnd(int from, int max) {
        if (bytes.length - from <= max) {
            return bytes.length;
        }
        for (int i = from + max - 1; i >= from; i--) {   // back over the tail of one path: not a loop per path
            if (bytes[i] == 0) {
                return i + 1;
            }
        }
        return from;
    }

    /** path(off, len).toString() when the bytes give it as they are (else null). */
    String string(int off, int len) {
        Text t = text();
        if (t.plain && !(len > 1 && bytes[off + len - 1] == '/')) {
            return t.chars.substring(off, off + len);
        }
        return PathBytes.asciiString(bytes, off, len);   // this path alone may still be plain
    }

    /** The Path of the bytes at [off, off + len). */
    Path path(int off, int len) {
        String s = string(off, len);
        return s != null ? Path.of(s) : PathBytes.toPath(Arrays.copyOfRange(bytes, off, off + len));
    }

    /** The string of the ordinal-th path (from 0), as {@link #string(int, int)}. */
    String string(int ordinal) {
        int[] s = starts();
        return string(s[ordinal], s[ordinal + 1] - 1 - s[ordinal]);
    }

    /** The Path of the ordinal-th path (from 0). */
    Path path(int ordinal) {
        int[] s = starts();
        return path(s[ordinal], s[ordinal + 1] - 1 - s[ordinal]);
    }

    private int[] starts() {
        int[] s = starts;
        if (s == null) {
            s = scanStarts();   // a racing thread makes an equal one
            starts = s;
        }
        return s;
    }

    /** The start of every path, then where a next one would start (so each path's NUL is at the next start - 1). */
    private int[] scanStarts() {
        int[] s = new int[64];
        int n = 0;
        int from = 0;
        for (int e; from < bytes.length && (e = end(from)) >= 0; from = e + 1) {
            if (n + 2 > s.length) {   // room for this start and the one after the last
                s = Arrays.copyOf(s, s.length * 2);
            }
            s[n++] = from;
        }
        // (a tail without its NUL cannot come from the walk or past readPacked's checks: it is no path)
        s[n] = from;
        return s;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Paths as the kernel takes them, each NUL-terminated, laid end to end: a
 * buffer of libbfo's walk, or the array given to
 * {@link BatchFileReader#readPacked}. The bytes are also kept as a Latin-1
 * string so that finding each NUL, and making each path's string, is a
 * vectorized String operation rather than a loop over bytes (a listing of
 * 100,000 files runs mostly before the JIT has compiled such loops).
 */
final class PathChunk {
    final byte[] bytes;
    private final String text;     // one char per byte
    private final boolean plain;   // every path prints as its bytes: ASCII, no "//"

    PathChunk(byte[] bytes) {
        this.bytes = bytes;
        String utf8 = new String(bytes, StandardCharsets.UTF_8);
        // as many chars as bytes and no replacement char: ASCII (the decoder then copies the bytes as they are)
        boolean ascii = utf8.length() == bytes.length && utf8.indexOf('\uFFFD') < 0;
        this.text = ascii ? utf8 : new String(bytes, StandardCharsets.ISO_8859_1);
        this.plain = ascii && PathBytes.asciiCompatible() && text.indexOf("//") < 0;
    }

    int length() {
        return bytes.length;
    }

    /** Where the path starting at from ends (its NUL), or -1 when there is no NUL after from. */
    int end(int from) {
        return text.indexOf(0, from);
    }

    /** Where the first empty path (a NUL at the start or right after another) is, or -1. */
    int firstEmpty() {
        if (bytes.length > 0 && bytes[0] == 0) {
            return 0;
        }
        int i = text.indexOf("\0\0");
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

    /** path(off, len).toString() when the bytes give it as they are (else null). */
    String string(int off, int len) {
        if (plain && !(len > 1 && bytes[off + len - 1] == '/')) {
            return text.substring(off, off + len);
        }
        return PathBytes.asciiString(bytes, off, len);   // this path alone may still be plain
    }

    /** The Path of the bytes at [off, off + len). */
    Path path(int off, int len) {
        String s = string(off, len);
        return s != null ? Path.of(s) : PathBytes.toPath(Arrays.copyOfRange(bytes, off, off + len));
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;

/**
 * The bytes the kernel sees for a {@link Path}, and back.
 *
 * <p>The JDK keeps a Unix path as bytes and decodes them with
 * {@code sun.jnu.encoding} for {@code toString()}; names that are not valid
 * in that encoding (non-UTF-8 names) decode with U+FFFD and cannot be
 * re-encoded. Fast path: the string form, when it holds no U+FFFD, encodes
 * back to exactly the original bytes. Slow path (rare): {@code toUri()},
 * whose path the JDK percent-encodes from the raw bytes.
 */
final class PathBytes {
    private static final Charset JNU;
    private static final boolean ASCII_COMPATIBLE;

    static {
        Charset cs;
        try {
            cs = Charset.forName(System.getProperty(BfoNative.JNU_ENCODING_PROPERTY, "UTF-8"));
        } catch (RuntimeException e) {
            cs = StandardCharsets.UTF_8;
        }
        JNU = cs;
        ASCII_COMPATIBLE = new String("/a-Z_.~".getBytes(cs), cs).equals("/a-Z_.~")
                && "/a-Z_.~".getBytes(cs).length == 7;
    }

    private PathBytes() {
    }

    /** True when ASCII bytes are the same chars in sun.jnu.encoding (UTF-8, ISO-8859-x and the like). */
    static boolean asciiCompatible() {
        return ASCII_COMPATIBLE;
    }

    static void checkDefault(Path p) {
        if (p.getFileSystem() != FileSystems.getDefault()) {
            throw new ProviderMismatchException("not a path of the default file system: " + p
                    + " (" + p.getFileSystem().provider().getScheme() + ")");
        }
    }

    /** The bytes of p as the kernel resolves it (relative paths stay relative); "" becomes ".". */
    static byte[] of(Path p) {
        String s = p.toString();
        int n = s.length();
        if (n == 0) {
            return new byte[] {'.'};
        }
        if (ASCII_COMPATIBLE) {
            boolean ascii = true;
            for (int i = 0; i < n; i++) {
                if (s.charAt(i) >= 0x80) {
                    ascii = false;
                    break;
                }
            }
            if (ascii) {
                byte[] b = new byte[n];
                for (int i = 0; i < n; i++) {
                    b[i] = (byte) s.charAt(i);
                }
                return b;
            }
            if (s.indexOf('\uFFFD') < 0) {
                return s.getBytes(JNU);
            }
        }
        return rawBytes(p);
    }

    /** The bytes of a path given as a string, exactly as the JDK would encode it (sun.jnu.encoding), unnormalised. */
    static byte[] ofString(String s) {
        return s.getBytes(JNU);
    }

    /** The raw bytes through toUri() (absolute for an absolute p, relative stays relative). */
    static byte[] rawBytes(Path p) {
        Path abs = p.isAbsolute() ? p : p.getFileSystem().getPath("/").resolve(p);
        byte[] b = decodePercent(abs.toUri().getRawPath());
        int start = 0, end = b.length;
        if (!p.isAbsolute()) {
            start = 1;   // the "/" we added
        }
        // toUri() appends '/' for an existing directory; a Path never ends with one (except "/").
        if (end - start > 1 && b[end - 1] == '/') {
            end--;
        }
        byte[] out = new byte[end - start];
        System.arraycopy(b, start, out, 0, out.length);
        return out;
    }

    private static byte[] decodePercent(String raw) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%' && i + 2 < raw.length()) {
                out.write(Integer.parseInt(raw.substring(i + 1, i + 3), 16));
                i += 2;
            } else if (c < 0x80) {
                out.write(c);
            } else {
                byte[] u = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(u, 0, u.length);
            }
        }
        return out.toByteArray();
    }

    /**
     * b[off, off + len) as the string its Path would print, when that is
     * plain: ASCII bytes (in an ASCII-compatible encoding) that Path's
     * normalizing leaves as they are (no "//", no trailing '/'); else null.
     */
    static String asciiString(byte[] b, int off, int len) {
        if (!ASCII_COMPATIBLE) {
            return null;
        }
        byte prev = 0;
        for (int i = off, end = off + len; i < end; i++) {
            byte c = b[i];
            if (c < 0 || (c == '/' && prev == '/')) {
                return null;
            }
            prev = c;
        }
        if (len > 1 && prev == '/') {
            return null;
        }
        return new String(b, off, len, StandardCharsets.ISO_8859_1);
    }

    /** A Path for bytes the library reported (exact even for names not valid in sun.jnu.encoding when absolute). */
    static Path toPath(byte[] b) {
        CharsetDecoder d = JNU.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            CharBuffer cb = d.decode(ByteBuffer.wrap(b));
            return Path.of(cb.toString());
        } catch (CharacterCodingException | RuntimeException e) {
            if (b.length > 0 && b[0] == '/') {
                StringBuilder sb = new StringBuilder("file://");
                for (byte x : b) {
                    int c = x & 0xff;
                    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                            || "/-_.~".indexOf(c) >= 0) {
                        sb.append((char) c);
                    } else {
                        sb.append('%').append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 15, 16));
                    }
                }
                try {
                    return Path.of(URI.create(sb.toString()));
                } catch (RuntimeException ignored) {
                    // below
                }
            }
            return Path.of(new String(b, JNU));
        }
    }
}

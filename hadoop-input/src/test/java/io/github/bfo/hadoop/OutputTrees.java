/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/** Output trees read back through Hadoop's FileSystem, for comparing bfo's with the plain path's. */
final class OutputTrees {
    private OutputTrees() {
    }

    /** What of an entry's metadata a tree holds beside the bytes. */
    enum Meta { NONE, MODE, MODE_AND_TIME }

    /**
     * Every entry under root (checksum .crc files left out, as LocalFileSystem hides them): a directory as
     * "dir", a file as its length and SHA-256; with meta, the mode (and a file's modification time in ms).
     * An empty map when root does not exist.
     */
    static Map<String, String> tree(FileSystem fs, Path root, Meta meta) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try {
            walk(fs, root, "", meta, out);
        } catch (FileNotFoundException e) {
            return out;
        }
        return out;
    }

    private static void walk(FileSystem fs, Path dir, String rel, Meta meta, Map<String, String> out)
            throws IOException {
        for (FileStatus st : fs.listStatus(dir)) {
            String name = st.getPath().getName();
            if (name.startsWith(".") && name.endsWith(".crc")) {
                continue;
            }
            String r = rel.isEmpty() ? name : rel + "/" + name;
            String m = meta != Meta.NONE ? " " + Integer.toOctalString(st.getPermission().toShort()) : "";
            if (st.isDirectory()) {
                out.put(r, "dir" + m);
                walk(fs, st.getPath(), r, meta, out);
            } else {
                out.put(r, st.getLen() + " " + sha(fs, st.getPath()) + m
                        + (meta == Meta.MODE_AND_TIME ? " " + st.getModificationTime() : ""));
            }
        }
    }

    /** The names readers see in dir (FileInputFormat hides "_" and "." names). */
    static java.util.List<String> visible(FileSystem fs, Path dir) throws IOException {
        java.util.List<String> names = new java.util.ArrayList<>();
        try {
            for (FileStatus st : fs.listStatus(dir)) {
                String n = st.getPath().getName();
                if (!n.startsWith("_") && !n.startsWith(".")) {
                    names.add(n);
                }
            }
        } catch (FileNotFoundException e) {
            return names;
        }
        names.sort(null);
        return names;
    }

    static String sha(FileSystem fs, Path p) throws IOException {
        try (InputStream in = fs.open(p)) {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            byte[] b = new byte[65536];
            for (int n; (n = in.read(b)) > 0; ) {
                d.update(b, 0, n);
            }
            return HexFormat.of().formatHex(d.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
    }

    /** n files of 0 to 6,000 random bytes in a few directories, one empty, seeded; sorted by path. */
    static Map<String, byte[]> files(int n, long seed) {
        Random r = new Random(seed);
        Map<String, byte[]> m = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            String dir = switch (i % 4) {
                case 0 -> "";
                case 1 -> "d1/";
                case 2 -> "d2/sub/";
                default -> "d1/deep/er/";
            };
            byte[] b = new byte[i == 3 ? 0 : r.nextInt(6000)];
            r.nextBytes(b);
            m.put(dir + "f" + i + (i % 5 == 0 ? ".txt" : ".bin"), b);
        }
        return m;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * A task's report ({@link TaskFiles}) as bytes, for committers that keep it
 * in the staging directory between the task commit and the job commit
 * (Hadoop's). Not Java serialization: the bytes are read back by the job
 * commit from a file system, so they are parsed, bounded and checked: a
 * magic and version, the kind, the task's name, a count, each file's path
 * (and its staged name, or its upload's two handles), and a CRC-32C of all
 * of it. Anything else (a short file, a count or length out of bounds, a
 * bad checksum, bytes after the end) is an IOException naming the file; no
 * count read is trusted to size an allocation.
 *
 * <pre>
 * "BFOTASK" version(1) kind(1)            kind: 1 STAGING/TASK/PATH, 2 staged names, 3 pending uploads
 * [string task]                           kinds 1 and 2
 * int count, then count x: string path, [string staged] (kind 2), [bytes upload, bytes part] (kind 3)
 * long crc32c of everything before it
 * string, bytes: int length, then the bytes (strings in UTF-8)
 * </pre>
 */
public final class TaskFilesCodec {
    private static final byte[] MAGIC = "BFOTASK".getBytes(StandardCharsets.US_ASCII);
    private static final int VERSION = 1;
    private static final int IN_TASK_DIR = 1;
    private static final int STAGED_NAMES = 2;
    private static final int UPLOADS = 3;
    /** At most this many files in one report (a task's). */
    static final int MAX_FILES = 100_000_000;
    /** At most this many bytes in a path, a staged name or a handle. */
    static final int MAX_FIELD = 1 << 20;

    private TaskFilesCodec() {
    }

    /** The magic and version, for tests that make reports by hand. */
    static byte[] encodeHeaderForTest() {
        byte[] b = Arrays.copyOf(MAGIC, MAGIC.length + 1);
        b[MAGIC.length] = VERSION;
        return b;
    }

    public static byte[] encode(TaskFiles files) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.write(MAGIC);
        out.writeByte(VERSION);
        if (files instanceof StagedFiles s) {
            out.writeByte(s.stagedNames == null ? IN_TASK_DIR : STAGED_NAMES);
            string(out, s.taskName);
            out.writeInt(s.size());
            for (int i = 0; i < s.size(); i++) {
                string(out, s.paths[i]);
                if (s.stagedNames != null) {
                    string(out, s.stagedNames[i]);
                }
            }
        } else {
            PendingUploads u = (PendingUploads) files;
            out.writeByte(UPLOADS);
            out.writeInt(u.size());
            for (int i = 0; i < u.size(); i++) {
                string(out, u.paths[i]);
                bytes(out, u.uploads[i]);
                bytes(out, u.parts[i]);
            }
        }
        out.flush();
        CRC32C crc = new CRC32C();
        crc.update(bytes.toByteArray());
        out.writeLong(crc.getValue());
        return bytes.toByteArray();
    }

    /** The report in in (read to its end); name says which file in errors. */
    public static TaskFiles decode(InputStream in, String name) throws IOException {
        CheckedInput c = new CheckedInput(in);
        DataInputStream d = new DataInputStream(c);
        try {
            byte[] magic = new byte[MAGIC.length];
            d.readFully(magic);
            if (!Arrays.equals(magic, MAGIC) || d.readUnsignedByte() != VERSION) {
                throw bad(name, "not a bfo task report of this version");
            }
            int kind = d.readUnsignedByte();
            if (kind < IN_TASK_DIR || kind > UPLOADS) {
                throw bad(name, "unknown kind " + kind);
            }
            String task = kind == UPLOADS ? null : string(d, name);
            int count = d.readInt();
            if (count < 0 || count > MAX_FILES) {
                throw bad(name, "file count " + count + " out of bounds");
            }
            List<String> paths = new ArrayList<>();
            List<String> staged = new ArrayList<>();
            List<PendingUploads.Upload> uploads = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String path = string(d, name);
                if (kind == UPLOADS) {
                    uploads.add(new PendingUploads.Upload(path, bytes(d, name), bytes(d, name)));
                } else {
                    paths.add(path);
                    if (kind == STAGED_NAMES) {
                        staged.add(string(d, name));
                    }
                }
            }
            long expected = c.crc.getValue();
            if (d.readLong() != expected) {
                throw bad(name, "checksum mismatch");
            }
            if (d.read() >= 0) {
                throw bad(name, "bytes after its end");
            }
            return build(kind, task, paths, staged, uploads, name);
        } catch (EOFException e) {
            throw bad(name, "it ends early");
        }
    }

    private static TaskFiles build(int kind, String task, List<String> paths, List<String> staged,
                                   List<PendingUploads.Upload> uploads, String name) throws IOException {
        try {
            if (kind == UPLOADS) {
                return new PendingUploads(uploads);
            }
            OutputPaths.checkAttempt(task);
            if (kind == IN_TASK_DIR) {
                return new StagedFiles(task, paths.toArray(new String[0]));
            }
            StagedFiles.Staged[] s = new StagedFiles.Staged[paths.size()];
            for (int i = 0; i < s.length; i++) {
                s[i] = new StagedFiles.Staged(paths.get(i), staged.get(i));
            }
            return new StagedFiles(task, s);
        } catch (IllegalArgumentException e) {
            throw bad(name, e.getMessage());
        }
    }

    private static IOException bad(String name, String why) {
        return new IOException("bfo write: bad task report " + name + ": " + why);
    }

    private static void string(DataOutputStream out, String s) throws IOException {
        bytes(out, s.getBytes(StandardCharsets.UTF_8));
    }

    private static void bytes(DataOutputStream out, byte[] b) throws IOException {
        if (b.length > MAX_FIELD) {
            throw new IOException("bfo write: a path or handle of " + b.length + " bytes is too long to report");
        }
        out.writeInt(b.length);
        out.write(b);
    }

    private static String string(DataInputStream in, String name) throws IOException {
        return new String(bytes(in, name), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(DataInputStream in, String name) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_FIELD) {
            throw bad(name, "a field of " + n + " bytes");
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** The stream, with a CRC-32C of what has been read so far. */
    private static final class CheckedInput extends java.io.FilterInputStream {
        final CRC32C crc = new CRC32C();

        CheckedInput(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = in.read();
            if (b >= 0) {
                crc.update(b);
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = in.read(b, off, len);
            if (n > 0) {
                crc.update(b, off, n);
            }
            return n;
        }

        @Override
        public boolean markSupported() {
            return false;
        }
    }
}

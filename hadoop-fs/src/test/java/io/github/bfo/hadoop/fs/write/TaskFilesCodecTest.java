/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The task reports' bytes: every kind round-trips, and anything else a
 * file system could hand back (cut short, a bit flipped, garbage, counts and
 * lengths out of bounds, a name that climbs out) is an IOException naming
 * the file, never another exception, a hang or an allocation a bad count
 * asked for. Random inputs are seeded; each case counts what it checked.
 */
class TaskFilesCodecTest {
    private static TaskFiles decode(byte[] b) throws IOException {
        return TaskFilesCodec.decode(new ByteArrayInputStream(b), "test-report");
    }

    static List<TaskFiles> samples(Random r) {
        List<TaskFiles> all = new ArrayList<>();
        String[] paths = {"a", "d/\u00e9t\u00e9.txt", "x/y/z/" + "n".repeat(300), "f\u4e2d\u6587", "p q"};
        all.add(new StagedFiles("task-0-1", paths));
        all.add(new StagedFiles("task-attempt_1_0001_m_000000_0", new String[0]));
        StagedFiles.Staged[] s = new StagedFiles.Staged[paths.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = new StagedFiles.Staged(paths[i], "p-3/task-3-9." + i);
        }
        all.add(new StagedFiles("task-3-9", s));
        List<PendingUploads.Upload> ups = new ArrayList<>();
        for (String p : paths) {
            byte[] u = new byte[r.nextInt(200)];
            byte[] q = new byte[r.nextInt(50)];
            r.nextBytes(u);
            r.nextBytes(q);
            ups.add(new PendingUploads.Upload(p, u, q));
        }
        all.add(new PendingUploads(ups));
        return all;
    }

    static String describe(TaskFiles f) {
        StringBuilder b = new StringBuilder(f.getClass().getSimpleName());
        if (f instanceof StagedFiles s) {
            b.append(' ').append(s.taskName());
            for (int i = 0; i < s.size(); i++) {
                b.append('|').append(s.path(i)).append('>').append(s.stagedName(i));
            }
        } else {
            PendingUploads p = (PendingUploads) f;
            for (int i = 0; i < p.size(); i++) {
                PendingUploads.Upload u = p.get(i);
                b.append('|').append(u.path()).append(Arrays.toString(u.upload())).append(Arrays.toString(u.part()));
            }
        }
        return b.toString();
    }

    @Test
    void everyKindRoundTrips() throws IOException {
        int checked = 0;
        for (TaskFiles f : samples(new Random(1))) {
            assertEquals(describe(f), describe(decode(TaskFilesCodec.encode(f))));
            checked++;
        }
        assertEquals(4, checked);
    }

    @Test
    void aReportCutShortOrWithABitFlippedIsAnIOException() throws IOException {
        int checked = 0;
        for (TaskFiles f : samples(new Random(2))) {
            byte[] good = TaskFilesCodec.encode(f);
            for (int n = 0; n < good.length; n++) {
                byte[] cut = Arrays.copyOf(good, n);
                IOException x = assertThrows(IOException.class, () -> decode(cut), "cut at " + n);
                assertTrue(x.getMessage().contains("test-report"), x.getMessage());
                checked++;
            }
            byte[] longer = Arrays.copyOf(good, good.length + 1);
            assertThrows(IOException.class, () -> decode(longer));
            for (int bit = 0; bit < good.length * 8; bit++) {
                byte[] flipped = good.clone();
                flipped[bit / 8] ^= (byte) (1 << (bit % 8));
                assertThrows(IOException.class, () -> decode(flipped), "bit " + bit);
                checked++;
            }
        }
        assertTrue(checked > 10_000, "cases checked: " + checked);
    }

    @Test
    void garbageIsAnIOException() {
        Random r = new Random(3);
        byte[] magic = Arrays.copyOf(TaskFilesCodec.encodeHeaderForTest(), 8);
        int checked = 0;
        for (int i = 0; i < 20_000; i++) {
            byte[] b = new byte[r.nextInt(64)];
            r.nextBytes(b);
            if (i % 2 == 0 && b.length >= 9) {
                System.arraycopy(magic, 0, b, 0, 8);   // past the magic and version, into the fields
                b[8] = (byte) (1 + r.nextInt(3));
            }
            assertThrows(IOException.class, () -> decode(b));
            checked++;
        }
        assertEquals(20_000, checked);
    }

    /** Counts and lengths that would ask for huge allocations, with the bytes not there: refused or cut short. */
    @Test
    void countsAndLengthsOutOfBoundsAreRefusedWithoutAllocating() throws IOException {
        int[] counts = {-1, Integer.MAX_VALUE, TaskFilesCodec.MAX_FILES + 1, TaskFilesCodec.MAX_FILES};
        int checked = 0;
        for (int count : counts) {
            for (int len : new int[] {-5, Integer.MAX_VALUE, TaskFilesCodec.MAX_FIELD + 1, 100}) {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                DataOutputStream out = new DataOutputStream(bytes);
                out.write(TaskFilesCodec.encodeHeaderForTest());
                out.writeByte(1);
                out.writeInt(8);
                out.writeBytes("task-0-1");
                out.writeInt(count);
                out.writeInt(len);
                out.writeBytes("abc");
                IOException x = assertThrows(IOException.class, () -> decode(bytes.toByteArray()));
                assertTrue(x.getMessage().contains("bad task report test-report"), x.getMessage());
                checked++;
            }
        }
        assertEquals(16, checked);
    }

    /** A well-formed report whose names climb out: refused when decoded (task) or when published (paths). */
    @Test
    void namesThatClimbOutAreRefused() throws IOException {
        byte[] badTask = TaskFilesCodec.encode(new StagedFiles("../task-0-1", new String[] {"a"}));
        IOException x = assertThrows(IOException.class, () -> decode(badTask));
        assertTrue(x.getMessage().contains("bad task attempt name"), x.getMessage());
        for (String bad : new String[] {"../x", "/abs", "a/../../b", "_temporary-bfo-q/x"}) {
            TaskFiles f = decode(TaskFilesCodec.encode(new StagedFiles("task-0-1", new String[] {bad})));
            IllegalArgumentException y = assertThrows(IllegalArgumentException.class,
                    () -> StagedFiles.publishPlan(List.of(f), "_temporary-bfo-q", "in two records"));
            assertTrue(y.getMessage().contains("bad path '" + bad + "'"), y.getMessage());
            TaskFiles u = decode(TaskFilesCodec.encode(new PendingUploads(List.of(
                    new PendingUploads.Upload(bad, new byte[1], new byte[1])))));
            assertThrows(IllegalArgumentException.class, () -> PendingUploads.plan(List.of(u), "in two records"));
        }
        byte[] staged = TaskFilesCodec.encode(new StagedFiles("task-0-1",
                new StagedFiles.Staged[] {new StagedFiles.Staged("a", "../../etc/passwd")}));
        TaskFiles s = decode(staged);
        assertThrows(IllegalArgumentException.class,
                () -> StagedFiles.publishPlan(List.of(s), "_temporary-bfo-q", "in two records"));
        assertArrayEquals(staged, TaskFilesCodec.encode(s));
    }
}

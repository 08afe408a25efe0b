/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.synth.SyntheticFileSystem;

import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Split planning stays compact: {@value #FILES} synthetic files
 * ({@link SyntheticFileSystem}, 1,000 per directory, three replicas on 100
 * hosts) are planned in a JVM of its own with a heap of {@value #HEAP}, and
 * the splits must cover every file once (count and total bytes). The planner
 * holds about 60-75 bytes a file at its peak, JVM and Hadoop included
 * (measured with this child: 1,000,000 files plan in 96 MiB, not in 80 MiB);
 * twice that leaves room for a collector under load, while a planner that
 * keeps a FileStatus per file (several hundred bytes: CombineFileInputFormat
 * needs about 1 GiB of heap for these files) or whose per-file bytes
 * triple runs out of memory here. No timing is asserted (the whole test
 * took 40 s on 2 shared cores with a CI loop beside it; the listing through
 * the FileSystem API, a few microseconds a file, is most of it).
 */
class PlanMemoryTest {
    static final int FILES = 1_000_000;
    static final String HEAP = "192m";

    @Test
    void millionFilesPlanInASmallHeap() throws Exception {
        Path out = Files.createTempFile("bfo-plan-memory", ".txt");
        try {
            List<String> cmd = new ArrayList<>();
            cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            cmd.add("-Xmx" + HEAP);
            cmd.add("-XX:+UseSerialGC");          // one GC thread: the test's own result does not depend on load
            cmd.add("-XX:TieredStopAtLevel=1");
            cmd.add("-cp");
            cmd.add(testClassPath());
            cmd.add(Child.class.getName());
            cmd.add(Integer.toString(FILES));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            if (!p.waitFor(10, TimeUnit.MINUTES)) {   // a hang, not a slow machine
                p.destroyForcibly().waitFor();
            }
            String log = Files.readString(out, StandardCharsets.UTF_8);
            assertEquals(0, p.exitValue(), "planning " + FILES + " files in -Xmx" + HEAP + " failed:\n" + tail(log));
            long bytes = SyntheticFileSystem.totalLength(FILES);
            assertTrue(log.contains("planned " + FILES + " files " + bytes + " bytes"), tail(log));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    /** The test JVM's class path (surefire puts it in a property; its own java.class.path may be a booter jar). */
    private static String testClassPath() {
        String cp = System.getProperty("surefire.test.class.path");
        return cp != null && !cp.isEmpty() ? cp : System.getProperty("java.class.path");
    }

    private static String tail(String log) {
        String[] lines = log.split("\n");
        return String.join("\n", java.util.Arrays.copyOfRange(lines, Math.max(0, lines.length - 15), lines.length));
    }

    /** The forked JVM: plans the synthetic input, prints what the splits cover, exits 0 only on success. */
    public static final class Child {
        public static void main(String[] args) throws Exception {
            long n = Long.parseLong(args[0]);
            Configuration conf = new Configuration();
            org.apache.hadoop.fs.Path root = SyntheticFileSystem.configure(conf, n, 1000);
            conf.set(BfoInputConfig.INPUT_DIR, root.toString());
            conf.setBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, true);
            conf.setLong(BfoInputConfig.SPLIT_MAXSIZE, 128L << 20);
            List<BatchFileSplit> splits;
            try {
                splits = SplitPlanner.getSplits(conf, null);
            } catch (OutOfMemoryError e) {
                System.out.println("OutOfMemoryError: " + e.getMessage());
                System.exit(3);
                return;
            }
            long files = 0;
            long bytes = 0;
            for (BatchFileSplit s : splits) {
                files += s.getNumPaths();
                bytes += s.getLength();
            }
            System.out.println("planned " + files + " files " + bytes + " bytes in " + splits.size() + " splits");
            System.exit(files == n ? 0 : 1);
        }
    }
}

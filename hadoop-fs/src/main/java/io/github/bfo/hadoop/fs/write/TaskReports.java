/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The task reports of a job whose committer gets nothing from its tasks but
 * what they leave in the file system (Hadoop's OutputCommitter): a task
 * attempt saves its report when its writer closes ({@code a-ATTEMPT}); the
 * task commit promotes it to the task's ({@code t-TASK}, refused when the
 * task has one already); the job commit reads the promoted ones. They live
 * in DIR/STAGING/reports, a directory the job makes at its setup and that
 * goes with the staging directory (an object store's: removed by
 * {@link #remove}). On the local disk they are written through Hadoop's raw
 * local file system (no .crc files) inside the owner-only staging
 * directory.
 */
public final class TaskReports {
    private static final String ATTEMPT = "a-";
    private static final String TASK = "t-";
    private static final String OUTPUT_MADE = "output-made";

    private final FileSystem fs;
    private final Path staging;
    private final Path dir;
    private final int threads;

    /** The reports of the job staging under stagingName in outputDir. */
    public TaskReports(OutputDir outputDir, String stagingName, Configuration conf, int threads) throws IOException {
        Path out = new Path(outputDir.qualified());
        FileSystem f = out.getFileSystem(conf);
        this.fs = outputDir instanceof LocalOutputDir ? FileSystem.getLocal(conf).getRawFileSystem() : f;
        this.staging = new Path(out, stagingName);
        this.dir = new Path(staging, "reports");
        this.threads = Math.max(1, threads);
    }

    /** Makes the reports' directory (in the job's staging directory, made first by the job's setup). */
    public void create() throws IOException {
        if (!fs.mkdirs(dir)) {
            throw new IOException("bfo write: cannot create " + dir);
        }
    }

    /** Notes that the job made the output directory (an aborted job then removes it when it is empty). */
    public void markOutputMade() throws IOException {
        fs.create(new Path(dir, OUTPUT_MADE), true).close();
    }

    /** Whether {@link #markOutputMade} was called for this job. */
    public boolean outputMade() throws IOException {
        return fs.exists(new Path(dir, OUTPUT_MADE));
    }

    /** Saves the report of an attempt (replacing one saved before by the same attempt). */
    public void save(String attempt, TaskFiles files) throws IOException {
        byte[] b = TaskFilesCodec.encode(files);
        try (OutputStream out = fs.create(new Path(dir, ATTEMPT + OutputPaths.checkAttempt(attempt)), true)) {
            out.write(b);
        }
    }

    /** The report the attempt saved, or null. */
    public TaskFiles attempt(String attempt) throws IOException {
        return read(new Path(dir, ATTEMPT + OutputPaths.checkAttempt(attempt)));
    }

    /** Whether the attempt saved a report. */
    public boolean saved(String attempt) throws IOException {
        return fs.exists(new Path(dir, ATTEMPT + OutputPaths.checkAttempt(attempt)));
    }

    /** Makes the attempt's report the task's; refused when the task has one (another attempt committed). */
    public void promote(String attempt, String task) throws IOException {
        Path src = new Path(dir, ATTEMPT + OutputPaths.checkAttempt(attempt));
        Path dst = new Path(dir, TASK + checkTask(task));
        if (fs.exists(dst)) {
            throw new IOException("bfo write: task " + task + " was committed already (by another attempt); "
                    + attempt + " is not");
        }
        if (!fs.rename(src, dst)) {
            throw new IOException("bfo write: cannot commit the report of " + attempt + " (" + src + " to " + dst
                    + ")");
        }
    }

    /** Removes what an attempt saved (a failed or killed one's, or a speculative one's that lost). */
    public void discard(String attempt) throws IOException {
        fs.delete(new Path(dir, ATTEMPT + OutputPaths.checkAttempt(attempt)), false);
    }

    /** The committed tasks' reports, threads at a time (each read is a round trip). */
    public List<TaskFiles> committed() throws IOException {
        FileStatus[] all;
        try {
            all = fs.listStatus(dir);
        } catch (FileNotFoundException e) {
            throw new IOException("bfo write: no task reports in " + dir + " (was the job set up?)", e);
        }
        List<TaskFiles> out = Collections.synchronizedList(new ArrayList<>());
        try (WritePool<Void> reads = new WritePool<>(threads, Long.MAX_VALUE, "bfo-reports")) {
            for (FileStatus st : all) {
                if (st.getPath().getName().startsWith(TASK)) {
                    reads.submit(0, () -> {
                        out.add(read(st.getPath()));
                        return null;
                    });
                }
            }
            reads.finish();
        }
        return out;
    }

    private TaskFiles read(Path p) throws IOException {
        try (InputStream in = fs.open(p)) {
            return TaskFilesCodec.decode(in, p.toString());
        } catch (FileNotFoundException e) {
            return null;
        }
    }

    /** Removes the staging directory where only the reports live (an object store's multipart write). */
    public void remove() throws IOException {
        fs.delete(staging, true);
    }

    private static String checkTask(String task) {
        if (task.isEmpty() || task.contains("/") || task.length() > 255) {
            throw new IllegalArgumentException("bfo write: bad task name '" + task + "'");
        }
        return task;
    }
}

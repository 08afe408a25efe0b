/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import io.github.bfo.BatchFileWriter;
import java.io.IOException;
import java.util.EnumSet;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * One task attempt on a Hadoop file system: each file goes to its
 * partition's directory of the staging area, named after the attempt and
 * the file's number (p-PARTITION/TASK.N), created with overwrite=false
 * (nothing there is replaced), written and closed, up to
 * {@code writesInFlight} files at once ({@link WritePool}: each file
 * costs round trips that a task writing one after another waits out in
 * turn); what a file is worth after close() is what that file system's
 * close() promises (on HDFS: acknowledged by every DataNode of its
 * pipeline). Durability each also hsyncs every file before closing it,
 * where its stream can. A file given a mode or a modification time gets
 * them after its close (setPermission, setTimes: what a caller of
 * FileSystem.create would do; a rename keeps them). Commit waits for every
 * file and reports them; abort waits for those being written and removes
 * the files it made.
 *
 * <p>A task can still be running when its job is aborted (Spark aborts a
 * job without waiting for its other attempts; a MapReduce attempt can
 * outlive its job's end) and the job has removed the staging directory.
 * Its files are therefore created with createNonRecursive, in a directory
 * the job made: a create after the
 * removal fails instead of making the staging directory again (create()
 * makes missing parents, and a directory of the attempt's own would need a
 * mkdirs, which does too). On a file system without createNonRecursive, the
 * staging directory is checked before each create instead, which narrows
 * that window without closing it.
 */
final class StreamTask extends OutputTask {
    private final Path dir;
    private final Path staging;
    private final String taskName;
    private final String partitionDir;
    private final Configuration conf;
    private final boolean hsync;
    private final int writesInFlight;
    private final WritePool<StagedFiles.Staged> pool;
    private final Queue<Path> created = new ConcurrentLinkedQueue<>();   // for abort to remove
    private FileSystem fs;
    private boolean nonRecursive;
    private int submitted;

    StreamTask(Path dir, String stagingName, int partition, String taskName, Configuration conf,
               WriteOptions options) {
        super(options);
        this.dir = dir;
        this.staging = new Path(dir, stagingName);
        this.taskName = OutputPaths.checkAttempt(taskName);
        this.partitionDir = partitionDir(partition);
        this.conf = conf;
        this.hsync = options.durability() == BatchFileWriter.Durability.EACH;
        this.writesInFlight = options.writesInFlight();
        this.pool = new WritePool<>(options.writesInFlight(), options.writeBatchBytes(), "bfo-hadoop-write");
    }

    @Override
    void put(String path, byte[] content, int mode, long modificationTime) throws IOException {
        if (fs == null) {
            fs = HadoopOutputDir.fileSystem(dir, conf);
            nonRecursive = hasCreateNonRecursive(fs);
            checkStaging();
        }
        String name = stagedName(partitionDir, taskName, submitted++);
        Path file = new Path(staging, name);
        FileSystem target = fs;
        pool.submit(content.length, () -> {
            try {
                writeFile(target, file, content, mode, modificationTime);
            } catch (IOException e) {
                throw new IOException("bfo write: cannot write '" + path + "' (" + file + "): " + e, e);
            }
            return new StagedFiles.Staged(path, name);
        });
    }

    /** The staged name of an attempt's n-th file, relative to the staging directory. */
    static String stagedName(String partitionDir, String taskName, int n) {
        return partitionDir + "/" + taskName + "." + n;
    }

    /** The directory of a partition's attempts in the staging area (made by the job). */
    static String partitionDir(int partition) {
        return "p-" + partition;
    }

    /** Whether fs's class (or one between it and FileSystem) implements createNonRecursive: FileSystem's throws. */
    static boolean hasCreateNonRecursive(FileSystem fs) {
        try {
            return fs.getClass().getMethod("createNonRecursive", Path.class, FsPermission.class, EnumSet.class,
                    int.class, short.class, long.class, Progressable.class).getDeclaringClass() != FileSystem.class;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private FSDataOutputStream create(FileSystem target, Path file) throws IOException {
        if (nonRecursive) {
            // this overload: the local disk's boolean one makes missing parents (Hadoop 3.4.1)
            return target.createNonRecursive(file,
                    FsPermission.getFileDefault().applyUMask(FsPermission.getUMask(target.getConf())),
                    EnumSet.of(CreateFlag.CREATE), target.getConf().getInt("io.file.buffer.size", 4096),
                    target.getDefaultReplication(file), target.getDefaultBlockSize(file), null);
        }
        checkStaging();
        return target.create(file, false);
    }

    private void writeFile(FileSystem target, Path file, byte[] content, int mode, long modificationTime)
            throws IOException {
        FSDataOutputStream out = create(target, file);
        created.add(file);
        boolean closed = false;
        try {
            out.write(content);
            if (hsync && out.hasCapability(StreamCapabilities.HSYNC)) {
                out.hsync();
            }
            closed = true;
            out.close();
            if (mode >= 0) {
                target.setPermission(file, new FsPermission((short) mode));
            }
            if (modificationTime >= 0) {
                target.setTimes(file, modificationTime, -1);
            }
        } finally {
            if (!closed) {
                try {
                    out.close();   // a failed file's stream: its error is the write's, not the close's
                } catch (IOException e) {
                    // the task fails with the write's error; abort removes the file
                }
            }
        }
    }

    @Override
    public TaskFiles commit() throws IOException {
        List<StagedFiles.Staged> written = pool.finish();
        if (!written.isEmpty()) {
            checkStaging();
        }
        return new StagedFiles(taskName, written.toArray(new StagedFiles.Staged[0]));
    }

    /** Removes the files this attempt made, writesInFlight at a time (each is a round trip). */
    @Override
    public void abort() throws IOException {
        pool.cancel();
        if (fs == null) {
            return;   // nothing was written
        }
        try (WritePool<Void> deletes = new WritePool<>(writesInFlight, Long.MAX_VALUE,
                "bfo-hadoop-abort")) {
            for (Path f; (f = created.poll()) != null; ) {
                Path file = f;
                deletes.submit(0, () -> {
                    fs.delete(file, false);
                    return null;
                });
            }
            deletes.finish();
        }
    }

    private void checkStaging() throws IOException {
        if (!fs.exists(staging)) {
            throw new IOException("bfo write: the staging directory " + staging + " is gone (was the job aborted?)");
        }
    }

    @Override
    public void close() {
        pool.close();
    }
}

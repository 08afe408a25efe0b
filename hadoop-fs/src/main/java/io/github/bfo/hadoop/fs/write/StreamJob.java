/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The job side of the commit protocol on a Hadoop file system other than
 * the local one: the protocol of {@link LocalJob}, through
 * {@link FileSystem} calls. Tasks write their files under
 * DIR/_temporary-bfo-ID/p-PARTITION/; a task commit reports them; the job commit checks the whole
 * set ({@link StagedFiles}), and in append mode that no file is there
 * already and no directory the files go into is a file, or in truncate
 * mode removes everything in DIR but the staging directory; then it
 * publishes every file with a rename, {@code commitThreads} at a time, and
 * removes the staging directory. An aborted job leaves DIR as it was.
 *
 * <p>The FileSystem API has no descriptor-relative calls, so there is no
 * equivalent of the local writer's guard against symbolic links; instead
 * nothing is replaced: tasks create with overwrite=false, and files are
 * published with FileContext's rename without overwrite, which fails the
 * job when anything (a file, or a directory the file would land inside)
 * appeared at the name after the check.
 */
final class StreamJob extends StagedJob {
    // other users of DIR cannot add to or change the staged files before they are published (where the file
    // system has permissions), as with the local writer's owner-only staging directory
    private static final FsPermission STAGING_PERMISSION = FsPermission.createImmutable((short) 0700);

    private final Path dir;
    private final Configuration conf;
    private final Path staging;

    StreamJob(Path dir, Configuration conf, WriteOptions options, boolean truncate, String stagingName) {
        super(options, truncate, stagingName);
        this.dir = dir;
        this.conf = conf;
        this.staging = new Path(dir, stagingName);
    }

    @Override
    public String dirName() {
        return dir.toString();
    }

    private FileSystem fs() {
        return HadoopOutputDir.fileSystem(dir, conf);
    }

    private Path child(String rel) {
        return HadoopTree.child(dir, rel);
    }

    @Override
    public TaskSetup taskSetup() {
        return new TaskSetup(TaskSetup.Kind.STREAMS, dir.toString(), stagingName, null, options);
    }

    @Override
    public TaskSetup setup(int partitions) throws IOException {
        FileSystem fs = fs();
        try {
            if (!fs.mkdirs(dir)) {
                throw new IOException("mkdirs " + dir + " returned false");
            }
            if (fs.exists(staging)) {
                throw new FileAlreadyExistsException(staging.toString(), null, "not made by this job");
            }
            if (!fs.mkdirs(staging, STAGING_PERMISSION)) {
                throw new IOException("mkdirs returned false");
            }
            makePartitionDirs(fs, partitions);
        } catch (IOException e) {
            throw new IOException("bfo write: cannot create the staging directory " + staging + ": " + e, e);
        }
        return taskSetup();
    }

    /**
     * One directory per partition, for its attempts' files ({@link StreamTask#partitionDir}): made
     * here because tasks make no directory, and so that no directory holds more than one task's files (HDFS
     * refuses more than dfs.namenode.fs-limits.max-directory-items, 1,048,576 by default, in one directory).
     */
    private void makePartitionDirs(FileSystem fs, int partitions) throws IOException {
        List<Path> dirs = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            dirs.add(new Path(staging, StreamTask.partitionDir(p)));
        }
        mkdirs(fs, dirs, STAGING_PERMISSION);
    }

    /**
     * Makes dirs (with their parents), {@code commitThreads} at a time: each is a round trip. permission null:
     * the file system's own default (mkdirs(Path): the local disk applies the umask there).
     */
    private void mkdirs(FileSystem fs, List<Path> dirs, FsPermission permission) throws IOException {
        try (WritePool<Void> mk = new WritePool<>(options.commitThreads(), Long.MAX_VALUE, "bfo-commit")) {
            for (Path d : dirs) {
                mk.submit(0, () -> {
                    if (!(permission == null ? fs.mkdirs(d) : fs.mkdirs(d, permission))) {
                        throw new IOException("mkdirs " + d + " returned false");
                    }
                    return null;
                });
            }
            mk.finish();
        }
    }

    /**
     * The renames go {@code commitThreads} at a time (each is a round trip to the NameNode, or a copy on an
     * object store), after the directories they go into were made; the first refusal stops the publishing
     * (renames already done, or under way, stay).
     */
    @Override
    void publish(SortedMap<String, String> sources) throws IOException {
        FileSystem fs = fs();
        if (!fs.getFileStatus(staging).isDirectory()) {
            throw new IOException(staging + " is not the job's staging directory");
        }
        if (truncate) {
            HadoopTree.clear(fs, dir, stagingName);
        } else {
            HadoopTree.checkFree(fs, dir, sources.keySet());
        }
        FileContext fc = fileContext(fs);
        // the deepest directories only: mkdirs makes their parents
        java.util.TreeSet<String> parents = new java.util.TreeSet<>();
        for (String p : sources.keySet()) {
            int slash = p.lastIndexOf('/');
            if (slash > 0) {
                parents.add(p.substring(0, slash));
            }
        }
        List<Path> deepest = new ArrayList<>();
        String last = null;
        for (String d : parents.descendingSet()) {
            if (last != null && last.startsWith(d + "/")) {
                continue;   // an ancestor of the deeper directory just listed
            }
            last = d;
            deepest.add(child(d));
        }
        mkdirs(fs, deepest, null);
        try (WritePool<Void> renames = new WritePool<>(options.commitThreads(), Long.MAX_VALUE, "bfo-commit")) {
            for (Map.Entry<String, String> e : sources.entrySet()) {
                Path src = child(e.getValue());
                Path dst = child(e.getKey());
                renames.submit(0, () -> {
                    renameNoReplace(fs, fc, src, dst);
                    return null;
                });
            }
            renames.finish();
        }
    }

    /**
     * dir's file system as a FileContext, whose rename can refuse to replace (HDFS: in the NameNode, atomically,
     * also when a directory has appeared at the name: FileSystem.rename would move the file into it); null
     * where the scheme has no FileContext binding.
     */
    private FileContext fileContext(FileSystem fs) {
        try {
            return FileContext.getFileContext(fs.getUri(), fs.getConf());
        } catch (UnsupportedFileSystemException e) {
            return null;
        }
    }

    /** Publishes src as dst, never replacing or entering anything that is at dst. */
    private static void renameNoReplace(FileSystem fs, FileContext fc, Path src, Path dst) throws IOException {
        if (fc != null) {
            fc.rename(src, dst, Options.Rename.NONE);   // FileAlreadyExistsException when dst is there
            return;
        }
        if (fs.exists(dst)) {
            throw new org.apache.hadoop.fs.FileAlreadyExistsException("bfo write: " + dst + " appeared during the job");
        }
        // false, not an exception, is how HDFS and others refuse a rename (e.g. onto an existing file)
        if (!fs.rename(src, dst)) {
            throw new IOException("cannot rename " + src + " to " + dst + " (did " + dst + " appear?)");
        }
    }

    /**
     * Removes the staging directory. Tasks of an aborted job may still be creating files in it: on HDFS the
     * delete is one step and their later creates fail (they never make a missing parent); where a recursive
     * delete walks the tree (the local disk under another scheme), a create after the walk listed the
     * directory makes it fail, so the directory is then first renamed to a name no task knows, which ends
     * its creates, and removed under that name.
     */
    @Override
    void deleteStaging() {
        FileSystem fs = fs();
        try {
            fs.delete(staging, true);
            if (!fs.exists(staging)) {
                return;
            }
            Path away = new Path(dir, OutputPaths.removedName(stagingName) + "-" + java.util.UUID.randomUUID());
            if (!fs.rename(staging, away)) {
                throw new IOException("cannot rename it to " + away);
            }
            // a second pass: only creates under way at the rename can have added to what the first one saw
            for (int pass = 0; pass < 2 && fs.exists(away); pass++) {
                fs.delete(away, true);
            }
            if (fs.exists(away)) {
                throw new IOException(away + " is still there");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + staging + ": " + e, e);
        }
    }

    /**
     * The attempt's files in its partition's directory (p-PARTITION/ATTEMPT.N): those its report names and any
     * it made before it could report (a listing of the directory), deleted writesInFlight at a time.
     */
    @Override
    public void abortAttempt(int partition, String attempt, TaskFiles report) throws IOException {
        FileSystem fs = fs();
        Path part = new Path(staging, StreamTask.partitionDir(partition));
        String prefix = OutputPaths.checkAttempt(attempt) + ".";
        List<Path> doomed = new ArrayList<>();
        try {
            for (FileStatus st : fs.listStatus(part)) {
                if (st.getPath().getName().startsWith(prefix)) {
                    doomed.add(st.getPath());
                }
            }
        } catch (java.io.FileNotFoundException e) {
            return;   // the job has ended: its staging directory is gone
        }
        try (WritePool<Void> deletes = new WritePool<>(options.writesInFlight(), Long.MAX_VALUE, "bfo-hadoop-abort")) {
            for (Path p : doomed) {
                deletes.submit(0, () -> {
                    fs.delete(p, false);
                    return null;
                });
            }
            deletes.finish();
        }
    }
}

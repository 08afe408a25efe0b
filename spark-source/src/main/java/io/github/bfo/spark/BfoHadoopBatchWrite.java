/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.util.SerializableConfiguration;

/**
 * The job side of the commit protocol on a Hadoop file system other than
 * the local one: the protocol of {@link BfoBatchWrite}, through
 * {@link FileSystem} calls. Tasks write their files under
 * DIR/_temporary-bfo-QUERYID/TASK/; a task commit (arbitrated by Spark's
 * output commit coordinator) reports them; the job commit checks the whole
 * set ({@link BfoCommittedFiles}), and in append mode that no file is there
 * already and no directory the files go into is a file, or in truncate
 * mode removes everything in DIR but the staging directory; then it
 * publishes every file with a rename and removes the staging directory. An
 * aborted job leaves DIR as it was.
 *
 * <p>The FileSystem API has no descriptor-relative calls, so there is no
 * equivalent of the local writer's guard against symbolic links; instead
 * nothing is replaced: tasks create with overwrite=false, and files are
 * published with FileContext's rename without overwrite, which fails the
 * job when anything (a file, or a directory the file would land inside)
 * appeared at the name after the check.
 */
final class BfoHadoopBatchWrite extends BfoStagedWrite {
    // other users of DIR cannot add to or change the staged files before they are published (where the file
    // system has permissions), as with the local writer's owner-only staging directory
    private static final FsPermission STAGING_PERMISSION = FsPermission.createImmutable((short) 0700);

    private final Path dir;
    private final SerializableConfiguration conf;
    private final Path staging;

    BfoHadoopBatchWrite(Path dir, SerializableConfiguration conf, BfoOptions options, LogicalWriteInfo info,
                        boolean truncate) {
        super(options, info, truncate);
        this.dir = dir;
        this.conf = conf;
        this.staging = new Path(dir, stagingName);
    }

    @Override
    String dirName() {
        return dir.toString();
    }

    private FileSystem fs() {
        return BfoHadoopDir.fileSystem(dir, conf.value());
    }

    /** rel (a path relative to DIR, as the rows give it) in DIR; a ':' in a name is not read as a scheme. */
    private Path child(String rel) {
        return new Path(dir, new Path(null, null, rel));
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
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
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot create the staging directory " + staging + ": " + e, e);
        }
        return new BfoHadoopDataWriterFactory(dir.toString(), stagingName, conf, options, schema);
    }

    @Override
    void publish(SortedMap<String, String> sources) throws IOException {
        FileSystem fs = fs();
        if (!fs.getFileStatus(staging).isDirectory()) {
            throw new IOException(staging + " is not the job's staging directory");
        }
        if (truncate) {
            clearExceptStaging(fs);
        } else {
            checkFree(fs, sources.keySet());
        }
        FileContext fc = fileContext(fs);
        Set<String> made = new HashSet<>();
        for (Map.Entry<String, String> e : sources.entrySet()) {
            String p = e.getKey();
            int slash = p.lastIndexOf('/');
            if (slash > 0 && !made.contains(p.substring(0, slash))) {
                String parent = p.substring(0, slash);
                if (!fs.mkdirs(child(parent))) {
                    throw new IOException("mkdirs " + child(parent) + " returned false");
                }
                for (String d = parent; d != null && made.add(d); ) {
                    int k = d.lastIndexOf('/');
                    d = k < 0 ? null : d.substring(0, k);
                }
            }
            Path src = child(e.getValue());
            Path dst = child(p);
            renameNoReplace(fs, fc, src, dst);
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

    private void clearExceptStaging(FileSystem fs) throws IOException {
        for (FileStatus st : fs.listStatus(dir)) {
            if (!st.getPath().getName().equals(stagingName) && !fs.delete(st.getPath(), true)
                    && fs.exists(st.getPath())) {
                throw new IOException("cannot remove " + st.getPath());
            }
        }
    }

    /**
     * Append mode: none of the files exists and no directory they go into is a file, checked before anything
     * is published. Each existing directory that new files go into is listed once, rather than a status call
     * per file: many small files into few directories is the usual write.
     */
    private void checkFree(FileSystem fs, Set<String> files) throws IOException {
        Map<String, Set<String>> wanted = new HashMap<>();   // directory ("" for DIR) -> names needed in it
        for (String p : files) {
            String parent = "";
            for (String name : p.split("/")) {
                wanted.computeIfAbsent(parent, k -> new HashSet<>()).add(name);
                parent = parent.isEmpty() ? name : parent + "/" + name;
            }
        }
        ArrayDeque<String> existing = new ArrayDeque<>();
        existing.add("");
        while (!existing.isEmpty()) {
            String d = existing.poll();
            Set<String> names = wanted.get(d);
            for (FileStatus st : fs.listStatus(d.isEmpty() ? dir : child(d))) {
                String name = st.getPath().getName();
                if (!names.contains(name)) {
                    continue;
                }
                String rel = d.isEmpty() ? name : d + "/" + name;
                if (files.contains(rel)) {
                    throw new FileAlreadyExistsException(child(rel).toString(), null,
                            "bfo write (mode append): the file already exists; nothing was written");
                }
                if (!st.isDirectory()) {
                    throw new FileAlreadyExistsException(child(rel).toString(), null,
                            "bfo write (mode append): not a directory, but new files go into it; nothing was written");
                }
                existing.add(rel);
            }
        }
    }

    @Override
    void deleteStaging() {
        try {
            fs().delete(staging, true);
        } catch (IOException e) {
            throw new UncheckedIOException("bfo write: cannot remove " + staging + ": " + e, e);
        }
    }
}

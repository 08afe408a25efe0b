/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.hadoop.fs.DirectoryWalk;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.BlockLocation;
import org.apache.hadoop.fs.ChecksumFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.mapreduce.lib.input.InvalidInputException;
import org.apache.hadoop.util.ReflectionUtils;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Lists a job's input the way FileInputFormat does (globs; names starting
 * with {@code _} or {@code .} skipped; {@code mapreduce.input.pathFilter.class};
 * {@code input.dir.recursive}; {@code list-status.num-threads} directories
 * listed in parallel; InvalidInputException naming every missing path or
 * empty pattern; without {@code list-status.num-threads}, directories on
 * other file systems than the local one are listed
 * {@link BfoInputConfig#DEFAULT_REMOTE_LIST_THREADS} at a time, each
 * listing being a round trip) straight into a compact {@link FileTable}: no list of
 * FileStatus objects is kept. Unlike FileInputFormat, a subdirectory of a
 * non-recursive input directory is skipped rather than passed on as a file.
 * While a directory is listed, the {@code .NAME.crc} files beside its files
 * are noted (for checksum verification on local file systems). Given a
 * {@link LargeFileCutter}, the lister also keeps the status of every file it
 * deems large ({@link FileTable#large}).
 */
final class InputLister {
    private static final PathFilter HIDDEN = p -> {
        String n = p.getName();
        return !n.startsWith("_") && !n.startsWith(".");
    };

    private final Configuration conf;
    private final FileTable table = new FileTable();
    private final PathFilter filter;
    private final PathFilter userFilter;
    private final boolean recursive;
    private final LargeFileCutter cutter;
    private final Object lock = new Object();

    private InputLister(Configuration conf, LargeFileCutter cutter) {
        this.conf = conf;
        this.cutter = cutter;
        Class<?> c = conf.getClass(BfoInputConfig.PATHFILTER_CLASS, null, PathFilter.class);
        PathFilter user = c == null ? null : (PathFilter) ReflectionUtils.newInstance(c, conf);
        this.userFilter = user;
        this.filter = user == null ? HIDDEN : p -> HIDDEN.accept(p) && user.accept(p);
        this.recursive = conf.getBoolean(BfoInputConfig.INPUT_DIR_RECURSIVE, false);
    }

    /** The input paths of a job ({@code mapreduce.input.fileinputformat.inputdir}). */
    static Path[] inputPaths(Configuration conf) {
        String dirs = conf.get(BfoInputConfig.INPUT_DIR, "");
        String[] list = org.apache.hadoop.util.StringUtils.split(dirs);
        Path[] result = new Path[list.length];
        for (int i = 0; i < list.length; i++) {
            result[i] = new Path(org.apache.hadoop.util.StringUtils.unEscapeString(list[i]));
        }
        return result;
    }

    static FileTable list(Configuration conf, Path[] inputs) throws IOException {
        return list(conf, inputs, null);
    }

    /** The input, the large files' statuses kept as cutter deems them (null: none kept). */
    static FileTable list(Configuration conf, Path[] inputs, LargeFileCutter cutter) throws IOException {
        if (inputs.length == 0) {
            throw new IOException("No input paths specified in job");
        }
        FileTable t = new InputLister(conf, cutter).run(inputs);
        t.trim();
        return t;
    }

    private FileTable run(Path[] inputs) throws IOException {
        List<IOException> errors = new ArrayList<>();
        List<Path> dirsToList = new ArrayList<>();
        List<FileSystem> dirFs = new ArrayList<>();
        for (Path p : inputs) {
            FileSystem fs = p.getFileSystem(conf);
            FileStatus[] matches = fs.globStatus(p, filter);
            if (matches == null) {
                errors.add(new IOException("Input path does not exist: " + p));
            } else if (matches.length == 0) {
                errors.add(new IOException("Input Pattern " + p + " matches 0 files"));
            } else {
                for (FileStatus m : matches) {
                    if (m.isDirectory()) {
                        dirsToList.add(m.getPath());
                        dirFs.add(fs);
                    } else {
                        addFile(fs, m);
                    }
                }
            }
        }
        if (!errors.isEmpty()) {
            throw new InvalidInputException(errors);
        }
        if (!dirsToList.isEmpty() && table.size == 0 && localOnly(dirFs)) {
            FileSystem local = dirFs.get(0);
            LocalLister.list(conf, table, filter, userFilter != null, recursive, dirsToList,
                    local instanceof ChecksumFileSystem, cutter, local.getDefaultBlockSize(dirsToList.get(0)));
            return table;
        }
        int threads = Math.max(1, conf.getInt(BfoInputConfig.LIST_STATUS_NUM_THREADS,
                localOnly(dirFs) ? 1 : BfoInputConfig.DEFAULT_REMOTE_LIST_THREADS));
        if (threads == 1 || dirsToList.isEmpty()) {
            List<Path> work = new ArrayList<>(dirsToList);
            List<FileSystem> workFs = new ArrayList<>(dirFs);
            while (!work.isEmpty()) {
                int last = work.size() - 1;
                Path d = work.remove(last);
                FileSystem fs = workFs.remove(last);
                for (Path sub : listDir(fs, d)) {
                    work.add(sub);
                    workFs.add(fs);
                }
            }
        } else {
            listParallel(dirsToList, dirFs, threads);
        }
        return table;
    }

    /** True when every directory is on the local file system (file:, listed by {@link LocalLister}). */
    private boolean localOnly(List<FileSystem> fss) {
        for (FileSystem fs : fss) {
            if (!"file".equals(fs.getUri().getScheme()) || fs != fss.get(0)) {
                return false;
            }
        }
        return true;
    }

    private void listParallel(List<Path> roots, List<FileSystem> rootFs, int threads) throws IOException {
        List<Listing> work = new ArrayList<>();
        for (int i = 0; i < roots.size(); i++) {
            work.add(new Listing(rootFs.get(i), roots.get(i)));
        }
        DirectoryWalk.walk(work, threads, "bfo-list-status", d -> {
            List<Listing> subs = new ArrayList<>();
            for (Path sub : listDir(d.fs, d.dir)) {
                subs.add(new Listing(d.fs, sub));
            }
            return subs;
        });
    }

    /** A directory to list, and its file system. */
    private record Listing(FileSystem fs, Path dir) {
    }

    /** Lists one directory into the table; returns its subdirectories to list (recursive mode). */
    private List<Path> listDir(FileSystem fs, Path dir) throws IOException {
        List<Path> subdirs = new ArrayList<>();
        List<LocatedFileStatus> files = new ArrayList<>();
        List<String> skipped = new ArrayList<>(0);
        Set<String> crcNames = null;
        boolean checksummed = fs instanceof ChecksumFileSystem;
        RemoteIterator<LocatedFileStatus> it = fs.listLocatedStatus(dir);
        while (it.hasNext()) {
            LocatedFileStatus st = it.next();
            Path p = st.getPath();
            if (!filter.accept(p)) {
                String n = p.getName();
                if (checksummed && n.startsWith(".") && n.endsWith(".crc") && st.isFile()) {
                    if (crcNames == null) {
                        crcNames = new HashSet<>();
                    }
                    crcNames.add(n);
                }
                continue;
            }
            if (st.isDirectory()) {
                if (recursive) {
                    subdirs.add(p);
                } else {
                    skipped.add(p.toString());
                }
            } else if (st.isFile()) {
                files.add(st);
            }
        }
        if (!skipped.isEmpty()) {
            synchronized (lock) {
                for (String s : skipped) {
                    table.skippedDir(s);
                }
            }
        }
        if (!files.isEmpty()) {
            String dirString = dir.toString();
            synchronized (lock) {
                int d = table.dir(dirString);
                for (LocatedFileStatus st : files) {
                    String name = st.getPath().getName();
                    boolean crc = crcNames != null && crcNames.contains("." + name + ".crc");
                    table.add(d, name, st.getLen(), table.locations(st.getBlockLocations()), crc);
                    table.noteIfLarge(cutter, st);
                }
            }
        }
        return subdirs;
    }

    private void addFile(FileSystem fs, FileStatus st) throws IOException {
        BlockLocation[] blocks = st instanceof LocatedFileStatus
                ? ((LocatedFileStatus) st).getBlockLocations()
                : fs.getFileBlockLocations(st, 0, st.getLen());
        boolean crc = fs instanceof ChecksumFileSystem
                && fs.exists(((ChecksumFileSystem) fs).getChecksumFile(st.getPath()));
        Path p = st.getPath();
        synchronized (lock) {
            table.add(table.dir(p.getParent() == null ? p.toString() : p.getParent().toString()), p.getName(),
                    st.getLen(), table.locations(blocks), crc);
            table.noteIfLarge(cutter, st);
        }
    }
}

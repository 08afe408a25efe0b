/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

import io.github.bfo.BatchFileReader;
import io.github.bfo.FailurePolicy;
import io.github.bfo.FileBatch;
import io.github.bfo.FileData;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * Lists local ({@code file:}) input directories fast: the names of a level
 * of directories are read with readdir, filtered by name (hidden files, the
 * job's PathFilter), and the survivors stat'ed in ONE parallel metadata-only
 * BFO batch, which also gives each file's device and inode for the split
 * order. Hadoop's LocalFileSystem would build a LocatedFileStatus per file,
 * which on a JVM without libhadoop forks a process per file to read its
 * permissions (milliseconds each). The semantics stay FileInputFormat's:
 * regular files become input, subdirectories are descended when recursive,
 * every entry passes the filters first; every local file is on the host
 * "localhost", as LocalFileSystem reports it. A file the cutter deems large
 * (at the file system's block size, which LocalFileSystem reports for every
 * file) keeps a FileStatus of its own; FileInputFormat asks the file system
 * for its block locations ("localhost", without touching the disk).
 *
 * <p>Not bfo-java's readTree (libbfo's walk, as spark-source lists): that
 * walk skips links to directories, which LocalFileSystem (and this lister)
 * follow, so a recursive input would lose their files; it also descends
 * every directory, where FileInputFormat never enters a hidden one, one the
 * PathFilter refuses, or any when the input is not recursive.
 */
final class LocalLister {
    private static final int S_IFMT = 0170000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFREG = 0100000;

    private LocalLister() {
    }

    static void list(Configuration conf, FileTable table, PathFilter filter, boolean hasUserFilter, boolean recursive,
                     List<Path> roots, boolean checksummed, LargeFileCutter cutter, long blockSize)
            throws IOException {
        int loc = table.location(new String[] {"localhost"}, new String[] {"/default-rack"});
        List<Path> level = new ArrayList<>(roots);
        try (BatchFileReader reader = BfoInputConfig.readerBuilder(conf).metadataOnly(true)
                .failurePolicy(FailurePolicy.PERFORM_ALL).build()) {
            while (!level.isEmpty()) {
                // names of this level
                List<String> dirStrings = new ArrayList<>();
                List<java.nio.file.Path> dirLocal = new ArrayList<>();
                List<Set<String>> crcs = new ArrayList<>();
                SplitPlanner.IntList candDir = new SplitPlanner.IntList();
                List<String> candName = new ArrayList<>();
                for (Path d : level) {
                    int di = dirStrings.size();
                    String ds = d.toString();
                    java.nio.file.Path local = SplitPlanner.localPath(ds);
                    dirStrings.add(ds);
                    dirLocal.add(local);
                    Set<String> crc = null;
                    try (DirectoryStream<java.nio.file.Path> st = Files.newDirectoryStream(local)) {
                        for (java.nio.file.Path e : st) {
                            String name = e.getFileName().toString();
                            boolean hidden = name.startsWith("_") || name.startsWith(".");
                            if (hidden) {
                                if (checksummed && name.startsWith(".") && name.endsWith(".crc")) {
                                    if (crc == null) {
                                        crc = new HashSet<>();
                                    }
                                    crc.add(name);
                                }
                                continue;
                            }
                            if (hasUserFilter && !filter.accept(new Path(d, name))) {
                                continue;
                            }
                            candDir.add(di);
                            candName.add(name);
                        }
                    }
                    crcs.add(crc);
                }
                // stat them all in one batch
                int n = candName.size();
                Iterable<java.nio.file.Path> paths = () -> new Iterator<>() {
                    int i;

                    @Override
                    public boolean hasNext() {
                        return i < n;
                    }

                    @Override
                    public java.nio.file.Path next() {
                        if (i >= n) {
                            throw new NoSuchElementException();
                        }
                        int k = i++;
                        return dirLocal.get(candDir.get(k)).resolve(candName.get(k));
                    }
                };
                long[] size = new long[n];
                long[] dev = new long[n];
                long[] ino = new long[n];
                int[] kind = new int[n];
                try (FileBatch b = reader.read(paths)) {
                    for (FileData f : b) {
                        int k = (int) f.index();
                        int type = f.mode() & S_IFMT;
                        if (type == S_IFDIR) {
                            kind[k] = 2;   // the engine refuses directories, but reports their mode
                        } else if (f.isOk() && (type == S_IFREG || type == 0)) {
                            kind[k] = 1;
                            size[k] = f.size();
                            dev[k] = f.device();
                            ino[k] = f.inode();
                        }
                    }
                }
                List<Path> next = new ArrayList<>();
                int[] tableDir = new int[dirStrings.size()];
                java.util.Arrays.fill(tableDir, -1);
                for (int k = 0; k < n; k++) {
                    int di = candDir.get(k);
                    if (kind[k] == 2) {
                        if (recursive) {
                            next.add(new Path(level.get(di), candName.get(k)));
                        } else {
                            table.skippedDir(new Path(level.get(di), candName.get(k)).toString());
                        }
                    } else if (kind[k] == 1) {
                        if (tableDir[di] < 0) {
                            tableDir[di] = table.dir(dirStrings.get(di));
                        }
                        String name = candName.get(k);
                        Set<String> crc = crcs.get(di);
                        table.add(tableDir[di], name, size[k], loc, crc != null && crc.contains("." + name + ".crc"),
                                dev[k], ino[k]);
                        if (cutter != null && cutter.isLarge(size[k], blockSize)) {
                            table.large.put(table.size - 1, new FileStatus(size[k], false, 1, blockSize, 0,
                                    new Path(table.path(table.size - 1))));
                        }
                    }
                }
                level = next;
            }
        }
    }
}

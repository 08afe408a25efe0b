/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * What a job commit on a Hadoop file system checks and clears in the output
 * directory before it publishes, whatever way it publishes (renames, or
 * multipart completions).
 */
public final class HadoopTree {
    private HadoopTree() {
    }

    /** rel (a path relative to dir, as the rows give it) in dir; a ':' in a name is not read as a scheme. */
    public static Path child(Path dir, String rel) {
        return new Path(dir, new Path(null, null, rel));
    }

    /** Removes everything in dir but the entry named keep (null: nothing kept). */
    public static void clear(FileSystem fs, Path dir, String keep) throws IOException {
        for (FileStatus st : fs.listStatus(dir)) {
            if (!st.getPath().getName().equals(keep) && !fs.delete(st.getPath(), true) && fs.exists(st.getPath())) {
                throw new IOException("cannot remove " + st.getPath());
            }
        }
    }

    /**
     * Append mode: none of the files exists and no directory they go into is a file, checked before anything
     * is published. Each existing directory that new files go into is listed once, rather than a status call
     * per file: many small files into few directories is the usual write.
     */
    public static void checkFree(FileSystem fs, Path dir, Set<String> files) throws IOException {
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
            for (FileStatus st : fs.listStatus(d.isEmpty() ? dir : child(dir, d))) {
                String name = st.getPath().getName();
                if (!names.contains(name)) {
                    continue;
                }
                String rel = d.isEmpty() ? name : d + "/" + name;
                if (files.contains(rel)) {
                    throw new FileAlreadyExistsException(child(dir, rel).toString(), null,
                            "bfo write (mode append): the file already exists; nothing was written");
                }
                if (!st.isDirectory()) {
                    throw new FileAlreadyExistsException(child(dir, rel).toString(), null,
                            "bfo write (mode append): not a directory, but new files go into it; nothing was written");
                }
                existing.add(rel);
            }
        }
    }
}

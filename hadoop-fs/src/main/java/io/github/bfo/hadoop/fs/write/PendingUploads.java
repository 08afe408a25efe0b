/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What a committed task of a multipart write hands to the job commit: the
 * files it uploaded (paths relative to the output directory), each with its
 * pending upload's handle and its one part's handle (Hadoop's
 * MultipartUploader serializations), to complete or abort.
 */
public final class PendingUploads extends TaskFiles {
    private static final long serialVersionUID = 1L;
    final byte[][] uploads;
    final byte[][] parts;

    public PendingUploads(List<Upload> done) {
        super(new String[done.size()]);
        int n = done.size();
        uploads = new byte[n][];
        parts = new byte[n][];
        for (int i = 0; i < n; i++) {
            paths[i] = done.get(i).path();
            uploads[i] = done.get(i).upload();
            parts[i] = done.get(i).part();
        }
    }

    public Upload get(int i) {
        return new Upload(paths[i], uploads[i], parts[i]);
    }

    /** One file's pending upload: its path relative to the output directory, its handles. */
    public record Upload(String path, byte[] upload, byte[] part) {
    }

    /**
     * Every committed upload by its path in DIR, sorted; fails when two tasks name the same file
     * (duplicateHint says where they came from) or when a file is also another one's directory ("a" and "a/b").
     */
    static SortedMap<String, Upload> plan(List<TaskFiles> tasks, String duplicateHint) {
        SortedMap<String, Upload> all = new TreeMap<>();
        for (TaskFiles m : tasks) {
            if (m == null) {
                continue;
            }
            PendingUploads c = (PendingUploads) m;
            for (int i = 0; i < c.size(); i++) {
                StagedFiles.add(all, c.paths[i], c.get(i), duplicateHint);
            }
        }
        StagedFiles.checkNoFileIsADirectory(all.keySet());
        return all;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.util.SortedMap;
import java.util.TreeMap;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What a committed task hands to the job commit: its directory in the
 * staging area and the files it wrote there (paths relative to the output
 * directory); and the job's check of every task's files together, the same
 * for every destination, before anything is published.
 */
final class BfoCommittedFiles implements WriterCommitMessage {
    private static final long serialVersionUID = 1L;
    final String taskName;   // in the staging directory
    final String[] paths;

    BfoCommittedFiles(String taskName, String[] paths) {
        this.taskName = taskName;
        this.paths = paths;
    }

    /**
     * Every committed file: its path in the output directory -> the path, relative to the output directory,
     * of its staged copy (STAGING/TASK/PATH); sorted, so that a directory's files come together. Fails when
     * two rows name the same file or when a file is also another one's directory ("a" and "a/b").
     */
    static SortedMap<String, String> publishPlan(WriterCommitMessage[] messages, String stagingName) {
        SortedMap<String, String> sources = new TreeMap<>();
        for (WriterCommitMessage m : messages) {
            if (m == null) {
                continue;
            }
            BfoCommittedFiles c = (BfoCommittedFiles) m;
            if (!c.taskName.startsWith("task-") || c.taskName.contains("/")) {
                throw new IllegalArgumentException("bfo write: bad task directory '" + c.taskName + "'");
            }
            for (String p : c.paths) {
                if (sources.put(p, stagingName + "/" + c.taskName + "/" + p) != null) {
                    throw new IllegalArgumentException("bfo write: duplicate path '" + p
                            + "' in the DataFrame (each row must name a different file); nothing was written");
                }
            }
        }
        checkNoFileIsADirectory(sources.keySet());
        return sources;
    }

    /** Fails when a path is also another one's directory ("a" and "a/b"): nothing of the job is published. */
    static void checkNoFileIsADirectory(java.util.Set<String> paths) {
        for (String p : paths) {
            for (int k = p.indexOf('/'); k > 0; k = p.indexOf('/', k + 1)) {
                if (paths.contains(p.substring(0, k))) {
                    throw new IllegalArgumentException("bfo write: path '" + p.substring(0, k)
                            + "' is both a file and a directory of '" + p + "'; nothing was written");
                }
            }
        }
    }
}

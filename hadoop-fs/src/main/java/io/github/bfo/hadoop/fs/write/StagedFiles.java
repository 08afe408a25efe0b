/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.util.List;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a committed task of a staged write hands to the job commit: its name,
 * the files it wrote (paths relative to the output directory) and where each
 * is staged: STAGING/TASK/PATH (the local writer, {@link LocalTask}), or
 * STAGING/p-PARTITION/TASK.N (the Hadoop writer, {@link StreamTask},
 * {@link Staged}); and the job's check of every task's files together, the
 * same for every destination, before anything is published.
 */
public final class StagedFiles extends TaskFiles {
    private static final long serialVersionUID = 1L;
    final String taskName;   // in the staging directory
    final String[] stagedNames;   // null: STAGING/TASK/PATH; else STAGING/stagedNames[i] holds paths[i]
    // p-PARTITION/TASK.N, TASK in group 1; compiled once: the driver checks every file of the job
    private static final Pattern STAGED_NAME = Pattern.compile("p-[0-9]+/([^/]+)\\.[0-9]+");

    /** A file written to the staging directory under name, for path in the output directory. */
    public record Staged(String path, String name) {
    }

    /** Files staged as STAGING/taskName/PATH. */
    public StagedFiles(String taskName, String[] paths) {
        super(paths);
        this.taskName = taskName;
        this.stagedNames = null;
    }

    /** Files staged under names of their own in the staging directory. */
    public StagedFiles(String taskName, Staged[] files) {
        super(new String[files.length]);
        this.taskName = taskName;
        this.stagedNames = new String[files.length];
        for (int i = 0; i < files.length; i++) {
            paths[i] = files[i].path();
            stagedNames[i] = files[i].name();
        }
    }

    /** The task attempt's name (its directory, or its files' prefix, in the staging directory). */
    public String taskName() {
        return taskName;
    }

    /** Null when every file is STAGING/TASK/PATH; else the i-th file is STAGING/stagedName(i). */
    public String stagedName(int i) {
        return stagedNames == null ? null : stagedNames[i];
    }

    /** Where paths[i] is staged, relative to the staging directory. */
    private String staged(int i) {
        if (stagedNames == null) {
            return taskName + "/" + paths[i];
        }
        String n = stagedNames[i];
        Matcher m = STAGED_NAME.matcher(n);
        if (!m.matches() || !m.group(1).equals(taskName)) {
            throw new IllegalArgumentException("bfo write: bad staged file '" + n + "' of " + taskName);
        }
        return n;
    }

    /**
     * Every committed file: its path in the output directory -> the path, relative to the output directory,
     * of its staged copy (STAGING/TASK/PATH or STAGING/p-PARTITION/TASK.N); sorted, so that a directory's
     * files come together. Fails when two tasks name the same file (duplicateHint says where they came from)
     * or when a file is also another one's directory ("a" and "a/b").
     */
    static SortedMap<String, String> publishPlan(List<TaskFiles> tasks, String stagingName, String duplicateHint) {
        SortedMap<String, String> sources = new TreeMap<>();
        for (TaskFiles m : tasks) {
            if (m == null) {
                continue;
            }
            StagedFiles c = (StagedFiles) m;
            if (!c.taskName.startsWith("task-") || c.taskName.contains("/")) {
                throw new IllegalArgumentException("bfo write: bad task directory '" + c.taskName + "'");
            }
            if (c.stagedNames != null && c.stagedNames.length != c.paths.length) {
                throw new IllegalArgumentException("bfo write: bad commit message of " + c.taskName);
            }
            for (int i = 0; i < c.paths.length; i++) {
                add(sources, c.paths[i], stagingName + "/" + c.staged(i), duplicateHint);
            }
        }
        checkNoFileIsADirectory(sources.keySet());
        return sources;
    }

    /** Adds path (checked) to a job's plan; a path already there fails the job, naming it. */
    static <T> void add(SortedMap<String, T> plan, String path, T what, String duplicateHint) {
        if (plan.put(OutputPaths.check(path), what) != null) {
            throw duplicate(path, duplicateHint);
        }
    }

    /** The error for a path that two of the job's files (or a task's) name. */
    static IllegalArgumentException duplicate(String path, String hint) {
        return new IllegalArgumentException("bfo write: duplicate path '" + path + "' " + hint
                + "; nothing was written");
    }

    /** Fails when a path is also another one's directory ("a" and "a/b"): nothing of the job is published. */
    static void checkNoFileIsADirectory(Set<String> paths) {
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

import java.io.Closeable;
import java.io.IOException;
import java.util.HashSet;
import java.util.Set;

/**
 * One task attempt's side of a write: files in, a report of what was
 * written out ({@link #commit}) or nothing left behind ({@link #abort}).
 * Every path is checked before anything is written: relative, inside the
 * output directory ({@link OutputPaths#check}), and new in this task (two
 * files of one path fail the task, naming it; the job commit checks across
 * tasks). Made from a {@link TaskSetup}; driven by one thread.
 */
public abstract class OutputTask implements Closeable {
    private final Set<String> seen = new HashSet<>();
    private final String duplicateHint;

    OutputTask(WriteOptions options) {
        this.duplicateHint = options.duplicateHint();
    }

    /**
     * Writes content as the file path (relative to the output directory), with permission bits mode (-1: the
     * writer's default) and modification time in milliseconds (-1: when it is written). content is the
     * caller's no more: it may be written after this returns.
     */
    public final void write(String path, byte[] content, int mode, long modificationTime) throws IOException {
        OutputPaths.check(path);
        if (!seen.add(path)) {
            throw StagedFiles.duplicate(path, duplicateHint);
        }
        if (mode > 07777) {
            throw new IllegalArgumentException("bfo write: mode " + Integer.toOctalString(mode) + " of '" + path
                    + "' has bits outside 07777");
        }
        put(path, content, mode, modificationTime);
    }

    /** Writes a checked file. */
    abstract void put(String path, byte[] content, int mode, long modificationTime) throws IOException;

    /** Waits for every file to be written; what the job commit needs to publish them. */
    public abstract TaskFiles commit() throws IOException;

    /** Undoes what this attempt wrote (waiting for the writes under way); nothing of it is left. */
    public abstract void abort() throws IOException;
}

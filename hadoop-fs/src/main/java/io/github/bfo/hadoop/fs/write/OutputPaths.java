/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop.fs.write;

/**
 * The names a write gives its files and keeps for itself: every file's path
 * is relative to the output directory and stays inside it (no "." or "..",
 * no empty component, not absolute, not a URI, not a reserved name); the
 * staging directory of a job is {@code _temporary-bfo-ID}, hidden from
 * readers like every "_" name (Hadoop's input formats, Spark's listing).
 */
public final class OutputPaths {
    /** The start of every staging directory's name, reserved. */
    public static final String STAGING_PREFIX = "_temporary-bfo-";

    private OutputPaths() {
    }

    /** The staging directory of the job (or query) named id. */
    public static String stagingName(String id) {
        String name = STAGING_PREFIX + id;
        if (id.isEmpty() || id.contains("/") || id.equals(".") || id.equals("..")) {
            throw new IllegalArgumentException("bfo write: bad job id '" + id + "'");
        }
        return name;
    }

    /**
     * Where the local writer's staging directory goes when the job ends without publishing (hidden like it):
     * tasks still writing then fail their next check, and the last one to stop removes it (see
     * {@link LocalJob#deleteStaging}).
     */
    public static String removedName(String stagingName) {
        return stagingName + "-removed";
    }

    /** The path, if it stays inside the output directory; a clear error otherwise. */
    public static String check(String path) {
        String why = null;
        if (path.isEmpty()) {
            why = "it is empty";
        } else if (path.startsWith("/")) {
            why = "it is absolute (paths are relative to the output directory)";
        } else if (path.indexOf('\0') >= 0) {
            why = "it contains a NUL character";
        } else if (path.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*") && path.contains(":/")) {
            why = "it is a URI (paths are relative to the output directory)";
        } else {
            for (String c : path.split("/", -1)) {
                if (c.equals("..")) {
                    why = "it contains '..' (paths must stay inside the output directory)";
                    break;
                }
                if (c.equals(".") || c.isEmpty()) {
                    why = "it has an empty or '.' component";
                    break;
                }
            }
            if (why == null && (path.startsWith(STAGING_PREFIX) || path.startsWith(".bfo-journal"))) {
                why = "the name is reserved for bfo's staging";
            }
        }
        if (why != null) {
            throw new IllegalArgumentException("bfo write: bad path '" + path + "': " + why);
        }
        return path;
    }

    /** The name of a task attempt's staged files ({@code task-...}, one component). */
    static String checkAttempt(String attempt) {
        if (!attempt.startsWith("task-") || attempt.contains("/") || attempt.length() > 255) {
            throw new IllegalArgumentException("bfo write: bad task attempt name '" + attempt + "'");
        }
        return attempt;
    }
}

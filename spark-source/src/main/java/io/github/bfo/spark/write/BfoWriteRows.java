/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoTable;
import java.util.HashSet;
import java.util.Set;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * The rows of one write task as files, checked the same way whatever the
 * destination: a path relative to the output directory that stays inside
 * it (no "." or "..", no empty component, not a reserved name), a non-null
 * content, and no path twice in the task (the job commit checks across
 * tasks).
 */
final class BfoWriteRows {
    private final int pathCol;
    private final int contentCol;
    private final Set<String> seen = new HashSet<>();

    BfoWriteRows(StructType schema) {
        this.pathCol = schema.fieldIndex(BfoTable.PATH);
        this.contentCol = schema.fieldIndex(BfoTable.CONTENT);
    }

    /** The row's checked path; a clear error for a bad row. */
    String path(InternalRow row) {
        if (row.isNullAt(pathCol)) {
            throw new IllegalArgumentException("bfo write: a row has a null path");
        }
        String path = checkPath(row.getUTF8String(pathCol).toString());
        if (row.isNullAt(contentCol)) {
            throw new IllegalArgumentException("bfo write: the row for '" + path + "' has a null content");
        }
        if (!seen.add(path)) {
            throw new IllegalArgumentException("bfo write: duplicate path '" + path
                    + "' in the DataFrame (each row must name a different file); nothing was written");
        }
        return path;
    }

    /** The row's content; call after {@link #path}, which refuses a null one. */
    byte[] content(InternalRow row) {
        return row.getBinary(contentCol);
    }

    /** The path, if it stays inside the output directory; a clear error otherwise. */
    static String checkPath(String path) {
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
            if (why == null && (path.startsWith(BfoStagedWrite.STAGING_PREFIX) || path.startsWith(".bfo-journal"))) {
                why = "the name is reserved for bfo's staging";
            }
        }
        if (why != null) {
            throw new IllegalArgumentException("bfo write: bad path '" + path + "': " + why);
        }
        return path;
    }
}

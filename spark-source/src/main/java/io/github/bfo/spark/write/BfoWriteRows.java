/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputPaths;
import io.github.bfo.spark.BfoTable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.StructType;

/**
 * The rows of one write task as files: a path relative to the output
 * directory that stays inside it ({@link OutputPaths#check}: no "." or
 * "..", no empty component, not a reserved name) and a non-null content.
 * The task's writer refuses a path twice in the task; the job commit checks
 * across tasks.
 */
final class BfoWriteRows {
    private final int pathCol;
    private final int contentCol;

    BfoWriteRows(StructType schema) {
        this.pathCol = schema.fieldIndex(BfoTable.PATH);
        this.contentCol = schema.fieldIndex(BfoTable.CONTENT);
    }

    /** The row's checked path; a clear error for a bad row. */
    String path(InternalRow row) {
        if (row.isNullAt(pathCol)) {
            throw new IllegalArgumentException("bfo write: a row has a null path");
        }
        String path = OutputPaths.check(row.getUTF8String(pathCol).toString());
        if (row.isNullAt(contentCol)) {
            throw new IllegalArgumentException("bfo write: the row for '" + path + "' has a null content");
        }
        return path;
    }

    /** The row's content; call after {@link #path}, which refuses a null one. */
    byte[] content(InternalRow row) {
        return row.getBinary(contentCol);
    }
}

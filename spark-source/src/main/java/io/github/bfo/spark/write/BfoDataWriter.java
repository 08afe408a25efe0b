/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputTask;
import java.io.IOException;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.StructType;

/**
 * One task attempt: each row becomes a file through the attempt's
 * {@link OutputTask} (libbfo batches, Hadoop streams or multipart uploads,
 * as the job set up); commit hands its report to the job commit, abort
 * undoes what it wrote.
 */
final class BfoDataWriter implements DataWriter<InternalRow> {
    private final OutputTask task;
    private final BfoWriteRows rows;

    BfoDataWriter(OutputTask task, StructType schema) {
        this.task = task;
        this.rows = new BfoWriteRows(schema);
    }

    @Override
    public void write(InternalRow row) throws IOException {
        String path = rows.path(row);
        task.write(path, rows.content(row), -1, -1);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        return new BfoTaskCommit(task.commit());
    }

    @Override
    public void abort() throws IOException {
        task.abort();
    }

    @Override
    public void close() throws IOException {
        task.close();
    }
}

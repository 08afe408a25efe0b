/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.TaskFiles;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** A committed task's message to the job commit: its report (the files it wrote and where they wait). */
record BfoTaskCommit(TaskFiles files) implements WriterCommitMessage {
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.nio.file.Path;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** Append by default; truncate (save mode overwrite) replaces the directory's contents at job commit. */
final class BfoWriteBuilder implements WriteBuilder, SupportsTruncate {
    private final Path dir;
    private final BfoOptions options;
    private final LogicalWriteInfo info;
    private boolean truncate;

    BfoWriteBuilder(Path dir, BfoOptions options, LogicalWriteInfo info) {
        this.dir = dir;
        this.options = options;
        this.info = info;
    }

    @Override
    public WriteBuilder truncate() {
        truncate = true;
        return this;
    }

    @Override
    public Write build() {
        return new BfoBatchWrite(dir, options, info, truncate);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.spark.BfoOptions;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** Append by default; truncate (save mode overwrite) replaces the directory's contents at job commit. */
final class BfoWriteBuilder implements WriteBuilder, SupportsTruncate {
    private final BfoOutputDir dir;
    private final BfoOptions options;
    private final LogicalWriteInfo info;
    private boolean truncate;

    BfoWriteBuilder(BfoOutputDir dir, BfoOptions options, LogicalWriteInfo info) {
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
        return dir.newWrite(options, info, truncate);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.spark.BfoOptions;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.SupportsTruncate;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** Append by default; truncate (save mode overwrite) replaces the directory's contents at job commit. */
final class BfoWriteBuilder implements WriteBuilder, SupportsTruncate {
    private final OutputDir dir;
    private final Configuration conf;
    private final BfoOptions options;
    private final LogicalWriteInfo info;
    private boolean truncate;

    BfoWriteBuilder(OutputDir dir, Configuration conf, BfoOptions options, LogicalWriteInfo info) {
        this.dir = dir;
        this.conf = conf;
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
        return new BfoWrite(dir, conf, options, info, truncate);
    }
}

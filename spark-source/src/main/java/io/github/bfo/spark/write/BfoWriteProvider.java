/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.write;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.BfoTable;
import io.github.bfo.spark.ScalaInterop;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The V2 write side of {@code bfo} (append and truncate), used by
 * {@link io.github.bfo.spark.BfoDataSource#createRelation} once the save mode is settled; not
 * registered under a short name. Its table is a directory, on any Hadoop
 * file system, whose rows are (path relative to the directory, content).
 */
public final class BfoWriteProvider implements TableProvider {
    public static final StructType WRITE_SCHEMA = new StructType(new StructField[] {
        DataTypes.createStructField(BfoTable.PATH, DataTypes.StringType, true),
        DataTypes.createStructField(BfoTable.CONTENT, DataTypes.BinaryType, true)});

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return WRITE_SCHEMA;
    }

    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        String dir = new CaseInsensitiveStringMap(properties).get("path");
        if (dir == null) {
            throw new IllegalArgumentException("bfo write: no path given");
        }
        // the session's Hadoop configuration with the write's options, as Spark's file writers use it
        Configuration conf = ((org.apache.spark.sql.classic.SparkSession) SparkSession.active()).sessionState()
                .newHadoopConfWithOptions(ScalaInterop.map(properties));
        return new DirectoryTable(OutputDir.of(dir, conf), conf, new CaseInsensitiveStringMap(properties));
    }

    /** The output directory as a V2 table that supports batch append and truncate. */
    static final class DirectoryTable implements SupportsWrite {
        private final OutputDir dir;
        private final Configuration conf;
        private final CaseInsensitiveStringMap options;

        DirectoryTable(OutputDir dir, Configuration conf, CaseInsensitiveStringMap options) {
            this.dir = dir;
            this.conf = conf;
            this.options = options;
        }

        @Override
        public String name() {
            return "bfo " + dir;
        }

        @Override
        public StructType schema() {
            return WRITE_SCHEMA;
        }

        @Override
        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_WRITE, TableCapability.TRUNCATE);
        }

        @Override
        public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
            return new BfoWriteBuilder(dir, conf, new BfoOptions(options), info);
        }
    }
}

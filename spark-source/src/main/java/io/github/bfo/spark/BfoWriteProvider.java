/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
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
 * {@link BfoDataSource#createRelation} once the save mode is settled; not
 * registered under a short name. Its table is a directory whose rows are
 * (path relative to the directory, content).
 */
public final class BfoWriteProvider implements TableProvider {
    static final StructType WRITE_SCHEMA = new StructType(new StructField[] {
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
        return new DirectoryTable(localDir(dir), new CaseInsensitiveStringMap(properties));
    }

    /** A local directory from a plain path or a file: URI. */
    static Path localDir(String dir) {
        if (dir.startsWith("file:")) {
            URI u = new org.apache.hadoop.fs.Path(dir).toUri();
            return Paths.get(u.getPath()).toAbsolutePath().normalize();
        }
        URI u = new org.apache.hadoop.fs.Path(dir).toUri();
        if (u.getScheme() != null) {
            throw new IllegalArgumentException("bfo writes local directories (file: paths) through libbfo; " + dir
                    + " is on '" + u.getScheme() + "'");
        }
        return Paths.get(dir).toAbsolutePath().normalize();
    }

    /** The output directory as a V2 table that supports batch append and truncate. */
    static final class DirectoryTable implements SupportsWrite {
        private final Path dir;
        private final CaseInsensitiveStringMap options;

        DirectoryTable(Path dir, CaseInsensitiveStringMap options) {
            this.dir = dir;
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
            return new BfoWriteBuilder(dir, new BfoOptions(options), info);
        }
    }
}

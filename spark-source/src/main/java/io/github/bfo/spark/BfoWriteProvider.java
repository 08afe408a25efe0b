/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
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
        // BfoDataSource hands the directory over qualified (file:), so no file system is consulted again
        return new DirectoryTable(localDir(dir, new Configuration(false)), new CaseInsensitiveStringMap(properties));
    }

    /**
     * The output directory: dir qualified as Spark's file writers qualify it (against its file system's URI
     * and working directory, so a schemeless path is on fs.defaultFS), which must be a local one, since bfo
     * writes through libbfo; any other file system is refused naming the qualified path, never replaced by
     * the local disk.
     */
    static Path localDir(String dir, Configuration conf) {
        org.apache.hadoop.fs.Path q = qualified(new org.apache.hadoop.fs.Path(dir), conf);
        if (!"file".equals(q.toUri().getScheme())) {
            throw new IllegalArgumentException("bfo writes local directories (file: paths) through libbfo; the "
                    + "output path " + dir + " is " + q + " (fs.defaultFS=" + conf.get("fs.defaultFS")
                    + "): give a file: path, or write to that file system with another format");
        }
        return Paths.get(q.toUri().getPath()).normalize();
    }

    /**
     * p qualified as DataSource qualifies an output path. When its file system cannot be had (an unknown
     * host, a missing client), an absolute path is qualified against the file system's URI alone: it needs
     * no working directory, and the refusal above should name it rather than pass Hadoop's error on.
     */
    private static org.apache.hadoop.fs.Path qualified(org.apache.hadoop.fs.Path p, Configuration conf) {
        try {
            FileSystem fs = p.getFileSystem(conf);
            return p.makeQualified(fs.getUri(), fs.getWorkingDirectory());
        } catch (IOException | RuntimeException e) {
            URI fsUri = p.toUri().getScheme() != null ? p.toUri() : FileSystem.getDefaultUri(conf);
            if ("file".equals(fsUri.getScheme()) || !p.isUriPathAbsolute()) {
                throw new IllegalArgumentException("bfo write: cannot resolve the output path " + p
                        + " (fs.defaultFS=" + conf.get("fs.defaultFS") + "): " + e, e);
            }
            return p.makeQualified(fsUri, null);
        }
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The files under the given paths, with binaryFile's schema (path,
 * modificationTime, length, content) or, with format=text, text's (value),
 * followed by the partition columns discovered from key=value directories.
 *
 * <p>Only BATCH_READ is declared: DataFrameWriter then hands writes to
 * {@link BfoDataSource#createRelation}, which implements every save mode
 * (a V2 table that declares BATCH_WRITE cannot be saved with errorifexists
 * or ignore) and runs the actual V2 write through {@link BfoWriteProvider}.
 */
public final class BfoTable implements SupportsRead {
    static final String PATH = "path";
    static final String MODIFICATION_TIME = "modificationTime";
    static final String LENGTH = "length";
    static final String CONTENT = "content";
    static final String VALUE = "value";

    /** binaryFile's schema, field for field (nullable, as Spark's file relations expose it). */
    static final StructType BINARY_SCHEMA = new StructType(new StructField[] {
        DataTypes.createStructField(PATH, DataTypes.StringType, true),
        DataTypes.createStructField(MODIFICATION_TIME, DataTypes.TimestampType, true),
        DataTypes.createStructField(LENGTH, DataTypes.LongType, true),
        DataTypes.createStructField(CONTENT, DataTypes.BinaryType, true)});

    /** text's schema. */
    static final StructType TEXT_SCHEMA = new StructType(new StructField[] {
        DataTypes.createStructField(VALUE, DataTypes.StringType, true)});

    private final SparkSession spark;
    private final CaseInsensitiveStringMap options;
    private final BfoOptions bfoOptions;
    private BfoFileListing listing;     // lazily: a table asked only for its capabilities (a write) lists nothing
    private StructType dataSchema;
    private StructType schema;

    BfoTable(SparkSession spark, CaseInsensitiveStringMap options) {
        this.spark = spark;
        this.options = options;
        this.bfoOptions = new BfoOptions(options);
    }

    private synchronized BfoFileListing listing() {
        if (listing == null) {
            listing = new BfoFileListing(spark, options, bfoOptions);
            StructType data = bfoOptions.text ? TEXT_SCHEMA : BINARY_SCHEMA;
            StructType parts = listing.partitionSchema();
            // as in Spark's file tables: a partition column named like a data column replaces it
            java.util.List<String> partNames = java.util.Arrays.asList(parts.fieldNames());
            StructType kept = new StructType();
            for (StructField f : data.fields()) {
                if (partNames.stream().noneMatch(n -> n.equalsIgnoreCase(f.name()))) {
                    kept = kept.add(f);
                }
            }
            StructType all = kept;
            for (StructField f : parts.fields()) {
                all = all.add(f);
            }
            dataSchema = kept;
            schema = all;
        }
        return listing;
    }

    @Override
    public String name() {
        return "bfo " + String.join(",", BfoFileListing.paths(options));
    }

    @Override
    public StructType schema() {
        listing();
        return schema;
    }

    StructType dataSchema() {
        listing();
        return dataSchema;
    }

    @Override
    public Transform[] partitioning() {
        String[] names = listing().partitionSchema().fieldNames();
        Transform[] t = new Transform[names.length];
        for (int i = 0; i < names.length; i++) {
            t[i] = Expressions.identity(names[i]);
        }
        return t;
    }

    @Override
    public Map<String, String> properties() {
        return options.asCaseSensitiveMap();
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
        return new BfoScanBuilder(this, listing(), bfoOptions);
    }
}

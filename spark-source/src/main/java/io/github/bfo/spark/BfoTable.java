/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.spark.read.BfoFileListing;
import io.github.bfo.spark.read.BfoScanBuilder;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.internal.SQLConf;
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
 * or ignore) and runs the actual V2 write through {@link io.github.bfo.spark.write.BfoWriteProvider}.
 */
public final class BfoTable implements SupportsRead {
    public static final String PATH = "path";
    public static final String MODIFICATION_TIME = "modificationTime";
    public static final String LENGTH = "length";
    public static final String CONTENT = "content";
    public static final String VALUE = "value";

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
    private final StructType requested;   // the user's schema, or null
    private BfoFileListing listing;     // lazily: a table asked only for its capabilities (a write) lists nothing
    private StructType dataSchema;
    private StructType schema;

    /** requested: a user-specified schema (checked when the table is first listed), or null. */
    BfoTable(SparkSession spark, CaseInsensitiveStringMap options, StructType requested) {
        this.spark = spark;
        this.options = options;
        this.bfoOptions = new BfoOptions(options);
        this.requested = requested;
    }

    private synchronized BfoFileListing listing() {
        if (listing == null) {
            listing = new BfoFileListing(spark, options, bfoOptions, requested);
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
            if (requested != null && !requested.equals(all)) {
                schema = userSchema(requested, kept, parts);
            }
        }
        return listing;
    }

    /**
     * A user-specified schema: each field one of the source's columns (same type; names matched as Spark
     * matches them, given as the source spells them), in any order, any subset. Otherwise an error of the
     * class binaryFile raises (IllegalArgumentException) saying what bfo accepts, or, with format=text, the
     * AnalysisException text raises for the same schema (its error class and message), else one saying what
     * bfo accepts (text also takes a single string column of another name; bfo does not).
     */
    private StructType userSchema(StructType user, StructType data, StructType parts) {
        boolean caseSensitive = SQLConf.get().caseSensitiveAnalysis();
        StructType out = new StructType();
        StructType userData = new StructType();
        boolean ok = true;
        for (StructField f : user.fields()) {
            StructField src = find(parts, f.name(), caseSensitive);
            if (src == null) {
                src = find(data, f.name(), caseSensitive);
                userData = userData.add(f);
            }
            if (src == null || !src.dataType().equals(f.dataType()) || out.getFieldIndex(src.name()).isDefined()) {
                ok = false;
            } else {
                out = out.add(src.name(), src.dataType(), f.nullable() || src.nullable(), f.metadata());
            }
        }
        if (!ok) {
            if (bfoOptions.text) {
                throw textSchemaError(user, userData, parts);
            }
            throw new IllegalArgumentException("bfo data source expects a schema of binaryFile's columns ("
                    + ddl(BINARY_SCHEMA) + ")" + partitionColumns(parts) + ": any of them, in any order, each with "
                    + "this type (binaryFile itself takes only its four columns, all of them); but got: "
                    + ddl(user) + ".");
        }
        return out;
    }

    /** text's own error for a schema it refuses too (a column not a string, several columns); else bfo's. */
    private static RuntimeException textSchemaError(StructType user, StructType userData, StructType parts) {
        for (StructField f : userData.fields()) {
            if (!(f.dataType() instanceof org.apache.spark.sql.types.StringType)) {
                return ScalaInterop.sneaky(QueryCompilationErrors.dataTypeUnsupportedByDataSourceError("Text", f));
            }
        }
        if (userData.size() > 1) {
            return ScalaInterop.sneaky(QueryCompilationErrors.textDataSourceWithMultiColumnsError(userData));
        }
        return new IllegalArgumentException("bfo data source (format text) expects a schema of text's column ("
                + ddl(TEXT_SCHEMA) + ")" + partitionColumns(parts) + ": any of them, in any order, each with this "
                + "type; but got: " + ddl(user) + ".");
    }

    private static String partitionColumns(StructType parts) {
        return parts.isEmpty() ? "" : " and the partition columns (" + ddl(parts) + ")";
    }

    /** "name TYPE, ..." as a user writes a schema (StructType.fromDDL). */
    private static String ddl(StructType s) {
        StringBuilder b = new StringBuilder();
        for (StructField f : s.fields()) {
            b.append(b.length() == 0 ? "" : ", ").append(f.name()).append(' ').append(f.dataType().sql());
        }
        return b.toString();
    }

    private static StructField find(StructType s, String name, boolean caseSensitive) {
        for (StructField f : s.fields()) {
            if (caseSensitive ? f.name().equals(name) : f.name().equalsIgnoreCase(name)) {
                return f;
            }
        }
        return null;
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

    /** True when this table was made without a user schema and has already inferred s (Spark asks with it). */
    synchronized boolean hasInferred(StructType s) {
        return requested == null && schema != null && schema.equals(s);
    }

    public StructType dataSchema() {
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

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import io.github.bfo.hadoop.fs.write.OutputDir;
import io.github.bfo.spark.write.BfoWriteProvider;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The {@code bfo} data source: {@code spark.read.format("bfo")} is a drop-in
 * for binaryFile (and, with {@code format=text}, for text), reading each
 * input partition with one BFO batch read; {@code df.write.format("bfo")}
 * writes one file per row (columns path and content) through Spark's commit
 * protocol: BFO batch writes into a local directory, the Hadoop FileSystem
 * API into a directory on any other file system (bfo-hadoop-fs's
 * {@link OutputDir}).
 *
 * <p>Reads are DataSource V2 ({@link BfoTable}). Writes come here as a V1
 * {@link CreatableRelationProvider} because DataFrameWriter only lets a V1
 * path implement errorifexists and ignore for a source without a catalog;
 * this class applies the save mode and then runs the V2 write of
 * {@link BfoWriteProvider} (append, or truncate for overwrite).
 */
public final class BfoDataSource implements TableProvider, DataSourceRegister, CreatableRelationProvider {
    public static final String SHORT_NAME = "bfo";

    private BfoTable lastTable;
    private Map<String, String> lastOptions;

    @Override
    public String shortName() {
        return SHORT_NAME;
    }

    private synchronized BfoTable table(Map<String, String> options) {
        if (lastTable == null || !options.equals(lastOptions)) {
            lastTable = new BfoTable(SparkSession.active(), new CaseInsensitiveStringMap(options), null);
            lastOptions = new HashMap<>(options);
        }
        return lastTable;
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return table(options.asCaseSensitiveMap()).schema();
    }

    @Override
    public Transform[] inferPartitioning(CaseInsensitiveStringMap options) {
        return table(options.asCaseSensitiveMap()).partitioning();
    }

    /** True so that DataFrameWriter asks for the table without schema inference (no listing of the output dir). */
    @Override
    public boolean supportsExternalMetadata() {
        return true;
    }

    /**
     * The table with the schema Spark asks for: the inferred one (the table of inferSchema), or a
     * user-specified one, checked lazily (a write asks for a table with the DataFrame's schema but only
     * looks at its capabilities).
     */
    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        synchronized (this) {
            if (lastTable != null && properties.equals(lastOptions) && lastTable.hasInferred(schema)) {
                return lastTable;
            }
        }
        return new BfoTable(SparkSession.active(), new CaseInsensitiveStringMap(properties), schema);
    }

    @Override
    public BaseRelation createRelation(SQLContext sqlContext, SaveMode mode,
                                       scala.collection.immutable.Map<String, String> parameters, Dataset<Row> data) {
        Map<String, String> options = new HashMap<>(ScalaInterop.javaMap(parameters));
        String dir = new CaseInsensitiveStringMap(options).get("path");
        if (dir == null) {
            throw new IllegalArgumentException("bfo write: no path given: df.write.format(\"bfo\").save(\"/some/dir\")");
        }
        Dataset<Row> rows = checkedColumns(data);
        OutputDir target = OutputDir.of(dir, ((org.apache.spark.sql.classic.SparkSession) sqlContext
                .sparkSession()).sessionState().newHadoopConfWithOptions(parameters));
        boolean exists = target.exists();
        switch (mode) {
            case ErrorIfExists -> {
                if (exists) {
                    // Spark's file sources' error: AnalysisException [PATH_ALREADY_EXISTS], the qualified path
                    throw ScalaInterop.sneaky(QueryCompilationErrors.outputPathAlreadyExistsError(
                            new org.apache.hadoop.fs.Path(target.qualified())));
                }
            }
            case Ignore -> {
                if (exists) {
                    return new BfoRelation(sqlContext);
                }
            }
            default -> {
            }
        }
        target.create();
        options.put("path", target.qualified());
        boolean done = false;
        try {
            rows.write().format(BfoWriteProvider.class.getName())
                    .mode(mode == SaveMode.Overwrite ? SaveMode.Overwrite : SaveMode.Append)
                    .options(options).save();
            done = true;
        } finally {
            if (!done && !exists) {
                // a failed job leaves nothing behind, not even the directory it made
                target.remove();
            }
        }
        return new BfoRelation(sqlContext);
    }

    /** The path and content columns (content as binary; a string column is written as its UTF-8 bytes). */
    static Dataset<Row> checkedColumns(Dataset<Row> data) {
        StructType s = data.schema();
        StructField path = field(s, BfoTable.PATH);
        StructField content = field(s, BfoTable.CONTENT);
        if (path == null || content == null) {
            throw new IllegalArgumentException("bfo write needs a column path (string, relative to the output "
                    + "directory) and a column content (binary or string); missing: "
                    + (path == null ? BfoTable.PATH : "") + (path == null && content == null ? ", " : "")
                    + (content == null ? BfoTable.CONTENT : "") + "; the DataFrame has " + Arrays.toString(s.fieldNames()));
        }
        if (!(path.dataType() instanceof StringType)) {
            throw new IllegalArgumentException("bfo write: column path must be a string, not "
                    + path.dataType().simpleString());
        }
        DataType ct = content.dataType();
        if (!(ct instanceof BinaryType) && !(ct instanceof StringType)) {
            throw new IllegalArgumentException("bfo write: column content must be binary or string, not "
                    + ct.simpleString());
        }
        Column c = functions.col(content.name());
        return data.select(functions.col(path.name()).as(BfoTable.PATH),
                (ct instanceof StringType ? c.cast("binary") : c).as(BfoTable.CONTENT));
    }

    private static StructField field(StructType s, String name) {
        List<StructField> matches = Arrays.stream(s.fields()).filter(f -> f.name().equalsIgnoreCase(name)).toList();
        return matches.isEmpty() ? null : matches.get(0);
    }

    /** What DataFrameWriter gets back after a save: the written schema. */
    static final class BfoRelation extends BaseRelation {
        private final SQLContext ctx;

        BfoRelation(SQLContext ctx) {
            this.ctx = ctx;
        }

        @Override
        public SQLContext sqlContext() {
            return ctx;
        }

        @Override
        public StructType schema() {
            return BfoWriteProvider.WRITE_SCHEMA;
        }
    }
}

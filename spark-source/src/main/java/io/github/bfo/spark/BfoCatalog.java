/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Path tables for SQL: with {@code spark.sql.catalog.bfo=io.github.bfo.spark.BfoCatalog},
 * {@code SELECT ... FROM bfo.`/some/dir`} reads the directory as
 * {@code spark.read.format("bfo").load("/some/dir")} does (the catalog's own
 * options, {@code spark.sql.catalog.bfo.OPTION=VALUE}, are the reader's
 * options). Spark answers {@code format.`path`} by itself only for V1
 * FileFormat sources (ResolveSQLOnFile); a catalog named like the format is
 * how V2 sources get the same syntax, resolved before that rule runs.
 * Read-only: tables are directories, not entries to create or alter.
 * Thread-safe (no mutable state after initialize).
 */
public final class BfoCatalog implements TableCatalog {
    private String name;
    private Map<String, String> options = Map.of();

    @Override
    public void initialize(String name, CaseInsensitiveStringMap options) {
        this.name = name;
        this.options = Map.copyOf(options.asCaseSensitiveMap());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Identifier[] listTables(String[] namespace) {
        return new Identifier[0];
    }

    /** The directory (or glob) named by ident: {@code bfo.`/dir`}; a namespace is refused. */
    @Override
    public Table loadTable(Identifier ident) throws NoSuchTableException {
        if (ident.namespace().length != 0 || ident.name().isEmpty()) {
            throw new NoSuchTableException(ident);
        }
        Map<String, String> o = new HashMap<>(options);
        o.put("path", ident.name());
        return new BfoTable(SparkSession.active(), new CaseInsensitiveStringMap(o), null);
    }

    @Override
    public Table createTable(Identifier ident, StructType schema, Transform[] partitions,
                             Map<String, String> properties) {
        throw new UnsupportedOperationException(name + ": path tables are read-only; write with "
                + "df.write.format(\"bfo\").save(dir)");
    }

    @Override
    public Table alterTable(Identifier ident, TableChange... changes) {
        throw new UnsupportedOperationException(name + ": path tables cannot be altered");
    }

    @Override
    public boolean dropTable(Identifier ident) {
        throw new UnsupportedOperationException(name + ": path tables cannot be dropped");
    }

    @Override
    public void renameTable(Identifier oldIdent, Identifier newIdent) {
        throw new UnsupportedOperationException(name + ": path tables cannot be renamed");
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.BfoTable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * Column pruning (no content column: a metadata-only batch read) and filter
 * pushdown: filters on path, length, modificationTime and the partition
 * columns are evaluated on the listing, before any data is read, and again
 * on each file's stat at read time; Spark does not re-evaluate them.
 */
public final class BfoScanBuilder implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownFilters {
    private final BfoTable table;
    private final BfoFileListing listing;
    private final BfoOptions options;
    private StructType required;
    private Filter[] pushed = new Filter[0];

    public BfoScanBuilder(BfoTable table, BfoFileListing listing, BfoOptions options) {
        this.table = table;
        this.listing = listing;
        this.options = options;
        this.required = table.schema();
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        this.required = requiredSchema;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
        List<Filter> accepted = new ArrayList<>();
        List<Filter> rest = new ArrayList<>();
        MetadataFilters eval = new MetadataFilters(table.dataSchema(), listing.partitionSchema(), new Filter[0]);
        for (Filter f : filters) {
            (eval.canEvaluate(f) ? accepted : rest).add(f);
        }
        pushed = accepted.toArray(new Filter[0]);
        return rest.toArray(new Filter[0]);
    }

    @Override
    public Filter[] pushedFilters() {
        return pushed.clone();
    }

    @Override
    public Scan build() {
        return new BfoScan(table, listing, options, required, pushed);
    }
}

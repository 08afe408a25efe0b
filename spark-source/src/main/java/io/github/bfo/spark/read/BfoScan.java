/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.BfoTable;
import io.github.bfo.spark.ScalaInterop;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.paths.SparkPath;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.execution.PartitionedFileUtil;
import org.apache.spark.sql.execution.datasources.FilePartition;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/**
 * The planned read: the listing filtered by the pushed filters (before any
 * data is read), packed into input partitions by {@link BfoPacking}: Spark's
 * own rule when the user set a packing knob for this read, else bfo's cost
 * model (files are not split, as with binaryFile).
 */
final class BfoScan implements Scan, Batch {
    private final BfoTable table;
    private final BfoFileListing listing;
    private final BfoOptions options;
    private final StructType readSchema;
    private final Filter[] pushed;
    private InputPartition[] planned;   // Spark may ask again (re-planning); the listing is fixed per scan
    private volatile BfoPacking packing;   // how planned was packed (for the description)
    /** Local files have no block hosts (and FilePartition.preferredLocations would walk every file to say so). */
    private static final String[] NO_HOSTS = new String[0];

    BfoScan(BfoTable table, BfoFileListing listing, BfoOptions options, StructType required, Filter[] pushed) {
        this.table = table;
        this.listing = listing;
        this.options = options;
        this.pushed = pushed;
        // keep the table's column order, only what was asked for
        StructType s = new StructType();
        List<String> names = Arrays.asList(required.fieldNames());
        for (StructField f : table.schema().fields()) {
            if (names.contains(f.name())) {
                s = s.add(f);
            }
        }
        this.readSchema = s;
    }

    /** The table's listing (tests look at how it was made). */
    BfoFileListing listing() {
        return listing;
    }

    @Override
    public StructType readSchema() {
        return readSchema;
    }

    @Override
    public String description() {
        return "BfoScan " + String.join(",", listing.paths) + " format=" + (options.text ? "text" : "binary")
                + (options.wholeText ? " wholetext" : "") + " contentRead=" + readsData() + " pushedFilters="
                + Arrays.toString(pushed) + " readSchema=" + readSchema.simpleString()
                + (packing == null ? "" : " packing=" + packing);
    }

    /** False when no column needs the files' bytes: the batch read is then metadata only. */
    boolean readsData() {
        List<String> names = Arrays.asList(readSchema.fieldNames());
        return options.text || names.contains(BfoTable.CONTENT);
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public synchronized InputPartition[] planInputPartitions() {
        if (planned == null) {
            planned = plan();
        }
        return planned.clone();
    }

    private InputPartition[] plan() {
        SparkSession spark = SparkSession.active();
        List<PartitionDirectory> dirs = listing.list();
        MetadataFilters filters = new MetadataFilters(table.dataSchema(), listing.partitionSchema(), pushed);
        int listed = 0;
        for (PartitionDirectory d : dirs) {
            listed += d.files().size();
        }
        List<PartitionedFile> files = new ArrayList<>(listed);
        Map<PartitionedFile, String> names = new IdentityHashMap<>(listed);
        for (PartitionDirectory d : dirs) {
            InternalRow values = d.values();
            for (FileStatusWithMetadata fm : ScalaInterop.list(d.files())) {
                FileStatus st = fm.fileStatus();
                String path = st.getPath().toString();
                long micros = Math.multiplyExact(st.getModificationTime(), 1000L);
                if (!filters.accept(path, st.getLen(), micros, values)) {
                    continue;
                }
                PartitionedFile pf = "file".equals(st.getPath().toUri().getScheme())
                        ? new PartitionedFile(values, SparkPath.fromPath(st.getPath()), 0, st.getLen(), NO_HOSTS,
                                st.getModificationTime(), st.getLen(), scala.collection.immutable.Map$.MODULE$.empty())
                        // as Spark's file scans make one: with its blocks' hosts, for locality
                        : PartitionedFileUtil.getPartitionedFile(fm, st.getPath(), values, 0, st.getLen());
                files.add(pf);
                names.put(pf, path);
            }
        }
        // as Spark's file scans: largest first, then packed (by Spark's rule or bfo's model: see BfoPacking)
        files.sort((a, b) -> Long.compare(b.length(), a.length()));
        packing = BfoPacking.of(spark, options);
        List<InputPartition> out = new ArrayList<>();
        for (List<PartitionedFile> p : packing.pack(files)) {
            PartitionedFile[] a = p.toArray(new PartitionedFile[0]);
            String[] hosts = listing.remote ? new FilePartition(out.size(), a).preferredLocations() : NO_HOSTS;
            out.add(new BfoInputPartition(a, hosts, names));
        }
        return out.toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        Broadcast<SerializableConfiguration> conf = null;
        if (listing.remote) {
            conf = SparkSession.active().sparkContext().broadcast(new SerializableConfiguration(listing.hadoopConf),
                    scala.reflect.ClassTag$.MODULE$.apply(SerializableConfiguration.class));
        }
        return new BfoReaderFactory(options, table.dataSchema(), listing.partitionSchema(), readSchema,
                new MetadataFilters(table.dataSchema(), listing.partitionSchema(), pushed), readsData(), conf);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
        return BfoReadMetrics.supported();
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoOptions;
import io.github.bfo.spark.ScalaInterop;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.DataSource$;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Listing and partition discovery through Spark's own {@link InMemoryFileIndex}
 * (the one binaryFile and text use): globs in paths, pathGlobFilter,
 * recursiveFileLookup, modifiedBefore/After, hidden files, key=value
 * partition directories and their type inference all behave as in Spark's
 * file sources, on any Hadoop file system. The index's listing is served by {@link BfoLeafFiles} (option
 * listing=native, the default).
 */
public final class BfoFileListing {
    private static final ObjectMapper JSON = new ObjectMapper();

    final List<String> paths;
    final InMemoryFileIndex index;
    /** Some root is on a Hadoop file system other than the local one (read through BfoHadoopReads). */
    final boolean remote;
    /** The session's Hadoop configuration with this read's options, as Spark's file sources make it. */
    final Configuration hadoopConf;
    /** The native listing offered to the index, or null with listing=spark. */
    final BfoLeafFiles leafFiles;

    /** userSchema: the user-specified schema or null; its partition columns' types are used, as Spark's index does. */
    public BfoFileListing(SparkSession spark, CaseInsensitiveStringMap options, BfoOptions bfoOptions, StructType userSchema) {
        this.paths = paths(options);
        if (paths.isEmpty()) {
            throw new IllegalArgumentException("bfo: no path given: spark.read.format(\"bfo\").load(\"/some/dir\")");
        }
        Map<String, String> caseSensitive = new HashMap<>(options.asCaseSensitiveMap());
        scala.collection.immutable.Map<String, String> scalaOptions = ScalaInterop.map(caseSensitive);
        Configuration hadoopConf = ((org.apache.spark.sql.classic.SparkSession) spark).sessionState()
                .newHadoopConfWithOptions(scalaOptions);
        boolean glob = !"false".equals(options.get("__globPaths__"));
        scala.collection.immutable.Seq<Path> roots = DataSource$.MODULE$.checkAndGlobPathIfNecessary(
                ScalaInterop.seq(paths), hadoopConf, true, true, DataSource$.MODULE$.checkAndGlobPathIfNecessary$default$5(),
                glob);
        boolean other = false;
        for (Path p : ScalaInterop.list(roots)) {
            other |= !"file".equals(p.toUri().getScheme());
        }
        this.remote = other;
        this.hadoopConf = hadoopConf;
        this.leafFiles = bfoOptions.nativeListing ? new BfoLeafFiles(bfoOptions, hadoopConf,
                ((org.apache.spark.sql.classic.SparkSession) spark).sessionState().conf().ignoreDataLocality()) : null;
        FileStatusCache cache = leafFiles != null ? leafFiles : FileStatusCache.getOrCreate(spark);
        this.index = new InMemoryFileIndex(spark, roots, scalaOptions, scala.Option.apply(userSchema), cache,
                scala.Option.empty(), scala.Option.empty());
    }

    public static List<String> paths(CaseInsensitiveStringMap options) {
        List<String> out = new ArrayList<>();
        String many = options.get("paths");
        if (many != null) {
            try {
                Collections.addAll(out, JSON.readValue(many, String[].class));
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("bfo: option paths is not a JSON array of strings: " + many, e);
            }
        }
        String one = options.get("path");
        if (one != null) {
            out.add(one);
        }
        return out;
    }

    public StructType partitionSchema() {
        return index.partitionSchema();
    }

    /** Every partition directory with its files (no partition pruning here: see BfoScan). */
    List<PartitionDirectory> list() {
        scala.collection.immutable.Seq<org.apache.spark.sql.catalyst.expressions.Expression> none =
                ScalaInterop.seq(List.of());
        return ScalaInterop.list(index.listFiles(none, none));
    }
}

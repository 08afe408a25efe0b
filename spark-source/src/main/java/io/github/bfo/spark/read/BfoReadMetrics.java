/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The source's own statistics, shown per scan in the SQL UI and readable
 * from the executed plan's metrics: what the BFO batch reads did.
 */
public final class BfoReadMetrics {
    static final String FILES = "bfoFiles";
    static final String DATA_BYTES = "bfoDataBytes";
    static final String METADATA_ONLY_FILES = "bfoMetadataOnlyFiles";
    static final String SKIPPED_FILES = "bfoSkippedFiles";
    static final String BATCHES = "bfoBatches";
    static final String NATIVE_BATCHES = "bfoNativeBatches";

    private BfoReadMetrics() {
    }

    static CustomMetric[] supported() {
        return new CustomMetric[] {new Files(), new DataBytes(), new MetadataOnlyFiles(), new SkippedFiles(),
            new Batches(), new NativeBatches()};
    }

    static CustomTaskMetric task(String name, long value) {
        return new CustomTaskMetric() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public long value() {
                return value;
            }
        };
    }

    /** A summed metric (Spark instantiates it by class name on the driver: public, no-arg constructor). */
    abstract static class Sum extends CustomSumMetric {
        private final String name;
        private final String description;

        Sum(String name, String description) {
            this.name = name;
            this.description = description;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String description() {
            return description;
        }
    }

    public static final class Files extends Sum {
        public Files() {
            super(FILES, "files read by BFO batches");
        }
    }

    public static final class DataBytes extends Sum {
        public DataBytes() {
            super(DATA_BYTES, "data bytes read by BFO batches");
        }
    }

    public static final class MetadataOnlyFiles extends Sum {
        public MetadataOnlyFiles() {
            super(METADATA_ONLY_FILES, "files stat'ed by metadata-only BFO batches (no data read)");
        }
    }

    public static final class SkippedFiles extends Sum {
        public SkippedFiles() {
            super(SKIPPED_FILES, "missing or unreadable files skipped (ignoreMissingFiles, ignoreCorruptFiles)");
        }
    }

    public static final class Batches extends Sum {
        public Batches() {
            super(BATCHES, "BFO batch reads");
        }
    }

    /**
     * Where libbfo could not load (or engine=java), an executor falls back to
     * the pure-Java engine and says so only in its own log; this sum, short of
     * bfoBatches, shows the driver and the SQL UI that it happened.
     */
    public static final class NativeBatches extends Sum {
        public NativeBatches() {
            super(NATIVE_BATCHES, "BFO batch reads on libbfo (the rest ran on the pure-Java engine)");
        }
    }
}

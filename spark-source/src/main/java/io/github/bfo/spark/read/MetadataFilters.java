/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark.read;

import io.github.bfo.spark.BfoTable;
import java.io.Serializable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.sources.AlwaysFalse;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Evaluates pushed filters on what is known before a file's data is read:
 * its path, length and modificationTime (from the listing on the driver,
 * from the stat of the batch read in the task) and its partition values.
 * SQL's three-valued logic: a comparison with null is unknown, and a file
 * passes only when the filter is true.
 */
final class MetadataFilters implements Serializable {
    private static final long serialVersionUID = 1L;

    private final Filter[] filters;
    private final Map<String, Integer> partitionIndex = new HashMap<>();
    private final DataType[] partitionTypes;
    private final boolean hasPath, hasLength, hasTime;

    MetadataFilters(StructType dataSchema, StructType partitionSchema, Filter[] filters) {
        this.filters = filters.clone();
        this.partitionTypes = new DataType[partitionSchema.size()];
        for (int i = 0; i < partitionSchema.size(); i++) {
            partitionIndex.put(partitionSchema.fields()[i].name(), i);
            partitionTypes[i] = partitionSchema.fields()[i].dataType();
        }
        java.util.List<String> names = Arrays.asList(dataSchema.fieldNames());
        hasPath = names.contains(BfoTable.PATH);
        hasLength = names.contains(BfoTable.LENGTH);
        hasTime = names.contains(BfoTable.MODIFICATION_TIME);
    }

    boolean isEmpty() {
        return filters.length == 0;
    }

    /** True when f can be evaluated exactly from metadata and partition values. */
    boolean canEvaluate(Filter f) {
        if (f instanceof AlwaysTrue || f instanceof AlwaysFalse) {
            return true;
        }
        if (f instanceof And a) {
            return canEvaluate(a.left()) && canEvaluate(a.right());
        }
        if (f instanceof Or o) {
            return canEvaluate(o.left()) && canEvaluate(o.right());
        }
        if (f instanceof Not n) {
            return canEvaluate(n.child());
        }
        if (f instanceof EqualTo || f instanceof EqualNullSafe || f instanceof GreaterThan
                || f instanceof GreaterThanOrEqual || f instanceof LessThan || f instanceof LessThanOrEqual
                || f instanceof In || f instanceof IsNull || f instanceof IsNotNull) {
            return knownColumn(f.references()[0]);
        }
        if (f instanceof StringStartsWith || f instanceof StringEndsWith || f instanceof StringContains) {
            String c = f.references()[0];
            return (hasPath && c.equals(BfoTable.PATH))
                    || (partitionIndex.containsKey(c) && partitionTypes[partitionIndex.get(c)] instanceof StringType);
        }
        return false;
    }

    private boolean knownColumn(String c) {
        if ((hasPath && c.equals(BfoTable.PATH)) || (hasLength && c.equals(BfoTable.LENGTH))
                || (hasTime && c.equals(BfoTable.MODIFICATION_TIME))) {
            return true;
        }
        Integer i = partitionIndex.get(c);
        if (i == null) {
            return false;
        }
        DataType t = partitionTypes[i];
        return t instanceof StringType || t instanceof NumericType || t instanceof BooleanType
                || t instanceof DateType || t instanceof TimestampType || t instanceof DecimalType;
    }

    /** True when every filter is true for this file. */
    boolean accept(String path, long length, long modificationMicros, InternalRow partitionValues) {
        for (Filter f : filters) {
            if (!Boolean.TRUE.equals(eval(f, path, length, modificationMicros, partitionValues))) {
                return false;
            }
        }
        return true;
    }

    private Boolean eval(Filter f, String path, long length, long micros, InternalRow parts) {
        if (f instanceof AlwaysTrue) {
            return true;
        }
        if (f instanceof AlwaysFalse) {
            return false;
        }
        if (f instanceof And a) {
            Boolean l = eval(a.left(), path, length, micros, parts);
            if (Boolean.FALSE.equals(l)) {
                return false;
            }
            Boolean r = eval(a.right(), path, length, micros, parts);
            if (Boolean.FALSE.equals(r)) {
                return false;
            }
            return l == null || r == null ? null : true;
        }
        if (f instanceof Or o) {
            Boolean l = eval(o.left(), path, length, micros, parts);
            if (Boolean.TRUE.equals(l)) {
                return true;
            }
            Boolean r = eval(o.right(), path, length, micros, parts);
            if (Boolean.TRUE.equals(r)) {
                return true;
            }
            return l == null || r == null ? null : false;
        }
        if (f instanceof Not n) {
            Boolean c = eval(n.child(), path, length, micros, parts);
            return c == null ? null : !c;
        }
        String col = f.references()[0];
        Object v = value(col, path, length, micros, parts);
        if (f instanceof IsNull) {
            return v == null;
        }
        if (f instanceof IsNotNull) {
            return v != null;
        }
        if (f instanceof EqualNullSafe e) {
            Object lit = literal(e.value());
            return v == null || lit == null ? v == lit : compare(v, lit) == 0;
        }
        if (f instanceof In in) {
            if (v == null) {
                return null;
            }
            boolean sawNull = false;
            for (Object o : in.values()) {
                Object lit = literal(o);
                if (lit == null) {
                    sawNull = true;
                } else if (compare(v, lit) == 0) {
                    return true;
                }
            }
            return sawNull ? null : false;
        }
        if (f instanceof StringStartsWith s) {
            return v == null ? null : v.toString().startsWith(s.value());
        }
        if (f instanceof StringEndsWith s) {
            return v == null ? null : v.toString().endsWith(s.value());
        }
        if (f instanceof StringContains s) {
            return v == null ? null : v.toString().contains(s.value());
        }
        Object lit;
        if (f instanceof EqualTo e) {
            lit = literal(e.value());
        } else if (f instanceof GreaterThan g) {
            lit = literal(g.value());
        } else if (f instanceof GreaterThanOrEqual g) {
            lit = literal(g.value());
        } else if (f instanceof LessThan l) {
            lit = literal(l.value());
        } else if (f instanceof LessThanOrEqual l) {
            lit = literal(l.value());
        } else {
            throw new IllegalStateException("bfo: filter not pushable: " + f);
        }
        if (v == null || lit == null) {
            return null;
        }
        int c = compare(v, lit);
        if (f instanceof EqualTo) {
            return c == 0;
        }
        if (f instanceof GreaterThan) {
            return c > 0;
        }
        if (f instanceof GreaterThanOrEqual) {
            return c >= 0;
        }
        if (f instanceof LessThan) {
            return c < 0;
        }
        return c <= 0;
    }

    private Object value(String col, String path, long length, long micros, InternalRow parts) {
        if (hasPath && col.equals(BfoTable.PATH)) {
            return UTF8String.fromString(path);
        }
        if (hasLength && col.equals(BfoTable.LENGTH)) {
            return length;
        }
        if (hasTime && col.equals(BfoTable.MODIFICATION_TIME)) {
            return micros;
        }
        int i = partitionIndex.get(col);
        return parts.isNullAt(i) ? null : parts.get(i, partitionTypes[i]);
    }

    /** A filter's Scala/Java value as Catalyst's internal value (UTF8String, micros, days, Decimal...). */
    private static Object literal(Object o) {
        return o == null ? null : CatalystTypeConverters.convertToCatalyst(o);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static int compare(Object a, Object b) {
        if (a instanceof Number x && b instanceof Number y
                && !(a instanceof java.math.BigDecimal) && !(b instanceof java.math.BigDecimal)) {
            if (isIntegral(x) && isIntegral(y)) {
                return Long.compare(x.longValue(), y.longValue());
            }
            return Double.compare(x.doubleValue(), y.doubleValue());
        }
        if (a instanceof org.apache.spark.sql.types.Decimal || b instanceof org.apache.spark.sql.types.Decimal) {
            return toBig(a).compareTo(toBig(b));
        }
        if (a.getClass() == b.getClass() && a instanceof Comparable c) {
            return c.compareTo(b);
        }
        return a.toString().compareTo(b.toString());
    }

    private static boolean isIntegral(Number n) {
        return n instanceof Long || n instanceof Integer || n instanceof Short || n instanceof Byte;
    }

    private static java.math.BigDecimal toBig(Object o) {
        if (o instanceof org.apache.spark.sql.types.Decimal d) {
            return d.toJavaBigDecimal();
        }
        return new java.math.BigDecimal(o.toString());
    }
}

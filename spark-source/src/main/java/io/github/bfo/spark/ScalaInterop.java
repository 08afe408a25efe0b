/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.spark;

import java.util.List;
import java.util.Map;
import scala.jdk.javaapi.CollectionConverters;

/** Conversions between Java collections and the Scala ones of Spark's internal APIs. */
public final class ScalaInterop {
    private ScalaInterop() {
    }

    public static <T> scala.collection.immutable.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list).toList();
    }

    public static <T> List<T> list(scala.collection.Seq<T> seq) {
        return CollectionConverters.asJava(seq);
    }

    public static scala.collection.immutable.Map<String, String> map(Map<String, String> m) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(m));
    }

    public static Map<String, String> javaMap(scala.collection.Map<String, String> m) {
        return CollectionConverters.asJava(m);
    }

    /**
     * Throws t, checked or not: Spark's error builders (QueryCompilationErrors) return its AnalysisException,
     * a checked exception to Java that Scala code throws from anywhere; {@code throw sneaky(t)} does the same.
     */
    public static RuntimeException sneaky(Throwable t) {
        return ScalaInterop.<RuntimeException>rethrow(t);
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E rethrow(Throwable t) throws E {
        throw (E) t;
    }
}

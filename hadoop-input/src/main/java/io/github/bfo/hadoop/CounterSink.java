/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

/** Counters of the task, whichever MapReduce API runs it. */
interface CounterSink {
    void add(Enum<?> counter, long n);

    void add(String group, String name, long n);

    CounterSink NONE = new CounterSink() {
        @Override
        public void add(Enum<?> counter, long n) {
        }

        @Override
        public void add(String group, String name, long n) {
        }
    };
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

/** A stable merge sort of an int[] by a comparator, without boxing (for millions of file indices). */
final class IntSort {
    interface IntComparator {
        int compare(int a, int b);
    }

    private IntSort() {
    }

    static void sort(int[] a, IntComparator c) {
        if (a.length < 2) {
            return;
        }
        int[] tmp = new int[a.length];
        int[] src = a;
        int[] dst = tmp;
        int n = a.length;
        // insertion-sort runs of 32, then merge passes
        final int run = 32;
        for (int lo = 0; lo < n; lo += run) {
            int hi = Math.min(lo + run, n);
            for (int i = lo + 1; i < hi; i++) {
                int v = a[i];
                int j = i - 1;
                while (j >= lo && c.compare(a[j], v) > 0) {
                    a[j + 1] = a[j];
                    j--;
                }
                a[j + 1] = v;
            }
        }
        for (int width = run; width < n; width *= 2) {
            for (int lo = 0; lo < n; lo += 2 * width) {
                int mid = Math.min(lo + width, n);
                int hi = Math.min(lo + 2 * width, n);
                int i = lo, j = mid, k = lo;
                while (i < mid && j < hi) {
                    dst[k++] = c.compare(src[j], src[i]) < 0 ? src[j++] : src[i++];
                }
                while (i < mid) {
                    dst[k++] = src[i++];
                }
                while (j < hi) {
                    dst[k++] = src[j++];
                }
            }
            int[] s = src;
            src = dst;
            dst = s;
        }
        if (src != a) {
            System.arraycopy(src, 0, a, 0, n);
        }
    }
}

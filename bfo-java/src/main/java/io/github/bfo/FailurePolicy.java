/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

/**
 * What a batch does after a file fails. A batch never fails as a whole
 * because one file failed: every entry carries its own status.
 */
public enum FailurePolicy {
    /** Every file is attempted; failures are reported per entry (the default). */
    PERFORM_ALL,
    /**
     * The batch ends at the first failure: the failed entry is delivered,
     * files not yet delivered are dropped (native: {@code BFO_READ_STOP_ON_ERROR}).
     */
    STOP_ON_FIRST_FAILURE
}

/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo.hadoop;

/** What {@link BatchFileOutputFormat} wrote, per task, summed per job (group "BFO output"). */
public enum BfoOutputCounter {
    /** Files written (staged; published at the job commit). */
    FILES,
    /** Their bytes. */
    BYTES
}

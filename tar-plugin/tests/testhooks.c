/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tar plugin's hidden test hooks (src/archive_ahead.c): preloaded
 * beside the plugin by a test that needs them, never installed.
 */

/* tar's thread waits for the archive read-ahead's first read. */
__attribute__((visibility("default"))) const int bfo_tar_test_ahead_first = 1;

/* SPDX-License-Identifier: Apache-2.0 */
/**
 * BFO (Batch-File Operations) for Java: read, write and copy many small
 * files as batches with few large, sorted I/Os, through libbfo (packed in
 * this jar, loaded with JNA) or, where it cannot load, portable pure-Java
 * engines with the same API.
 *
 * <ul>
 * <li>{@link io.github.bfo.BatchFileReader}: batches of paths in, {@link io.github.bfo.FileData} entries out
 *     (views of native memory, pieces for large files, per-file statuses as java.nio.file exceptions);</li>
 * <li>{@link io.github.bfo.BatchFileWriter}: batches of {@link io.github.bfo.WriteEntry} with one durability point
 *     per batch, crash-safe; large files as streams of pieces;</li>
 * <li>{@link io.github.bfo.BatchCopier}: {@code bfo cp} (cp -a / cp -r semantics);</li>
 * <li>{@link io.github.bfo.Bfo}: whether libbfo is loaded, and why not.</li>
 * </ul>
 *
 * Every class documents its thread safety. See bfo-java/README.md.
 */
package io.github.bfo;

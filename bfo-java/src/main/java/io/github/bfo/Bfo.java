/* SPDX-License-Identifier: Apache-2.0 */
package io.github.bfo;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The state of the native library (libbfo) in this JVM.
 *
 * <p>libbfo is loaded once per JVM, the first time any BFO class needs it:
 * from {@code -Dbfo.library.path=DIR} when that is set, else from the copy
 * inside the jar, else from the system's library path; its version must
 * match this jar's major.minor. Where it cannot load (another OS or
 * architecture, liburing missing, a version mismatch, or
 * {@code -Dbfo.native=false}), {@link BatchFileReader}, {@link BatchFileWriter}
 * and {@link BatchCopier} run on portable pure-Java engines instead, their
 * statistics say engine "java", and the reason is logged once per JVM
 * (System.Logger "io.github.bfo").
 *
 * <p><b>Thread safety:</b> all methods are thread-safe.
 */
public final class Bfo {
    private static final AtomicBoolean LOGGED = new AtomicBoolean();
    private static final System.Logger LOG = System.getLogger("io.github.bfo");

    private Bfo() {
    }

    /** True when libbfo is loaded and the native engines are in use. */
    public static boolean isNativeAvailable() {
        return BfoNative.available();
    }

    /** Why libbfo is not in use: every place tried and why it failed; empty when it is in use. */
    public static Optional<String> nativeUnavailableReason() {
        return Optional.ofNullable(BfoNative.unavailableReason());
    }

    /** The loaded library's version ("0.1.0"), if loaded. */
    public static Optional<String> nativeVersion() {
        return BfoNative.available() ? Optional.of(BfoNative.versionString(BfoNative.version())) : Optional.empty();
    }

    /** Where the library was loaded from, if loaded. */
    public static Optional<String> nativeLocation() {
        return Optional.ofNullable(BfoNative.location());
    }

    /** Logs, once per JVM, that the portable engines run and why. */
    static void logFallbackOnce() {
        String reason = BfoNative.unavailableReason();
        if (reason != null && LOGGED.compareAndSet(false, true)) {
            boolean asked = reason.startsWith("native library disabled");
            LOG.log(asked ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                    "BFO: using the portable Java engines, not libbfo: " + reason);
        }
    }
}

package io.workqueue.spring.boot.autoconfigure;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.validation.Errors;

/**
 * The checks the starter's properties classes make beyond what the library's builders judge, in one
 * place and one wording (the library's: "must be positive but was ..."). Public only so that the
 * auto-configurations' own properties, in sub-packages, share it; not API.
 */
public final class PropertyChecks {
    private PropertyChecks() {}

    /** Rejects {@code field} unless {@code value} is a positive duration. */
    public static void requirePositive(Errors errors, String field, @Nullable Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            errors.rejectValue(field, "invalid", "must be positive but was " + value);
        }
    }

    /**
     * Rejects {@code field} unless {@code value} is at least {@code floor}, the value of the property
     * called {@code floorName} (a ceiling below its floor); nothing when the floor itself is missing,
     * which its own check reports.
     */
    public static void requireAtLeast(Errors errors, String field, @Nullable Duration value, String floorName,
            @Nullable Duration floor) {
        if (floor != null && (value == null || value.compareTo(floor) < 0)) {
            errors.rejectValue(field, "invalid", "must be at least " + floorName + " (" + floor + ") but was " + value);
        }
    }
}

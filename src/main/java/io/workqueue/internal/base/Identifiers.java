package io.workqueue.internal.base;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The one place that decides whether a string may be rendered into SQL as an identifier.
 *
 * <p>Only lower-case ASCII letters, digits and underscores are accepted, starting with a letter or
 * underscore. That is stricter than PostgreSQL, on purpose: such names never need quoting, fold to
 * themselves, and cannot smuggle anything into a statement. The checks answer with the problem, not
 * an exception, so that each caller reports it in its own API's terms.
 */
public final class Identifiers {
    /** PostgreSQL truncates identifiers longer than this many bytes (NAMEDATALEN - 1). */
    public static final int MAX_IDENTIFIER_BYTES = 63;

    private static final Pattern PLAIN = Pattern.compile("[a-z_][a-z0-9_]*");

    private Identifiers() {}

    /**
     * Why {@code value} is not a plain identifier of at most {@link #MAX_IDENTIFIER_BYTES} bytes,
     * naming {@code field}; {@code null} when it is one.
     */
    public static @Nullable String problem(String field, @Nullable String value) {
        if (value == null || !PLAIN.matcher(value).matches()) {
            return field + " must be a plain identifier (lower-case letters, digits and"
                    + " underscores, not starting with a digit) but was " + quote(value);
        }
        if (value.getBytes(StandardCharsets.UTF_8).length > MAX_IDENTIFIER_BYTES) {
            return field + " must be at most " + MAX_IDENTIFIER_BYTES + " bytes but was " + value.length() + ": "
                    + quote(value);
        }
        return null;
    }

    /** Renders a user-supplied value for an error message without letting it hide in whitespace. */
    public static String quote(@Nullable String value) {
        return value == null ? "null" : '"' + value + '"';
    }
}

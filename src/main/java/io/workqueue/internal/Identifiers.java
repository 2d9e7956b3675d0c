package io.workqueue.internal;

import io.workqueue.InvalidConfigException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/**
 * The one place that decides whether a string may be rendered into SQL as an identifier.
 *
 * <p>Only lower-case ASCII letters, digits and underscores are accepted, starting with a letter or
 * underscore. That is stricter than PostgreSQL, on purpose: such names never need quoting, fold to
 * themselves, and cannot smuggle anything into a statement.
 */
public final class Identifiers {
    /** PostgreSQL truncates identifiers longer than this many bytes (NAMEDATALEN - 1). */
    public static final int MAX_IDENTIFIER_BYTES = 63;

    private static final Pattern PLAIN = Pattern.compile("[a-z_][a-z0-9_]*");

    private Identifiers() {}

    /**
     * Returns {@code value} if it is a plain identifier of at most {@link #MAX_IDENTIFIER_BYTES}
     * bytes; throws {@link InvalidConfigException} naming {@code field} otherwise.
     */
    public static String requirePlain(String field, String value) {
        if (value == null || !PLAIN.matcher(value).matches()) {
            throw new InvalidConfigException(field + " must be a plain identifier (lower-case letters, digits and"
                    + " underscores, not starting with a digit) but was " + quote(value));
        }
        if (value.getBytes(StandardCharsets.UTF_8).length > MAX_IDENTIFIER_BYTES) {
            throw new InvalidConfigException(field + " must be at most " + MAX_IDENTIFIER_BYTES
                    + " bytes but was " + value.length() + ": " + quote(value));
        }
        return value;
    }

    /** Renders a user-supplied value for an error message without letting it hide in whitespace. */
    public static String quote(String value) {
        return value == null ? "null" : '"' + value + '"';
    }
}

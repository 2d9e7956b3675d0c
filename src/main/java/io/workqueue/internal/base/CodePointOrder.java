package io.workqueue.internal.base;

/**
 * The order of strings by Unicode code point, which for valid strings is UTF-8 byte order and so
 * the order of a {@code COLLATE "C"} column. {@link String#compareTo} compares UTF-16 units and
 * disagrees for characters above U+FFFF versus U+E000..U+FFFF. Stateless and thread-safe.
 */
public final class CodePointOrder {
    private CodePointOrder() {}

    /** Negative, zero or positive as {@code a} sorts before, with or after {@code b}. */
    public static int compare(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }
}

package io.workqueue;


/**
 * Turns keys into the strings stored as the table's primary key, and back.
 *
 * <p>An encoding must be deterministic and injective: the same key always encodes to the same
 * string in every process and release, and two different keys never share one. Whatever the codec,
 * the queue vets each encoding before it goes near the database (see
 * {@link ReactiveWorkQueue#MAX_KEY_LENGTH}); codecs need not check length or characters
 * themselves. Implementations must be thread-safe.
 *
 * @param <K> the key type
 */
public interface KeyCodec<K> {

    /**
     * The stored form of {@code key}. Called on whatever thread calls the queue's method or
     * subscribes to it; must not block. What it throws fails the call that carried the key, at
     * subscription.
     *
     * @param key a key, never {@code null} (the queue refuses a null key first)
     * @return its stored form; the queue refuses an empty, over-long or control-character
     *         encoding with {@link InvalidKeyException}
     */
    String encode(K key);

    /**
     * The key whose stored form is {@code encoded}: the inverse of {@link #encode}. Called on the
     * driver's thread as claimed rows arrive; must not block. A stored form it cannot decode (it
     * throws, or returns {@code null}) sets that row aside as {@link KeyDecodingException}
     * describes, without failing the claim.
     *
     * @param encoded a stored form this codec (or one it is compatible with) produced
     * @return the key, never {@code null}
     */
    K decode(String encoded);

    /**
     * The codec the builder uses unless told otherwise: {@code String} as itself; enums by
     * {@code name()}; {@code Integer}, {@code Long} and {@code UUID} by {@code toString()};
     * anything else (records, classes) as {@linkplain #json JSON}, in a canonical form, so that
     * reordering a record's components does not change its stored key.
     *
     * @param keyType the class of the keys
     * @param <K>     the key type
     * @return a thread-safe codec for {@code keyType}
     */
    static <K> KeyCodec<K> defaultFor(Class<K> keyType) {
        return KeyCodecs.defaultFor(keyType);
    }

    /**
     * A codec writing keys as compact JSON through Jackson, in a form that depends only on the
     * key's value: properties are sorted alphabetically, map entries by key, and the elements of
     * every {@link java.util.Set} (at any depth, whether declared as a set, a collection or an
     * object) by their own JSON text in code-point order. Equal sets therefore encode alike
     * whatever their implementation or iteration order ({@code Set.of} iterates in an order that
     * changes from one JVM to the next). Decoding reads a JSON array into whatever collection the
     * target type declares.
     *
     * @param keyType the class of the keys, which Jackson must be able to write and read
     * @param <K>     the key type
     * @return a thread-safe JSON codec for {@code keyType}
     */
    static <K> KeyCodec<K> json(Class<K> keyType) {
        return KeyCodecs.json(keyType);
    }
}

package io.workqueue;

import tools.jackson.databind.json.JsonMapper;

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
     * subscription, as an {@link InvalidKeyException} with reason
     * {@link InvalidKeyException.Reason#ENCODING_FAILED} and what it threw as the cause (an
     * {@code InvalidKeyException} it throws itself is passed on as it is; a JVM-fatal error is
     * not caught).
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
     * {@link #defaultFor(Class)}, with JSON keys written through {@code mapper}'s knowledge of
     * types, as {@link #json(Class, JsonMapper)} describes. The Spring Boot starter passes the
     * application's {@code JsonMapper} here.
     *
     * @param keyType the class of the keys
     * @param mapper  the application's mapper, whose modules, mix-ins and per-type settings apply
     *                to JSON keys; it is not changed
     * @param <K>     the key type
     * @return a thread-safe codec for {@code keyType}
     */
    static <K> KeyCodec<K> defaultFor(Class<K> keyType, JsonMapper mapper) {
        return KeyCodecs.defaultFor(keyType, mapper);
    }

    /**
     * A codec writing keys as compact JSON through Jackson 3, in a form that depends only on the
     * key's value: properties are sorted alphabetically, map entries by key, and the elements of
     * every {@link java.util.Set} (at any depth, whether declared as a set, a collection or an
     * object) by their own JSON text in code-point order. Equal sets therefore encode alike
     * whatever their implementation or iteration order ({@code Set.of} iterates in an order that
     * changes from one JVM to the next). Decoding reads a JSON array into whatever collection the
     * target type declares, and refuses properties the type does not have.
     *
     * <p>{@code java.time} values are ISO-8601 text, with their offset and zone as given, so they
     * read back equal: {@code "2024-01-31T10:15:30Z"} for an {@code Instant},
     * {@code "2024-01-31"} for a {@code LocalDate}, {@code "2024-01-31T10:15:30+01:00[Europe/Paris]"}
     * for a {@code ZonedDateTime}, {@code "PT1H"} for a {@code Duration}. A
     * {@code java.util.Date} or {@code Calendar} is epoch milliseconds.
     *
     * <p>{@link WorkQueueBuilder#build()} checks the key type against this codec before any key
     * exists, and refuses one Jackson cannot write with {@link UnsupportedKeyTypeException}.
     *
     * @param keyType the class of the keys, which Jackson must be able to write and read
     * @param <K>     the key type
     * @return a thread-safe JSON codec for {@code keyType}
     */
    static <K> KeyCodec<K> json(Class<K> keyType) {
        return KeyCodecs.json(keyType);
    }

    /**
     * {@link #json(Class)} through what {@code mapper} knows about types: its modules (serializers
     * and deserializers for types of its own), mix-ins, per-type overrides and registered subtypes
     * apply to keys, so a key may contain any type the application taught Jackson.
     *
     * <p>None of {@code mapper}'s settings that would change the stored text of a key Jackson
     * already knows applies: its features (indentation, dates as timestamps, enums by
     * {@code toString()}, ...), property naming strategy, default inclusion, default typing, date
     * format, time zone and visibility are replaced by the canonical ones of {@link #json(Class)},
     * so a key stored under one JSON configuration is found again under another. What the mapper
     * teaches about a type is part of that type's stored form: changing a module's serializer for
     * a type that keys contain changes those keys' stored text, which makes them new keys (a key
     * stored before then is neither completed nor merged with the new one), so treat it like a
     * change of the key type itself.
     *
     * @param keyType the class of the keys
     * @param mapper  the mapper whose knowledge of types to use; it is not changed
     * @param <K>     the key type
     * @return a thread-safe JSON codec for {@code keyType}
     */
    static <K> KeyCodec<K> json(Class<K> keyType, JsonMapper mapper) {
        return KeyCodecs.json(keyType, mapper);
    }
}

package io.workqueue;

import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/** The codecs behind {@link KeyCodec#defaultFor} and {@link KeyCodec#json}. Thread-safe. */
final class KeyCodecs {

    private KeyCodecs() {}

    /** See {@link KeyCodec#defaultFor(Class)}. */
    static <K> KeyCodec<K> defaultFor(Class<K> keyType) {
        return defaultFor(keyType, CanonicalJson.STANDALONE, true);
    }

    /** See {@link KeyCodec#defaultFor(Class, JsonMapper)}. */
    static <K> KeyCodec<K> defaultFor(Class<K> keyType, JsonMapper mapper) {
        Objects.requireNonNull(mapper, "mapper");
        return defaultFor(keyType, mapper, false);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static <K> KeyCodec<K> defaultFor(Class<K> keyType, JsonMapper mapper, boolean canonical) {
        Objects.requireNonNull(keyType, "keyType");
        if (keyType == String.class) {
            return (KeyCodec<K>) new TextCodec<>(Function.identity(), Function.identity());
        }
        if (keyType == Integer.class) {
            return (KeyCodec<K>) new TextCodec<Integer>(String::valueOf, Integer::valueOf);
        }
        if (keyType == Long.class) {
            return (KeyCodec<K>) new TextCodec<Long>(String::valueOf, Long::valueOf);
        }
        if (keyType == UUID.class) {
            return (KeyCodec<K>) new TextCodec<UUID>(UUID::toString, UUID::fromString);
        }
        if (keyType.isEnum()) {
            Class<? extends Enum> enumType = (Class<? extends Enum>) keyType;
            return (KeyCodec<K>) new TextCodec<Enum>(Enum::name, name -> Enum.valueOf(enumType, name));
        }
        return new JsonCodec<>(keyType, canonical ? mapper : CanonicalJson.of(mapper));
    }

    /** See {@link KeyCodec#json(Class)}. */
    static <K> KeyCodec<K> json(Class<K> keyType) {
        Objects.requireNonNull(keyType, "keyType");
        return new JsonCodec<>(keyType, CanonicalJson.STANDALONE);
    }

    /** See {@link KeyCodec#json(Class, JsonMapper)}. */
    static <K> KeyCodec<K> json(Class<K> keyType, JsonMapper mapper) {
        Objects.requireNonNull(keyType, "keyType");
        Objects.requireNonNull(mapper, "mapper");
        return new JsonCodec<>(keyType, CanonicalJson.of(mapper));
    }

    /**
     * Refuses a key type {@code codec} cannot encode at all, when the library can tell from the
     * type alone: for its JSON codecs, a type Jackson cannot write. Other codecs are the
     * application's to judge.
     *
     * @throws UnsupportedKeyTypeException naming the type and the way out
     */
    static void checkKeyType(KeyCodec<?> codec) {
        if (codec instanceof JsonCodec<?> json) {
            KeyTypeProbe.check(json.mapper(), json.keyType());
        }
    }

    /** Keys that already have a canonical string form. */
    private record TextCodec<K>(Function<K, String> encoder, Function<String, K> decoder) implements KeyCodec<K> {
        @Override
        public String encode(K key) {
            return encoder.apply(key);
        }

        @Override
        public K decode(String encoded) {
            return decoder.apply(encoded);
        }
    }

    /** Keys as JSON through a mapper carrying the {@linkplain CanonicalJson canonical settings}. */
    private record JsonCodec<K>(Class<K> keyType, JsonMapper mapper) implements KeyCodec<K> {
        @Override
        public String encode(K key) {
            try {
                return mapper.writeValueAsString(key);
            } catch (JacksonException e) {
                throw new IllegalArgumentException("cannot encode a key of " + key.getClass().getName()
                        + " as JSON: " + e.getOriginalMessage(), e);
            }
        }

        @Override
        public K decode(String encoded) {
            try {
                return mapper.readValue(encoded, keyType);
            } catch (JacksonException e) {
                throw new IllegalArgumentException("stored key is not JSON for " + keyType.getName() + ": " + encoded
                        + " (" + e.getOriginalMessage() + ")", e);
            }
        }
    }
}

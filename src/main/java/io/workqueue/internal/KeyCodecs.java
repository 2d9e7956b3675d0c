package io.workqueue.internal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.workqueue.KeyCodec;
import java.io.UncheckedIOException;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;

/** The codecs behind {@link KeyCodec#defaultFor} and {@link KeyCodec#json}. Thread-safe. */
public final class KeyCodecs {
    /**
     * Sorted properties and map entries make the encoding independent of declaration order; the
     * compact (single-line) output keeps keys free of the line breaks the vetting refuses.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .disable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private KeyCodecs() {}

    /** See {@link KeyCodec#defaultFor}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <K> KeyCodec<K> defaultFor(Class<K> keyType) {
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
        return json(keyType);
    }

    /** See {@link KeyCodec#json}. */
    public static <K> KeyCodec<K> json(Class<K> keyType) {
        Objects.requireNonNull(keyType, "keyType");
        return new JsonCodec<>(keyType);
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

    private record JsonCodec<K>(Class<K> keyType) implements KeyCodec<K> {
        @Override
        public String encode(K key) {
            try {
                return MAPPER.writeValueAsString(key);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("cannot encode key of " + keyType.getName() + " as JSON", e);
            }
        }

        @Override
        public K decode(String encoded) {
            try {
                return MAPPER.readValue(encoded, keyType);
            } catch (JsonProcessingException e) {
                throw new UncheckedIOException("stored key is not JSON for " + keyType.getName() + ": " + encoded, e);
            }
        }
    }
}

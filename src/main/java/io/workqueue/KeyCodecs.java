package io.workqueue;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.type.WritableTypeId;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.BeanProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationConfig;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.jsontype.TypeSerializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.BeanSerializerModifier;
import com.fasterxml.jackson.databind.ser.ContextualSerializer;
import com.fasterxml.jackson.databind.ser.ResolvableSerializer;
import com.fasterxml.jackson.databind.type.CollectionType;
import com.fasterxml.jackson.databind.util.TokenBuffer;
import io.workqueue.internal.base.CodePointOrder;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/** The codecs behind {@link KeyCodec#defaultFor} and {@link KeyCodec#json}. Thread-safe. */
final class KeyCodecs {
    /** The one factory behind the mapper and the set elements' texts, so both are written alike. */
    private static final JsonFactory FACTORY = new JsonFactory();

    /**
     * Sorted properties, map entries and set elements make the encoding independent of declaration
     * and iteration order; the compact (single-line) output keeps keys free of the line breaks the
     * vetting refuses.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder(FACTORY)
            .enable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .disable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .addModule(new SimpleModule("canonical-sets").setSerializerModifier(new SetsInCanonicalOrder()))
            .build();

    private KeyCodecs() {}

    /** See {@link KeyCodec#defaultFor}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static <K> KeyCodec<K> defaultFor(Class<K> keyType) {
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
    static <K> KeyCodec<K> json(Class<K> keyType) {
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

    /** Gives every {@link Set} Jackson writes, at any depth, the {@link CanonicalSetSerializer}. */
    private static final class SetsInCanonicalOrder extends BeanSerializerModifier {
        private static final long serialVersionUID = 1L;

        @Override
        public JsonSerializer<?> modifyCollectionSerializer(SerializationConfig config, CollectionType valueType,
                BeanDescription beanDesc, JsonSerializer<?> serializer) {
            return valueType.isTypeOrSubTypeOf(Set.class) ? new CanonicalSetSerializer(serializer) : serializer;
        }
    }

    /**
     * Writes a set with its elements sorted by their own JSON text, in code-point order. A set's
     * iteration order is no part of its value: equal sets iterate differently by implementation,
     * by insertion order, and for {@code Set.of} by a seed that changes with every JVM, so writing
     * them as iterated would give one logical key several stored forms.
     *
     * <p>The elements are written first by the serializer Jackson chose for the set, into a buffer,
     * so they are rendered exactly as they would be anywhere else (element serializers, type ids,
     * sorted properties, nested sets already in order); each element is then turned into its own
     * text and the sorted texts are written verbatim. Reading is untouched: a JSON array reads back
     * into whatever set the target type asks for.
     */
    private static final class CanonicalSetSerializer extends JsonSerializer<Set<?>>
            implements ContextualSerializer, ResolvableSerializer {
        private final JsonSerializer<Object> inIterationOrder;

        @SuppressWarnings("unchecked") // Jackson hands out serializers for the value's type as <?>
        CanonicalSetSerializer(JsonSerializer<?> inIterationOrder) {
            this.inIterationOrder = (JsonSerializer<Object>) inIterationOrder;
        }

        @Override
        public void serialize(Set<?> value, JsonGenerator gen, SerializerProvider provider) throws IOException {
            TokenBuffer written = inIterationOrder(value, gen, provider);
            List<String> elements = sortedElements(written);
            if (elements == null) {
                written.serialize(gen); // not written as an array (a shape override): nothing to order
                return;
            }
            gen.writeStartArray(value, elements.size());
            for (String element : elements) {
                gen.writeRawValue(element);
            }
            gen.writeEndArray();
        }

        @Override
        public void serializeWithType(Set<?> value, JsonGenerator gen, SerializerProvider provider,
                TypeSerializer typeSer) throws IOException {
            List<String> elements = sortedElements(inIterationOrder(value, gen, provider));
            if (elements == null) {
                inIterationOrder.serializeWithType(value, gen, provider, typeSer);
                return;
            }
            WritableTypeId typeId = typeSer.writeTypePrefix(gen, typeSer.typeId(value, JsonToken.START_ARRAY));
            for (String element : elements) {
                gen.writeRawValue(element);
            }
            typeSer.writeTypeSuffix(gen, typeId);
        }

        private TokenBuffer inIterationOrder(Set<?> value, JsonGenerator gen, SerializerProvider provider)
                throws IOException {
            TokenBuffer buffer = new TokenBuffer(gen.getCodec(), false);
            inIterationOrder.serialize(value, buffer, provider);
            return buffer;
        }

        /** Each element of the buffered array as its own JSON text, sorted; null if not an array. */
        private static @Nullable List<String> sortedElements(TokenBuffer written) throws IOException {
            try (JsonParser parser = written.asParser()) {
                if (parser.nextToken() != JsonToken.START_ARRAY) {
                    return null;
                }
                List<String> elements = new ArrayList<>();
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    StringWriter text = new StringWriter();
                    try (JsonGenerator element = FACTORY.createGenerator(text)) {
                        element.copyCurrentStructure(parser);
                    }
                    elements.add(text.toString());
                }
                elements.sort(CodePointOrder::compare);
                return elements;
            }
        }

        @Override
        public boolean isEmpty(SerializerProvider provider, Set<?> value) {
            return inIterationOrder.isEmpty(provider, value);
        }

        /** Property annotations (element serializers, formats) configure the inner serializer. */
        @Override
        public JsonSerializer<?> createContextual(SerializerProvider provider, @Nullable BeanProperty property)
                throws JsonMappingException {
            JsonSerializer<?> contextual = provider.handlePrimaryContextualization(inIterationOrder, property);
            return contextual == inIterationOrder ? this : new CanonicalSetSerializer(contextual);
        }

        @Override
        public void resolve(SerializerProvider provider) throws JsonMappingException {
            if (inIterationOrder instanceof ResolvableSerializer resolvable) {
                resolvable.resolve(provider);
            }
        }
    }
}

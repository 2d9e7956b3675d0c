package io.workqueue;

import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSetter;
import io.workqueue.internal.base.CodePointOrder;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.Comparator;
import java.util.Date;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.Base64Variants;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.StreamWriteFeature;
import tools.jackson.core.json.JsonReadFeature;
import tools.jackson.core.json.JsonWriteFeature;
import tools.jackson.core.type.WritableTypeId;
import tools.jackson.databind.AnnotationIntrospector;
import tools.jackson.databind.BeanDescription;
import tools.jackson.databind.BeanProperty;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.MapperFeature;
import tools.jackson.databind.SerializationConfig;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.ValueSerializer;
import tools.jackson.databind.cfg.ConstructorDetector;
import tools.jackson.databind.cfg.DateTimeFeature;
import tools.jackson.databind.cfg.EnumFeature;
import tools.jackson.databind.cfg.JsonNodeFeature;
import tools.jackson.databind.cfg.MapperConfig;
import tools.jackson.databind.annotation.JsonPOJOBuilder;
import tools.jackson.databind.introspect.AccessorNamingStrategy;
import tools.jackson.databind.introspect.AnnotatedClass;
import tools.jackson.databind.introspect.BeanPropertyDefinition;
import tools.jackson.databind.introspect.DefaultAccessorNamingStrategy;
import tools.jackson.databind.introspect.VisibilityChecker;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.jsontype.TypeSerializer;
import tools.jackson.databind.module.SimpleModule;
import tools.jackson.databind.ser.BeanPropertyWriter;
import tools.jackson.databind.ser.ValueSerializerModifier;
import tools.jackson.databind.ser.jdk.JavaUtilCalendarSerializer;
import tools.jackson.databind.ser.jdk.JavaUtilDateSerializer;
import tools.jackson.databind.type.CollectionType;
import tools.jackson.databind.util.StdDateFormat;
import tools.jackson.databind.util.TokenBuffer;

/**
 * The one JSON form of a key: the Jackson configuration behind {@link KeyCodec#json}, forced onto
 * whatever mapper it starts from, so that a key's stored text depends on the key's value and on
 * what the application taught Jackson about its types (modules, mix-ins, per-type overrides,
 * annotations) — never on a switch someone flips in the application's JSON settings.
 *
 * <p>What is forced: every feature of Jackson (mapper, serialization, deserialization, date-time,
 * enum, tree, generator and parser features) set to Jackson's default, then the exceptions below;
 * no property naming strategy, default property inclusion, default typing, date format or time
 * zone of the application's; Jackson's default visibility, accessor naming, Base64 variant and
 * constructor detection. The exceptions make the form canonical and keep the text every key had
 * when the codec ran on Jackson 2 (StoredKeyFormatTest pins it):
 *
 * <ul>
 *   <li>properties sorted alphabetically, map entries by key, and {@link Set} elements by their own
 *       JSON text ({@link CanonicalSetSerializer}); compact output;
 *   <li>{@code java.time} values as ISO-8601 text, with their offset and zone as given (never
 *       moved to a context time zone, on writing or reading), a {@code ZonedDateTime} with its zone
 *       id ({@code 2024-01-31T10:15:30+01:00[Europe/Paris]}), so a value reads back equal and
 *       writes again to the same text; a {@code Duration} as ISO-8601 ({@code PT1H});
 *   <li>{@code java.util.Date} and {@code Calendar} as epoch milliseconds, as on Jackson 2;
 *   <li>the Jackson 2 defaults that Jackson 3 changed and that decide a key's text or how it reads
 *       back: enums by {@code name()}, not {@code toString()}; legacy property names for
 *       accessors such as {@code getXCoord()}; creators of any visibility; getters of collections
 *       used as setters; final fields as mutators; empty beans and unsortable map keys refused
 *       instead of written as {@code {}} or in iteration order; unknown properties refused on
 *       reading, so that two stored texts never read back as one key.
 * </ul>
 *
 * <p>Immutable and thread-safe: every mapper made here is built once and shared.
 */
final class CanonicalJson {

    /** The form without an application's mapper: Jackson's defaults plus the canonical settings. */
    static final JsonMapper STANDALONE = canonical(JsonMapper.builder()).build();

    private CanonicalJson() {}

    /**
     * {@code application}'s mapper with the canonical settings forced onto it: its modules, mix-ins,
     * per-type overrides and subtypes are kept; every switch that changes stored text is not.
     */
    static JsonMapper of(JsonMapper application) {
        return canonical(application.rebuild()).build();
    }

    private static JsonMapper.Builder canonical(JsonMapper.Builder builder) {
        // Jackson's defaults first, for every switch there is, so none of the application's
        // settings reaches the stored text (set before the features: it switches one of them).
        builder.defaultDateFormat(StdDateFormat.instance)
                .defaultTimeZone(null)
                .defaultLocale(Locale.getDefault())
                .defaultBase64Variant(Base64Variants.getDefaultVariant())
                .propertyNamingStrategy(null)
                .enumNamingStrategy(null)
                .accessorNaming(new Jackson2Names())
                .deactivateDefaultTyping()
                .constructorDetector(ConstructorDetector.DEFAULT)
                .changeDefaultPropertyInclusion(inclusion -> JsonInclude.Value.empty())
                .changeDefaultNullHandling(nulls -> JsonSetter.Value.empty())
                .defaultMergeable(null)
                .defaultLeniency(null)
                // Jackson 3's default, but with creators of any visibility, as Jackson 2 had.
                .changeDefaultVisibility(visibility -> VisibilityChecker.defaultInstance()
                        .withCreatorVisibility(Visibility.ANY));
        for (MapperFeature feature : MapperFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (SerializationFeature feature : SerializationFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (DeserializationFeature feature : DeserializationFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (DateTimeFeature feature : DateTimeFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (EnumFeature feature : EnumFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (JsonNodeFeature feature : JsonNodeFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (StreamWriteFeature feature : StreamWriteFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (StreamReadFeature feature : StreamReadFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (JsonWriteFeature feature : JsonWriteFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        for (JsonReadFeature feature : JsonReadFeature.values()) {
            builder.configure(feature, feature.enabledByDefault());
        }
        return builder
                // Canonical: independent of declaration order, iteration order and layout.
                .enable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
                .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
                .enable(SerializationFeature.FAIL_ON_ORDER_MAP_BY_INCOMPARABLE_KEY)
                .disable(SerializationFeature.INDENT_OUTPUT)
                .enable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
                // java.time as ISO-8601 text that reads back to an equal value.
                .disable(DateTimeFeature.WRITE_DATES_AS_TIMESTAMPS)
                .disable(DateTimeFeature.WRITE_DATE_KEYS_AS_TIMESTAMPS)
                .disable(DateTimeFeature.WRITE_DURATIONS_AS_TIMESTAMPS)
                .disable(DateTimeFeature.WRITE_DATES_WITH_CONTEXT_TIME_ZONE)
                .enable(DateTimeFeature.WRITE_DATES_WITH_ZONE_ID)
                .disable(DateTimeFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
                .disable(DateTimeFeature.NORMALIZE_DESERIALIZED_ZONE_ID)
                // The Jackson 2 behaviour keys were stored with.
                .disable(EnumFeature.WRITE_ENUMS_USING_TO_STRING)
                .disable(EnumFeature.READ_ENUMS_USING_TO_STRING)
                .disable(MapperFeature.FIX_FIELD_NAME_UPPER_CASE_PREFIX)
                // Creators as Jackson 2 saw them (annotated ones, records), not every constructor
                // whose parameter names the class file happens to carry: which properties are
                // creator properties decides their order.
                .disable(MapperFeature.DETECT_PARAMETER_NAMES)
                .enable(MapperFeature.USE_GETTERS_AS_SETTERS)
                .enable(MapperFeature.ALLOW_FINAL_FIELDS_AS_MUTATORS)
                .disable(MapperFeature.ALLOW_VOID_VALUED_PROPERTIES)
                .enable(MapperFeature.DEFAULT_VIEW_INCLUSION)
                .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .addModule(new SimpleModule("io.workqueue.canonical-keys")
                        .addSerializer(Date.class, new JavaUtilDateSerializer(Boolean.TRUE, null))
                        .addSerializer(Calendar.class, new JavaUtilCalendarSerializer(Boolean.TRUE, null))
                        .setSerializerModifier(new Canonicalizer()));
    }

    /**
     * Gives every {@link Set} Jackson writes, at any depth, the {@link CanonicalSetSerializer}, and
     * puts creator properties in alphabetical order.
     */
    private static final class Canonicalizer extends ValueSerializerModifier {
        private static final long serialVersionUID = 1L;

        @Override
        public ValueSerializer<?> modifyCollectionSerializer(SerializationConfig config, CollectionType valueType,
                BeanDescription.Supplier beanDesc, ValueSerializer<?> serializer) {
            return valueType.isTypeOrSubTypeOf(Set.class) ? new CanonicalSetSerializer(serializer) : serializer;
        }

        /**
         * Jackson writes properties in the order: explicitly ordered ({@code @JsonPropertyOrder},
         * then by index), creator properties (a record's components, an annotated constructor's
         * parameters), then the rest alphabetically. Jackson 2 put the creator properties in
         * alphabetical order too; Jackson 3 keeps their declaration order. Sorted here, keys keep
         * the text they had, and reordering a record's components still changes nothing.
         */
        @Override
        public List<BeanPropertyWriter> orderProperties(SerializationConfig config, BeanDescription.Supplier beanDesc,
                List<BeanPropertyWriter> properties) {
            Set<String> creatorProperties = new HashSet<>();
            for (BeanPropertyDefinition property : beanDesc.get().findProperties()) {
                if (property.hasConstructorParameter()) {
                    creatorProperties.add(property.getName());
                }
            }
            if (creatorProperties.isEmpty()) {
                return properties;
            }
            String[] explicit = config.getAnnotationIntrospector()
                    .findSerializationPropertyOrder(config, beanDesc.getClassInfo());
            Set<String> explicitlyOrdered = explicit == null ? Set.of() : Set.of(explicit);
            List<Integer> slots = new ArrayList<>();
            List<BeanPropertyWriter> creators = new ArrayList<>();
            for (int i = 0; i < properties.size(); i++) {
                BeanPropertyWriter property = properties.get(i);
                if (creatorProperties.contains(property.getName()) && !explicitlyOrdered.contains(property.getName())
                        && !property.getMetadata().hasIndex()) {
                    slots.add(i);
                    creators.add(property);
                }
            }
            creators.sort(Comparator.comparing(BeanPropertyWriter::getName));
            List<BeanPropertyWriter> ordered = new ArrayList<>(properties);
            for (int i = 0; i < slots.size(); i++) {
                ordered.set(slots.get(i), creators.get(i));
            }
            return ordered;
        }
    }

    /**
     * Property names from accessor names as Jackson 2 made them: the leading run of upper-case
     * letters lower-cased ({@code getURL()} is {@code url}, {@code getXCoord()} is {@code xcoord},
     * where Jackson 3 follows the JavaBeans rule: {@code URL}, {@code XCoord}), and any character
     * accepted after the prefix ({@code getvalue()}, {@code get_under()}).
     */
    private static final class Jackson2Names extends DefaultAccessorNamingStrategy.Provider {
        private static final long serialVersionUID = 1L;

        Jackson2Names() {
            super("set", JsonPOJOBuilder.DEFAULT_WITH_PREFIX, "get", "is", null);
        }

        @Override
        public AccessorNamingStrategy forPOJO(MapperConfig<?> config, AnnotatedClass targetClass) {
            return new Pojo(config, targetClass, _setterPrefix);
        }

        @Override
        public AccessorNamingStrategy forBuilder(MapperConfig<?> config, AnnotatedClass builderClass,
                @Nullable BeanDescription valueTypeDesc) {
            AnnotationIntrospector annotations = config.getAnnotationIntrospector();
            String prefix = valueTypeDesc == null ? null
                    : annotations.findBuilderPrefix(config, valueTypeDesc.getClassInfo());
            if (prefix == null) {
                JsonPOJOBuilder.Value builder = annotations.findPOJOBuilderConfig(config, builderClass);
                prefix = builder != null ? builder.withPrefix : _withPrefix;
            }
            return new Pojo(config, builderClass, prefix);
        }

        @Override
        public AccessorNamingStrategy forRecord(MapperConfig<?> config, AnnotatedClass recordClass) {
            return new Record(config, recordClass);
        }

        /** Jackson 2's name for the accessor {@code name}, whose prefix is {@code offset} long. */
        static @Nullable String propertyName(String name, int offset) {
            if (name.length() == offset) {
                return null;
            }
            StringBuilder property = new StringBuilder(name.length() - offset);
            int i = offset;
            for (; i < name.length(); i++) {
                char c = name.charAt(i);
                char lower = Character.toLowerCase(c);
                if (c == lower) {
                    break;
                }
                property.append(lower);
            }
            return property.append(name, i, name.length()).toString();
        }

        private static final class Pojo extends DefaultAccessorNamingStrategy {
            Pojo(MapperConfig<?> config, AnnotatedClass forClass, @Nullable String mutatorPrefix) {
                super(config, forClass, mutatorPrefix, "get", "is", null);
            }

            @Override
            protected @Nullable String stdManglePropertyName(String basename, int offset) {
                return propertyName(basename, offset);
            }
        }

        private static final class Record extends DefaultAccessorNamingStrategy.RecordNaming {
            Record(MapperConfig<?> config, AnnotatedClass forClass) {
                super(config, forClass);
            }

            @Override
            protected @Nullable String stdManglePropertyName(String basename, int offset) {
                return propertyName(basename, offset);
            }
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
     * text, by a generator of the same configuration, and the sorted texts are written verbatim.
     * Reading is untouched: a JSON array reads back into whatever set the target type asks for.
     */
    private static final class CanonicalSetSerializer extends ValueSerializer<Set<?>> {
        private final ValueSerializer<Object> inIterationOrder;

        @SuppressWarnings("unchecked") // Jackson hands out serializers for the value's type as <?>
        CanonicalSetSerializer(ValueSerializer<?> inIterationOrder) {
            this.inIterationOrder = (ValueSerializer<Object>) inIterationOrder;
        }

        @Override
        public void serialize(Set<?> value, JsonGenerator gen, SerializationContext ctxt) {
            TokenBuffer written = inIterationOrder(value, ctxt);
            List<String> elements = sortedElements(written, ctxt);
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
        public void serializeWithType(Set<?> value, JsonGenerator gen, SerializationContext ctxt,
                TypeSerializer typeSer) {
            List<String> elements = sortedElements(inIterationOrder(value, ctxt), ctxt);
            if (elements == null) {
                inIterationOrder.serializeWithType(value, gen, ctxt, typeSer);
                return;
            }
            WritableTypeId typeId = typeSer.writeTypePrefix(gen, ctxt, typeSer.typeId(value, JsonToken.START_ARRAY));
            for (String element : elements) {
                gen.writeRawValue(element);
            }
            typeSer.writeTypeSuffix(gen, ctxt, typeId);
        }

        private TokenBuffer inIterationOrder(Set<?> value, SerializationContext ctxt) {
            TokenBuffer buffer = ctxt.bufferForValueConversion();
            inIterationOrder.serialize(value, buffer, ctxt);
            return buffer;
        }

        /** Each element of the buffered array as its own JSON text, sorted; null if not an array. */
        private static @Nullable List<String> sortedElements(TokenBuffer written, SerializationContext ctxt)
                throws JacksonException {
            try (JsonParser parser = written.asParser()) {
                if (parser.nextToken() != JsonToken.START_ARRAY) {
                    return null;
                }
                List<String> elements = new ArrayList<>();
                while (parser.nextToken() != JsonToken.END_ARRAY) {
                    StringWriter text = new StringWriter();
                    try (JsonGenerator element = ctxt.tokenStreamFactory().createGenerator(ctxt, text)) {
                        element.copyCurrentStructure(parser);
                    }
                    elements.add(text.toString());
                }
                elements.sort(CodePointOrder::compare);
                return elements;
            }
        }

        @Override
        public boolean isEmpty(SerializationContext ctxt, Set<?> value) {
            return inIterationOrder.isEmpty(ctxt, value);
        }

        /** Property annotations (element serializers, formats) configure the inner serializer. */
        @Override
        public ValueSerializer<?> createContextual(SerializationContext ctxt, @Nullable BeanProperty property) {
            ValueSerializer<?> contextual = ctxt.handlePrimaryContextualization(inIterationOrder, property);
            return contextual == inIterationOrder ? this : new CanonicalSetSerializer(contextual);
        }

        @Override
        public void resolve(SerializationContext ctxt) {
            inIterationOrder.resolve(ctxt);
        }
    }
}

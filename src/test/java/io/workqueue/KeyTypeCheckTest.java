package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.annotation.JsonValue;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ConnectionFactoryMetadata;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.databind.DeserializationContext;
import tools.jackson.databind.SerializationContext;
import tools.jackson.databind.ValueDeserializer;
import tools.jackson.databind.ValueSerializer;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.module.SimpleModule;

/**
 * {@link WorkQueueBuilder#build()} refuses a key type the JSON codec cannot write at all, from the
 * type alone, so that the mistake shows when the queue is built (the application's start) rather
 * than at the first enqueue; and it accepts every type that works.
 */
class KeyTypeCheckTest {

    /** Reports PostgreSQL and is never connected: building reads only the metadata. */
    private static final ConnectionFactory POSTGRES = new ConnectionFactory() {
        @Override
        public Publisher<? extends Connection> create() {
            return Mono.error(new AssertionError("building a queue must not connect"));
        }

        @Override
        public ConnectionFactoryMetadata getMetadata() {
            return () -> "PostgreSQL";
        }
    };

    private static <K> WorkQueueBuilder<K> builder(Class<K> keyType) {
        return ReactiveWorkQueue.builder(POSTGRES, keyType).config(WorkQueueConfig.builder("key-type-check").build());
    }

    /** State, but nothing Jackson can see: no getters, no public fields, no annotations. */
    static final class Opaque {
        private final String id;

        Opaque(String id) {
            this.id = id;
        }

        @Override
        public String toString() {
            return id;
        }
    }

    record Holder(String name, Opaque opaque) {}

    record Outer(Holder holder) {}

    record ManyOpaque(List<Opaque> items, Map<String, Optional<Opaque>> byName) {}

    record OpaqueList(List<Opaque> items) {}

    @Test
    void aClassWithNoPropertiesFailsTheBuildNamingTheTypeAndTheWayOut() {
        UnsupportedKeyTypeException e = assertThrows(UnsupportedKeyTypeException.class, builder(Opaque.class)::build);

        assertInstanceOf(InvalidConfigException.class, e, "documented: build() throws InvalidConfigException");
        assertEquals(Opaque.class, e.keyType());
        assertTrue(e.getMessage().contains(Opaque.class.getName()), e.getMessage());
        assertTrue(e.getMessage().contains("no properties"), e.getMessage());
        assertTrue(e.getMessage().contains("KeyCodec") && e.getMessage().contains("WorkQueueBuilderCustomizer"),
                e.getMessage());
    }

    @Test
    void aTypeWithNoPropertiesInsideTheKeyFailsTheBuildNamingItAndWhereItIs() {
        UnsupportedKeyTypeException e = assertThrows(UnsupportedKeyTypeException.class, builder(Outer.class)::build);

        assertEquals(Outer.class, e.keyType());
        assertTrue(e.problem().contains(Opaque.class.getName()), e.problem());
        assertTrue(e.problem().contains("Outer.holder > Holder.opaque"), e.problem());
    }

    @Test
    void aTypeWithNoPropertiesInContainersOfTheKeyFailsTheBuild() {
        UnsupportedKeyTypeException e = assertThrows(UnsupportedKeyTypeException.class,
                builder(ManyOpaque.class)::build);

        assertTrue(e.problem().contains(Opaque.class.getName()), e.problem());
        // Properties are visited in their written (alphabetical) order: byName comes first.
        assertTrue(e.problem().contains("ManyOpaque.byName > value > content"), e.problem());
        assertThrows(UnsupportedKeyTypeException.class, builder(OpaqueList.class)::build);
    }

    @Test
    void anExplicitJsonCodecIsCheckedToo() {
        WorkQueueBuilder<Opaque> builder = builder(Opaque.class).keyCodec(KeyCodec.json(Opaque.class));

        assertThrows(UnsupportedKeyTypeException.class, builder::build);
    }

    @Test
    void aCodecOfTheApplicationsOwnIsTheApplicationsToJudge() {
        KeyCodec<Opaque> byId = new KeyCodec<>() {
            @Override
            public String encode(Opaque key) {
                return key.id;
            }

            @Override
            public Opaque decode(String encoded) {
                return new Opaque(encoded);
            }
        };

        assertDoesNotThrow(builder(Opaque.class).keyCodec(byId)::build);
    }

    @Test
    void aMapperThatKnowsTheTypeMakesItWritable() {
        JsonMapper application = JsonMapper.builder().addModule(new SimpleModule("opaque")
                .addSerializer(Opaque.class, new ValueSerializer<>() {
                    @Override
                    public void serialize(Opaque value, JsonGenerator gen, SerializationContext ctxt) {
                        gen.writeString(value.id);
                    }
                })
                .addDeserializer(Opaque.class, new ValueDeserializer<>() {
                    @Override
                    public Opaque deserialize(JsonParser p, DeserializationContext ctxt) {
                        return new Opaque(p.getString());
                    }
                }))
                .build();
        KeyCodec<Holder> codec = KeyCodec.json(Holder.class, application);

        assertDoesNotThrow(builder(Holder.class).keyCodec(codec)::build);
        assertEquals("{\"name\":\"n\",\"opaque\":\"o-1\"}", codec.encode(new Holder("n", new Opaque("o-1"))));
        assertEquals("o-1", codec.decode("{\"name\":\"n\",\"opaque\":\"o-1\"}").opaque().id);
    }

    /** Named by a Jackson 2 annotation, which Jackson 3 would not read: "zone_id", silently "zoneId". */
    @com.fasterxml.jackson.databind.annotation.JsonNaming(com.fasterxml.jackson.databind.PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Jackson2Named(String zoneId) {}

    record HoldingJackson2Named(Jackson2Named inner) {}

    @Test
    void aKeyTypeWithJackson2DatabindAnnotationsFailsTheBuildRatherThanChangingItsText() {
        UnsupportedKeyTypeException e = assertThrows(UnsupportedKeyTypeException.class,
                builder(Jackson2Named.class)::build);

        assertTrue(e.problem().contains("@com.fasterxml.jackson.databind.annotation.JsonNaming"), e.problem());
        assertTrue(e.problem().contains("@tools.jackson.databind.annotation.JsonNaming"), e.problem());
        assertThrows(UnsupportedKeyTypeException.class, builder(HoldingJackson2Named.class)::build);
    }

    // ------------------------------------------------------------------ what works is not refused

    enum Colour { RED }

    record Plain(String s, int i, Colour colour, UUID id) {}

    record Times(Instant at, LocalDate day, ZonedDateTime zoned, Duration took) {}

    /** A bean with getters and setters. */
    static final class Bean {
        private String name = "";

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }
    }

    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME)
    @JsonSubTypes({@JsonSubTypes.Type(value = Circle.class, name = "circle")})
    sealed interface Shape permits Circle {}

    record Circle(double radius) implements Shape {}

    record Drawing(Shape shape, List<Shape> more) {}

    /** Types only a key's value decides: left to the enqueue. */
    record Open(Object anything, Comparable<String> comparable, Runnable task) {}

    record Sku(@JsonValue String code) {}

    record Containers(List<Plain> list, Set<Set<String>> sets, Map<String, Times> map, Optional<Sku> maybe,
            Plain[] array) {}

    /** Refers to itself. */
    record Node(String name, List<Node> children) {}

    /** No component: one key, {@code {}}. */
    record Singleton() {}

    /** Properties from an any-getter only. */
    static final class Dynamic {
        @JsonAnyGetter
        public Map<String, Object> values() {
            return Map.of("k", 1);
        }
    }

    static Stream<Class<?>> writableKeyTypes() {
        return Stream.of(String.class, Integer.class, Long.class, UUID.class, Colour.class, Plain.class, Times.class,
                Instant.class, LocalDate.class, Bean.class, Shape.class, Drawing.class, Open.class, Sku.class,
                Containers.class, Node.class, Singleton.class, Dynamic.class, Object.class);
    }

    @ParameterizedTest
    @MethodSource("writableKeyTypes")
    void aKeyTypeJacksonCanWriteIsAccepted(Class<?> keyType) {
        assertDoesNotThrow(builder(keyType)::build);
        assertDoesNotThrow(builder(keyType, KeyCodec.json(keyType))::build);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static <K> WorkQueueBuilder<K> builder(Class<?> keyType, KeyCodec<?> codec) {
        return builder((Class<K>) keyType).keyCodec((KeyCodec) codec);
    }
}

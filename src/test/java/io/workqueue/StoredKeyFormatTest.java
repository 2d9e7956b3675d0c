package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.annotation.JsonValue;
import java.math.BigDecimal;
import java.text.SimpleDateFormat;
import java.math.BigInteger;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TimeZone;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.core.Base64Variants;
import tools.jackson.core.StreamWriteFeature;
import tools.jackson.core.json.JsonWriteFeature;
import tools.jackson.databind.DefaultTyping;
import tools.jackson.databind.MapperFeature;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.cfg.DateTimeFeature;
import tools.jackson.databind.cfg.EnumFeature;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.jsontype.BasicPolymorphicTypeValidator;

/**
 * The stored form of representative keys, written down once and never to change: a stored key is
 * an identity, so the same key must encode to the same text in every release, or re-enqueueing it
 * makes a second row and {@code complete} misses the first. Each case also reads its text back and
 * encodes what it read, which must give the text again.
 *
 * <p>The texts are those the codec wrote before it moved from Jackson 2 to Jackson 3; whatever
 * Jackson does next, these stay.
 */
class StoredKeyFormatTest {

    /** One constant has a {@code toString} of its own, which must not leak into the stored form. */
    enum Shade {
        LIGHT,
        DARK {
            @Override
            public String toString() {
                return "dark!";
            }
        }
    }

    record Scalars(String text, int i, long l, short s, byte b, double d, float f, boolean flag, char c,
            BigDecimal decimal, BigInteger big, Integer boxed, Double nothing) {}

    record Doubles(double tiny, double huge, double third, double negativeZero, double notANumber,
            float floatTenth, double plainBig) {}

    record Texts(List<String> texts) {}

    record Shaded(Shade shade, Map<Shade, Integer> byShade, UUID id) {}

    record Containers(List<String> list, Set<Integer> set, Map<String, List<Integer>> map,
            Map<Integer, String> numbered, Map<UUID, Boolean> byId, int[] ints, String[] strings, byte[] bytes) {}

    record Inner(String name, long weight) {}

    record Outer(Inner inner, List<Inner> inners, Map<String, Inner> byName) {}

    /** A boolean component named like a getter. */
    record Flags(boolean isOpen, Boolean closed) {}

    record Annotated(@JsonProperty("z_last") String first, @JsonInclude(JsonInclude.Include.NON_NULL) String optional,
            String plain) {}

    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "kind")
    @JsonSubTypes({@JsonSubTypes.Type(value = Circle.class, name = "circle"),
            @JsonSubTypes.Type(value = Square.class, name = "square")})
    sealed interface Shape permits Circle, Square {}

    record Circle(double radius) implements Shape {}

    record Square(int side) implements Shape {}

    record Drawing(Shape shape, List<Shape> more) {}

    /** A key written as one value of its own. */
    record Sku(@JsonValue String code) {
        @JsonCreator
        Sku {}
    }

    record Stock(Sku sku, int count) {}

    record Dated(Date at) {}

    /**
     * A bean with the accessor names Jackson has treated differently over the years: an acronym
     * getter, a one-letter prefix before an upper-case letter, an is-getter and a public field.
     */
    static final class Bean {
        private String url;
        private int xCoord;
        private boolean active;
        public String zField;

        public Bean() {}

        Bean(String url, int xCoord, boolean active, String zField) {
            this.url = url;
            this.xCoord = xCoord;
            this.active = active;
            this.zField = zField;
        }

        public String getURL() {
            return url;
        }

        public void setURL(String url) {
            this.url = url;
        }

        public int getXCoord() {
            return xCoord;
        }

        public void setXCoord(int xCoord) {
            this.xCoord = xCoord;
        }

        public boolean isActive() {
            return active;
        }

        public void setActive(boolean active) {
            this.active = active;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Bean b && Objects.equals(url, b.url) && xCoord == b.xCoord && active == b.active
                    && Objects.equals(zField, b.zField);
        }

        @Override
        public int hashCode() {
            return Objects.hash(url, xCoord, active, zField);
        }
    }

    /** Components are creator properties; a derived getter is not, and Jackson 2 wrote it after them. */
    record Area(int width, int height) {
        public int getArea() {
            return width * height;
        }

        public boolean isSquare() {
            return width == height;
        }
    }

    /** An annotated creator beside a getter the creator does not take. */
    static final class Created {
        private final String zeta;
        private final int alpha;

        @JsonCreator
        Created(@JsonProperty("zeta") String zeta, @JsonProperty("alpha") int alpha) {
            this.zeta = zeta;
            this.alpha = alpha;
        }

        public String getZeta() {
            return zeta;
        }

        public int getAlpha() {
            return alpha;
        }

        public String getMiddle() {
            return zeta + alpha;
        }

        public void setMiddle(String ignored) {
            // derived: what a stored key says here is recomputed
        }
    }

    @JsonPropertyOrder({"zulu", "alpha"})
    record Ordered(String alpha, String mike, String zulu) {}

    /** Accessors whose names Jackson 3 no longer takes for properties by default. */
    static final class OddAccessors {
        private String value;
        private String under;

        public String getvalue() {
            return value;
        }

        public void setvalue(String value) {
            this.value = value;
        }

        public String get_under() {
            return under;
        }

        public void set_under(String under) {
            this.under = under;
        }
    }

    private static final UUID ID = UUID.fromString("123e4567-e89b-12d3-a456-426614174000");

    private static <K, V> Map<K, V> inOrder(K k1, V v1, K k2, V v2) {
        Map<K, V> map = new LinkedHashMap<>();
        map.put(k1, v1);
        map.put(k2, v2);
        return map;
    }

    private static OddAccessors oddAccessors() {
        OddAccessors odd = new OddAccessors();
        odd.setvalue("v");
        odd.set_under("u");
        return odd;
    }

    static Stream<Arguments> keys() {
        return Stream.of(
                Arguments.of(Scalars.class, new Scalars("t", -7, Long.MIN_VALUE, (short) 3, (byte) -1, 0.1, 2.5f, true,
                        'é', new BigDecimal("100.00"), new BigInteger("123456789012345678901234567890"), 42, null),
                        "{\"b\":-1,\"big\":123456789012345678901234567890,\"boxed\":42,\"c\":\"é\",\"d\":0.1,"
                                + "\"decimal\":100.00,\"f\":2.5,\"flag\":true,\"i\":-7,\"l\":-9223372036854775808,"
                                + "\"nothing\":null,\"s\":3,\"text\":\"t\"}"),
                Arguments.of(Doubles.class, new Doubles(Double.MIN_VALUE, 1.0E23, 1.0 / 3, -0.0, Double.NaN, 0.1f,
                        123456789.125),
                        "{\"floatTenth\":0.1,\"huge\":9.999999999999999E22,\"negativeZero\":-0.0,\"notANumber\":\"NaN\","
                                + "\"plainBig\":1.23456789125E8,\"third\":0.3333333333333333,\"tiny\":4.9E-324}"),
                Arguments.of(Texts.class, new Texts(List.of("a/b", "</script>", "é ü 中文 \uD83D\uDE00", "tab\tand\u0001",
                        "line\u2028sep", "quote\" back\\", "")),
                        "{\"texts\":[\"a/b\",\"</script>\",\"\u00E9 \u00FC \u4E2D\u6587 \uD83D\uDE00\",\"tab\\tand\\u0001\","
                                + "\"line\u2028sep\",\"quote\\\" back\\\\\",\"\"]}"),
                Arguments.of(Shaded.class, new Shaded(Shade.DARK, inOrder(Shade.DARK, 2, Shade.LIGHT, 1), ID),
                        "{\"byShade\":{\"LIGHT\":1,\"DARK\":2},\"id\":\"123e4567-e89b-12d3-a456-426614174000\","
                                + "\"shade\":\"DARK\"}"),
                Arguments.of(Containers.class, new Containers(List.of("b", "a"), new LinkedHashSet<>(List.of(10, 2, 1)),
                        inOrder("z", List.of(3, 1), "a", List.of()), inOrder(10, "ten", 2, "two"),
                        inOrder(ID, true, new UUID(0, 1), false), new int[] {3, 1}, new String[] {"y", "x"},
                        new byte[] {0, 1, 2, (byte) 0xff}),
                        "{\"byId\":{\"00000000-0000-0000-0000-000000000001\":false,\"123e4567-e89b-12d3-a456-426614174000\":true},"
                                + "\"bytes\":\"AAEC/w==\",\"ints\":[3,1],\"list\":[\"b\",\"a\"],\"map\":{\"a\":[],\"z\":[3,1]},"
                                + "\"numbered\":{\"2\":\"two\",\"10\":\"ten\"},\"set\":[1,10,2],\"strings\":[\"y\",\"x\"]}"),
                Arguments.of(Outer.class, new Outer(new Inner("i", 1), List.of(new Inner("b", 2), new Inner("a", 3)),
                        inOrder("y", new Inner("y", 4), "x", null)),
                        "{\"byName\":{\"x\":null,\"y\":{\"name\":\"y\",\"weight\":4}},\"inner\":{\"name\":\"i\","
                                + "\"weight\":1},\"inners\":[{\"name\":\"b\",\"weight\":2},{\"name\":\"a\",\"weight\":3}]}"),
                Arguments.of(Flags.class, new Flags(true, null),
                        "{\"closed\":null,\"isOpen\":true}"),
                Arguments.of(Annotated.class, new Annotated("f", null, "p"),
                        "{\"plain\":\"p\",\"z_last\":\"f\"}"),
                Arguments.of(Shape.class, new Circle(1.5),
                        "{\"kind\":\"circle\",\"radius\":1.5}"),
                Arguments.of(Drawing.class, new Drawing(new Square(2), List.of(new Circle(0.5), new Square(1))),
                        "{\"more\":[{\"kind\":\"circle\",\"radius\":0.5},{\"kind\":\"square\",\"side\":1}],"
                                + "\"shape\":{\"kind\":\"square\",\"side\":2}}"),
                Arguments.of(Sku.class, new Sku("SKU-1"),
                        "\"SKU-1\""),
                Arguments.of(Stock.class, new Stock(new Sku("SKU-2"), 5),
                        "{\"count\":5,\"sku\":\"SKU-2\"}"),
                Arguments.of(Dated.class, new Dated(new Date(1_700_000_000_123L)),
                        "{\"at\":1700000000123}"),
                Arguments.of(Area.class, new Area(3, 2),
                        "{\"height\":2,\"width\":3,\"area\":6,\"square\":false}"),
                Arguments.of(Created.class, new Created("z", 1),
                        "{\"alpha\":1,\"zeta\":\"z\",\"middle\":\"z1\"}"),
                Arguments.of(Ordered.class, new Ordered("a", "m", "z"),
                        "{\"zulu\":\"z\",\"alpha\":\"a\",\"mike\":\"m\"}"),
                Arguments.of(OddAccessors.class, oddAccessors(),
                        "{\"_under\":\"u\",\"value\":\"v\"}"),
                Arguments.of(Bean.class, new Bean("https://example.com/x", 7, true, "z"),
                        "{\"active\":true,\"url\":\"https://example.com/x\",\"xcoord\":7,\"zField\":\"z\"}"));
    }

    /**
     * An application's JSON settings, each of which would change the text of some key above if it
     * reached the codec.
     */
    private static final JsonMapper APPLICATION = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .changeDefaultPropertyInclusion(inclusion -> JsonInclude.Value.construct(JsonInclude.Include.NON_NULL,
                    JsonInclude.Include.NON_NULL))
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .disable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .enable(DateTimeFeature.WRITE_DATES_AS_TIMESTAMPS)
            .enable(EnumFeature.WRITE_ENUMS_USING_TO_STRING)
            .enable(MapperFeature.FIX_FIELD_NAME_UPPER_CASE_PREFIX)
            .enable(JsonWriteFeature.ESCAPE_NON_ASCII)
            .enable(JsonWriteFeature.ESCAPE_FORWARD_SLASHES)
            .enable(JsonWriteFeature.WRITE_NUMBERS_AS_STRINGS)
            .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            .defaultTimeZone(TimeZone.getTimeZone("Asia/Tokyo"))
            .defaultDateFormat(new SimpleDateFormat("yyyy-MM-dd"))
            .defaultBase64Variant(Base64Variants.MODIFIED_FOR_URL)
            .changeDefaultVisibility(visibility -> visibility.withFieldVisibility(JsonAutoDetect.Visibility.ANY))
            .activateDefaultTyping(BasicPolymorphicTypeValidator.builder().allowIfBaseType(Object.class).build(),
                    DefaultTyping.NON_FINAL)
            .build();

    @ParameterizedTest
    @MethodSource("keys")
    <K> void anApplicationsJsonSettingsDoNotChangeTheStoredText(Class<K> type, K key, String stored) {
        KeyCodec<K> codec = KeyCodec.defaultFor(type, APPLICATION);

        assertEquals(stored, codec.encode(key));
        if (type != Area.class) {
            assertEquals(stored, codec.encode(codec.decode(stored)));
        }
    }

    @Test
    void theApplicationsMapperIsLeftAsItWas() {
        KeyCodec.defaultFor(Inner.class, APPLICATION).encode(new Inner("i", 1));

        assertEquals("{\n  \"name\" : \"i\",\n  \"weight\" : \"1\"\n}", APPLICATION.writeValueAsString(new Inner("i", 1)));
    }

    @ParameterizedTest
    @MethodSource("keys")
    <K> void aKeyEncodesToTheTextItAlwaysHad(Class<K> type, K key, String stored) {
        assertEquals(stored, KeyCodec.defaultFor(type).encode(key));
    }

    @ParameterizedTest
    @MethodSource("keys")
    <K> void aStoredTextReadsBackAsAKeyThatEncodesToItAgain(Class<K> type, K key, String stored) {
        KeyCodec<K> codec = KeyCodec.defaultFor(type);
        if (type == Area.class) {
            // A derived property has no setter: the text never read back, on Jackson 2 either.
            assertThrows(RuntimeException.class, () -> codec.decode(stored));
            return;
        }
        assertEquals(stored, codec.encode(codec.decode(stored)));
    }
}

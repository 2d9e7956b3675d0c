package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonTypeInfo;
import io.workqueue.internal.KeyVetting;
import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.MonthDay;
import java.time.OffsetDateTime;
import java.time.Period;
import java.time.Year;
import java.time.YearMonth;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.jsontype.BasicPolymorphicTypeValidator;

class KeyCodecTest {

    enum Colour { RED, GREEN_BLUE }

    /** Components in one declaration order... */
    record Tenant(String zone, int id, String account) {}

    /** ...and the same components in another. */
    record TenantReordered(String account, int id, String zone) {}

    record Labelled(String label, Map<String, Integer> counts) {}

    record Nested(Tenant tenant, List<String> tags) {}

    record Tagged(String name, Set<String> tags) {}

    /** Sets at every depth. */
    record Deep(Set<Set<String>> groups, Map<String, Set<Integer>> byName, List<Set<String>> rows, Set<Tenant> tenants) {}

    /** A set written with its type, as polymorphic values are. */
    record Typed(@JsonTypeInfo(use = JsonTypeInfo.Id.CLASS) Object value) {}

    /** A set declared only as a collection (it decodes as a list, so this is about encoding). */
    record Loose(Collection<String> items) {}

    /** A plain class with a no-argument constructor and fields declared out of alphabetical order. */
    static final class Job {
        public String zulu;
        public String alpha;
        public long mike;

        public Job() {}

        Job(String zulu, String alpha, long mike) {
            this.zulu = zulu;
            this.alpha = alpha;
            this.mike = mike;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Job j && Objects.equals(zulu, j.zulu) && Objects.equals(alpha, j.alpha) && mike == j.mike;
        }

        @Override
        public int hashCode() {
            return Objects.hash(zulu, alpha, mike);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"a", "order:42", "{\"looks\":\"like json\"}", "héllo wörld", "\uD83D\uDE00 grin", " padded "})
    void aStringIsStoredAsItself(String key) {
        KeyCodec<String> codec = KeyCodec.defaultFor(String.class);
        assertEquals(key, codec.encode(key));
        assertEquals(key, codec.decode(key));
    }

    @Test
    void anEnumIsStoredByName() {
        KeyCodec<Colour> codec = KeyCodec.defaultFor(Colour.class);
        assertEquals("GREEN_BLUE", codec.encode(Colour.GREEN_BLUE));
        assertEquals(Colour.RED, codec.decode("RED"));
    }

    @Test
    void integersLongsAndUuidsAreStoredByToString() {
        KeyCodec<Integer> ints = KeyCodec.defaultFor(Integer.class);
        KeyCodec<Long> longs = KeyCodec.defaultFor(Long.class);
        KeyCodec<UUID> uuids = KeyCodec.defaultFor(UUID.class);
        UUID uuid = UUID.fromString("123e4567-e89b-12d3-a456-426614174000");

        assertEquals("-17", ints.encode(-17));
        assertEquals(Integer.MIN_VALUE, ints.decode(String.valueOf(Integer.MIN_VALUE)));
        assertEquals("9223372036854775807", longs.encode(Long.MAX_VALUE));
        assertEquals(-5L, longs.decode("-5"));
        assertEquals("123e4567-e89b-12d3-a456-426614174000", uuids.encode(uuid));
        assertEquals(uuid, uuids.decode(uuid.toString()));
    }

    @Test
    void aRecordIsStoredAsJsonWithPropertiesSortedAlphabetically() {
        KeyCodec<Tenant> codec = KeyCodec.defaultFor(Tenant.class);
        assertEquals("{\"account\":\"acme\",\"id\":7,\"zone\":\"eu\"}", codec.encode(new Tenant("eu", 7, "acme")));
    }

    @Test
    void reorderingARecordsComponentsDoesNotChangeItsStoredKey() {
        String before = KeyCodec.defaultFor(Tenant.class).encode(new Tenant("eu", 7, "acme"));
        String after = KeyCodec.defaultFor(TenantReordered.class).encode(new TenantReordered("acme", 7, "eu"));
        assertEquals(before, after);
        // And either type reads the other's stored key.
        assertEquals(new TenantReordered("acme", 7, "eu"), KeyCodec.defaultFor(TenantReordered.class).decode(before));
    }

    @Test
    void aClassIsStoredAsJsonWithPropertiesSortedAlphabetically() {
        KeyCodec<Job> codec = KeyCodec.defaultFor(Job.class);
        Job job = new Job("z", "a", 3);
        String encoded = codec.encode(job);
        assertEquals("{\"alpha\":\"a\",\"mike\":3,\"zulu\":\"z\"}", encoded);
        assertEquals(job, codec.decode(encoded));
    }

    @Test
    void mapEntriesInsideAKeyAreSortedSoInsertionOrderDoesNotMatter() {
        Map<String, Integer> ba = new java.util.LinkedHashMap<>();
        ba.put("b", 2);
        ba.put("a", 1);
        Map<String, Integer> ab = new java.util.LinkedHashMap<>();
        ab.put("a", 1);
        ab.put("b", 2);
        KeyCodec<Labelled> codec = KeyCodec.defaultFor(Labelled.class);
        assertEquals(codec.encode(new Labelled("x", ab)), codec.encode(new Labelled("x", ba)));
        assertEquals("{\"counts\":{\"a\":1,\"b\":2},\"label\":\"x\"}", codec.encode(new Labelled("x", ba)));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "plain",
        "with \"double quotes\" inside",
        "back\\slash and \\\"escaped quote\\\"",
        "unicode: é ü ß 中文 \uD83D\uDE00 \uD834\uDD1E",
        "line\nbreak\rcarriage\ttab",
        "nul\u0000inside",
        "}{\"\":[]}",
    })
    void recordsRoundTripWhateverTheirStringsContain(String text) {
        KeyCodec<Nested> codec = KeyCodec.defaultFor(Nested.class);
        Nested key = new Nested(new Tenant(text, 1, text + text), List.of(text, "", text));

        String encoded = codec.encode(key);

        assertEquals(key, codec.decode(encoded));
        // The JSON escapes control characters, so a record key always passes the vetting
        // even when its strings hold characters a raw key may not.
        assertEquals(encoded, KeyVetting.vet(encoded));
        assertFalse(encoded.contains("\n") || encoded.contains("\r") || encoded.contains("\u0000"), encoded);
    }

    @Test
    void theJsonCodecWritesEvenSimpleTypesAsJson() {
        KeyCodec<String> strings = KeyCodec.json(String.class);
        assertEquals("\"a\\\"b\"", strings.encode("a\"b"));
        assertEquals("a\"b", strings.decode("\"a\\\"b\""));

        KeyCodec<Integer> ints = KeyCodec.json(Integer.class);
        assertEquals("42", ints.encode(42));
        assertEquals(42, ints.decode("42"));
    }

    @Test
    void theJsonCodecSortsPropertiesAndRoundTripsRecords() {
        KeyCodec<Tenant> codec = KeyCodec.json(Tenant.class);
        Tenant tenant = new Tenant("ap-south", 12, "initech");
        String encoded = codec.encode(tenant);
        assertEquals("{\"account\":\"initech\",\"id\":12,\"zone\":\"ap-south\"}", encoded);
        assertEquals(encoded, KeyCodec.json(TenantReordered.class).encode(new TenantReordered("initech", 12, "ap-south")));
        assertEquals(tenant, codec.decode(encoded));
    }

    @Test
    void theJsonCodecSortsMapEntries() {
        @SuppressWarnings({"unchecked", "rawtypes"})
        KeyCodec<Map<String, Integer>> codec = (KeyCodec) KeyCodec.json(Map.class);
        Map<String, Integer> unsorted = new java.util.LinkedHashMap<>();
        unsorted.put("zeta", 1);
        unsorted.put("alpha", 2);
        assertEquals("{\"alpha\":2,\"zeta\":1}", codec.encode(unsorted));
        assertEquals(new TreeMap<>(unsorted), new TreeMap<>(codec.decode("{\"alpha\":2,\"zeta\":1}")));
    }

    @Test
    void decodingAStoredKeyThatIsNotTheTypesJsonFails() {
        KeyCodec<Tenant> codec = KeyCodec.defaultFor(Tenant.class);
        assertThrows(RuntimeException.class, () -> codec.decode("not json"));
        // Unknown properties are refused rather than silently dropped, so two keys never decode alike.
        assertThrows(RuntimeException.class, () -> codec.decode("{\"account\":\"a\",\"id\":1,\"zone\":\"z\",\"extra\":1}"));
    }

    // ------------------------------------------------------------------ java.time

    record Event(Instant at, LocalDate day, UUID id) {}

    @Test
    void aRecordWithInstantLocalDateAndUuidComponentsRoundTrips() {
        KeyCodec<Event> codec = KeyCodec.defaultFor(Event.class);
        Event event = new Event(Instant.parse("2024-01-31T10:15:30.123456789Z"), LocalDate.of(2024, 1, 31),
                UUID.fromString("123e4567-e89b-12d3-a456-426614174000"));

        String encoded = codec.encode(event);

        assertEquals("{\"at\":\"2024-01-31T10:15:30.123456789Z\",\"day\":\"2024-01-31\","
                + "\"id\":\"123e4567-e89b-12d3-a456-426614174000\"}", encoded);
        assertEquals(event, codec.decode(encoded));
        assertEquals(encoded, codec.encode(codec.decode(encoded)));
    }

    record Clocks(Instant wholeSecond, LocalDateTime local, LocalTime time, OffsetDateTime offset, ZonedDateTime zoned,
            ZonedDateTime utc, Duration took, Period period, Year year, YearMonth month, MonthDay monthDay,
            ZoneId zone, ZoneOffset zoneOffset, DayOfWeek weekday) {}

    @Test
    void everyJavaTimeTypeIsIso8601TextThatReadsBackEqual() {
        KeyCodec<Clocks> codec = KeyCodec.defaultFor(Clocks.class);
        Clocks clocks = new Clocks(Instant.parse("2024-01-31T10:15:30Z"), LocalDateTime.of(2024, 1, 31, 10, 15, 30, 500_000_000),
                LocalTime.of(10, 15), OffsetDateTime.of(2024, 1, 31, 10, 15, 30, 0, ZoneOffset.ofHours(2)),
                ZonedDateTime.of(2024, 1, 31, 10, 15, 30, 0, ZoneId.of("Europe/Paris")),
                ZonedDateTime.of(2024, 1, 31, 10, 15, 30, 0, ZoneId.of("UTC")), Duration.ofMinutes(90),
                Period.of(1, 2, 3), Year.of(2024), YearMonth.of(2024, 1), MonthDay.of(1, 31), ZoneId.of("Europe/Paris"),
                ZoneOffset.ofHoursMinutes(-3, -30), DayOfWeek.WEDNESDAY);

        String encoded = codec.encode(clocks);

        assertEquals("{\"local\":\"2024-01-31T10:15:30.5\",\"month\":\"2024-01\",\"monthDay\":\"--01-31\","
                + "\"offset\":\"2024-01-31T10:15:30+02:00\",\"period\":\"P1Y2M3D\",\"time\":\"10:15:00\","
                + "\"took\":\"PT1H30M\",\"utc\":\"2024-01-31T10:15:30Z[UTC]\",\"weekday\":\"WEDNESDAY\","
                + "\"wholeSecond\":\"2024-01-31T10:15:30Z\",\"year\":2024,\"zone\":\"Europe/Paris\","
                + "\"zoneOffset\":\"-03:30\",\"zoned\":\"2024-01-31T10:15:30+01:00[Europe/Paris]\"}", encoded);
        assertEquals(clocks, codec.decode(encoded));
        assertEquals(encoded, codec.encode(codec.decode(encoded)));
    }

    record At(OffsetDateTime at) {}

    @Test
    void oneInstantAtTwoOffsetsIsTwoKeysEachReadingBackAsItself() {
        KeyCodec<At> codec = KeyCodec.defaultFor(At.class);
        At paris = new At(OffsetDateTime.parse("2024-01-31T11:15:30+01:00"));
        At utc = new At(OffsetDateTime.parse("2024-01-31T10:15:30Z"));

        // Equal instants, unequal values: the stored form must tell them apart, as equals() does.
        assertNotEquals(codec.encode(paris), codec.encode(utc));
        assertEquals(paris, codec.decode(codec.encode(paris)));
        assertEquals(utc, codec.decode(codec.encode(utc)));
    }

    record Calendar(Map<LocalDate, Integer> byDay, Set<Instant> instants) {}

    @Test
    void javaTimeMapKeysAndSetElementsAreOrderedToo() {
        Map<LocalDate, Integer> byDay = new LinkedHashMap<>();
        byDay.put(LocalDate.of(2024, 12, 1), 2);
        byDay.put(LocalDate.of(2024, 2, 1), 1);
        KeyCodec<Calendar> codec = KeyCodec.defaultFor(Calendar.class);

        String encoded = codec.encode(new Calendar(byDay, inOrder(Instant.parse("2024-02-01T00:00:00Z"),
                Instant.parse("2024-01-01T00:00:00Z"))));

        assertEquals("{\"byDay\":{\"2024-02-01\":1,\"2024-12-01\":2},"
                + "\"instants\":[\"2024-01-01T00:00:00Z\",\"2024-02-01T00:00:00Z\"]}", encoded);
        assertEquals(encoded, codec.encode(codec.decode(encoded)));
    }

    // ------------------------------------------------------------------ sets

    /** A set iterating in exactly the order given, whatever its elements' hash codes. */
    @SafeVarargs
    private static <T> Set<T> inOrder(T... elements) {
        return new LinkedHashSet<>(List.of(elements));
    }

    @Test
    void equalSetsIteratingInOppositeOrdersEncodeAlike() {
        KeyCodec<Tagged> codec = KeyCodec.defaultFor(Tagged.class);
        String forwards = codec.encode(new Tagged("t", inOrder("a", "R")));
        String backwards = codec.encode(new Tagged("t", inOrder("R", "a")));

        assertEquals(forwards, backwards);
        // Elements are sorted by their own JSON: "\"R\"" before "\"a\"".
        assertEquals("{\"name\":\"t\",\"tags\":[\"R\",\"a\"]}", forwards);
        // Whatever the implementation: a sorted set and Set.of agree with the insertion-ordered ones.
        assertEquals(forwards, codec.encode(new Tagged("t", new TreeSet<>(Set.of("R", "a")))));
        assertEquals(forwards, codec.encode(new Tagged("t", Set.of("a", "R"))));
    }

    @Test
    void setElementsAreOrderedByCodePointNotByUtf16Unit() {
        // U+FFFD sorts before U+1F600 by code point, after its high surrogate 0xD83D by UTF-16 unit.
        String replacement = "\uFFFD";
        String grin = "\uD83D\uDE00";
        KeyCodec<Tagged> codec = KeyCodec.defaultFor(Tagged.class);

        assertEquals("{\"name\":\"t\",\"tags\":[\"" + replacement + "\",\"" + grin + "\"]}",
                codec.encode(new Tagged("t", inOrder(grin, replacement))));
    }

    @Test
    void setsNestedInSetsMapsListsAndCollectionsEncodeAlikeWhateverTheirOrder() {
        Deep one = new Deep(
                inOrder(inOrder("x", "y"), inOrder("b", "a")),
                new LinkedHashMap<>(Map.of("k", inOrder(2, 10, 1))),
                List.of(inOrder("q", "p"), inOrder("p", "q")),
                inOrder(new Tenant("eu", 1, "acme"), new Tenant("us", 2, "initech")));
        Deep other = new Deep(
                inOrder(inOrder("a", "b"), inOrder("y", "x")),
                new LinkedHashMap<>(Map.of("k", inOrder(10, 1, 2))),
                List.of(inOrder("p", "q"), inOrder("q", "p")),
                inOrder(new Tenant("us", 2, "initech"), new Tenant("eu", 1, "acme")));
        KeyCodec<Deep> codec = KeyCodec.defaultFor(Deep.class);

        assertEquals(one, other);
        assertEquals(codec.encode(one), codec.encode(other));
        assertEquals("{\"byName\":{\"k\":[1,10,2]},"
                        + "\"groups\":[[\"a\",\"b\"],[\"x\",\"y\"]],"
                        + "\"rows\":[[\"p\",\"q\"],[\"p\",\"q\"]],"
                        + "\"tenants\":[{\"account\":\"acme\",\"id\":1,\"zone\":\"eu\"},"
                        + "{\"account\":\"initech\",\"id\":2,\"zone\":\"us\"}]}",
                codec.encode(one));
        KeyCodec<Loose> loose = KeyCodec.defaultFor(Loose.class);
        assertEquals("{\"items\":[\"m\",\"z\"]}", loose.encode(new Loose(inOrder("z", "m"))));
        assertEquals(loose.encode(new Loose(inOrder("m", "z"))), loose.encode(new Loose(inOrder("z", "m"))));
    }

    @Test
    void keysWithSetsDecodeToEqualKeysThatEncodeAsBefore() {
        Deep key = new Deep(
                inOrder(inOrder("y", "x"), Set.of()),
                Map.of("k", inOrder(3, 1), "j", Set.of()),
                List.of(inOrder("q", "p")),
                inOrder(new Tenant("us", 2, "initech"), new Tenant("eu", 1, "acme")));
        KeyCodec<Deep> codec = KeyCodec.defaultFor(Deep.class);

        String encoded = codec.encode(key);
        Deep decoded = codec.decode(encoded);

        assertEquals(key, decoded);
        // The decoded sets are hash sets iterating in their own order; the stored form is the same.
        assertEquals(encoded, codec.encode(decoded));
        KeyCodec<Tagged> tagged = KeyCodec.defaultFor(Tagged.class);
        Tagged three = new Tagged("t", inOrder("c", "b", "a"));
        assertEquals(three, tagged.decode(tagged.encode(three)));
        assertEquals(tagged.encode(three), tagged.encode(tagged.decode(tagged.encode(three))));
    }

    @Test
    void aSetKeyOfItsOwnIsSortedToo() {
        @SuppressWarnings({"unchecked", "rawtypes"})
        KeyCodec<Set<String>> codec = (KeyCodec) KeyCodec.json(Set.class);

        assertEquals("[\"a\",\"b\"]", codec.encode(inOrder("b", "a")));
        assertEquals(codec.encode(inOrder("a", "b")), codec.encode(inOrder("b", "a")));
        assertEquals(Set.of("a", "b"), codec.decode("[\"b\",\"a\"]"));
    }

    @Test
    void aSetWrittenWithItsTypeIsSortedInsideTheTypeWrapper() {
        KeyCodec<Typed> codec = KeyCodec.defaultFor(Typed.class);
        String encoded = codec.encode(new Typed(inOrder("b", "a")));

        assertEquals("{\"value\":[\"java.util.LinkedHashSet\",[\"a\",\"b\"]]}", encoded);
        assertEquals(encoded, codec.encode(new Typed(inOrder("a", "b"))));
        // Reading a class named in the data into a property typed Object takes a validator that
        // allows it: Jackson 3's default refuses such an open base type (a deserialization-gadget
        // guard), and the library keeps that guard; an application's mapper may allow it.
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> codec.decode(encoded));
        assertTrue(refused.getMessage().contains("PolymorphicTypeValidator"), refused.getMessage());
        JsonMapper allowingCollections = JsonMapper.builder()
                .polymorphicTypeValidator(BasicPolymorphicTypeValidator.builder().allowIfSubType("java.util.").build())
                .build();
        KeyCodec<Typed> allowing = KeyCodec.json(Typed.class, allowingCollections);
        assertEquals(encoded, allowing.encode(new Typed(inOrder("b", "a"))));
        assertEquals(new Typed(Set.of("a", "b")), allowing.decode(encoded));
    }
}

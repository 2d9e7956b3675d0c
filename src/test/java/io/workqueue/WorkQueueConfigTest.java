package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class WorkQueueConfigTest {

    private static WorkQueueConfig.Builder builder() {
        return WorkQueueConfig.builder("emails");
    }

    private static InvalidConfigException refused(UnaryOperator<WorkQueueConfig.Builder> change) {
        return assertThrows(InvalidConfigException.class, () -> change.apply(builder()).build());
    }

    private static void assertMentions(InvalidConfigException e, String... fragments) {
        for (String fragment : fragments) {
            assertTrue(e.getMessage().contains(fragment),
                    () -> "message should mention " + fragment + ": " + e.getMessage());
        }
    }

    @Test
    void theDefaultsAreThoseOfTheApi() {
        WorkQueueConfig config = WorkQueueConfig.builder("emails").build();
        assertEquals("emails", config.name());
        assertEquals("", config.tablePrefix());
        assertEquals("", config.notifyChannel());
        assertTrue(config.notifyOnEnqueue(), "a queue with a channel notifies unless told otherwise");
        assertEquals(Duration.ofHours(24), config.retention());
        assertEquals(0, config.maxAttempts());
        assertEquals(500, config.maxClaimBatch());
        assertEquals(1000, config.reapBatchSize());
        assertEquals(3, config.writeAttempts());
        assertEquals(Duration.ofMillis(100), config.minWakeInterval());
        assertEquals(Duration.ofSeconds(10), config.writeTimeout());
        assertFalse(config.deleteOnComplete(), "completed rows are kept until reaped unless asked otherwise");
        assertEquals(10_000, config.maxWriteBatch());
        assertEquals(Duration.ofMinutes(5), config.horizonWarning());
        assertFalse(config.storeTraceContexts(), "trace contexts are stored only when asked");
    }

    @Test
    void everySetterIsCarriedIntoTheConfigAndBackThroughToBuilder() {
        WorkQueueConfig config = builder()
                .tablePrefix("ddb")
                .notifyChannel("work_ready")
                .notifyOnEnqueue(false)
                .retention(Duration.ofSeconds(1))
                .maxAttempts(5)
                .maxClaimBatch(1)
                .reapBatchSize(1)
                .writeAttempts(1)
                .minWakeInterval(Duration.ofMillis(1))
                .writeTimeout(Duration.ofMillis(250))
                .deleteOnComplete(true)
                .maxWriteBatch(7)
                .horizonWarning(Duration.ofSeconds(1))
                .build();
        assertEquals("emails", config.name());
        assertEquals("ddb", config.tablePrefix());
        assertEquals("work_ready", config.notifyChannel());
        assertFalse(config.notifyOnEnqueue());
        assertEquals(Duration.ofSeconds(1), config.retention());
        assertEquals(5, config.maxAttempts());
        assertEquals(1, config.maxClaimBatch());
        assertEquals(1, config.reapBatchSize());
        assertEquals(1, config.writeAttempts());
        assertEquals(Duration.ofMillis(1), config.minWakeInterval());
        assertEquals(Duration.ofMillis(250), config.writeTimeout());
        assertTrue(config.deleteOnComplete());
        assertEquals(7, config.maxWriteBatch());
        assertEquals(Duration.ofSeconds(1), config.horizonWarning());
        assertEquals(config, config.toBuilder().build());
        assertEquals(config.hashCode(), config.toBuilder().build().hashCode());
    }

    @Test
    void equalityIsByValueOverEverySetting() {
        WorkQueueConfig config = builder().build();
        assertEquals(config, builder().build());
        assertEquals(config.hashCode(), builder().build().hashCode());
        List<UnaryOperator<WorkQueueConfig.Builder>> changes = List.of(
                b -> b.tablePrefix("ddb"), b -> b.notifyChannel("work_ready"), b -> b.notifyOnEnqueue(false), b -> b.retention(Duration.ofSeconds(2)),
                b -> b.maxAttempts(1), b -> b.maxClaimBatch(2), b -> b.reapBatchSize(2), b -> b.writeAttempts(2),
                b -> b.minWakeInterval(Duration.ofMillis(2)), b -> b.writeTimeout(Duration.ofSeconds(2)),
                b -> b.deleteOnComplete(true), b -> b.maxWriteBatch(2), b -> b.horizonWarning(Duration.ofSeconds(2)),
                b -> b.storeTraceContexts(true));
        for (UnaryOperator<WorkQueueConfig.Builder> change : changes) {
            WorkQueueConfig changed = change.apply(builder()).build();
            assertNotEquals(config, changed, changed::toString);
            assertEquals(changed, change.apply(config.toBuilder()).build(), "toBuilder starts from every setting");
        }
        assertNotEquals(config, WorkQueueConfig.builder("other").build());
    }

    @Test
    void toStringNamesEverySetting() {
        String text = builder().tablePrefix("ddb").writeTimeout(Duration.ofMillis(250)).build().toString();
        for (String part : List.of("name=emails", "tablePrefix=ddb", "notifyChannel=", "notifyOnEnqueue=true", "retention=PT24H",
                "maxAttempts=0", "maxClaimBatch=500", "reapBatchSize=1000", "writeAttempts=3",
                "minWakeInterval=PT0.1S", "writeTimeout=PT0.25S", "deleteOnComplete=false", "maxWriteBatch=10000",
                "horizonWarning=PT5M", "storeTraceContexts=false")) {
            assertTrue(text.contains(part), () -> text + " should contain " + part);
        }
    }

    @Test
    void aBuilderCanBeReusedAndChangingItLeavesBuiltConfigsAlone() {
        WorkQueueConfig.Builder builder = builder().maxClaimBatch(10);
        WorkQueueConfig first = builder.build();
        WorkQueueConfig second = builder.maxClaimBatch(20).build();
        assertEquals(10, first.maxClaimBatch());
        assertEquals(20, second.maxClaimBatch());
        WorkQueueConfig.Builder derived = first.toBuilder();
        derived.maxClaimBatch(30);
        assertEquals(10, first.maxClaimBatch());
    }

    @Test
    void theLastValueGivenWinsSoALaterGoodValueRepairsAnEarlierBadOne() {
        assertEquals(5, builder().maxClaimBatch(0).maxClaimBatch(5).build().maxClaimBatch());
        assertEquals(Duration.ofSeconds(3), builder().retention(null).retention(Duration.ofSeconds(3)).build().retention());
    }

    // ------------------------------------------------------------------ writeTimeout

    @Test
    void aRefusedTimeoutIsNamed() {
        assertMentions(refused(b -> b.writeTimeout(Duration.ZERO)), "writeTimeout", "PT0S");
        assertMentions(refused(b -> b.writeTimeout(null)), "writeTimeout", "null");
    }

    @Test
    void deleteOnCompleteSurvivesToBuilderEitherWay() {
        for (boolean deleteOnComplete : new boolean[] {true, false}) {
            WorkQueueConfig config = builder().deleteOnComplete(deleteOnComplete).build();
            assertEquals(deleteOnComplete, config.deleteOnComplete());
            assertEquals(deleteOnComplete, config.toBuilder().build().deleteOnComplete());
            assertEquals(!deleteOnComplete, config.toBuilder().deleteOnComplete(!deleteOnComplete).build().deleteOnComplete());
        }
    }

    // ------------------------------------------------------------------ name

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 512})
    void aNameOfOneTo512CharactersIsAccepted(int length) {
        assertEquals(length, WorkQueueConfig.builder("n".repeat(length)).build().name().length());
    }

    @Test
    void aNameIsFreeTextBecauseItIsOnlyEverBound() {
        String name = "Mails; DROP TABLE x; -- \"quoted\" 'single' é \uD83D\uDE00";
        assertEquals(name, WorkQueueConfig.builder(name).build().name());
    }

    @Test
    void aMissingNameIsRefused() {
        InvalidConfigException e = assertThrows(InvalidConfigException.class, () -> WorkQueueConfig.builder(null).build());
        assertMentions(e, "name", "null");
    }

    @Test
    void anEmptyNameIsRefused() {
        InvalidConfigException e = assertThrows(InvalidConfigException.class, () -> WorkQueueConfig.builder("").build());
        assertMentions(e, "name", "0");
    }

    @Test
    void aNameOf513CharactersIsRefused() {
        InvalidConfigException e = assertThrows(InvalidConfigException.class,
                () -> WorkQueueConfig.builder("n".repeat(513)).build());
        assertMentions(e, "name", "513");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a\u0000b", "\u0000", "lone \uD800 high", "lone \uDC00 low", "end\uD83D", "\uDE00\uD83D"})
    void aNameTheDatabaseCannotStoreFaithfullyIsRefused(String name) {
        // NUL fails every statement (22021); an unpaired surrogate reaches the server as '?', so
        // "a\uD800" and "a\uDBFF" would be one queue.
        InvalidConfigException e = assertThrows(InvalidConfigException.class, () -> WorkQueueConfig.builder(name).build());
        assertMentions(e, "name", "index");
    }

    @Test
    void aNameWithSurrogatePairsAndControlCharactersIsAccepted() {
        String name = "\uD83D\uDE00 emails\ttab\nline";
        assertEquals(name, WorkQueueConfig.builder(name).build().name());
    }

    // ------------------------------------------------------------------ numeric and duration bounds

    static Stream<Arguments> valuesAtTheirLeast() {
        return Stream.of(
                Arguments.of("retention", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.retention(Duration.ofSeconds(1))),
                Arguments.of("maxAttempts", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxAttempts(0)),
                Arguments.of("maxClaimBatch", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxClaimBatch(1)),
                Arguments.of("reapBatchSize", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.reapBatchSize(1)),
                Arguments.of("writeAttempts", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeAttempts(1)),
                Arguments.of("minWakeInterval", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.minWakeInterval(Duration.ofMillis(1))),
                Arguments.of("writeTimeout", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeTimeout(Duration.ofNanos(1))),
                Arguments.of("maxWriteBatch", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxWriteBatch(1)),
                Arguments.of("horizonWarning", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.horizonWarning(Duration.ofSeconds(1))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("valuesAtTheirLeast")
    void theLeastAllowedValueIsAccepted(String field, UnaryOperator<WorkQueueConfig.Builder> change) {
        assertDoesNotThrow(() -> change.apply(builder()).build(), field);
    }

    static Stream<Arguments> valuesOutOfRange() {
        return Stream.of(
                Arguments.of("retention", "PT0.999S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.retention(Duration.ofMillis(999))),
                Arguments.of("retention", "PT0S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.retention(Duration.ZERO)),
                Arguments.of("retention", "PT-1H", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.retention(Duration.ofHours(-1))),
                Arguments.of("retention", "null", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.retention(null)),
                Arguments.of("maxAttempts", "-1", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxAttempts(-1)),
                Arguments.of("maxClaimBatch", "0", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxClaimBatch(0)),
                Arguments.of("maxClaimBatch", "-5", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxClaimBatch(-5)),
                Arguments.of("reapBatchSize", "0", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.reapBatchSize(0)),
                Arguments.of("writeAttempts", "0", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeAttempts(0)),
                Arguments.of("minWakeInterval", "PT0.000999S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.minWakeInterval(Duration.ofNanos(999_000))),
                Arguments.of("minWakeInterval", "PT0S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.minWakeInterval(Duration.ZERO)),
                Arguments.of("minWakeInterval", "null", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.minWakeInterval(null)),
                Arguments.of("writeTimeout", "PT0S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeTimeout(Duration.ZERO)),
                Arguments.of("writeTimeout", "PT-1S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeTimeout(Duration.ofSeconds(-1))),
                Arguments.of("writeTimeout", "null", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.writeTimeout(null)),
                Arguments.of("maxWriteBatch", "0", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxWriteBatch(0)),
                Arguments.of("maxWriteBatch", "-1", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.maxWriteBatch(-1)),
                Arguments.of("horizonWarning", "PT0.999S", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.horizonWarning(Duration.ofMillis(999))),
                Arguments.of("horizonWarning", "null", (UnaryOperator<WorkQueueConfig.Builder>) b -> b.horizonWarning(null)));
    }

    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("valuesOutOfRange")
    void aValueOutOfRangeIsRefusedWithAMessageNamingTheFieldAndTheValue(
            String field, String value, UnaryOperator<WorkQueueConfig.Builder> change) {
        assertMentions(refused(change), field, value);
    }

    static Stream<Duration> longerThanTheCap() {
        return Stream.of(ReactiveWorkQueue.MAX_DURATION.plusNanos(1), Duration.ofMillis(Long.MAX_VALUE),
                Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
    }

    @ParameterizedTest
    @MethodSource("longerThanTheCap")
    void aDurationLongerThanTheCapIsTheCap(Duration forever) {
        WorkQueueConfig config = builder().retention(forever).minWakeInterval(forever).writeTimeout(forever)
                .horizonWarning(forever).build();

        assertEquals(ReactiveWorkQueue.MAX_DURATION, config.retention());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, config.minWakeInterval());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, config.writeTimeout());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, config.horizonWarning());
        assertEquals(config, config.toBuilder().build());
    }

    @Test
    void theCapItselfIsKept() {
        Duration max = ReactiveWorkQueue.MAX_DURATION;
        WorkQueueConfig config = builder().retention(max).minWakeInterval(max).writeTimeout(max).build();
        assertEquals(max, config.retention());
        assertEquals(max, config.minWakeInterval());
        assertEquals(max, config.writeTimeout());
    }

    @Test
    void theExampleMessageOfTheStyleGuideIsWhatUsersSee() {
        assertEquals("maxClaimBatch must be at least 1 but was 0", refused(b -> b.maxClaimBatch(0)).getMessage());
    }

    @Test
    void noSetterThrowsWhateverItIsGivenBecauseBuildChecksEverything() {
        assertDoesNotThrow(() -> WorkQueueConfig.builder(null).tablePrefix(null).notifyChannel(null).retention(null)
                .maxAttempts(-1).maxClaimBatch(0).reapBatchSize(0).writeAttempts(0).minWakeInterval(null)
                .writeTimeout(null).maxWriteBatch(0).horizonWarning(null));
    }

    // ------------------------------------------------------------------ notifyChannel

    @ParameterizedTest
    @ValueSource(strings = {"work_ready", "_private", "q1", "a", "c23456789012345678901234567890123456789012345678901234567890123"})
    void aPlainIdentifierIsAcceptedAsTheChannel(String channel) {
        assertEquals(channel, builder().notifyChannel(channel).build().notifyChannel());
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "Work",                    // would fold to lower case unquoted
        "1abc",                    // starts with a digit
        "work ready",              // space
        "work-ready",              // hyphen
        "x; NOTIFY y",             // injection
        "a\"b",                    // a quote would break out of the identifier
        "'a'",
        "caf\u00e9",               // not ASCII
        "c234567890123456789012345678901234567890123456789012345678901234", // 64 bytes: PostgreSQL would truncate it
    })
    void aChannelThatIsNotAPlainIdentifierIsRefused(String channel) {
        assertMentions(refused(b -> b.notifyChannel(channel)), "notifyChannel", channel);
    }

    @Test
    void aNullChannelIsRefusedRatherThanTreatedAsNone() {
        assertMentions(refused(b -> b.notifyChannel(null)), "notifyChannel");
    }

    // ------------------------------------------------------------------ tablePrefix

    @ParameterizedTest
    @ValueSource(strings = {"", "ddb", "_x", "tenant_42", "p234567890123456789012345678901234567"}) // last: 37 bytes, the most
    void aPrefixMakingLegalIdentifiersIsAccepted(String prefix) {
        assertEquals(prefix, builder().tablePrefix(prefix).build().tablePrefix());
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "x; DROP TABLE y",
        "a\"b",
        "A",
        "Ddb",
        "1abc",
        "a b",
        "a-b",
        "a.b",            // would name another schema's table
        "x--",
        "p\u00e9",
        "\u0000",
    })
    void aPrefixThatCouldInjectSqlOrNeedsQuotingIsRefused(String prefix) {
        assertMentions(refused(b -> b.tablePrefix(prefix)), "tablePrefix");
    }

    @Test
    void aPrefixSoLongThatAnIndexNameWouldExceed63BytesIsRefused() {
        // 38 + "_" + "work_queue_items" + "_reap_idx" = 64 bytes: PostgreSQL would silently truncate it.
        String prefix = "p2345678901234567890123456789012345678";
        assertEquals(64, (prefix + "_work_queue_items_reap_idx").length());
        assertMentions(refused(b -> b.tablePrefix(prefix)), "tablePrefix", "38");
    }

    @Test
    void aNullPrefixIsRefusedRatherThanTreatedAsTheDefault() {
        assertMentions(refused(b -> b.tablePrefix(null)), "tablePrefix");
    }
}

package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.IntFunction;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

class WorkerOptionsTest {

    static List<Duration> forever() {
        return List.of(ReactiveWorkQueue.MAX_DURATION.plusNanos(1), Duration.ofMillis(Long.MAX_VALUE),
                Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
    }

    @ParameterizedTest
    @MethodSource("forever")
    void aLeaseOrPollLongerThanTheCapIsTheCap(Duration forever) {
        WorkerOptions options = WorkerOptions.builder().lease(forever).poll(forever).build();

        assertEquals(ReactiveWorkQueue.MAX_DURATION, options.lease());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, options.poll());
        assertEquals(options, options.toBuilder().build(), "a capped value survives the round trip");
    }

    @Test
    void theCapMakesNoNonPositiveValueAcceptable() {
        for (Duration bad : List.of(Duration.ZERO, Duration.ofNanos(-1), Duration.ofSeconds(Long.MIN_VALUE))) {
            assertThrows(InvalidConfigException.class, () -> WorkerOptions.builder().lease(bad).build(), bad::toString);
            assertThrows(InvalidConfigException.class, () -> WorkerOptions.builder().poll(bad).build(), bad::toString);
        }
    }

    @Test
    void aLeaseUnderAMicrosecondIsRefusedSayingWhyAndOneMicrosecondIsAccepted() {
        for (Duration bad : List.of(Duration.ofNanos(1), Duration.ofNanos(999))) {
            InvalidConfigException refused = assertThrows(InvalidConfigException.class,
                    () -> WorkerOptions.builder().lease(bad).build());
            assertEquals("lease must be at least 1 microsecond, the database clock's resolution, but was " + bad,
                    refused.getMessage());
        }
        assertEquals(Duration.ofNanos(1_000), WorkerOptions.builder().lease(Duration.ofNanos(1_000)).build().lease());
    }

    @Test
    void theDefaultsAreThoseOfTheJavadoc() {
        WorkerOptions options = WorkerOptions.builder().build();
        assertEquals(16, options.concurrency());
        assertEquals(Duration.ofSeconds(30), options.lease());
        assertEquals(Duration.ofSeconds(1), options.poll());
        assertEquals(100, options.claimBatch());
        assertEquals(Optional.empty(), options.handlerScheduler(), "the worker's own pool");
        for (int attempts = 0; attempts < 40; attempts++) {
            assertEquals(WorkerOptions.exponentialBackoff(attempts), options.backoff().apply(attempts));
        }
    }

    @Test
    void theParameterisedBackOffDoublesFromItsFirstDelayUpToItsCeiling() {
        IntFunction<Duration> backoff = WorkerOptions.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(1));
        assertEquals(List.of(100L, 100L, 100L, 200L, 400L, 800L, 1000L, 1000L),
                Stream.of(-1, 0, 1, 2, 3, 4, 5, Integer.MAX_VALUE).map(a -> backoff.apply(a).toMillis()).toList());
        IntFunction<Duration> standard = WorkerOptions.exponentialBackoff(Duration.ofSeconds(1), Duration.ofMinutes(5));
        for (int attempts = 0; attempts < 40; attempts++) {
            assertEquals(WorkerOptions.exponentialBackoff(attempts), standard.apply(attempts));
        }
        IntFunction<Duration> atOnce = WorkerOptions.exponentialBackoff(Duration.ZERO, Duration.ofSeconds(1));
        assertEquals(Duration.ZERO, atOnce.apply(Integer.MAX_VALUE), "a zero first delay stays zero");
        IntFunction<Duration> longest = WorkerOptions.exponentialBackoff(Duration.ofDays(1), Duration.ofSeconds(Long.MAX_VALUE, 999_999_999));
        assertTrue(longest.apply(Integer.MAX_VALUE).compareTo(Duration.ofDays(1)) > 0, "doubling a long delay does not overflow");
    }

    @Test
    void theParameterisedBackOffRefusesANegativeFirstDelayOrACeilingBelowIt() {
        assertEquals("first must be zero or more but was PT-0.001S", assertThrows(InvalidConfigException.class,
                () -> WorkerOptions.exponentialBackoff(Duration.ofMillis(-1), Duration.ofSeconds(1))).getMessage());
        assertThrows(InvalidConfigException.class, () -> WorkerOptions.exponentialBackoff(null, Duration.ofSeconds(1)));
        assertEquals("max must be at least first (PT1S) but was PT0.01S", assertThrows(InvalidConfigException.class,
                () -> WorkerOptions.exponentialBackoff(Duration.ofSeconds(1), Duration.ofMillis(10))).getMessage());
        assertThrows(InvalidConfigException.class, () -> WorkerOptions.exponentialBackoff(Duration.ZERO, null));
    }

    // ------------------------------------------------------------------ one exception type per rule

    static Stream<Arguments> badSettings() {
        return Stream.of(
                Arguments.of("concurrency", "0", (UnaryOperator<WorkerOptions.Builder>) b -> b.concurrency(0)),
                Arguments.of("concurrency", "-1", (UnaryOperator<WorkerOptions.Builder>) b -> b.concurrency(-1)),
                Arguments.of("lease", "PT0S", (UnaryOperator<WorkerOptions.Builder>) b -> b.lease(Duration.ZERO)),
                Arguments.of("lease", "null", (UnaryOperator<WorkerOptions.Builder>) b -> b.lease(null)),
                Arguments.of("poll", "PT-1S", (UnaryOperator<WorkerOptions.Builder>) b -> b.poll(Duration.ofSeconds(-1))),
                Arguments.of("poll", "null", (UnaryOperator<WorkerOptions.Builder>) b -> b.poll(null)),
                Arguments.of("claimBatch", "0", (UnaryOperator<WorkerOptions.Builder>) b -> b.claimBatch(0)),
                Arguments.of("backoff", "null", (UnaryOperator<WorkerOptions.Builder>) b -> b.backoff(null)),
                Arguments.of("handlerScheduler", "null", (UnaryOperator<WorkerOptions.Builder>) b -> b.handlerScheduler(null)));
    }

    /**
     * Every bad setting is an {@link InvalidConfigException} from {@code build()}, whichever setter
     * gave it: {@code backoff(null)} used to throw {@code NullPointerException} from the setter while
     * the same null given any other way was an {@code InvalidConfigException}.
     */
    @ParameterizedTest(name = "{0} = {1}")
    @MethodSource("badSettings")
    void aBadSettingIsAnInvalidConfigExceptionFromBuildNamingTheFieldAndTheValue(
            String field, String value, UnaryOperator<WorkerOptions.Builder> change) {
        WorkerOptions.Builder builder = assertDoesNotThrow(() -> change.apply(WorkerOptions.builder()),
                "a setter records; build() checks");
        InvalidConfigException e = assertThrows(InvalidConfigException.class, builder::build);
        assertTrue(e.getMessage().contains(field) && e.getMessage().contains(value),
                () -> "message should name " + field + " and " + value + ": " + e.getMessage());
    }

    @Test
    void aMaximumRunTimeIsOffByDefaultPositiveWhenSetAndKeptByToBuilder() {
        assertEquals(java.util.Optional.empty(), WorkerOptions.builder().build().maxRunTime());
        for (Duration bad : List.of(Duration.ZERO, Duration.ofNanos(-1))) {
            assertThrows(InvalidConfigException.class, () -> WorkerOptions.builder().maxRunTime(bad).build(),
                    String.valueOf(bad));
        }
        WorkerOptions options = WorkerOptions.builder().maxRunTime(Duration.ofHours(2)).build();
        assertEquals(Duration.ofHours(2), options.maxRunTime().orElseThrow());
        assertEquals(options, options.toBuilder().build());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, WorkerOptions.builder().maxRunTime(Duration.ofSeconds(Long.MAX_VALUE))
                .build().maxRunTime().orElseThrow(), "capped like every duration");
    }

    @Test
    void theLastValueGivenWins() {
        IntFunction<Duration> fixed = attempts -> Duration.ofSeconds(7);
        WorkerOptions options = WorkerOptions.builder().backoff(null).backoff(fixed).concurrency(0).concurrency(3).build();
        assertSame(fixed, options.backoff());
        assertEquals(3, options.concurrency());
    }

    // ------------------------------------------------------------------ a value type that can grow

    @Test
    void equalityIsByValueWithTheBackOffByIdentity() {
        IntFunction<Duration> fixed = attempts -> Duration.ofSeconds(7);
        WorkerOptions options = WorkerOptions.builder().concurrency(4).lease(Duration.ofSeconds(5))
                .poll(Duration.ofMillis(200)).claimBatch(8).backoff(fixed).build();
        WorkerOptions same = WorkerOptions.builder().concurrency(4).lease(Duration.ofSeconds(5))
                .poll(Duration.ofMillis(200)).claimBatch(8).backoff(fixed).build();
        assertEquals(options, same);
        assertEquals(options.hashCode(), same.hashCode());
        assertEquals(options, options.toBuilder().build());
        assertNotEquals(options, options.toBuilder().concurrency(5).build());
        assertNotEquals(options, options.toBuilder().lease(Duration.ofSeconds(6)).build());
        assertNotEquals(options, options.toBuilder().poll(Duration.ofMillis(300)).build());
        assertNotEquals(options, options.toBuilder().claimBatch(9).build());
        assertNotEquals(options, options.toBuilder().backoff(attempts -> Duration.ofSeconds(7)).build());
        assertNotEquals(options, options.toBuilder().handlerScheduler(Schedulers.immediate()).build());
        String text = options.toString();
        for (String part : List.of("concurrency=4", "lease=PT5S", "poll=PT0.2S", "claimBatch=8", "backoff=",
                "handlerScheduler=worker's own pool")) {
            assertTrue(text.contains(part), () -> text + " should contain " + part);
        }
    }

    @Test
    void theHandlerSchedulerComparesByIdentityAndSurvivesTheRoundTrip() {
        Scheduler mine = Schedulers.newSingle("mine");
        try {
            WorkerOptions options = WorkerOptions.builder().handlerScheduler(mine).build();
            assertSame(mine, options.handlerScheduler().orElseThrow());
            assertEquals(options, options.toBuilder().build());
            assertEquals(options.hashCode(), options.toBuilder().build().hashCode());
            assertEquals(options, WorkerOptions.builder().handlerScheduler(mine).build());
            assertNotEquals(options, WorkerOptions.builder().handlerScheduler(Schedulers.immediate()).build());
            assertNotEquals(options, WorkerOptions.builder().build());
            assertTrue(options.toString().contains("handlerScheduler=" + mine), options::toString);
        } finally {
            mine.dispose();
        }
    }
}

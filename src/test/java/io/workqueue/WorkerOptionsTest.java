package io.workqueue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

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
        WorkerOptions direct = new WorkerOptions(1, forever, forever, 1, WorkerOptions::exponentialBackoff);
        assertEquals(ReactiveWorkQueue.MAX_DURATION, direct.lease());
        assertEquals(ReactiveWorkQueue.MAX_DURATION, direct.poll());
    }

    @Test
    void theCapMakesNoNonPositiveValueAcceptable() {
        for (Duration bad : List.of(Duration.ZERO, Duration.ofNanos(-1), Duration.ofSeconds(Long.MIN_VALUE))) {
            assertThrows(InvalidConfigException.class, () -> WorkerOptions.builder().lease(bad).build(), bad::toString);
            assertThrows(InvalidConfigException.class, () -> WorkerOptions.builder().poll(bad).build(), bad::toString);
        }
    }
}

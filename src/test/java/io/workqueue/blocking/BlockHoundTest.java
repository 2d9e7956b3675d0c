package io.workqueue.blocking;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Mono;

/**
 * BlockHound is installed for the whole test suite (by blockhound-junit-platform, with the JVM
 * flag in the POM): a blocking call on a Reactor thread fails. If this test fails, BlockHound is not
 * running and no other test is checked for blocking.
 */
class BlockHoundTest {
    @Test
    void sleepingOnAReactorThreadFailsWithBlockingOperationError() {
        assertBlockingIsCaught();
    }

    static void assertBlockingIsCaught() {
        Throwable error = Mono.delay(Duration.ofMillis(1))
                .doOnNext(tick -> {
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                })
                .then(Mono.<Throwable>empty())
                .onErrorResume(Mono::just)
                .block(Duration.ofSeconds(10));
        assertNotNull(error, "sleeping on a parallel-scheduler thread was not caught: BlockHound is not installed");
        assertInstanceOf(BlockingOperationError.class, error);
    }
}

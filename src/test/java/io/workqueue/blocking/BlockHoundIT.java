package io.workqueue.blocking;

import org.junit.jupiter.api.Test;

/** BlockHound guards the integration tests too (Failsafe's JVM); see {@link BlockHoundTest}. */
class BlockHoundIT {
    @Test
    void sleepingOnAReactorThreadFailsWithBlockingOperationError() {
        BlockHoundTest.assertBlockingIsCaught();
    }
}

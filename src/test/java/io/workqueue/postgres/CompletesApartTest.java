package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.postgres.Leasing.LeaseRequest;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** When a merged leasing write completes apart from its claim ({@link Leasing#completesApart}). */
class CompletesApartTest {
    private static final int APART = Leasing.COMPLETE_APART_FROM;

    private static LeaseRequest request(int keys, boolean mayCompleteApart) {
        return new LeaseRequest(IntStream.range(0, keys).mapToObj(i -> "k" + i).toArray(String[]::new), 10, 1_000_000,
                mayCompleteApart);
    }

    @Test
    void processRoundsCompleteApartFromTheThresholdOn() {
        assertTrue(Leasing.completesApart(List.of(request(APART, true)), APART));
        assertFalse(Leasing.completesApart(List.of(request(APART - 1, true)), APART - 1));
        // Merged rounds count together.
        assertTrue(Leasing.completesApart(List.of(request(APART / 2, true), request(APART - APART / 2, true)), APART));
    }

    @Test
    void plainClaimsRidingAlongDoNotPreventIt() {
        assertTrue(Leasing.completesApart(List.of(request(APART, true), request(0, false)), APART));
    }

    @Test
    void aCompleteAndClaimCallerKeepsTheWholeWriteInOneStatement() {
        // completeAndClaim promises one statement and one transaction: it rules for the write it rides.
        assertFalse(Leasing.completesApart(List.of(request(APART, true), request(1, false)), APART + 1));
        assertFalse(Leasing.completesApart(List.of(request(APART * 4, false)), APART * 4));
    }
}

package io.workqueue.postgres;

import io.workqueue.internal.base.CodePointOrder;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The rows one leasing statement leased, as the parallel arrays it returns, put into claim order:
 * priority highest first, then availability, then key by code point (the order of {@code item_key
 * COLLATE "C"}). The statement leaves the order to the client because one sort of the row indexes
 * here is cheaper than a sort per array on the server.
 */
record ClaimedRows(String[] keys, Integer[] priorities, Integer[] attempts, Integer[] priorLeases,
        Long[] availableMicros) {
    /** Nothing leased. */
    static final ClaimedRows NONE = new ClaimedRows(new String[0], new Integer[0], new Integer[0], new Integer[0],
            new Long[0]);

    /**
     * The statement's arrays, sorted into claim order; all null (nothing leased) gives {@link #NONE}.
     *
     * @throws IllegalStateException if some arrays are null and others not, or their lengths differ
     */
    static ClaimedRows inClaimOrder(String @Nullable [] keys, Integer @Nullable [] priorities,
            Integer @Nullable [] attempts, Integer @Nullable [] priorLeases, Long @Nullable [] availableMicros) {
        if (keys == null && priorities == null && attempts == null && priorLeases == null && availableMicros == null) {
            return NONE;
        }
        if (keys == null || priorities == null || attempts == null || priorLeases == null || availableMicros == null
                || priorities.length != keys.length || attempts.length != keys.length
                || priorLeases.length != keys.length || availableMicros.length != keys.length) {
            throw new IllegalStateException("a claim returned arrays that do not line up: keys "
                    + Arrays.toString(keys) + ", priorities " + Arrays.toString(priorities));
        }
        int n = keys.length;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        // Highest priority first, compared rather than negated: -Integer.MIN_VALUE overflows to itself.
        Comparator<Integer> claimOrder = Comparator.<Integer>comparingInt(i -> priorities[i]).reversed()
                .thenComparingLong(i -> availableMicros[i])
                .thenComparing((a, b) -> CodePointOrder.compare(keys[a], keys[b]));
        Arrays.sort(order, claimOrder);
        String[] sortedKeys = new String[n];
        Integer[] sortedPriorities = new Integer[n];
        Integer[] sortedAttempts = new Integer[n];
        Integer[] sortedPriorLeases = new Integer[n];
        Long[] sortedAvailable = new Long[n];
        for (int i = 0; i < n; i++) {
            int from = order[i];
            sortedKeys[i] = Objects.requireNonNull(keys[from], "key");
            sortedPriorities[i] = Objects.requireNonNull(priorities[from], "priority");
            sortedAttempts[i] = Objects.requireNonNull(attempts[from], "attempts");
            sortedPriorLeases[i] = Objects.requireNonNull(priorLeases[from], "prior lease");
            sortedAvailable[i] = Objects.requireNonNull(availableMicros[from], "available_at");
        }
        return new ClaimedRows(sortedKeys, sortedPriorities, sortedAttempts, sortedPriorLeases, sortedAvailable);
    }

    int size() {
        return keys.length;
    }
}

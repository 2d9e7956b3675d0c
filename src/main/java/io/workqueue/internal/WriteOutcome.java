package io.workqueue.internal;

import io.workqueue.WorkQueueMeters;

/** How one group-committed write ended, as the flush timer tags it. */
public enum WriteOutcome {
    /** The write committed and reported a result for every submission it carried. */
    SUCCESS(WorkQueueMeters.OUTCOME_SUCCESS),
    /** The write signalled an error, or reported results that do not match its submissions. */
    FAILURE(WorkQueueMeters.OUTCOME_FAILURE),
    /** The write outlived its timeout and was abandoned; whether it committed is unknown. */
    TIMEOUT(WorkQueueMeters.OUTCOME_TIMEOUT);

    private final String tag;

    WriteOutcome(String tag) {
        this.tag = tag;
    }

    /** The value of the {@value WorkQueueMeters#OUTCOME_TAG} tag for this outcome. */
    public String tag() {
        return tag;
    }
}

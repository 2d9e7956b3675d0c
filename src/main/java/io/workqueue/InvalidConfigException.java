package io.workqueue;

/**
 * A configuration value, table prefix or channel name was refused. The message names the field and
 * the value, for example {@code maxClaimBatch must be at least 1 but was 0}.
 */
public class InvalidConfigException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception with a message naming the field and the offending value.
     *
     * @param message for example {@code maxClaimBatch must be at least 1 but was 0}
     */
    public InvalidConfigException(String message) {
        super(message);
    }
}

package io.workqueue;

import org.jspecify.annotations.Nullable;

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

    /**
     * Creates the exception with a message naming the field and the offending value, and the
     * failure that revealed it.
     *
     * @param message what was refused and why
     * @param cause   the underlying failure, or {@code null}
     */
    public InvalidConfigException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}

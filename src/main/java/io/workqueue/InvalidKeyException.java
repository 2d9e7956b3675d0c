package io.workqueue;

import org.jspecify.annotations.Nullable;

/**
 * A key was refused before it reached the database, because its encoding cannot be stored
 * faithfully as a primary key.
 *
 * <p>Keys are vetted after encoding, whatever the codec; an invalid key fails only the call that
 * carried it and never joins a shared batch. Keys are never truncated.
 */
public class InvalidKeyException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /** Why a key was refused. */
    public enum Reason {
        /** The key itself was {@code null}, or the codec encoded it as {@code null}. */
        NULL,
        /** The encoding is the empty string. */
        EMPTY,
        /** The encoding is longer than {@link ReactiveWorkQueue#MAX_KEY_LENGTH} UTF-8 bytes. */
        TOO_LONG,
        /** The encoding contains NUL, carriage return or line feed. */
        CONTROL_CHARACTER,
        /** The encoding contains an unpaired UTF-16 surrogate, which has no UTF-8 form to store. */
        INVALID_UNICODE,
        /**
         * The codec could not encode the key: it threw, and what it threw is the
         * {@linkplain #getCause() cause} (for the JSON codec, a value Jackson cannot write, such as
         * an instance of a subclass with no properties).
         */
        ENCODING_FAILED
    }

    /** Why the key was refused. */
    private final Reason reason;

    /**
     * Creates the exception for {@code reason}, with a message that explains it.
     *
     * @param reason  why the key was refused
     * @param message what was refused and why, without the key itself when it is too long to log
     */
    public InvalidKeyException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    /**
     * Creates the exception for {@code reason}, with a message that explains it and the failure
     * behind it.
     *
     * @param reason  why the key was refused
     * @param message what was refused and why
     * @param cause   what the codec threw, or {@code null}
     */
    public InvalidKeyException(Reason reason, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /**
     * Why the key was refused, for code that reacts to the cause rather than the message.
     *
     * @return the reason
     */
    public Reason reason() {
        return reason;
    }
}

package io.workqueue;

/**
 * A stored key that the queue's {@link KeyCodec} could not decode, for example a record key
 * written before one of its components was removed. Claims never fail for it: the row is set aside
 * (released after {@link WorkerOptions#exponentialBackoff} of its attempts), with this exception's
 * message as its last error, and the healthy items leased with it are delivered as usual. So the
 * row stalls once it runs out of {@link WorkQueueConfig#maxAttempts()}, shows in
 * {@link Stats#stalled()}, and waits for a codec that reads it or for {@code remove}.
 */
public class KeyDecodingException extends WorkQueueException {
    private static final long serialVersionUID = 1L;

    /** The key as stored in the table. */
    private final String storedKey;

    /**
     * Creates the exception for {@code storedKey}, with the codec's failure as the cause.
     *
     * @param storedKey the key as stored in the table
     * @param cause     what the codec threw
     */
    public KeyDecodingException(String storedKey, Throwable cause) {
        super("stored key cannot be decoded by the queue's codec: " + storedKey + " ("
                + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")", cause);
        this.storedKey = storedKey;
    }

    /**
     * The key as stored in the table, which is what {@code remove} needs through a text-keyed
     * queue of the same name.
     *
     * @return the stored key
     */
    public String storedKey() {
        return storedKey;
    }
}

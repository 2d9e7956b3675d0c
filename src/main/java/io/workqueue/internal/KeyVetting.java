package io.workqueue.internal;

import io.workqueue.InvalidKeyException;
import io.workqueue.InvalidKeyException.Reason;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;
import reactor.core.Exceptions;

/**
 * The single gate every key passes before it reaches SQL, whatever codec encoded it.
 *
 * <p>The encoding becomes part of a primary key, so it must be non-empty, within
 * {@link ReactiveWorkQueue#MAX_KEY_LENGTH} UTF-8 bytes, and free of NUL (which PostgreSQL text
 * cannot hold) of line breaks (which would make keys ambiguous in logs and tools), and of unpaired
 * surrogates (which have no UTF-8 form). A key is
 * refused, never truncated.
 */
public final class KeyVetting {
    private KeyVetting() {}

    /**
     * Encodes {@code key} with {@code codec} and vets the result.
     *
     * @throws InvalidKeyException if the key or its encoding is refused, or the codec failed
     *                             ({@link Reason#ENCODING_FAILED}, with what it threw as cause)
     */
    public static <K> String encode(KeyCodec<K> codec, @Nullable K key) {
        if (key == null) {
            throw new InvalidKeyException(Reason.NULL, "key must not be null");
        }
        String encoded;
        try {
            encoded = codec.encode(key);
        } catch (InvalidKeyException e) {
            throw e;
        } catch (Throwable e) {
            // Whatever the codec throws is a problem of this key, for this caller alone: the
            // documented InvalidKeyException, not an IllegalArgumentException from deep inside a
            // JSON library. Only what no caller can handle (out of memory, linkage) goes through.
            Exceptions.throwIfJvmFatal(e);
            throw new InvalidKeyException(Reason.ENCODING_FAILED, "the key codec could not encode a key of "
                    + key.getClass().getName() + ": " + e.getMessage(), e);
        }
        return vet(encoded);
    }

    /**
     * Returns {@code encoded} if it may be stored as a key.
     *
     * @throws InvalidKeyException with the reason it may not
     */
    public static String vet(@Nullable String encoded) {
        if (encoded == null) {
            throw new InvalidKeyException(Reason.NULL, "key encoded as null");
        }
        if (encoded.isEmpty()) {
            throw new InvalidKeyException(Reason.EMPTY, "key encoded as the empty string");
        }
        for (int i = 0; i < encoded.length(); i++) {
            char c = encoded.charAt(i);
            if (c == '\0' || c == '\n' || c == '\r') {
                throw new InvalidKeyException(Reason.CONTROL_CHARACTER, String.format(
                        "key contains U+%04X at index %d; NUL, CR and LF are not allowed", (int) c, i));
            }
            if (Character.isSurrogate(c)) {
                // A lone surrogate has no UTF-8 form: the driver would store '?' and the key would not round-trip.
                boolean paired = Character.isHighSurrogate(c)
                        && i + 1 < encoded.length()
                        && Character.isLowSurrogate(encoded.charAt(i + 1));
                if (!paired) {
                    throw new InvalidKeyException(Reason.INVALID_UNICODE, String.format(
                            "key contains an unpaired surrogate U+%04X at index %d", (int) c, i));
                }
                i++;
            }
        }
        // Cheap bound first: UTF-8 needs at most 3 bytes per UTF-16 unit.
        if (encoded.length() * 3 > ReactiveWorkQueue.MAX_KEY_LENGTH) {
            int bytes = encoded.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > ReactiveWorkQueue.MAX_KEY_LENGTH) {
                throw new InvalidKeyException(Reason.TOO_LONG, "key is " + bytes + " UTF-8 bytes; at most "
                        + ReactiveWorkQueue.MAX_KEY_LENGTH + " are allowed");
            }
        }
        return encoded;
    }
}

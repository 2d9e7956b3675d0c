package io.workqueue.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.workqueue.InvalidKeyException;
import io.workqueue.InvalidKeyException.Reason;
import io.workqueue.KeyCodec;
import io.workqueue.ReactiveWorkQueue;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KeyVettingTest {
    private static final String GRIN = "\uD83D\uDE00"; // U+1F600, 4 UTF-8 bytes

    private static Reason refusal(String encoded) {
        return assertThrows(InvalidKeyException.class, () -> KeyVetting.vet(encoded)).reason();
    }

    private static int utf8Bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }

    /** A codec that encodes every key as {@code encoding}, whatever the key. */
    private static KeyCodec<String> encodingAs(String encoding) {
        return new KeyCodec<>() {
            @Override
            public String encode(String key) {
                return encoding;
            }

            @Override
            public String decode(String encoded) {
                return encoded;
            }
        };
    }

    @Test
    void aValidKeyIsReturnedUntouched() {
        String key = "order-42";
        assertSame(key, KeyVetting.vet(key));
        assertEquals(key, KeyVetting.encode(KeyCodec.defaultFor(String.class), key));
    }

    @Test
    void aNullEncodingIsRefusedAsNull() {
        assertEquals(Reason.NULL, refusal(null));
    }

    @Test
    void aNullKeyIsRefusedAsNullWithoutAskingTheCodec() {
        AtomicInteger calls = new AtomicInteger();
        KeyCodec<String> counting = new KeyCodec<>() {
            @Override
            public String encode(String key) {
                calls.incrementAndGet();
                return "x";
            }

            @Override
            public String decode(String encoded) {
                return encoded;
            }
        };
        InvalidKeyException e = assertThrows(InvalidKeyException.class, () -> KeyVetting.encode(counting, null));
        assertEquals(Reason.NULL, e.reason());
        assertEquals(0, calls.get());
    }

    @Test
    void aCodecReturningNullIsRefusedAsNull() {
        InvalidKeyException e = assertThrows(InvalidKeyException.class, () -> KeyVetting.encode(encodingAs(null), "k"));
        assertEquals(Reason.NULL, e.reason());
    }

    /** A codec that throws {@code failure} for every key. */
    private static KeyCodec<String> throwing(Throwable failure) {
        return new KeyCodec<>() {
            @Override
            public String encode(String key) {
                if (failure instanceof RuntimeException unchecked) {
                    throw unchecked;
                }
                throw (Error) failure;
            }

            @Override
            public String decode(String encoded) {
                return encoded;
            }
        };
    }

    @Test
    void aCodecThatThrowsFailsTheKeyAsAnInvalidKeyCarryingWhatItThrew() {
        IllegalStateException broken = new IllegalStateException("no text for this key");

        InvalidKeyException e = assertThrows(InvalidKeyException.class, () -> KeyVetting.encode(throwing(broken), "k"));

        assertEquals(Reason.ENCODING_FAILED, e.reason());
        assertSame(broken, e.getCause());
        assertTrue(e.getMessage().contains("java.lang.String") && e.getMessage().contains("no text for this key"),
                e.getMessage());
    }

    @Test
    void anInvalidKeyExceptionFromTheCodecIsPassedOnAsItIs() {
        InvalidKeyException own = new InvalidKeyException(Reason.TOO_LONG, "the codec's own refusal");

        assertSame(own, assertThrows(InvalidKeyException.class, () -> KeyVetting.encode(throwing(own), "k")));
    }

    @Test
    void aJvmFatalErrorFromTheCodecIsNotTurnedIntoAnInvalidKey() {
        OutOfMemoryError fatal = new OutOfMemoryError("simulated");

        assertSame(fatal, assertThrows(OutOfMemoryError.class, () -> KeyVetting.encode(throwing(fatal), "k")));
    }

    /** Its one property is typed Object: only the value at hand says whether Jackson can write it. */
    record Holder(Object value) {}

    /** No property Jackson can see. */
    static final class Opaque {
        @SuppressWarnings("unused")
        private final int secret = 1;
    }

    @Test
    void aKeyTheJsonCodecCannotWriteIsAnInvalidKeyNotAnIllegalArgument() {
        InvalidKeyException e = assertThrows(InvalidKeyException.class,
                () -> KeyVetting.encode(KeyCodec.defaultFor(Holder.class), new Holder(new Opaque())));

        assertEquals(Reason.ENCODING_FAILED, e.reason());
        assertTrue(e.getMessage().contains(Holder.class.getName()) && e.getMessage().contains(Opaque.class.getName()),
                e.getMessage());
        assertEquals("{\"value\":\"fine\"}", KeyVetting.encode(KeyCodec.defaultFor(Holder.class), new Holder("fine")));
    }

    @Test
    void anEmptyEncodingIsRefusedAsEmpty() {
        assertEquals(Reason.EMPTY, refusal(""));
        InvalidKeyException e = assertThrows(InvalidKeyException.class, () -> KeyVetting.encode(encodingAs(""), "k"));
        assertEquals(Reason.EMPTY, e.reason());
    }

    @Test
    void exactlyTheMaximumLengthInAsciiIsAccepted() {
        assertEquals(512, ReactiveWorkQueue.MAX_KEY_LENGTH);
        String key = "a".repeat(512);
        assertSame(key, KeyVetting.vet(key));
    }

    @Test
    void oneAsciiByteOverTheMaximumIsRefusedAsTooLongNotTruncated() {
        InvalidKeyException e = assertThrows(InvalidKeyException.class, () -> KeyVetting.vet("a".repeat(513)));
        assertEquals(Reason.TOO_LONG, e.reason());
        assertTrue(e.getMessage().contains("513"), e.getMessage());
    }

    @Test
    void theLimitCountsUtf8BytesOfTwoByteCharacters() {
        String fits = "é".repeat(256);                 // 256 chars, 512 bytes
        String over = "é".repeat(255) + "ab" + "c";    // 258 chars, 513 bytes
        assertEquals(512, utf8Bytes(fits));
        assertEquals(513, utf8Bytes(over));
        assertSame(fits, KeyVetting.vet(fits));
        assertEquals(Reason.TOO_LONG, refusal(over));
    }

    @Test
    void theLimitCountsUtf8BytesOfThreeByteCharacters() {
        String fits = "€".repeat(170) + "ab";  // 172 chars, 512 bytes
        String over = "€".repeat(171);         // 171 chars, 513 bytes: only one UTF-16 unit past the cheap bound
        assertEquals(512, utf8Bytes(fits));
        assertEquals(513, utf8Bytes(over));
        assertSame(fits, KeyVetting.vet(fits));
        assertEquals(Reason.TOO_LONG, refusal(over));
    }

    @Test
    void theLimitCountsUtf8BytesOfSupplementaryCharacters() {
        String fits = GRIN.repeat(128);        // 256 UTF-16 units, 512 bytes
        String over = GRIN.repeat(128) + "a";  // 513 bytes
        String multibyteAcrossTheBoundary = "a".repeat(509) + GRIN; // 513 bytes, the last character straddles 512
        assertEquals(512, utf8Bytes(fits));
        assertSame(fits, KeyVetting.vet(fits));
        assertEquals(Reason.TOO_LONG, refusal(over));
        assertEquals(Reason.TOO_LONG, refusal(multibyteAcrossTheBoundary));
        String straddlesAndFits = "a".repeat(508) + GRIN; // 512 bytes
        assertSame(straddlesAndFits, KeyVetting.vet(straddlesAndFits));
    }

    @ParameterizedTest
    @ValueSource(strings = {"\u0000", "a\u0000b", "trailing\u0000", "\nleading", "mid\ndle", "end\n", "\r", "a\rb", "crlf\r\n"})
    void nulCarriageReturnAndLineFeedAreRefusedAsControlCharacters(String key) {
        assertEquals(Reason.CONTROL_CHARACTER, refusal(key));
    }

    @Test
    void aControlCharacterIsRefusedEvenInAnOverlongKey() {
        // Nothing is truncated first, so a NUL past the limit still counts.
        assertEquals(Reason.CONTROL_CHARACTER, refusal("a".repeat(600) + "\u0000"));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "\uD83D",            // lone high surrogate
        "a\uD83Db",          // high surrogate followed by an ordinary character
        "\uDE00",            // lone low surrogate
        "x\uDE00\uD83D",     // a pair in the wrong order
        "ok\uD83D\uDE00\uD83D", // a valid pair, then a dangling high surrogate at the end
        "\uD83D\uD83D\uDE00",   // a high surrogate followed by a valid pair
    })
    void anUnpairedSurrogateIsRefusedAsInvalidUnicode(String key) {
        assertEquals(Reason.INVALID_UNICODE, refusal(key));
    }

    @ParameterizedTest
    @ValueSource(strings = {GRIN, "a" + GRIN + "b", GRIN + GRIN, "\uDBFF\uDFFF", "\uD800\uDC00", "𝄞 clef"})
    void validSurrogatePairsAreAccepted(String key) {
        assertSame(key, KeyVetting.vet(key));
    }

    @Test
    void otherControlAndSpecialCharactersAreAccepted() {
        String key = "tab\there \u001F unit-separator \u007F del \uFFFD replacement \uFEFF bom";
        assertSame(key, KeyVetting.vet(key));
    }
}

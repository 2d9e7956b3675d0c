package io.workqueue;

import org.jspecify.annotations.Nullable;

/**
 * A queue's key type that its {@link KeyCodec} cannot encode, found by
 * {@link WorkQueueBuilder#build()} before any key exists: for the library's JSON codec, a type
 * Jackson has no way to write, such as a class with no properties it can see. Thrown by
 * {@code build()}, so under the Spring Boot starter it fails the application's start.
 *
 * <p>The way out is to make the type writable (a record, public getters or fields, a
 * {@code @JsonValue}, a Jackson module that knows it) or to store it with a {@link KeyCodec} of
 * your own, set with {@link WorkQueueBuilder#keyCodec} (under the starter, from a
 * {@code WorkQueueBuilderCustomizer} bean).
 */
public class UnsupportedKeyTypeException extends InvalidConfigException {
    private static final long serialVersionUID = 1L;

    /** The queue's key type. */
    private final Class<?> keyType;

    /** What cannot be written, without the advice. */
    private final String problem;

    /**
     * Creates the exception for {@code keyType}.
     *
     * @param keyType the queue's key type
     * @param problem what cannot be written and why, for example
     *                {@code Jackson finds no properties to write in com.acme.Tile: it has no public
     *                getters or fields, no @JsonValue and no serializer}
     * @param cause   what the codec's library threw while judging the type, or {@code null}
     */
    public UnsupportedKeyTypeException(Class<?> keyType, String problem, @Nullable Throwable cause) {
        super("key type " + keyType.getName() + " cannot be stored by the JSON key codec: " + problem
                + ". Make it a record, or give it public getters or fields (or a @JsonValue), or store it with a "
                + "KeyCodec of your own: WorkQueueBuilder.keyCodec(codec), which under the Spring Boot starter a "
                + "WorkQueueBuilderCustomizer bean calls", cause);
        this.keyType = keyType;
        this.problem = problem;
    }

    /**
     * The queue's key type, whose encoding is impossible (possibly because of a type it contains).
     *
     * @return the key type given to the builder
     */
    public Class<?> keyType() {
        return keyType;
    }

    /**
     * What cannot be written and why, without the advice the message adds: for reports that give
     * their own.
     *
     * @return for example {@code Jackson finds no properties to write in com.acme.Tile: it has no
     *         public getters or fields, no @JsonValue and no serializer}
     */
    public String problem() {
        return problem;
    }
}

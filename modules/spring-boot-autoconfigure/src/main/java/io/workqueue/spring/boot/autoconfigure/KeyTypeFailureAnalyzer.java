package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.UnsupportedKeyTypeException;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanCreationException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.core.env.Environment;

/**
 * Explains a start that failed because a queue's key type cannot be stored by the JSON key codec
 * ({@link UnsupportedKeyTypeException} from the queue's {@code build()}): which queue bean, which
 * {@code key-type} property, what Jackson cannot write, and the three ways out, the last with the
 * {@code WorkQueueBuilderCustomizer} bean to write.
 *
 * <p>Registered in {@code META-INF/spring.factories}; Spring Boot creates it with the failed
 * application's {@link Environment}, to tell a starter-configured queue from one the application
 * builds itself.
 */
final class KeyTypeFailureAnalyzer extends AbstractFailureAnalyzer<UnsupportedKeyTypeException> {
    private final Environment environment;

    KeyTypeFailureAnalyzer(Environment environment) {
        this.environment = environment;
    }

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, UnsupportedKeyTypeException failure) {
        String bean = queueBean(rootFailure, failure);
        String keyType = failure.keyType().getName();
        String simpleName = failure.keyType().getSimpleName();
        String property = WorkQueueProperties.PREFIX + ".queues." + bean + ".key-type";
        String queue = bean == null ? "A work queue"
                : environment.containsProperty(property) ? "The work queue '" + bean + "' (" + property + "=" + keyType + ")"
                : "The work queue bean '" + bean + "'";
        String description = queue + " has a key type the JSON key codec cannot store: " + failure.problem() + ".";
        String action = "Do one of these:\n"
                + "    - give " + simpleName + " properties Jackson can write and read back: make it a record, or give it "
                + "public getters and setters (or fields), or a @JsonValue method with a @JsonCreator;\n"
                + "    - teach the application's Jackson the type (a JacksonModule bean with a serializer and a "
                + "deserializer): the starter's key codec uses the application's JsonMapper and its modules;\n"
                + "    - store it with a KeyCodec of your own, set by a WorkQueueBuilderCustomizer bean:\n\n"
                + "        @Bean\n"
                + "        WorkQueueBuilderCustomizer " + (bean == null ? "queue" : bean) + "KeyCodec() {\n"
                + "            return (queueBean, builder) -> {\n"
                + "                if (queueBean.equals(\"" + (bean == null ? "<queue bean>" : bean) + "\")) {\n"
                + "                    ((WorkQueueBuilder<" + simpleName + ">) builder).keyCodec(new " + simpleName
                + "Codec());\n"
                + "                }\n"
                + "            };\n"
                + "        }";
        return new FailureAnalysis(description, action, failure);
    }

    /** The bean whose creation built the queue: the innermost bean-creation failure around {@code failure}. */
    private static @Nullable String queueBean(Throwable rootFailure, Throwable failure) {
        String bean = null;
        for (Throwable t = rootFailure; t != null && t != failure; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof BeanCreationException creation && creation.getBeanName() != null) {
                bean = creation.getBeanName();
            }
        }
        return bean;
    }
}

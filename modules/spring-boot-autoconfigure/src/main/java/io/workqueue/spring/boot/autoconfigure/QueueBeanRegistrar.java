package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.ReactiveWorkQueue;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Registers one {@code ReactiveWorkQueue<K>} bean per {@code workqueue.queues.<name>}, named
 * {@code <name>} and typed with its key type, so it can be injected by name and by generic type
 * ({@code ReactiveWorkQueue<TileKey>}). A bean the application already defines under that name
 * wins: the starter then creates no queue of that name (its worker, health and housekeeping use the
 * application's bean instead).
 *
 * <p>Queue beans are registered before any bean exists, so only the names and key types are read
 * here, from the environment; the queues themselves are built later by {@link QueueFactory} from
 * the validated {@link WorkQueueProperties}.
 */
final class QueueBeanRegistrar implements ImportBeanDefinitionRegistrar, EnvironmentAware, BeanFactoryAware {
    private static final Logger log = LoggerFactory.getLogger(QueueBeanRegistrar.class);

    private @Nullable Environment environment;
    private @Nullable BeanFactory beanFactory;

    @Override
    public void setEnvironment(Environment environment) {
        this.environment = environment;
    }

    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        this.beanFactory = beanFactory;
    }

    @Override
    public void registerBeanDefinitions(AnnotationMetadata importingClass, BeanDefinitionRegistry registry) {
        Environment env = required(environment, "environment");
        BeanFactory factory = required(beanFactory, "bean factory");
        Map<String, WorkQueueProperties.Queue> queues = Binder.get(env)
                .bind(WorkQueueProperties.PREFIX + ".queues",
                        Bindable.mapOf(String.class, WorkQueueProperties.Queue.class))
                .orElse(Map.of());
        queues.forEach((name, queue) -> {
            if (registry.containsBeanDefinition(name)) {
                log.debug("the application defines a bean named {}; the starter creates no queue of that name", name);
                return;
            }
            RootBeanDefinition definition = new RootBeanDefinition(ReactiveWorkQueue.class);
            definition.setTargetType(ResolvableType.forClassWithGenerics(ReactiveWorkQueue.class, queue.getKeyType()));
            definition.setInstanceSupplier(() -> factory.getBean(QueueFactory.class).create(name));
            // Closed by the starter's lifecycle (WorkQueuePhases.QUEUES), in order, not by destruction.
            definition.setDestroyMethodName(null);
            registry.registerBeanDefinition(name, definition);
        });
    }

    private static <T> T required(@Nullable T value, String what) {
        if (value == null) {
            throw new IllegalStateException("the " + what + " was not set before registration");
        }
        return value;
    }
}

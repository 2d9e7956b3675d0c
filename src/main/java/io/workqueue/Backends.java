package io.workqueue;

import java.util.ServiceLoader;

/** The {@link WorkQueueBackend} the builders create with: looked up once, on first use. */
final class Backends {
    private Backends() {}

    /** The first provider {@link ServiceLoader} finds beside the API. */
    static final WorkQueueBackend BACKEND = ServiceLoader.load(WorkQueueBackend.class,
                    WorkQueueBackend.class.getClassLoader())
            .findFirst()
            .orElseThrow(() -> new IllegalStateException("no " + WorkQueueBackend.class.getName()
                    + " provider found: the reactive-workqueue jar is incomplete"));
}

package io.workqueue.observation;

/**
 * The names of every observation a queue makes when given an {@code ObservationRegistry} (see
 * {@link io.workqueue.WorkQueueBuilder#observationRegistry}), and of their key values. Every
 * observation carries the low-cardinality key values {@value #QUEUE} and {@value #OUTCOME}, which a
 * meter handler turns into tags; high-cardinality ones (a key, a count) go to spans only. Each
 * observation's context is a {@link WorkQueueObservationContext}; its contextual name (the span's
 * name) is the operation and the queue, as in {@code "handle tiles"}.
 */
public final class WorkQueueObservations {
    /**
     * One caller's enqueue, from its subscription to its completion: through the group commit
     * (the caller waits for the write it rides) or on the caller's connection
     * ({@value #ENQUEUE_MODE} says which). Its span is the trace context a queue that stores them
     * keeps with the keys. Parent: the caller's current observation (from the Reactor context, or
     * the thread).
     */
    public static final String ENQUEUE = "workqueue.enqueue";
    /**
     * One group-committed enqueue write: the upsert every caller waiting meanwhile rides. A trace
     * of its own (it serves many callers' traces at once), its span linking to each caller's
     * enqueue span.
     */
    public static final String ENQUEUE_WRITE = "workqueue.enqueue.write";
    /**
     * One call of {@code claim} or {@code completeAndClaim} (which {@code process()} runs each
     * round), from subscription to the items handed out.
     */
    public static final String CLAIM = "workqueue.claim";
    /**
     * One run of {@code process()}'s handler on one item, from its subscription to its end. A
     * trace of its own, linking to the enqueues the item answers when its queue stores them
     * ({@link io.workqueue.WorkQueueConfig#storeTraceContexts()}), and the current observation of
     * the handler's publisher (in its Reactor context and, while the handler is called, on its
     * thread), so what the handler observes nests under it.
     */
    public static final String HANDLE = "workqueue.handle";
    /**
     * One call of {@code complete}, or the completing part of {@code completeAndClaim} (the
     * acknowledgements of {@code process()}), when it names keys.
     */
    public static final String COMPLETE = "workqueue.complete";
    /** One call of {@code release} ({@code process()} releases each item its handler failed). */
    public static final String RELEASE = "workqueue.release";

    /** Low cardinality: the logical queue's name. */
    public static final String QUEUE = "workqueue.queue";
    /**
     * Low cardinality: how the operation ended: {@value #OUTCOME_SUCCESS}, {@value #OUTCOME_FAILURE}
     * or {@value #OUTCOME_CANCELLED}.
     */
    public static final String OUTCOME = "workqueue.outcome";
    /** {@link #OUTCOME}: it completed (for a handler: its publisher completed, so the item is completed). */
    public static final String OUTCOME_SUCCESS = "success";
    /** {@link #OUTCOME}: it failed (for a handler: it signalled an error, and the item is released). */
    public static final String OUTCOME_FAILURE = "failure";
    /**
     * {@link #OUTCOME}: its subscriber cancelled before it ended (for a handler: it outlived its
     * lease, or the worker stopped).
     */
    public static final String OUTCOME_CANCELLED = "cancelled";
    /** Low cardinality, on {@link #ENQUEUE}: {@value #MODE_GROUP} or {@value #MODE_TRANSACTIONAL}. */
    public static final String ENQUEUE_MODE = "workqueue.enqueue.mode";
    /** {@link #ENQUEUE_MODE}: through the group commit. */
    public static final String MODE_GROUP = "group";
    /** {@link #ENQUEUE_MODE}: on the caller's connection, in its transaction. */
    public static final String MODE_TRANSACTIONAL = "transactional";

    /**
     * High cardinality: the key as stored, on {@link #HANDLE}, and on an enqueue, complete or
     * release that names exactly one key.
     */
    public static final String KEY = "workqueue.key";
    /**
     * High cardinality: how many items: entries or keys named (enqueue, complete, release), keys
     * written (the write), items asked for (claim).
     */
    public static final String ITEMS = "workqueue.items";
    /** High cardinality, on {@link #CLAIM}: how many items it handed out. */
    public static final String CLAIMED = "workqueue.claimed";
    /** High cardinality, on {@link #ENQUEUE_WRITE}: how many callers rode it. */
    public static final String CALLERS = "workqueue.callers";
    /** High cardinality, on {@link #HANDLE}: the item's attempts, this claim included. */
    public static final String ATTEMPTS = "workqueue.attempts";

    private WorkQueueObservations() {}
}

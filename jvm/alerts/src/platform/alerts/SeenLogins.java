package platform.alerts;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ids of one user's login events that the alert rule has counted, each with its event time:
 * the deduplication that Spark's {@code dropDuplicatesWithinWatermark} did in front of the rule,
 * kept in the rule's own state. A second operator cost its own shuffle and state store commit
 * in every batch (about a quarter of an alert's delay on 2 cores).
 *
 * <p>A copy of an event (same {@code event_id}: a producer's retry) is not counted again. An id is
 * remembered until the watermark passes its event time: from the next batch on, Spark drops a
 * copy with that time as late before the rule sees it. Ids are forgotten after the batch's
 * events, since a copy can arrive in the very batch whose watermark passes its time (Spark judges
 * lateness by the previous batch's watermark).
 */
final class SeenLogins {
    private final Map<String, Long> timesById = new LinkedHashMap<>();

    /** Remember {@code id} at {@code timeMs}; false when it was remembered already (a copy). */
    boolean first(String id, long timeMs) {
        return id == null || timesById.putIfAbsent(id, timeMs) == null;
    }

    /** Forget the ids whose event time is at or behind {@code watermarkMs}. */
    void forgetUpTo(long watermarkMs) {
        timesById.values().removeIf(t -> t <= watermarkMs);
    }

    boolean isEmpty() {
        return timesById.isEmpty();
    }

    /** The newest remembered event time: the watermark must pass it before the key can go. */
    long newestMs() {
        return timesById.values().stream().mapToLong(Long::longValue).max().orElse(Long.MIN_VALUE);
    }

    Map<String, Long> timesById() {
        return timesById;
    }
}

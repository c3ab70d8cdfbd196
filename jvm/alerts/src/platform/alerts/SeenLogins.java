package platform.alerts;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ids of one user's login events that the alert rule has counted, each with its event time
 * in milliseconds: the deduplication that Spark's {@code dropDuplicatesWithinWatermark} did in
 * front of the rule, kept in the rule's own state. A second operator cost its own shuffle and
 * state store commit in every batch (about a quarter of an alert's delay on 2 cores).
 *
 * <p>A copy of an event (same {@code event_id} for the same user: a producer's retry) is not
 * counted again. An id is remembered until the watermark is past its event time's millisecond:
 * from the next batch on, Spark drops a copy with that event time as late before the rule sees
 * it (it judges lateness in microseconds, by the previous batch's watermark, so an id whose
 * millisecond equals the watermark is kept one batch more). Ids are forgotten after the batch's
 * events, since a copy can arrive in the very batch whose watermark passes its time.
 *
 * <p>Unlike Spark's operator, ids are per user (one {@code event_id} under two users counts for
 * both), and a retry that carries a later event time than the first copy is counted once the
 * first copy's time is behind the watermark (Spark remembers an id for the watermark delay
 * longer).
 */
final class SeenLogins {
    private final Map<String, Long> timesById = new LinkedHashMap<>();

    /** Remember {@code id} at {@code timeMs}; false when it was remembered already (a copy). */
    boolean first(String id, long timeMs) {
        return id == null || timesById.putIfAbsent(id, timeMs) == null;
    }

    /**
     * Forget the ids whose event time is before {@code watermarkMs}. Not at it: an event time
     * with microseconds inside that millisecond is after the watermark, so its copy is not late.
     */
    void forgetBefore(long watermarkMs) {
        timesById.values().removeIf(t -> t < watermarkMs);
    }

    boolean isEmpty() {
        return timesById.isEmpty();
    }

    /**
     * The newest remembered event time: the key can go once the watermark is past it (Spark fires
     * an event-time timeout when the watermark is after it; never before the watermark, as every
     * id kept is at it or later).
     */
    long newestMs() {
        return timesById.values().stream().mapToLong(Long::longValue).max().orElse(Long.MIN_VALUE);
    }

    Map<String, Long> timesById() {
        return timesById;
    }
}

package platform.status;

import java.util.Objects;

/**
 * The service-status rules of {@code platform_pipelines/state/status.py}, line for line: "ok" on a
 * service's first heartbeat and on the first one after it went stale, "stale" once when its
 * processing-time timer fires. The Python module is the specification and keeps the unit tests;
 * {@code tests/spark/test_status_parity.py} replays generated cases through both
 * ({@link StatusReplay}). Times are epoch milliseconds.
 */
public final class ServiceRules {
    public static final String OK = "ok";
    public static final String STALE = "stale";
    /** Where a result has no timer (the state is kept, untimed). */
    public static final long NO_TIMER = Long.MIN_VALUE;

    /** A service's state: the Python {@code {"status", "changed_at_ms", "last_heartbeat_ms"}}. */
    public record State(String status, long changedAtMs, long lastHeartbeatMs) {}

    /** The state after a call, the row it emits (null: none) and its timer (or NO_TIMER). */
    public record Result(State state, State emitted, long timerMs) {}

    private final long staleAfterMs;

    public ServiceRules(long staleAfterMs) {
        if (staleAfterMs <= 0) {
            throw new IllegalArgumentException("stale_after_ms must be positive, got "
                    + staleAfterMs + ": set it to the milliseconds of silence after which a "
                    + "service is stale");
        }
        this.staleAfterMs = staleAfterMs;
    }

    /**
     * Heartbeats arrived ({@code times}: their event times, any order, at least one): note the
     * latest, emit "ok" unless already ok, push the timer on.
     */
    public Result onEvents(State state, long[] times, long nowMs) {
        long first = Long.MAX_VALUE;
        long newest = Long.MIN_VALUE;
        for (long time : times) {
            first = Math.min(first, time);
            newest = Math.max(newest, time);
        }
        long last = state == null ? newest : Math.max(newest, state.lastHeartbeatMs());
        long timer = timer(last, nowMs);
        if (state != null && OK.equals(state.status())) {
            return new Result(new State(state.status(), state.changedAtMs(), last), null, timer);
        }
        State ok = new State(OK, first, last);
        return new Result(ok, ok, timer);
    }

    /**
     * When the service is stale unless another heartbeat arrives: {@code staleAfterMs} after its
     * last heartbeat, that heartbeat's time taken no earlier than half the timeout before the
     * batch and no later than the batch (a clock ahead).
     */
    long timer(long lastHeartbeatMs, long nowMs) {
        return Math.min(Math.max(lastHeartbeatMs, nowMs - staleAfterMs / 2), nowMs) + staleAfterMs;
    }

    /** No heartbeat for {@code staleAfterMs}: emit "stale" once and keep the state, untimed. */
    public Result onTimeout(State state, long nowMs) {
        if (STALE.equals(state.status())) {
            return new Result(state, null, NO_TIMER);
        }
        State stale = new State(STALE, nowMs, state.lastHeartbeatMs());
        return new Result(stale, stale, NO_TIMER);
    }

    /** The state of {@code service} from its latest row of the status table. */
    public static State seed(String service, String status, long changedAtMs, long lastMs) {
        if (!OK.equals(status) && !STALE.equals(status)) {
            throw new IllegalArgumentException("status row of service '" + service
                    + "' has status " + Objects.toString(status) + ": seed only from rows this "
                    + "stream wrote ('ok' or 'stale')");
        }
        return new State(status, changedAtMs, lastMs);
    }
}

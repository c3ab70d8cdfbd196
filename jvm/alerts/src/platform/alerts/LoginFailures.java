package platform.alerts;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * The failed-login rules of one user, without Spark: {@code FailedLoginAlerts.on_events} and
 * {@code on_timeout} of {@code platform_pipelines/state/alerts.py}, line for line.
 * {@link FailedLoginAlerts} runs them on {@code flatMapGroupsWithState}; {@link AlertsReplay}
 * runs them on generated cases for the parity test.
 */
public final class LoginFailures {
    static final String LOGIN_FAILED = "login_failed";
    static final String LOGIN_SUCCESS = "login_success";
    static final String ALERT_TYPE = "failed_logins";

    private final int threshold;
    private final long windowMs;

    /**
     * @param threshold failures within the window that raise one alert
     * @param windowMs event-time span (inclusive) in which failures count together
     */
    public LoginFailures(int threshold, long windowMs) {
        this.threshold = threshold;
        this.windowMs = windowMs;
    }

    /** A login event of the batch: its time and whether it failed. */
    record Login(long timeMs, boolean failed) {
        /** The login of an event, or null for the event types the rules ignore. */
        static Login of(String type, long timeMs) {
            boolean failed = LOGIN_FAILED.equals(type);
            return failed || LOGIN_SUCCESS.equals(type) ? new Login(timeMs, failed) : null;
        }
    }

    /** The specification's {@code login_order}: event time, then failures before successes. */
    static final Comparator<Login> ORDER =
            Comparator.comparingLong(Login::timeMs).thenComparing(login -> !login.failed());

    /** An alert: the failures in the window when the threshold was reached. */
    record Alert(String alertId, String user, long firstMs, long lastMs, long count) {}

    /**
     * The failures kept (oldest first; null removes the key), the alerts raised, and the
     * event-time timer of the kept failures.
     */
    record Result(List<Long> failures, List<Alert> alerts, long timerMs) {}

    /** Count the user's failures in this batch; an alert at each {@code threshold}-th one. */
    Result onEvents(String user, List<Long> kept, List<Login> batch, long watermarkMs) {
        ArrayList<Long> failures = new ArrayList<>(kept);
        ArrayList<Login> logins = new ArrayList<>(batch);
        logins.sort(ORDER);
        List<Alert> alerts = new ArrayList<>();
        for (Login login : logins) {
            if (!login.failed()) { // a success forgets the failures at or before it
                failures.removeIf(t -> t <= login.timeMs());
                continue;
            }
            withFailure(failures, login.timeMs());
            if (failures.size() >= threshold) {
                alerts.add(alert(user, failures));
                failures.clear();
            }
        }
        return settle(failures, alerts, watermarkMs);
    }

    /** The watermark passed the last failure + window: nothing can count any more. */
    Result onTimeout() {
        return new Result(null, List.of(), Long.MIN_VALUE);
    }

    /** {@code failures} plus {@code at}, keeping only those within the window of the newest. */
    private void withFailure(ArrayList<Long> failures, long at) {
        int index = Collections.binarySearch(failures, at);
        failures.add(index < 0 ? -index - 1 : index + 1, at); // bisect.insort: after equals
        long oldest = failures.get(failures.size() - 1) - windowMs;
        failures.removeIf(t -> t < oldest);
    }

    /** Keep {@code failures} until they expire, or remove the key. */
    private Result settle(List<Long> failures, List<Alert> alerts, long watermarkMs) {
        if (failures.isEmpty()) {
            return new Result(null, alerts, Long.MIN_VALUE);
        }
        long expires = failures.get(failures.size() - 1) + windowMs;
        // Spark rejects a timeout behind the watermark; nothing could count with them then.
        if (expires < watermarkMs) {
            return new Result(null, alerts, Long.MIN_VALUE);
        }
        return new Result(failures, alerts, expires);
    }

    /** The alert; its id is derived from user and last failure, so replays agree. */
    private static Alert alert(String user, List<Long> failures) {
        long first = failures.get(0);
        long last = failures.get(failures.size() - 1);
        return new Alert(user + "-" + last, user, first, last, failures.size());
    }
}

package platform.alerts;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The built-in failed-login alerts run inside the JVM: the rules of
 * {@code platform_pipelines/state/alerts.py}, line for line, on {@code flatMapGroupsWithState}
 * with an event-time timeout, so no row and no state call crosses into Python.
 *
 * <p>The Python module is the specification and keeps the unit tests; a Spark test runs this
 * port and the Python one over the same disordered input and asserts equal tables. Per user the
 * state holds the failures still in the window (fewer than the threshold), oldest first; the
 * timeout is the newest failure plus the window.
 *
 * <p>Input columns, in order: user_id, event_type, event_time_ms (plus the watermark column, which
 * only has to be in the plan). Output: {@link #OUTPUT}, times as epoch milliseconds (the Python
 * caller turns them into timestamps).
 */
public final class FailedLoginAlerts {
    private FailedLoginAlerts() {}

    static final String LOGIN_FAILED = "login_failed";
    static final String LOGIN_SUCCESS = "login_success";
    static final String ALERT_TYPE = "failed_logins";

    private static StructField field(String name, DataType type, boolean nullable) {
        return DataTypes.createStructField(name, type, nullable);
    }

    /** One user's state: the Python state document {@code {"failures_ms": [...]}}. */
    public static final StructType STATE = DataTypes.createStructType(new StructField[] {
        field("failures_ms", DataTypes.createArrayType(DataTypes.LongType, false), false),
    });

    /** An alert; the Python ALERT_FIELDS with times in epoch milliseconds. */
    public static final StructType OUTPUT = DataTypes.createStructType(new StructField[] {
        field("alert_id", DataTypes.StringType, false),
        field("user_id", DataTypes.StringType, false),
        field("first_failure_ms", DataTypes.LongType, false),
        field("last_failure_ms", DataTypes.LongType, false),
        field("failure_count", DataTypes.LongType, false),
        field("alert_type", DataTypes.StringType, false),
    });

    /**
     * Alerts of {@code events} (columns as in the class comment), in append mode.
     *
     * @param threshold failures within the window that raise one alert
     * @param windowMs event-time span (inclusive) in which failures count together
     */
    public static Dataset<Row> alerts(Dataset<Row> events, int threshold, long windowMs) {
        return events
                .groupByKey((MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING())
                .flatMapGroupsWithState(
                        new Step(threshold, windowMs),
                        OutputMode.Append(),
                        Encoders.row(STATE),
                        Encoders.row(OUTPUT),
                        GroupStateTimeout.EventTimeTimeout());
    }

    /** A login event of the batch: its time and whether it failed. */
    record Login(long timeMs, boolean failed) {}

    /** The function Spark calls per user: with a batch's events, or when the timeout fired. */
    static final class Step implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
        private static final long serialVersionUID = 1L;
        private final int threshold;
        private final long windowMs;

        Step(int threshold, long windowMs) {
            this.threshold = threshold;
            this.windowMs = windowMs;
        }

        @Override
        public Iterator<Row> call(String user, Iterator<Row> rows, GroupState<Row> state) {
            if (state.hasTimedOut()) { // on_timeout: nothing can count any more
                state.remove();
                return Collections.emptyIterator();
            }
            ArrayList<Long> failures = new ArrayList<>();
            if (state.exists()) {
                failures.addAll(state.get().<Long>getList(0));
            }
            ArrayList<Login> logins = new ArrayList<>();
            while (rows.hasNext()) {
                Row row = rows.next();
                String type = row.getString(1);
                if (LOGIN_FAILED.equals(type) || LOGIN_SUCCESS.equals(type)) {
                    logins.add(new Login(row.getLong(2), LOGIN_FAILED.equals(type)));
                }
            }
            // event-time order, ties in the order received (a stable sort, as Python's sorted)
            logins.sort((a, b) -> Long.compare(a.timeMs(), b.timeMs()));
            List<Row> alerts = new ArrayList<>();
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
            settle(failures, state);
            return alerts.iterator();
        }

        /** {@code failures} plus {@code at}, keeping only those within the window of the newest. */
        private void withFailure(ArrayList<Long> failures, long at) {
            int index = Collections.binarySearch(failures, at);
            failures.add(index < 0 ? -index - 1 : index + 1, at); // bisect.insort: after equals
            long oldest = failures.get(failures.size() - 1) - windowMs;
            failures.removeIf(t -> t < oldest);
        }

        /** Keep {@code failures} until they expire, or remove the key. */
        private void settle(ArrayList<Long> failures, GroupState<Row> state) {
            if (failures.isEmpty()) {
                state.remove();
                return;
            }
            long expires = failures.get(failures.size() - 1) + windowMs;
            // Spark rejects a timeout behind the watermark; nothing could count with them then.
            if (expires < state.getCurrentWatermarkMs()) {
                state.remove();
                return;
            }
            state.update(RowFactory.create(CollectionConverters.asScala(failures).toSeq()));
            state.setTimeoutTimestamp(expires);
        }
    }

    /** The alert row; its id is derived from user and last failure, so replays agree. */
    static Row alert(String user, List<Long> failures) {
        long first = failures.get(0);
        long last = failures.get(failures.size() - 1);
        return RowFactory.create(user + "-" + last, user, first, last, (long) failures.size(),
                ALERT_TYPE);
    }
}

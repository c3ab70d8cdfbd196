package platform.alerts;

import java.util.ArrayList;
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

import platform.alerts.LoginFailures.Login;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The built-in failed-login alerts run inside the JVM: {@link LoginFailures} (the rules of
 * {@code platform_pipelines/state/alerts.py}, line for line) on {@code flatMapGroupsWithState}
 * with an event-time timeout, so no row and no state call crosses into Python. This class only
 * converts rows and state.
 *
 * <p>The Python module is the specification and keeps the unit tests; a property-based test
 * replays generated cases through both ({@link AlertsReplay}), and a Spark test runs this adapter
 * and the Python one over the same disordered input and asserts equal tables. Per user the
 * state holds the failures still in the window (fewer than the threshold), oldest first; the
 * timeout is the newest failure plus the window.
 *
 * <p>Input columns, in order: user_id, event_type, event_time_ms (plus the watermark column, which
 * only has to be in the plan). Output: {@link #OUTPUT}, times as epoch milliseconds (the Python
 * caller turns them into timestamps).
 */
public final class FailedLoginAlerts {
    private FailedLoginAlerts() {}

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
            LoginFailures logic = new LoginFailures(threshold, windowMs);
            LoginFailures.Result result;
            if (state.hasTimedOut()) {
                result = logic.onTimeout();
            } else {
                List<Long> kept = state.exists() ? state.get().<Long>getList(0) : List.of();
                List<Login> logins = new ArrayList<>();
                while (rows.hasNext()) {
                    Row row = rows.next();
                    Login login = Login.of(row.getString(1), row.getLong(2));
                    if (login != null) {
                        logins.add(login);
                    }
                }
                result = logic.onEvents(user, kept, logins, state.getCurrentWatermarkMs());
            }
            if (result.failures() == null) {
                state.remove();
            } else {
                state.update(RowFactory.create(CollectionConverters.asScala(result.failures())
                        .toSeq()));
                state.setTimeoutTimestamp(result.timerMs());
            }
            List<Row> alerts = new ArrayList<>(result.alerts().size());
            for (LoginFailures.Alert a : result.alerts()) {
                alerts.add(RowFactory.create(a.alertId(), a.user(), a.firstMs(), a.lastMs(),
                        a.count(), LoginFailures.ALERT_TYPE));
            }
            return alerts.iterator();
        }
    }
}

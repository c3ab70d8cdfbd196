package platform.alerts;

import java.util.ArrayList;
import java.util.Comparator;
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
 * converts rows and state, and drops copies of an event ({@link SeenLogins}) before the rules.
 *
 * <p>The Python module is the specification and keeps the unit tests; a property-based test
 * replays generated cases through both ({@link AlertsReplay}), and a Spark test runs this adapter
 * and the Python one (behind Spark's {@code dropDuplicatesWithinWatermark}) over the same
 * disordered input with exact copies, and asserts equal tables. Per user the state holds the
 * failures still in the window (fewer than the threshold), oldest first, and the ids of the
 * logins whose event time the watermark has not passed ({@link SeenLogins}, which also says how
 * it differs from Spark's operator); the timeout is the later of the newest failure plus the
 * window and the newest of those ids' times.
 *
 * <p>Input columns, in order: user_id, event_type, event_time_ms, event_id (plus the watermark
 * column, which only has to be in the plan). Output: {@link #OUTPUT}, times as epoch
 * milliseconds (the Python caller turns them into timestamps).
 */
public final class FailedLoginAlerts {
    private FailedLoginAlerts() {}

    private static StructField field(String name, DataType type, boolean nullable) {
        return DataTypes.createStructField(name, type, nullable);
    }

    /** A login the rules counted: its event id and event time. */
    static final StructType SEEN = DataTypes.createStructType(new StructField[] {
        field("event_id", DataTypes.StringType, false),
        field("event_time_ms", DataTypes.LongType, false),
    });

    /**
     * One user's state: the Python state document {@code {"failures_ms": [...]}} and the logins
     * counted whose time the watermark has not passed ({@link SeenLogins}).
     */
    public static final StructType STATE = DataTypes.createStructType(new StructField[] {
        field("failures_ms", DataTypes.createArrayType(DataTypes.LongType, false), false),
        field("seen", DataTypes.createArrayType(SEEN, false), false),
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

    /** A login of the batch with its event id (null: never a copy). */
    record Arrival(String id, Login login) {}

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
            if (state.hasTimedOut()) { // past every failure's window and every id's time
                state.remove();
                return alertRows(logic.onTimeout());
            }
            Row current = state.exists() ? state.get() : null;
            SeenLogins seen = new SeenLogins();
            if (current != null) {
                for (Row login : current.<Row>getList(1)) {
                    seen.first(login.getString(0), login.getLong(1));
                }
            }
            List<Long> kept = current == null ? List.of() : current.<Long>getList(0);
            long watermarkMs = state.getCurrentWatermarkMs();
            LoginFailures.Result result =
                    logic.onEvents(user, kept, firstCopies(rows, seen), watermarkMs);
            seen.forgetBefore(watermarkMs);
            if (result.failures() == null && seen.isEmpty()) {
                state.remove();
            } else {
                List<Long> failures = result.failures() == null ? List.of() : result.failures();
                state.update(RowFactory.create(seq(failures), seq(seenRows(seen))));
                state.setTimeoutTimestamp(Math.max(result.timerMs(), seen.newestMs()));
            }
            return alertRows(result);
        }

        /**
         * The batch's logins that {@code seen} does not hold, in the rules' order; a copy of one
         * of them later in that order is dropped too.
         */
        private static List<Login> firstCopies(Iterator<Row> rows, SeenLogins seen) {
            List<Arrival> arrived = new ArrayList<>();
            while (rows.hasNext()) {
                Row row = rows.next();
                Login login = Login.of(row.getString(1), row.getLong(2));
                if (login != null) {
                    arrived.add(new Arrival(row.isNullAt(3) ? null : row.getString(3), login));
                }
            }
            arrived.sort(Comparator.comparing(Arrival::login, LoginFailures.ORDER)
                    .thenComparing(Arrival::id, Comparator.nullsFirst(Comparator.naturalOrder())));
            List<Login> logins = new ArrayList<>(arrived.size());
            for (Arrival a : arrived) {
                if (seen.first(a.id(), a.login().timeMs())) {
                    logins.add(a.login());
                }
            }
            return logins;
        }

        private static List<Row> seenRows(SeenLogins seen) {
            List<Row> out = new ArrayList<>(seen.timesById().size());
            seen.timesById().forEach((id, ms) -> out.add(RowFactory.create(id, ms)));
            return out;
        }

        private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
            return CollectionConverters.asScala(items).toSeq();
        }

        private static Iterator<Row> alertRows(LoginFailures.Result result) {
            List<Row> alerts = new ArrayList<>(result.alerts().size());
            for (LoginFailures.Alert a : result.alerts()) {
                alerts.add(RowFactory.create(a.alertId(), a.user(), a.firstMs(), a.lastMs(),
                        a.count(), LoginFailures.ALERT_TYPE));
            }
            return alerts.iterator();
        }
    }
}

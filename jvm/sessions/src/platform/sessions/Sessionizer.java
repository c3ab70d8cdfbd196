package platform.sessions;

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

import platform.sessions.UserSessions.Event;
import platform.sessions.UserSessions.Open;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The built-in sessionization run inside the JVM: {@link UserSessions} (the state machine of
 * {@code platform_pipelines/state/sessions.py}, line for line) on {@code flatMapGroupsWithState}
 * with an event-time timeout, so no row and no state call crosses into Python. This class only
 * converts rows and state.
 *
 * <p>The Python module is the specification and keeps the unit tests; a property-based test
 * replays generated cases through both ({@link SessionsReplay}), and a Spark test runs this
 * adapter and a Python one over the same disordered input and asserts equal tables. Per user the
 * state holds the open session of the released events and the accepted events the watermark has
 * not reached yet; the timeout is the moment the user next needs attention.
 *
 * <p>Input columns, in order: user_id, event_id, event_type, page, amount, event_time_ms (plus
 * the watermark column, which only has to be in the plan). Output: {@link #OUTPUT}, times as epoch
 * milliseconds (the Python caller turns them into timestamps).
 */
public final class Sessionizer {
    private Sessionizer() {}

    private static StructField field(String name, DataType type, boolean nullable) {
        return DataTypes.createStructField(name, type, nullable);
    }

    private static DataType arrayOf(DataType element) {
        return DataTypes.createArrayType(element, false);
    }

    /** The open session: the fields of the Python SessionState. */
    public static final StructType OPEN = DataTypes.createStructType(new StructField[] {
        field("user_id", DataTypes.StringType, false),
        field("session_start_ms", DataTypes.LongType, false),
        field("last_event_ms", DataTypes.LongType, false),
        field("event_count", DataTypes.LongType, false),
        field("pages", arrayOf(DataTypes.StringType), false),
        field("page_times_ms", arrayOf(DataTypes.LongType), false),
        field("reached_checkout", DataTypes.BooleanType, false),
        field("purchased", DataTypes.BooleanType, false),
        field("revenue", DataTypes.DoubleType, false),
    });

    /** A held event (the user is the key). */
    public static final StructType HELD = DataTypes.createStructType(new StructField[] {
        field("event_time_ms", DataTypes.LongType, false),
        field("event_id", DataTypes.StringType, false),
        field("event_type", DataTypes.StringType, false),
        field("page", DataTypes.StringType, true),
        field("amount", DataTypes.DoubleType, true),
    });

    /** One user's state: the Python UserState. */
    public static final StructType STATE = DataTypes.createStructType(new StructField[] {
        field("open", OPEN, true),
        field("pending", arrayOf(HELD), false),
    });

    /** A closed session; the Python SESSION_SCHEMA with times in epoch milliseconds. */
    public static final StructType OUTPUT = DataTypes.createStructType(new StructField[] {
        field("user_id", DataTypes.StringType, false),
        field("session_id", DataTypes.StringType, false),
        field("session_start_ms", DataTypes.LongType, false),
        field("session_end_ms", DataTypes.LongType, false),
        field("duration_seconds", DataTypes.DoubleType, false),
        field("event_count", DataTypes.LongType, false),
        field("last_pages", arrayOf(DataTypes.StringType), false),
        field("reached_checkout", DataTypes.BooleanType, false),
        field("purchased", DataTypes.BooleanType, false),
        field("revenue", DataTypes.DoubleType, false),
        field("close_reason", DataTypes.StringType, false),
    });

    /**
     * Closed sessions of {@code events} (columns as in the class comment), in append mode.
     *
     * @param gapMs event-time inactivity that closes a session
     * @param maxPages how many of the last visited pages a session keeps
     */
    public static Dataset<Row> sessionize(Dataset<Row> events, long gapMs, int maxPages) {
        return events
                .groupByKey((MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING())
                .flatMapGroupsWithState(
                        new Step(gapMs, maxPages),
                        OutputMode.Append(),
                        Encoders.row(STATE),
                        Encoders.row(OUTPUT),
                        GroupStateTimeout.EventTimeTimeout());
    }

    /** The function Spark calls per user: with a batch's events, or when the timeout fired. */
    static final class Step implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
        private static final long serialVersionUID = 1L;
        private final long gapMs;
        private final int maxPages;

        Step(long gapMs, int maxPages) {
            this.gapMs = gapMs;
            this.maxPages = maxPages;
        }

        @Override
        public Iterator<Row> call(String user, Iterator<Row> rows, GroupState<Row> state) {
            UserSessions logic = new UserSessions(gapMs, maxPages);
            UserSessions.State before = state.exists() ? stateFrom(state.get()) : null;
            long watermark = state.getCurrentWatermarkMs();
            UserSessions.Result result;
            if (state.hasTimedOut()) {
                result = logic.advance(before, user, watermark);
            } else {
                List<Event> events = new ArrayList<>();
                while (rows.hasNext()) {
                    Row row = rows.next();
                    events.add(new Event(row.getLong(5), row.getString(1), row.getString(2),
                            row.isNullAt(3) ? null : row.getString(3),
                            row.isNullAt(4) ? null : row.getDouble(4)));
                }
                result = logic.onEvents(before, user, events, watermark);
            }
            if (result.state() == null) {
                state.remove();
            } else {
                state.update(stateRow(result.state()));
                state.setTimeoutTimestamp(logic.timerFor(result.state()));
            }
            List<Row> closed = new ArrayList<>(result.closed().size());
            for (UserSessions.Closed c : result.closed()) {
                closed.add(RowFactory.create(c.user(), c.sessionId(), c.start(), c.end(),
                        c.durationSeconds(), c.count(), seq(c.lastPages()), c.checkout(),
                        c.purchased(), c.revenue(), c.reason()));
            }
            return closed.iterator();
        }
    }

    private static UserSessions.State stateFrom(Row stored) {
        Open open = null;
        if (!stored.isNullAt(0)) {
            Row row = stored.getStruct(0);
            open = new Open(row.getString(0), row.getLong(1));
            open.last = row.getLong(2);
            open.count = row.getLong(3);
            open.pages.addAll(row.<String>getList(4));
            open.pageTimes.addAll(row.<Long>getList(5));
            open.checkout = row.getBoolean(6);
            open.purchased = row.getBoolean(7);
            open.revenue = row.getDouble(8);
        }
        List<Event> pending = new ArrayList<>();
        for (Row held : stored.<Row>getList(1)) {
            pending.add(new Event(held.getLong(0), held.getString(1), held.getString(2),
                    held.isNullAt(3) ? null : held.getString(3),
                    held.isNullAt(4) ? null : held.getDouble(4)));
        }
        return new UserSessions.State(open, pending);
    }

    private static Row stateRow(UserSessions.State state) {
        Open open = state.open();
        Row session = open == null ? null : RowFactory.create(open.user, open.start, open.last,
                open.count, seq(open.pages), seq(open.pageTimes), open.checkout, open.purchased,
                open.revenue);
        List<Row> held = new ArrayList<>(state.pending().size());
        for (Event e : state.pending()) {
            held.add(RowFactory.create(e.timeMs(), e.id(), e.type(), e.page(), e.amount()));
        }
        return RowFactory.create(session, seq(held));
    }

    private static <T> scala.collection.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(new ArrayList<>(list)).toSeq();
    }
}

package platform.sessions;

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
 * The built-in sessionization run inside the JVM: the same state machine as
 * {@code platform_pipelines/state/sessions.py}, line for line, on {@code flatMapGroupsWithState}
 * with an event-time timeout, so no row and no state call crosses into Python.
 *
 * <p>The Python module is the specification and keeps the unit tests; a Spark test runs this
 * port and the Python one over the same disordered input and asserts equal tables. Per user the
 * state holds the open session of the released events and the accepted events the watermark has
 * not reached yet; the timeout is the moment the user next needs attention.
 *
 * <p>Input columns, in order: user_id, event_id, event_type, page, amount, event_time_ms (plus
 * the watermark column, which only has to be in the plan). Output: {@link #OUTPUT}, times as epoch
 * milliseconds (the Python caller turns them into timestamps).
 */
public final class Sessionizer {
    private Sessionizer() {}

    static final String LOGOUT = "logout";
    static final String CHECKOUT = "checkout";
    static final String PURCHASE = "purchase";

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

    /** A clickstream event; ordered by time, then id (ids are unique per user after dedup). */
    record Event(long timeMs, String id, String type, String page, Double amount)
            implements Comparable<Event> {
        @Override
        public int compareTo(Event other) {
            int byTime = Long.compare(timeMs, other.timeMs);
            return byTime != 0 ? byTime : id.compareTo(other.id);
        }
    }

    /** The open session; {@code pages} and {@code pageTimes} are the last visited pages. */
    static final class Open {
        final String user;
        final long start;
        long last;
        long count;
        final ArrayList<String> pages = new ArrayList<>();
        final ArrayList<Long> pageTimes = new ArrayList<>();
        boolean checkout;
        boolean purchased;
        double revenue;

        Open(String user, long start) {
            this.user = user;
            this.start = start;
            this.last = start;
        }
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
            Open open = null;
            ArrayList<Event> pending = new ArrayList<>();
            if (state.exists()) {
                Row stored = state.get();
                open = stored.isNullAt(0) ? null : openFrom(stored.getStruct(0));
                for (Row held : stored.<Row>getList(1)) {
                    pending.add(new Event(held.getLong(0), held.getString(1), held.getString(2),
                            held.isNullAt(3) ? null : held.getString(3),
                            held.isNullAt(4) ? null : held.getDouble(4)));
                }
            }
            if (!state.hasTimedOut()) { // on_events: hold the batch's events, in order
                while (rows.hasNext()) {
                    Row row = rows.next();
                    Event event = new Event(row.getLong(5), row.getString(1), row.getString(2),
                            row.isNullAt(3) ? null : row.getString(3),
                            row.isNullAt(4) ? null : row.getDouble(4));
                    int at = Collections.binarySearch(pending, event);
                    pending.add(at < 0 ? -at - 1 : at + 1, event);
                }
            }
            // advance: release the held events the watermark has reached, close finished sessions
            long watermark = state.getCurrentWatermarkMs();
            int cut = 0;
            while (cut < pending.size() && pending.get(cut).timeMs() <= watermark) {
                cut++;
            }
            List<Row> closed = new ArrayList<>();
            for (Event event : pending.subList(0, cut)) {
                if (open != null && event.timeMs() - open.last > gapMs) {
                    closed.add(close(open, "timeout"));
                    open = null;
                }
                open = open == null ? fromEvent(user, event) : merge(open, user, event);
                if (LOGOUT.equals(event.type())) {
                    closed.add(close(open, "logout"));
                    open = null;
                }
            }
            if (open != null && open.last + gapMs <= watermark) {
                closed.add(close(open, "timeout"));
                open = null;
            }
            List<Event> rest = pending.subList(cut, pending.size());
            if (open == null && rest.isEmpty()) {
                state.remove();
            } else {
                state.update(stateRow(open, rest));
                long timer = rest.isEmpty() ? Long.MAX_VALUE : rest.get(0).timeMs();
                if (open != null) {
                    timer = Math.min(timer, open.last + gapMs);
                }
                state.setTimeoutTimestamp(timer);
            }
            return closed.iterator();
        }

        private Open fromEvent(String user, Event event) {
            Open one = new Open(user, event.timeMs());
            one.count = 1;
            if (event.page() != null) {
                one.pages.add(event.page());
                one.pageTimes.add(event.timeMs());
            }
            one.checkout = CHECKOUT.equals(event.type());
            one.purchased = PURCHASE.equals(event.type());
            // Python's `(amount or 0.0)`: None, 0.0 and -0.0 all count as 0.0
            Double amount = event.amount();
            one.revenue = one.purchased && amount != null && amount != 0.0 ? amount : 0.0;
            return one;
        }

        /** {@code open} followed by {@code event} (not earlier): the Python _merge. */
        private Open merge(Open open, String user, Event event) {
            Open next = fromEvent(user, event);
            open.last = Math.max(open.last, next.last);
            open.count += next.count;
            open.pages.addAll(next.pages);
            open.pageTimes.addAll(next.pageTimes);
            int drop = Math.max(0, open.pages.size() - maxPages);
            if (drop > 0) {
                open.pages.subList(0, drop).clear();
                open.pageTimes.subList(0, drop).clear();
            }
            open.checkout = open.checkout || next.checkout;
            open.purchased = open.purchased || next.purchased;
            open.revenue = open.revenue + next.revenue;
            return open;
        }
    }

    private static Row close(Open open, String reason) {
        return RowFactory.create(open.user, open.user + "-" + open.start, open.start, open.last,
                (open.last - open.start) / 1000.0, open.count, seq(open.pages), open.checkout,
                open.purchased, open.revenue, reason);
    }

    private static Open openFrom(Row row) {
        Open open = new Open(row.getString(0), row.getLong(1));
        open.last = row.getLong(2);
        open.count = row.getLong(3);
        open.pages.addAll(row.<String>getList(4));
        open.pageTimes.addAll(row.<Long>getList(5));
        open.checkout = row.getBoolean(6);
        open.purchased = row.getBoolean(7);
        open.revenue = row.getDouble(8);
        return open;
    }

    private static Row stateRow(Open open, List<Event> pending) {
        Row session = open == null ? null : RowFactory.create(open.user, open.start, open.last,
                open.count, seq(open.pages), seq(open.pageTimes), open.checkout, open.purchased,
                open.revenue);
        List<Row> held = new ArrayList<>(pending.size());
        for (Event e : pending) {
            held.add(RowFactory.create(e.timeMs(), e.id(), e.type(), e.page(), e.amount()));
        }
        return RowFactory.create(session, seq(held));
    }

    private static <T> scala.collection.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(new ArrayList<>(list)).toSeq();
    }
}

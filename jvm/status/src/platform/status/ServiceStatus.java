package platform.status;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.KeyValueGroupedDataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The built-in service status run inside the JVM: {@link ServiceRules} on
 * {@code flatMapGroupsWithState} with a processing-time timeout. The Python rules on
 * {@code transformWithState} paid a Python worker and its state server per state partition in
 * every batch, with or without heartbeats (about 0.35 s of a core each on a loaded 2-core
 * machine); this class only converts rows and state.
 *
 * <p>Input columns, in order: service, event_time_ms. Seed columns (the latest status row per
 * service, on a new checkpoint): service, status, changed_at_ms, last_heartbeat_ms. Output:
 * {@link #OUTPUT}, times as epoch milliseconds (the Python caller turns them into timestamps).
 * A seeded service has no timer, as in the Python rules.
 */
public final class ServiceStatus {
    private ServiceStatus() {}

    private static StructField field(String name, DataType type) {
        return DataTypes.createStructField(name, type, false);
    }

    /** One service's state; {@link ServiceRules.State}. */
    public static final StructType STATE = DataTypes.createStructType(new StructField[] {
        field("status", DataTypes.StringType),
        field("changed_at_ms", DataTypes.LongType),
        field("last_heartbeat_ms", DataTypes.LongType),
    });

    /** A status change; the Python STATUS_FIELDS with times in epoch milliseconds. */
    public static final StructType OUTPUT = DataTypes.createStructType(new StructField[] {
        field("service", DataTypes.StringType),
        field("status", DataTypes.StringType),
        field("changed_at_ms", DataTypes.LongType),
        field("last_heartbeat_ms", DataTypes.LongType),
    });

    /**
     * Status changes of {@code heartbeats}, in append mode.
     *
     * @param staleAfterMs processing time without a heartbeat after which a service is stale
     * @param seed the seed rows, or null
     */
    public static Dataset<Row> statuses(Dataset<Row> heartbeats, long staleAfterMs,
            Dataset<Row> seed) {
        ServiceRules rules = new ServiceRules(staleAfterMs); // refuses a bad timeout here
        KeyValueGroupedDataset<String, Row> grouped = heartbeats.groupByKey(
                (MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING());
        Step step = new Step(staleAfterMs);
        GroupStateTimeout timeout = GroupStateTimeout.ProcessingTimeTimeout();
        if (seed == null) {
            return grouped.flatMapGroupsWithState(step, OutputMode.Append(),
                    Encoders.row(STATE), Encoders.row(OUTPUT), timeout);
        }
        KeyValueGroupedDataset<String, Row> initial = seed
                .groupByKey((MapFunction<Row, String>) row -> row.getString(0), Encoders.STRING())
                .mapValues((MapFunction<Row, Row>) row -> toRow(ServiceRules.seed(
                        row.getString(0), row.getString(1), row.getLong(2), row.getLong(3))),
                        Encoders.row(STATE));
        return grouped.flatMapGroupsWithState(step, OutputMode.Append(), Encoders.row(STATE),
                Encoders.row(OUTPUT), timeout, initial);
    }

    private static Row toRow(ServiceRules.State state) {
        return RowFactory.create(state.status(), state.changedAtMs(), state.lastHeartbeatMs());
    }

    /** The function Spark calls per service: with a batch's heartbeats, or when it timed out. */
    static final class Step implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
        private static final long serialVersionUID = 1L;
        private final long staleAfterMs;

        Step(long staleAfterMs) {
            this.staleAfterMs = staleAfterMs;
        }

        @Override
        public Iterator<Row> call(String service, Iterator<Row> rows, GroupState<Row> state) {
            ServiceRules rules = new ServiceRules(staleAfterMs);
            long now = state.getCurrentProcessingTimeMs();
            ServiceRules.State current = state.exists() ? fromRow(state.get()) : null;
            ServiceRules.Result result;
            if (state.hasTimedOut()) {
                result = rules.onTimeout(current, now);
            } else {
                List<Long> times = new ArrayList<>();
                while (rows.hasNext()) {
                    Row row = rows.next();
                    if (!row.isNullAt(1)) {
                        times.add(row.getLong(1));
                    }
                }
                if (times.isEmpty()) {
                    return List.<Row>of().iterator();
                }
                result = rules.onEvents(current, times.stream().mapToLong(Long::longValue)
                        .toArray(), now);
            }
            state.update(toRow(result.state()));
            if (result.timerMs() != ServiceRules.NO_TIMER) {
                state.setTimeoutDuration(result.timerMs() - now);
            }
            if (result.emitted() == null) {
                return List.<Row>of().iterator();
            }
            ServiceRules.State e = result.emitted();
            return List.of(RowFactory.create(service, e.status(), e.changedAtMs(),
                    e.lastHeartbeatMs())).iterator();
        }

        private static ServiceRules.State fromRow(Row row) {
            return new ServiceRules.State(row.getString(0), row.getLong(1), row.getLong(2));
        }
    }
}

package platform.sessions;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import platform.sessions.UserSessions.Event;

/**
 * Replays many generated cases through {@link UserSessions} in one call, for the property-based
 * parity test ({@code tests/spark/test_sessions_parity.py}, which holds the Python side of the
 * same byte format). One call per batch of cases keeps py4j out of the measured time.
 *
 * <p>A case is one user's micro-batches: each step is either a batch of events (any order) with
 * the batch's watermark, or the user's event-time timer at a watermark, which fires as Spark
 * fires it (the user has state and its timer is before the watermark). After each step the case
 * records the closed sessions and the timer ({@link Long#MIN_VALUE} when no state is left).
 *
 * <p>Big-endian; a string is its UTF-8 length (int) and bytes; an optional value is a boolean,
 * then the value when true. In: int cases; per case: string user, long gap, int max pages, int
 * steps; per step: long watermark, int events (-1 for the timer); per event: long time, string
 * id, string type, optional string page, optional double amount. Out, per case and step: int
 * closed; per closed session its fields in order (last pages as an int count and strings); then
 * the long timer.
 */
public final class SessionsReplay {
    private SessionsReplay() {}

    /** The encoded results of the encoded {@code cases} (format in the class comment). */
    public static byte[] replay(byte[] cases) {
        try {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(cases));
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            for (int n = in.readInt(); n > 0; n--) {
                replayCase(in, out);
            }
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void replayCase(DataInputStream in, DataOutputStream out) throws IOException {
        String user = readString(in);
        UserSessions logic = new UserSessions(in.readLong(), in.readInt());
        UserSessions.State state = null;
        for (int steps = in.readInt(); steps > 0; steps--) {
            long watermark = in.readLong();
            int count = in.readInt();
            List<UserSessions.Closed> closed = List.of();
            if (count >= 0) {
                List<Event> events = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    events.add(new Event(in.readLong(), readString(in), readString(in),
                            in.readBoolean() ? readString(in) : null,
                            in.readBoolean() ? in.readDouble() : null));
                }
                UserSessions.Result result = logic.onEvents(state, user, events, watermark);
                state = result.state();
                closed = result.closed();
            } else if (state != null && logic.timerFor(state) < watermark) {
                UserSessions.Result result = logic.advance(state, user, watermark);
                state = result.state();
                closed = result.closed();
            }
            writeClosed(out, closed);
            out.writeLong(state == null ? Long.MIN_VALUE : logic.timerFor(state));
        }
    }

    private static void writeClosed(DataOutputStream out, List<UserSessions.Closed> closed)
            throws IOException {
        out.writeInt(closed.size());
        for (UserSessions.Closed c : closed) {
            writeString(out, c.user());
            writeString(out, c.sessionId());
            out.writeLong(c.start());
            out.writeLong(c.end());
            out.writeDouble(c.durationSeconds());
            out.writeLong(c.count());
            out.writeInt(c.lastPages().size());
            for (String page : c.lastPages()) {
                writeString(out, page);
            }
            out.writeBoolean(c.checkout());
            out.writeBoolean(c.purchased());
            out.writeDouble(c.revenue());
            writeString(out, c.reason());
        }
    }

    private static String readString(DataInputStream in) throws IOException {
        byte[] utf8 = new byte[in.readInt()];
        in.readFully(utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }

    private static void writeString(DataOutputStream out, String text) throws IOException {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }
}

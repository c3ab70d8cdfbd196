package platform.alerts;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import platform.alerts.LoginFailures.Login;

/**
 * Replays many generated cases through {@link LoginFailures} in one call, for the property-based
 * parity test ({@code tests/spark/test_alerts_parity.py}, which holds the Python side of the same
 * byte format). One call per batch of cases keeps py4j out of the measured time.
 *
 * <p>A case is one user's micro-batches: each step is either a batch of events (any order) with
 * the batch's watermark, or the user's event-time timer at a watermark, which fires as Spark
 * fires it (the user has state and its timer is before the watermark). After each step the case
 * records the alerts and the timer ({@link Long#MIN_VALUE} when no state is left).
 *
 * <p>Big-endian; a string is its UTF-8 length (int) and bytes. In: int cases; per case: string
 * user, int threshold, long window, int steps; per step: long watermark, int events (-1 for the
 * timer); per event: long time, string type. Out, per case and step: int alerts; per alert:
 * string id, string user, long first, long last, long count, string type; then the long timer.
 */
public final class AlertsReplay {
    private AlertsReplay() {}

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
        LoginFailures logic = new LoginFailures(in.readInt(), in.readLong());
        LoginFailures.Result state = null; // its failures and timer; null: no state
        for (int steps = in.readInt(); steps > 0; steps--) {
            long watermark = in.readLong();
            int count = in.readInt();
            LoginFailures.Result result = null;
            if (count >= 0) {
                List<Login> logins = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    long time = in.readLong();
                    Login login = Login.of(readString(in), time);
                    if (login != null) {
                        logins.add(login);
                    }
                }
                List<Long> kept = state == null ? List.of() : state.failures();
                result = logic.onEvents(user, kept, logins, watermark);
            } else if (state != null && state.timerMs() < watermark) {
                result = logic.onTimeout();
            }
            if (result != null) {
                state = result.failures() == null ? null : result;
            }
            List<LoginFailures.Alert> alerts = result == null ? List.of() : result.alerts();
            out.writeInt(alerts.size());
            for (LoginFailures.Alert alert : alerts) {
                writeString(out, alert.alertId());
                writeString(out, alert.user());
                out.writeLong(alert.firstMs());
                out.writeLong(alert.lastMs());
                out.writeLong(alert.count());
                writeString(out, LoginFailures.ALERT_TYPE);
            }
            out.writeLong(state == null ? Long.MIN_VALUE : state.timerMs());
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

package platform.status;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * Replays many generated cases through {@link ServiceRules} in one call, for the property-based
 * parity test ({@code tests/spark/test_status_parity.py}, which holds the Python side of the same
 * byte format).
 *
 * <p>A case is one service: an optional seed, then micro-batches at a processing time each: a
 * batch of heartbeats (their event times, any order), or the service's timer, which fires as
 * Spark fires it (the service has a timer before the batch's time). After each step the case
 * records the emitted row, if any, and the timer ({@link ServiceRules#NO_TIMER} when none).
 *
 * <p>Big-endian; a string is its UTF-8 length (int) and bytes. In: int cases; per case: string
 * service, long staleAfterMs, boolean seeded (then string status, long changed, long last), int
 * steps; per step: long now, int heartbeats (-1 for the timer), their long times. Out, per case
 * and step: boolean emitted (then string service, string status, long changed, long last); then
 * the long timer.
 */
public final class StatusReplay {
    private StatusReplay() {}

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
        String service = readString(in);
        ServiceRules rules = new ServiceRules(in.readLong());
        ServiceRules.State state = null;
        if (in.readBoolean()) {
            state = ServiceRules.seed(service, readString(in), in.readLong(), in.readLong());
        }
        long timer = ServiceRules.NO_TIMER; // a seed sets none
        for (int steps = in.readInt(); steps > 0; steps--) {
            long now = in.readLong();
            int count = in.readInt();
            ServiceRules.Result result = null;
            if (count >= 0) {
                long[] times = new long[count];
                for (int i = 0; i < count; i++) {
                    times[i] = in.readLong();
                }
                if (count > 0) {
                    result = rules.onEvents(state, times, now);
                }
            } else if (state != null && timer != ServiceRules.NO_TIMER && timer < now) {
                result = rules.onTimeout(state, now);
            }
            if (result != null) {
                state = result.state();
                timer = result.timerMs();
            }
            ServiceRules.State emitted = result == null ? null : result.emitted();
            out.writeBoolean(emitted != null);
            if (emitted != null) {
                writeString(out, service);
                writeString(out, emitted.status());
                out.writeLong(emitted.changedAtMs());
                out.writeLong(emitted.lastHeartbeatMs());
            }
            out.writeLong(timer);
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

package platform.sessions;

import java.util.ArrayList;
import java.util.List;

/**
 * The sessionization state machine of one user, without Spark: {@code on_events},
 * {@code advance} and {@code timer_for} of {@code platform_pipelines/state/sessions.py}, line for
 * line. {@link Sessionizer} runs it on {@code flatMapGroupsWithState}; {@link SessionsReplay}
 * runs it on generated cases for the parity test.
 */
public final class UserSessions {
    static final String LOGOUT = "logout";
    static final String CHECKOUT = "checkout";
    static final String PURCHASE = "purchase";

    private final long gapMs;
    private final int maxPages;

    /**
     * @param gapMs event-time inactivity that closes a session
     * @param maxPages how many of the last visited pages a session keeps
     */
    public UserSessions(long gapMs, int maxPages) {
        this.gapMs = gapMs;
        this.maxPages = maxPages;
    }

    /**
     * A clickstream event, in the specification's {@code event_order}: event time, then id, type,
     * page (null first) and amount (null first, then by value, NaN last, -0.0 equal to 0.0).
     */
    record Event(long timeMs, String id, String type, String page, Double amount)
            implements Comparable<Event> {
        @Override
        public int compareTo(Event other) {
            int order = Long.compare(timeMs, other.timeMs);
            order = order != 0 ? order : byCodePoint(id, other.id);
            order = order != 0 ? order : byCodePoint(type, other.type);
            order = order != 0 ? order : Boolean.compare(page != null, other.page != null);
            order = order != 0 || page == null ? order : byCodePoint(page, other.page);
            return order != 0 ? order : compareAmounts(amount, other.amount);
        }

        /** Python's order of strings. {@code String.compareTo} compares UTF-16 units, which
         * puts U+10000 and above before U+E000..U+FFFF. */
        private static int byCodePoint(String a, String b) {
            int length = Math.min(a.length(), b.length());
            for (int i = 0; i < length; i++) {
                char x = a.charAt(i);
                char y = b.charAt(i);
                if (x != y) {
                    // at the first difference a surrogate starts (or continues, in both) a code
                    // point above every one that a non-surrogate unit encodes
                    boolean xHigh = Character.isSurrogate(x);
                    return xHigh == Character.isSurrogate(y) ? x - y : xHigh ? 1 : -1;
                }
            }
            return a.length() - b.length();
        }

        private static int compareAmounts(Double a, Double b) {
            int order = Integer.compare(rank(a), rank(b));
            if (order != 0 || rank(a) != 1) {
                return order;
            }
            return a < b ? -1 : a > b ? 1 : 0; // not Double.compare: -0.0 == 0.0, as in Python
        }

        private static int rank(Double amount) {
            return amount == null ? 0 : amount.isNaN() ? 2 : 1;
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

        Open copy() {
            Open copy = new Open(user, start);
            copy.last = last;
            copy.count = count;
            copy.pages.addAll(pages);
            copy.pageTimes.addAll(pageTimes);
            copy.checkout = checkout;
            copy.purchased = purchased;
            copy.revenue = revenue;
            return copy;
        }
    }

    /** A finished session: the Python ClosedSession. */
    record Closed(String user, String sessionId, long start, long end, double durationSeconds,
            long count, List<String> lastPages, boolean checkout, boolean purchased,
            double revenue, String reason) {}

    /** Everything kept for one user: the Python UserState ({@code open} may be null). */
    record State(Open open, List<Event> pending) {
        boolean empty() {
            return open == null && pending.isEmpty();
        }
    }

    /** The user's state afterwards (null when nothing is left) and the sessions that closed. */
    record Result(State state, List<Closed> closed) {}

    /** Hold a batch's events (any order) and release whatever the watermark has reached. */
    Result onEvents(State state, String user, Iterable<Event> events, long watermarkMs) {
        ArrayList<Event> pending = new ArrayList<>(state == null ? List.of() : state.pending());
        for (Event event : events) {
            pending.add(after(pending, event), event);
        }
        return advance(new State(state == null ? null : state.open(), pending), user, watermarkMs);
    }

    /** Where {@code event} goes in the ordered {@code pending}: after its equals, as
     * Python's {@code bisect.insort}. */
    private static int after(List<Event> pending, Event event) {
        int low = 0;
        int high = pending.size();
        while (low < high) {
            int middle = (low + high) >>> 1;
            if (pending.get(middle).compareTo(event) <= 0) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        return low;
    }

    /** Release the held events at or before the watermark, in order, and close the sessions the
     * watermark has finished (for a batch's events and when the user's timer fires). */
    Result advance(State state, String user, long watermarkMs) {
        state = state == null ? new State(null, List.of()) : state;
        List<Event> pending = state.pending();
        int cut = 0;
        while (cut < pending.size() && pending.get(cut).timeMs() <= watermarkMs) {
            cut++;
        }
        Open open = state.open() == null ? null : state.open().copy(); // the caller's stays
        List<Closed> closed = new ArrayList<>();
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
        if (open != null && open.last + gapMs <= watermarkMs) {
            closed.add(close(open, "timeout"));
            open = null;
        }
        State after = new State(open, new ArrayList<>(pending.subList(cut, pending.size())));
        return new Result(after.empty() ? null : after, closed);
    }

    /** The event time at which the user needs attention: the first held event's time or the open
     * session's last event + gap, whichever comes first. */
    long timerFor(State state) {
        long timer = state.pending().isEmpty() ? Long.MAX_VALUE : state.pending().get(0).timeMs();
        return state.open() == null ? timer : Math.min(timer, state.open().last + gapMs);
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

    /** The finished form of {@code open}; its id is derived from user and start. */
    private static Closed close(Open open, String reason) {
        return new Closed(open.user, open.user + "-" + open.start, open.start, open.last,
                (open.last - open.start) / 1000.0, open.count, List.copyOf(open.pages),
                open.checkout, open.purchased, open.revenue, reason);
    }
}

// The latency section's producer: sends prepared records at a fixed rate and notes when it sent
// each one. kafka-python tops out near 4,000 records/s beside Spark on 2 cores; this reaches the
// 10,000/s the benchmark asks for at a fraction of a core.
//
// Run as a single source file (no build step), on the Kafka broker's own jars:
//   java -cp '.local/jars/kafka-broker/*' benchmarks/harness/PacedProducer.java \
//        BOOTSTRAP TOPIC RATE RECORDS_TSV SENT_TXT [STARTED_TXT]
// RECORDS_TSV: one record per line, "key<TAB>value" (UTF-8, neither holds a tab or a newline),
// or "key<TAB>value<TAB>N": a record dated on the send clock, whose value's @EVENT_TIME@ becomes
// the moment record N is due (N: the record itself, or the original a copy repeats), so that
// event time starts when sending does, however long reading the records took.
// SENT_TXT: for each input line, the epoch milliseconds of its send() call, one per line.
// STARTED_TXT: written (atomically) with the epoch milliseconds of the first send's due time,
// as sending starts: the harness starts what it times beside the load then.
// Exit status 0 only when the broker acknowledged every record (acks=all).

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class PacedProducer {
  static final String EVENT_TIME = "@EVENT_TIME@";
  // platform_pipelines.core.times.iso: 2026-11-22T10:00:00.000Z
  static final DateTimeFormatter ISO =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  public static void main(String[] args) throws Exception {
    if (args.length != 5 && args.length != 6) {
      System.err.println(
          "usage: PacedProducer BOOTSTRAP TOPIC RATE RECORDS_TSV SENT_TXT [STARTED_TXT]");
      System.exit(2);
    }
    String topic = args[1];
    double rate = Double.parseDouble(args[2]);
    List<String> lines = Files.readAllLines(Path.of(args[3]), StandardCharsets.UTF_8);
    Properties props = new Properties();
    props.put("bootstrap.servers", args[0]);
    props.put("acks", "all");
    props.put("linger.ms", "5");
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    long[] sentMs = new long[lines.size()];
    AtomicInteger failed = new AtomicInteger();
    AtomicReference<Exception> firstError = new AtomicReference<>();
    long started;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      // The first send() would block on fetching the topic's metadata, and the records behind
      // it would then go out in a burst to catch up: fetch it before the clock starts.
      producer.partitionsFor(topic);
      started = System.nanoTime();
      long startedMs = System.currentTimeMillis();
      if (args.length == 6) {
        Path done = Path.of(args[5]);
        Path part = Path.of(args[5] + ".part");
        Files.writeString(part, Long.toString(startedMs), StandardCharsets.UTF_8);
        Files.move(part, done, StandardCopyOption.ATOMIC_MOVE);
      }
      for (int i = 0; i < lines.size(); i++) {
        long due = started + (long) (i * 1e9 / rate);
        long wait = due - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait);
        }
        String line = lines.get(i);
        int tab = line.indexOf('\t');
        byte[] key = tab > 0 ? line.substring(0, tab).getBytes(StandardCharsets.UTF_8) : null;
        String text = line.substring(tab + 1);
        int dated = text.lastIndexOf('\t');
        if (dated >= 0) {
          long original = Long.parseLong(text.substring(dated + 1));
          Instant at = Instant.ofEpochMilli(startedMs + (long) (original * 1000 / rate));
          text = text.substring(0, dated).replace(EVENT_TIME, ISO.format(at));
        }
        byte[] value = text.getBytes(StandardCharsets.UTF_8);
        sentMs[i] = System.currentTimeMillis();
        producer.send(new ProducerRecord<>(topic, key, value), (metadata, error) -> {
          if (error != null) {
            failed.incrementAndGet();
            firstError.compareAndSet(null, error);
          }
        });
      }
      producer.flush();
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    try (BufferedWriter out = Files.newBufferedWriter(Path.of(args[4]), StandardCharsets.UTF_8)) {
      for (long ms : sentMs) {
        out.write(Long.toString(ms));
        out.newLine();
      }
    }
    System.out.printf("sent %d records in %.2f s (%.0f/s), %d failed%n",
        lines.size(), seconds, lines.size() / seconds, failed.get());
    if (failed.get() > 0) {
      System.err.println("first failure: " + firstError.get());
      System.exit(1);
    }
  }
}

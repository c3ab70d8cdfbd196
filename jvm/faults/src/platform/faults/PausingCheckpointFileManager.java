package platform.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;

/**
 * Spark's checkpoint file manager with crash points: a test (or {@code platform chaos}) can stop a
 * query at any checkpoint file it writes, so that a SIGKILL lands exactly there.
 *
 * <p>Spark writes every checkpoint file (the query's {@code metadata}, {@code sources/},
 * {@code offsets/}, {@code commits/}, the state store's schema, metadata, changelog and snapshot
 * files) to a temporary file and renames it. This class sees each rename twice: {@code temp} (the
 * temporary file is complete, the final name does not exist yet) and {@code done} (renamed).
 *
 * <p>Configured by the environment of the driver's JVM (set only in fault-injection runs):
 * <ul>
 *   <li>{@code PLATFORM_FAULT_DIR}: every write is appended to {@code writes.log} there
 *       ({@code <phase> <final path>} per line, in order), and a pause leaves
 *       {@code paused-<n>.txt} there.
 *   <li>{@code PLATFORM_FAULT_PAUSE_AT}: points separated by {@code ;}, each
 *       {@code <phase>:<regex>} (the regex is searched in the final path). The first write that
 *       reaches a point pauses there. Each point pauses once.
 *   <li>{@code PLATFORM_FAULT_PAUSE_EVERY}: a regex; every write whose final path matches it
 *       pauses, at both phases.
 * </ul>
 *
 * <p>A pause writes {@code paused-<n>.txt} (the point, then {@code <phase> <final path>}) and
 * blocks the writing thread until {@code resume-<n>} appears in the same folder: the caller kills
 * the process at that exact moment, or copies what is on disk and lets the write go on.
 */
public class PausingCheckpointFileManager extends FileContextBasedCheckpointFileManager {

  private static final Points POINTS = Points.fromEnvironment();

  public PausingCheckpointFileManager(org.apache.hadoop.fs.Path path, Configuration conf) {
    super(path, conf);
  }

  @Override
  public void renameTempFile(
      org.apache.hadoop.fs.Path src, org.apache.hadoop.fs.Path dst, boolean overwrite) {
    POINTS.reach("temp", dst.toString());
    super.renameTempFile(src, dst, overwrite);
    POINTS.reach("done", dst.toString());
  }

  /** The configured points, the trace file and the pause markers of this JVM. */
  static final class Points {
    private final Path dir;
    private final List<String> phases = new ArrayList<>();
    private final List<Pattern> patterns = new ArrayList<>();
    private final boolean[] used;
    private final Pattern every;
    private int paused;

    private Points(Path dir, String spec, String every) {
      this.dir = dir;
      this.every = every == null || every.isEmpty() ? null : Pattern.compile(every);
      for (String point : spec.split(";")) {
        String trimmed = point.trim();
        if (trimmed.isEmpty()) {
          continue;
        }
        int colon = trimmed.indexOf(':');
        if (colon < 0) {
          throw new IllegalArgumentException(
              "PLATFORM_FAULT_PAUSE_AT: write each point as <phase>:<regex>, got " + trimmed);
        }
        phases.add(trimmed.substring(0, colon));
        patterns.add(Pattern.compile(trimmed.substring(colon + 1)));
      }
      this.used = new boolean[patterns.size()];
    }

    static Points fromEnvironment() {
      String dir = System.getenv("PLATFORM_FAULT_DIR");
      String spec = System.getenv("PLATFORM_FAULT_PAUSE_AT");
      String every = System.getenv("PLATFORM_FAULT_PAUSE_EVERY");
      return new Points(dir == null ? null : Paths.get(dir), spec == null ? "" : spec, every);
    }

    void reach(String phase, String path) {
      if (dir == null) {
        return;
      }
      int pause = claim(phase, path);
      if (pause > 0) {
        waitForResume(dir.resolve("resume-" + pause));
      }
    }

    private synchronized int claim(String phase, String path) {
      String line = phase + " " + path + "\n";
      append(dir.resolve("writes.log"), line);
      for (int i = 0; i < patterns.size(); i++) {
        if (!used[i] && phases.get(i).equals(phase) && patterns.get(i).matcher(path).find()) {
          used[i] = true;
          return mark(phases.get(i) + ":" + patterns.get(i).pattern(), line);
        }
      }
      if (every != null && every.matcher(path).find()) {
        return mark("every:" + every.pattern(), line);
      }
      return 0;
    }

    private int mark(String point, String line) {
      paused += 1;
      Path partial = dir.resolve(".paused-" + paused + ".partial");
      write(partial, point + "\n" + line);
      move(partial, dir.resolve("paused-" + paused + ".txt"));
      return paused;
    }

    private static void waitForResume(Path resume) {
      while (!Files.exists(resume)) {
        try {
          Thread.sleep(5);
        } catch (InterruptedException ignored) {
          // A paused write stays paused until it is resumed or the process is killed.
        }
      }
    }

    private static void append(Path file, String text) {
      try {
        Files.writeString(
            file,
            text,
            StandardCharsets.UTF_8,
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private static void write(Path file, String text) {
      try {
        Files.writeString(file, text, StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    private static void move(Path from, Path to) {
      try {
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}

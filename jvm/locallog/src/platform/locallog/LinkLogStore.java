package platform.locallog;

import io.delta.storage.HDFSLogStore;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * Delta's log store for tables on a local disk: each commit is written to a temporary file and
 * published with a hard link, which the operating system makes atomic and refuses when the
 * commit file exists, across processes.
 *
 * <p>Delta's default for a local disk, HDFSLogStore, asks Hadoop's FileContext whether the commit
 * file exists and then renames over it: the local file system runs a {@code stat} or
 * {@code readlink} process for the checks (a few of them per commit, every batch and table), and
 * a second driver could write the same version between the check and the rename, which replaces
 * the first commit. Here link(2) does both in one step: the loser gets the
 * FileAlreadyExistsException on which Delta reads the winning commit, checks for conflicts and
 * retries on the next version. Overwrites (Delta's {@code _last_checkpoint}) are an atomic move.
 *
 * <p>As with HDFSLogStore, the log's folder must exist (Delta creates it before a table's first
 * commit): a writer whose table was deleted meanwhile fails instead of starting a log without its
 * first versions. A disk that refuses hard links (some network and FUSE mounts) gets
 * HDFSLogStore's write. Reads, listings and other file systems stay HDFSLogStore's.
 */
public class LinkLogStore extends HDFSLogStore {
  public LinkLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    org.apache.hadoop.fs.FileSystem fs = path.getFileSystem(conf);
    if (!(fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem)) {
      super.write(path, actions, overwrite, conf);
      return;
    }
    java.nio.file.Path target = java.nio.file.Paths.get(fs.makeQualified(path).toUri());
    java.nio.file.Path folder = target.getParent();
    java.nio.file.Path temp =
        folder.resolve("." + target.getFileName() + "." + UUID.randomUUID() + ".tmp");
    try {
      List<String> lines = new ArrayList<>();
      actions.forEachRemaining(lines::add);
      try (OutputStream out = Files.newOutputStream(temp)) {
        for (String line : lines) {
          out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        }
      }
      if (overwrite) {
        Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        // A checksum a checksummed file system once wrote beside it would no longer match.
        Files.deleteIfExists(folder.resolve("." + target.getFileName() + ".crc"));
        return;
      }
      try {
        Files.createLink(target, temp);
      } catch (FileAlreadyExistsException e) {
        throw new FileAlreadyExistsException(path.toString()); // another writer won
      } catch (FileSystemException | UnsupportedOperationException e) {
        Files.deleteIfExists(temp); // this disk refuses hard links
        super.write(path, lines.iterator(), false, conf);
      }
    } finally {
      Files.deleteIfExists(temp);
    }
  }
}

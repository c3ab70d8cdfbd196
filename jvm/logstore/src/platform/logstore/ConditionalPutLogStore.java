package platform.logstore;

import io.delta.storage.S3SingleDriverLogStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.util.Iterator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.awscore.exception.AwsServiceException;

/**
 * Delta's log store for S3 with every commit written by a conditional PUT (If-None-Match: *).
 *
 * <p>Delta's S3SingleDriverLogStore checks that a commit file is absent, then writes it: two
 * drivers committing the same version both pass the check and the second PUT replaces the first
 * commit. Here S3 itself refuses the second PUT (HTTP 412), Hadoop's S3A reports that as an
 * IOException, and this store turns it into the FileAlreadyExistsException on which Delta reads
 * the winning commit, checks for conflicts and retries on the next version. Overwrites (Delta's
 * _last_checkpoint) and reads, listings and checkpoints stay S3SingleDriverLogStore's.
 */
public class ConditionalPutLogStore extends S3SingleDriverLogStore {
  /** The S3A create option that sends If-None-Match: * with the object's PUT. */
  static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";

  public ConditionalPutLogStore(Configuration hadoopConf) {
    super(hadoopConf);
  }

  @Override
  public void write(Path path, Iterator<String> actions, Boolean overwrite, Configuration conf)
      throws IOException {
    if (overwrite) {
      super.write(path, actions, true, conf);
      return;
    }
    try (FSDataOutputStream out =
        (FSDataOutputStream)
            path.getFileSystem(conf)
                .createFile(path)
                .overwrite(false)
                .must(CONDITIONAL_CREATE, true)
                .build()) {
      while (actions.hasNext()) {
        out.write((actions.next() + "\n").getBytes(StandardCharsets.UTF_8));
      }
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
      throw new FileAlreadyExistsException(path.toString());
    } catch (IOException e) {
      if (anotherWriterWon(e)) {
        throw new FileAlreadyExistsException(path.toString());
      }
      throw e;
    }
  }

  /**
   * Whether S3 refused the PUT because the object exists (412 Precondition Failed) or because
   * another conditional PUT of it is in flight (409 ConditionalRequestConflict).
   */
  static boolean anotherWriterWon(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof AwsServiceException) {
        AwsServiceException refused = (AwsServiceException) t;
        AwsErrorDetails details = refused.awsErrorDetails();
        String code = details == null ? null : details.errorCode();
        return refused.statusCode() == 412 || "ConditionalRequestConflict".equals(code);
      }
    }
    return false;
  }
}

// SPDX-License-Identifier: Apache-2.0
// pc.py's java workload: BatchFileWriter (the path of Spark's local
// df.write.format("bfo")) writes the tree SRC under ROOT, BATCH entries per
// write() call, durability BATCH, replace on; after each write() returned
// with every entry OK it prints "durable PATH" for each entry of that batch:
// what the API reported durable, which pc.py holds it to after any later cut.
//
//   java -Dbfo.library.path=BUILD -cp bfo-java.jar:jna.jar PcJavaWriter.java ROOT SRC BATCH
import io.github.bfo.BatchFileWriter;
import io.github.bfo.WriteEntry;
import io.github.bfo.WriteResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

public class PcJavaWriter {
    static int mode(Path p) throws IOException {
        int m = 0;
        Set<PosixFilePermission> s = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
        for (PosixFilePermission b : s)
            m |= 1 << (8 - b.ordinal());
        return m;
    }

    public static void main(String[] args) throws IOException {
        Path root = Paths.get(args[0]), src = Paths.get(args[1]);
        int per = Integer.parseInt(args[2]);
        List<Path> all;
        try (Stream<Path> s = Files.walk(src)) {
            all = s.filter(p -> !p.equals(src)).sorted().toList();
        }
        List<WriteEntry> batch = new ArrayList<>();
        try (BatchFileWriter w = BatchFileWriter.builder(root).durability(BatchFileWriter.Durability.BATCH)
                .replace(true).build()) {
            for (int i = 0; i < all.size(); i++) {
                Path p = all.get(i);
                String rel = src.relativize(p).toString();
                if (Files.isSymbolicLink(p))
                    batch.add(WriteEntry.symlink(rel, Files.readSymbolicLink(p).toString()));
                else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))
                    batch.add(WriteEntry.directory(rel).mode(mode(p)));
                else
                    batch.add(WriteEntry.file(rel, Files.readAllBytes(p)).mode(mode(p))
                            .lastModifiedTime(Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS)));
                if (batch.size() == per || i == all.size() - 1) {
                    List<WriteResult> rs = w.write(batch);
                    StringBuilder out = new StringBuilder();
                    for (WriteResult r : rs) {
                        r.orThrow();
                        out.append("durable ").append(r.path()).append('\n');
                    }
                    out.append("batch\n");
                    System.out.print(out);
                    System.out.flush();
                    batch.clear();
                }
            }
        }
    }
}

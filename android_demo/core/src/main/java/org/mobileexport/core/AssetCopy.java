package org.mobileexport.core;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Copies an exported file out of the assets to a real file (ExecuTorch maps a path; ONNX Runtime reads
 * the .onnx and its .data from a path), once per export. The copy goes to a unique temporary name, is
 * synced to disk and checked against the manifest's size and sha256 before it is renamed into place; a
 * stamp beside it then records that sha256. Later starts reuse the file when the stamp matches and the
 * size is right (a torn or truncated file is copied again). One process-wide lock: two loads never copy
 * the same file at once.
 */
public final class AssetCopy {
    private static final Object LOCK = new Object();

    private AssetCopy() {
    }

    /** {@code name} from {@code source} as a verified file in {@code dir}; copied only when needed. */
    public static File toFile(AssetSource source, String name, File dir, long bytes, String sha256) throws IOException {
        synchronized (LOCK) {
            File out = new File(dir, name);
            File stamp = new File(dir, name + ".sha256");
            if (out.isFile() && out.length() == bytes && stamp.isFile()
                    && sha256.equalsIgnoreCase(new String(Files.readAllBytes(stamp.toPath()), StandardCharsets.US_ASCII).trim())) {
                return out;
            }
            Files.deleteIfExists(stamp.toPath()); // no stamp may vouch for a file while it is replaced
            File tmp = File.createTempFile(name + ".", ".tmp", dir);
            try {
                String got = copy(source, name, tmp);
                if (tmp.length() != bytes) {
                    throw new IOException(name + ": copied " + tmp.length() + " bytes, the manifest says " + bytes);
                }
                if (!got.equalsIgnoreCase(sha256)) {
                    throw new IOException(name + ": sha256 " + got + " is not the manifest's " + sha256);
                }
                move(tmp, out);
                File stampTmp = File.createTempFile(name + ".", ".sha256.tmp", dir);
                try (FileOutputStream os = new FileOutputStream(stampTmp)) {
                    os.write(sha256.getBytes(StandardCharsets.US_ASCII));
                    os.getFD().sync();
                }
                move(stampTmp, stamp);
                return out;
            } finally {
                Files.deleteIfExists(tmp.toPath());
            }
        }
    }

    private static String copy(AssetSource source, String name, File dest) throws IOException {
        MessageDigest digest;
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IOException("no SHA-256 on this platform", e);
        }
        try (InputStream in = source.open(name); FileOutputStream os = new FileOutputStream(dest)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                os.write(buf, 0, n);
                digest.update(buf, 0, n);
            }
            os.getFD().sync(); // on disk before the rename makes it the file a later start trusts
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : digest.digest()) {
            hex.append(String.format(java.util.Locale.ROOT, "%02x", b));
        }
        return hex.toString();
    }

    private static void move(File from, File to) throws IOException {
        try {
            Files.move(from.toPath(), to.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from.toPath(), to.toPath(), StandardCopyOption.REPLACE_EXISTING);
        }
    }
}

package org.mobileexport.core;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * A model file's own content hash, carried inside it as {@code mobile-export-sha256:} and 64 hex digits (Python's
 * {@code mobile_export.assets.identity}): the sha256 of its files (the model, then its data file) with those
 * digits read as ASCII zeros. A file whose bytes changed after export is refused before its assets are used.
 */
public final class Identity {
    public static final String MARKER = "mobile-export-sha256:";
    private static final int DIGITS = 64;
    private static final int CHUNK = 1 << 20;

    private Identity() {
    }

    /** Throws IOException unless {@code files} hash to the identity {@code value} they carry. */
    public static void verify(List<File> files, String value, String shown) throws IOException {
        if (value == null || !value.startsWith(MARKER) || value.length() != MARKER.length() + DIGITS
                || !value.substring(MARKER.length()).matches("[0-9a-f]{64}")) {
            throw new IOException(shown + " carries a malformed identity; export it again");
        }
        byte[] needle = value.getBytes(StandardCharsets.US_ASCII);
        long at = find(files.get(0), needle);
        if (at < 0) {
            throw new IOException(shown + " does not hold the identity it carries; export it again");
        }
        String actual = digest(files, at + MARKER.length());
        if (!actual.equals(value.substring(MARKER.length()))) {
            throw new IOException(shown + " hashes to sha256 " + actual.substring(0, 16) + "..., not the "
                    + value.substring(MARKER.length(), MARKER.length() + 16) + "... it carries (changed or "
                    + "corrupted after export); restore it or export again");
        }
    }

    /** Where {@code needle} first starts in the file, or -1; read in chunks. */
    static long find(File file, byte[] needle) throws IOException {
        byte[] window = new byte[CHUNK + needle.length];
        int kept = 0;
        long base = 0; // file offset of window[0]
        try (InputStream in = Files.newInputStream(file.toPath())) {
            for (int n; (n = in.read(window, kept, CHUNK)) > 0; ) {
                int len = kept + n;
                outer:
                for (int i = 0; i + needle.length <= len; i++) {
                    for (int j = 0; j < needle.length; j++) {
                        if (window[i + j] != needle[j]) {
                            continue outer;
                        }
                    }
                    return base + i;
                }
                kept = Math.min(len, needle.length - 1);
                System.arraycopy(window, len - kept, window, 0, kept);
                base += len - kept;
            }
        }
        return -1;
    }

    /** sha256 (hex) of {@code files} in order, the first file's digits at {@code digitsAt} read as zeros. */
    static String digest(List<File> files, long digitsAt) throws IOException {
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
        byte[] buf = new byte[CHUNK];
        for (int f = 0; f < files.size(); f++) {
            long position = 0;
            try (InputStream in = Files.newInputStream(files.get(f).toPath())) {
                for (int n; (n = in.read(buf)) > 0; ) {
                    if (f == 0) {
                        for (long p = Math.max(position, digitsAt); p < Math.min(position + n, digitsAt + DIGITS); p++) {
                            buf[(int) (p - position)] = '0';
                        }
                    }
                    sha.update(buf, 0, n);
                    position += n;
                }
            }
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : sha.digest()) {
            hex.append(String.format("%02x", b & 0xff));
        }
        return hex.toString();
    }
}

package org.mobileexport.core;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.json.JSONException;
import org.json.JSONObject;

/** Where the exported files come from: a folder on the JVM, the APK's assets on Android. */
public interface AssetSource {
    /** Opens the named file (a path relative to the export folder, with '/' separators). */
    InputStream open(String name) throws IOException;

    /** Exported files in a folder (e.g. {@code out/demo}). */
    static AssetSource directory(File root) {
        return name -> Files.newInputStream(new File(root, name).toPath());
    }

    default byte[] bytes(String name) throws IOException {
        try (InputStream in = open(name)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                out.write(buf, 0, n);
            }
            return out.toByteArray();
        }
    }

    default JSONObject json(String name) throws IOException {
        try {
            return new JSONObject(new String(bytes(name), StandardCharsets.UTF_8));
        } catch (JSONException e) {
            throw new IOException(name + " is not valid JSON: " + e.getMessage(), e);
        }
    }
}

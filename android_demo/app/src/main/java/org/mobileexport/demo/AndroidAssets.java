package org.mobileexport.demo;

import android.content.res.AssetManager;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.mobileexport.core.AssetSource;

/** The exported files as APK assets (under assets/model/, copied there by `make android-assets`). */
final class AndroidAssets implements AssetSource {
    static final String ROOT = "model/";
    private final AssetManager assets;

    AndroidAssets(AssetManager assets) {
        this.assets = assets;
    }

    @Override
    public InputStream open(String name) throws IOException {
        return assets.open(ROOT + name);
    }

    boolean exists(String name) {
        try {
            open(name).close();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The asset as a real file in {@code dir} (ExecuTorch maps a path; ONNX Runtime reads the .onnx
     * and its .data from a path). Copied once: a stamp beside the file records the manifest's sha256
     * of the copied bytes, so later starts (and rotations) reuse the file until a new export ships.
     */
    File toFile(String name, File dir, String sha256) throws IOException {
        File out = new File(dir, name);
        File stamp = new File(dir, name + ".sha256");
        if (out.isFile() && stamp.isFile()
                && sha256.equals(new String(Files.readAllBytes(stamp.toPath()), StandardCharsets.US_ASCII).trim())) {
            return out;
        }
        File tmp = new File(dir, name + ".tmp");
        try (InputStream in = open(name); OutputStream os = new FileOutputStream(tmp)) {
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) {
                os.write(buf, 0, n);
            }
        }
        if (!tmp.renameTo(out)) {
            throw new IOException("could not write " + out);
        }
        Files.write(stamp.toPath(), sha256.getBytes(StandardCharsets.US_ASCII));
        return out;
    }
}

package org.mobileexport.demo;

import android.content.res.AssetManager;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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
        try (InputStream in = open(name)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Copies an asset to a real file (ExecuTorch's Module.load takes a path). */
    File toFile(String name, File dir) throws IOException {
        File out = new File(dir, name);
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
        return out;
    }
}

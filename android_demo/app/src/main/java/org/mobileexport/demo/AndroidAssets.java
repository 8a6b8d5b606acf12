package org.mobileexport.demo;

import android.content.res.AssetManager;
import java.io.IOException;
import java.io.InputStream;
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
}

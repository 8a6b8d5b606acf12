package org.mobileexport.core;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.json.JSONObject;

/**
 * The assets one model file carries (Python's {@code mobile_export.assets.bundle}): a deflated zip in base64
 * text of the card ({@code card.json}: what manifest.json says of this artifact, with its golden examples),
 * {@code labels.json} and {@code tokenizer/}. Read as untrusted input: sizes are bounded while inflating, member
 * names must be plain relative paths, and the model file's own identity ({@link Identity}) is checked by the
 * caller before its assets are trusted.
 */
public final class AssetBundle implements AssetSource {
    public static final String ASSETS_KEY = "mobile_export_assets";
    public static final String IDENTITY_KEY = "mobile_export_identity";
    /** The card: read it as a manifest ({@link Manifest}, {@link SelfTest}) with this name. */
    public static final String CARD = "card.json";

    static final int MAX_TEXT_CHARS = 48 << 20;
    static final int MAX_MEMBERS = 64;
    static final long MAX_MEMBER_BYTES = 64L << 20;
    static final long MAX_TOTAL_BYTES = 160L << 20;
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*");

    private final Map<String, byte[]> files;
    private final String shown;

    private AssetBundle(Map<String, byte[]> files, String shown) {
        this.files = files;
        this.shown = shown;
    }

    /** The assets {@code model} carries; IOException naming {@code shown} when it carries none or they are broken. */
    public static AssetBundle read(CarriedAssets model, String shown) throws IOException {
        String text;
        try {
            text = model.carried(ASSETS_KEY);
        } catch (Exception e) {
            throw new IOException(shown + ": its bundled assets could not be read (" + e.getMessage() + ")", e);
        }
        if (text == null) {
            throw new IOException(shown + " carries no bundled assets (exported with --no-bundle or by an older "
                    + "version); ship its export folder instead");
        }
        return parse(text, shown);
    }

    /** The files of a block's text, every limit checked while it inflates. */
    public static AssetBundle parse(String text, String shown) throws IOException {
        String bad = shown + " carries a broken bundle (";
        if (text.length() > MAX_TEXT_CHARS) {
            throw new IOException(bad + text.length() + " characters, over " + MAX_TEXT_CHARS + ")");
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            throw new IOException(bad + "not base64)", e);
        }
        Map<String, byte[]> files = new HashMap<>();
        long total = 0;
        try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(raw), StandardCharsets.UTF_8)) {
            for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
                String name = e.getName();
                if (!NAME.matcher(name).matches() || ("/" + name + "/").contains("/../")) {
                    throw new IOException(bad + "member '" + name + "' is not a plain path)");
                }
                if (files.size() >= MAX_MEMBERS) {
                    throw new IOException(bad + "over " + MAX_MEMBERS + " members)");
                }
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                byte[] buf = new byte[1 << 16];
                for (int n; (n = zip.read(buf)) > 0; ) {
                    total += n;
                    if (out.size() + n > MAX_MEMBER_BYTES || total > MAX_TOTAL_BYTES) {
                        throw new IOException(bad + name + " inflates past the limits of " + MAX_MEMBER_BYTES
                                + " and " + MAX_TOTAL_BYTES + " bytes)");
                    }
                    out.write(buf, 0, n);
                }
                files.put(name, out.toByteArray());
            }
        } catch (IOException e) {
            if (e.getMessage() != null && e.getMessage().startsWith(bad)) {
                throw e;
            }
            throw new IOException(bad + "not a readable zip: " + e.getMessage() + ")", e);
        }
        if (!files.containsKey(CARD)) {
            throw new IOException(bad + "no " + CARD + ")");
        }
        return new AssetBundle(files, shown);
    }

    @Override
    public InputStream open(String name) throws IOException {
        byte[] data = files.get(name);
        if (data == null) {
            throw new FileNotFoundException(shown + " carries no " + name);
        }
        return new ByteArrayInputStream(data);
    }

    @Override
    public JSONObject json(String name) throws IOException {
        try {
            return AssetSource.super.json(name);
        } catch (IOException e) {
            throw new IOException(shown + "'s bundled " + e.getMessage(), e);
        }
    }

    /** Whether the model carries {@code name} (e.g. labels.json: a classifier's only). */
    public boolean has(String name) {
        return files.containsKey(name);
    }
}

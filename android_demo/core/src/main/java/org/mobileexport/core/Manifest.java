package org.mobileexport.core;

import java.io.IOException;
import org.json.JSONArray;
import org.json.JSONException;
import org.json.JSONObject;

/** What the app reads from the export's {@code manifest.json} besides the golden examples. */
public final class Manifest {
    private final JSONObject json;

    public Manifest(JSONObject json) {
        this.json = json;
    }

    public static Manifest load(AssetSource source, String name) throws IOException {
        return new Manifest(source.json(name));
    }

    /** The self-test's largest acceptable max |logit diff| for {@code file}, as the export measured it. */
    public double selfTestTolerance(String file) throws IOException {
        try {
            return artifact(file).getDouble("self_test_max_abs_diff");
        } catch (JSONException e) {
            throw new IOException("manifest.json gives no self-test tolerance for " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * How many model inputs {@code file} takes: the first of input_ids, attention_mask, token_type_ids (its
     * family's: DistilBERT takes two; an entry without {@code inputs} takes all three).
     */
    public int inputCount(String file) throws IOException {
        try {
            JSONObject a = artifact(file);
            JSONArray inputs = a.optJSONArray("inputs");
            if (inputs == null && a.has("calling_convention")) {
                inputs = a.getJSONObject("calling_convention").optJSONArray("inputs");
            }
            int n = inputs == null ? 3 : inputs.length();
            if (n < 2 || n > 3) {
                throw new IOException("manifest.json gives " + file + " " + n + " inputs; an export takes 2 or 3");
            }
            return n;
        } catch (JSONException e) {
            throw new IOException("manifest.json has no valid entry for " + file + ": " + e.getMessage(), e);
        }
    }

    /** The file name of the only artifact it describes: a card's ({@link AssetBundle#CARD}), whatever the file is called now. */
    public String soleArtifact() throws IOException {
        try {
            JSONArray artifacts = json.getJSONArray("artifacts");
            if (artifacts.length() != 1) {
                throw new IOException("the card describes " + artifacts.length() + " artifacts, not one");
            }
            return artifacts.getJSONObject(0).getString("file");
        } catch (JSONException e) {
            throw new IOException("the card has no valid artifact entry: " + e.getMessage(), e);
        }
    }

    /** The sha256 (hex) the export recorded for {@code path}; verifies the one-time copy out of the APK. */
    public String sha256(String path) throws IOException {
        try {
            return file(path).getString("sha256");
        } catch (JSONException e) {
            throw new IOException("manifest.json gives no sha256 for " + path + ": " + e.getMessage(), e);
        }
    }

    /** The size in bytes the export recorded for {@code path}. */
    public long bytes(String path) throws IOException {
        try {
            return file(path).getLong("bytes");
        } catch (JSONException e) {
            throw new IOException("manifest.json gives no size for " + path + ": " + e.getMessage(), e);
        }
    }

    private JSONObject file(String path) throws IOException {
        try {
            JSONArray files = json.getJSONArray("files");
            for (int i = 0; i < files.length(); i++) {
                JSONObject f = files.getJSONObject(i);
                if (path.equals(f.optString("path"))) {
                    return f;
                }
            }
        } catch (JSONException e) {
            throw new IOException("manifest.json has no valid files list: " + e.getMessage(), e);
        }
        throw new IOException("manifest.json lists no " + path);
    }

    private JSONObject artifact(String file) throws IOException, JSONException {
        JSONArray artifacts = json.getJSONArray("artifacts");
        for (int i = 0; i < artifacts.length(); i++) {
            JSONObject a = artifacts.getJSONObject(i);
            if (file.equals(a.optString("file"))) {
                return a;
            }
        }
        throw new IOException("manifest.json lists no artifact " + file);
    }
}

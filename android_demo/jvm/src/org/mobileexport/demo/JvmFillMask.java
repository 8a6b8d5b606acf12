package org.mobileexport.demo;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.json.JSONArray;
import org.json.JSONObject;
import org.mobileexport.core.MaskFill;
import org.mobileexport.core.TextEncoder;
import org.mobileexport.core.TextModel;

/**
 * The library's fill-mask on the JVM: a lone fill-mask .onnx (with its data file) opened with the app's
 * {@link OrtRunner} through {@link TextModel}, its tokenizer the one the file carries. Writes every id's token text
 * ({@link TextEncoder#tokenOf}), the top {@code K} fills of each line of a text file and what fillMask refuses
 * (a text without a mask, k of 0), as JSON.
 *
 * <p>Usage: {@code JvmFillMask MODEL_ONNX TEXTS K OUT_JSON}.
 */
public final class JvmFillMask {
    private JvmFillMask() {
    }

    public static void main(String[] args) throws Exception {
        File model = new File(args[0]);
        int k = Integer.parseInt(args[2]);
        JSONObject out = new JSONObject();
        try (OrtRunner runner = new OrtRunner(model)) { // TextModel.close would close the runner a second time
            TextModel carried = TextModel.open(runner, model);
            TextEncoder encoder = carried.encoder();
            JSONArray tokens = new JSONArray();
            for (int id = 0; ; id++) {
                try {
                    tokens.put(encoder.tokenOf(id));
                } catch (IllegalArgumentException end) {
                    break;
                }
            }
            out.put("tokens", tokens);
            JSONArray texts = new JSONArray();
            for (String text : Files.readAllLines(new File(args[1]).toPath(), StandardCharsets.UTF_8)) {
                JSONArray fills = new JSONArray();
                for (MaskFill fill : carried.fillMask(text, k)) {
                    JSONArray ids = new JSONArray();
                    JSONArray scores = new JSONArray();
                    for (MaskFill.Candidate c : fill.candidates) {
                        ids.put(c.id);
                        scores.put(c.score);
                    }
                    fills.put(new JSONObject().put("position", fill.position).put("ids", ids).put("scores", scores));
                }
                texts.put(fills);
            }
            out.put("fills", texts);
            JSONArray refused = new JSONArray(); // what the library refuses, in its own words
            for (String[] bad : new String[][] {{"no mask in this text", "5"}, {encoder.maskToken(), "0"}}) {
                try {
                    carried.fillMask(bad[0], Integer.parseInt(bad[1]));
                } catch (IllegalArgumentException e) {
                    refused.put(e.getMessage());
                }
            }
            out.put("refused", refused);
        }
        Files.write(new File(args[3]).toPath(), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}

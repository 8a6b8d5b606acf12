package org.mobileexport.demo;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.json.JSONArray;
import org.json.JSONObject;
import org.mobileexport.core.Answer;
import org.mobileexport.core.TextModel;

/**
 * The library's question answering on the JVM: a lone question-answering .onnx opened with the app's
 * {@link OrtRunner} through {@link TextModel}, its tokenizer the one the file carries. Answers each line
 * {@code question<TAB>context} of a file and writes the answers (text, score, UTF-16 span) and what
 * {@link TextModel#answer} refuses (an empty question or context, a question past the max length), as JSON.
 *
 * <p>Usage: {@code JvmAnswer MODEL_ONNX PAIRS_TSV LONG_QUESTION OUT_JSON}.
 */
public final class JvmAnswer {
    private JvmAnswer() {
    }

    public static void main(String[] args) throws Exception {
        File model = new File(args[0]);
        JSONObject out = new JSONObject();
        try (OrtRunner runner = new OrtRunner(model)) { // TextModel.close would close the runner a second time
            TextModel carried = TextModel.open(runner, model);
            JSONArray answers = new JSONArray();
            for (String line : Files.readAllLines(new File(args[1]).toPath(), StandardCharsets.UTF_8)) {
                String[] pair = line.split("\t", 2);
                Answer a = carried.answer(pair[0], pair[1]);
                answers.put(new JSONObject().put("text", a.text).put("score", a.score).put("start", a.start)
                        .put("end", a.end));
            }
            out.put("answers", answers);
            JSONArray refused = new JSONArray(); // what the library refuses, in its own words
            for (String[] bad : new String[][] {{" ", "a context"}, {"a question?", "\t"}, {args[2], "a context"}}) {
                try {
                    carried.answer(bad[0], bad[1]);
                } catch (IllegalArgumentException e) {
                    refused.put(e.getMessage());
                }
            }
            out.put("refused", refused);
        }
        Files.write(new File(args[3]).toPath(), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}

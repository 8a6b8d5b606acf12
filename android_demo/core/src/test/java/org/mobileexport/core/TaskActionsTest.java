package org.mobileexport.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.Test;

/**
 * The demo screen's actions by task, on the demo model's tokenizer ({@code -Dmobileexport.assets}, as in
 * {@link DemoAssetsTest}) and fake runners whose outputs the test chooses, read as the app reads an export folder.
 */
public class TaskActionsTest {
    /** An export folder: the demo tokenizer under tokenizer/, and the manifest and labels the test writes. */
    private static AssetSource folder(String manifest) {
        File tokenizer = new File(System.getProperty("mobileexport.assets"));
        return name -> {
            if (name.startsWith("tokenizer/")) {
                return Files.newInputStream(new File(tokenizer, name.substring("tokenizer/".length())).toPath());
            }
            String text = name.equals("manifest.json") ? manifest
                    : name.equals("labels.json") ? "{\"labels\": [\"negative\", \"positive\"]}" : null;
            if (text == null) {
                throw new IOException("no " + name);
            }
            InputStream in = new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
            return in;
        };
    }

    private static String manifest(String task, String outputs) {
        return "{\"task\": \"" + task + "\", \"outputs\": [" + outputs + "], \"golden\": [], \"artifacts\": "
                + "[{\"file\": \"model.onnx\", \"self_test_max_abs_diff\": 0.1}]}";
    }

    /** A runner whose every output is {@code outputs.get(k)} of the text's length (n tokens). */
    private interface Outputs {
        float[][] of(Encoding input);
    }

    private static ModelRunner runner(Outputs outputs) {
        return new ModelRunner() {
            public float[] run(Encoding input) {
                return outputs.of(input)[0];
            }

            public float[][] runAll(Encoding input) {
                return outputs.of(input);
            }

            public String name() {
                return "fake";
            }
        };
    }

    private static TextModel model(String task, String outputs, Outputs run) throws IOException {
        boolean labels = task.equals("text-classification");
        return TextModel.inFolder(runner(run), folder(manifest(task, outputs)), "model.onnx", labels);
    }

    @Test
    public void eachTaskOffersItsActionAndNothingElse() {
        assertEquals("Classify", TaskActions.action("text-classification", List.of("logits")));
        assertEquals("Answer", TaskActions.action("question-answering", List.of("start_logits", "end_logits")));
        assertEquals("Fill mask", TaskActions.action("fill-mask", List.of("logits")));
        assertEquals("Search", TaskActions.action("feature-extraction", List.of("sentence_embedding")));
        assertNull(TaskActions.action("feature-extraction", List.of("last_hidden_state"))); // no pooling: no search
        assertNull(TaskActions.action("token-classification", List.of("logits")));
        assertTrue(TaskActions.needsContext("question-answering"));
        assertFalse(TaskActions.needsContext("fill-mask"));
        assertTrue(TaskActions.example("fill-mask", "<mask>").contains("<mask>"));
    }

    @Test
    public void classifyShowsTheLabelAndProbabilities() throws Exception {
        TextModel m = model("text-classification", "\"logits\"", in -> new float[][] {{0f, 2f}});
        String shown = new TaskActions().run(m, "好", null, 3);
        assertTrue(shown, shown.startsWith("fake  (median ") && shown.contains("of 3 runs)"));
        assertTrue(shown, shown.contains("  positive\n") && shown.contains("negative   0.119"));
    }

    @Test
    public void searchRanksTheSentencesByTheirEmbeddings() throws Exception {
        // the fake embedding: (token count, 1); the query's length picks the sentence of the most similar length
        TextModel m = model("feature-extraction", "\"sentence_embedding\"",
                in -> new float[][] {{in.length(), 1f}});
        SemanticSearch search = new SemanticSearch(m, List.of("一", "一二三四五六七八九十", "一二三"));
        List<SemanticSearch.Hit> hits = search.rank("甲乙丙");
        assertEquals("一二三", hits.get(0).sentence);
        assertEquals(1.0, hits.get(0).cosine, 1e-9);
        assertEquals("一", hits.get(2).sentence); // the shortest is the least like a three-character query
        String shown = new TaskActions().run(m, "甲乙丙", null, 1);
        assertEquals(SemanticSearch.SENTENCES.size() + 1, shown.split("\n").length);
    }

    @Test
    public void fillMaskShowsTheBestTokensAtTheMask() throws Exception {
        int vocab = 21128;
        TextModel m = model("fill-mask", "\"logits\"", in -> {
            float[] logits = new float[in.length() * vocab];
            for (int pos = 0; pos < in.length(); pos++) {
                logits[pos * vocab + 642] = 9f; // 菜 everywhere, far above the rest
            }
            return new float[][] {logits};
        });
        String shown = new TaskActions().run(m, TaskActions.example("fill-mask", m.encoder().maskToken()), null, 1);
        assertTrue(shown, shown.contains("mask at token 6:  菜 "));
    }

    @Test
    public void aTaskTheScreenDoesNotOfferIsSaidSo() throws Exception {
        TextModel m = model("token-classification", "\"logits\"", in -> new float[][] {{0f}});
        assertEquals("this screen has nothing for a token-classification model", new TaskActions().run(m, "x", null, 1));
    }
}

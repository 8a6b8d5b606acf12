package org.mobileexport.core;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.json.JSONException;
import org.json.JSONObject;

/**
 * One model file an export wrote, ready to use: its runner (the app's ExecuTorch or ONNX Runtime one) and the
 * tokenizer, labels and golden examples the file carries, read through that runner after the file's identity is
 * checked. The library's entry point:
 *
 * <pre>{@code
 * try (TextModel model = TextModel.open(runner, file)) {
 *     Classifier.Prediction p = model.classify("这个手机很好用");
 * }
 * }</pre>
 * A fill-mask model's {@code model.fillMask("巴黎是法国的[MASK]都", 5)} gives each mask's five best tokens, a
 * question-answering model's {@code model.answer(question, context)} the answer's text and span in the context.
 */
public final class TextModel implements AutoCloseable {
    /** A {@code --head topk} fill-mask model's outputs (Python's core.heads.TOPK_OUTPUTS). */
    static final List<String> TOPK_OUTPUTS = List.of("mask_positions", "top_ids", "top_scores");

    private final ModelRunner runner;
    private final TextEncoder encoder;
    private final Classifier classifier; // null unless the task has labels
    private final List<SelfTest.Golden> golden;
    private final double tolerance;
    private final String task;
    private final List<String> outputs;

    private TextModel(ModelRunner runner, TextEncoder encoder, Classifier classifier, List<SelfTest.Golden> golden,
            double tolerance, String task, List<String> outputs) {
        this.runner = runner;
        this.encoder = encoder;
        this.classifier = classifier;
        this.golden = golden;
        this.tolerance = tolerance;
        this.task = task;
        this.outputs = outputs;
    }

    /**
     * {@code file} (a .pte, or a .onnx with its .onnx.data beside it) as loaded by {@code runner}: its identity
     * checked, then the assets it carries read. IOException naming the file when it changed after export or
     * carries no (or a broken) block.
     */
    public static <R extends ModelRunner & CarriedAssets> TextModel open(R runner, File file) throws IOException {
        List<File> files = new ArrayList<>(Collections.singletonList(file));
        File data = new File(file.getPath() + ".data");
        if (data.isFile()) {
            files.add(data);
        }
        String shown = file.getName();
        String identity;
        try {
            identity = runner.carried(AssetBundle.IDENTITY_KEY);
        } catch (Exception e) {
            throw new IOException(shown + ": its identity could not be read (" + e.getMessage() + ")", e);
        }
        if (identity == null) {
            throw new IOException(shown + " carries no bundled assets (exported with --no-bundle or by an older "
                    + "version); ship its export folder instead");
        }
        Identity.verify(files, identity, shown);
        AssetBundle assets = AssetBundle.read(runner, shown);
        JSONObject card = assets.json(AssetBundle.CARD);
        return read(runner, assets, AssetBundle.CARD, card, new Manifest(card).soleArtifact(),
                assets.has("labels.json"), shown + "'s bundled card");
    }

    /**
     * {@code runner}'s model (the export's {@code file}) with the assets of its export folder ({@code tokenizer/},
     * {@code labels.json}, {@code manifest.json}): for a file exported with --no-bundle, or an app that ships the
     * folder. Nothing of the file itself is checked here (the app's asset copy checks its bytes against the
     * manifest).
     */
    public static TextModel inFolder(ModelRunner runner, AssetSource folder, String file, boolean labels)
            throws IOException {
        return read(runner, folder, "manifest.json", folder.json("manifest.json"), file, labels, "manifest.json");
    }

    private static TextModel read(ModelRunner runner, AssetSource assets, String cardName, JSONObject card,
            String file, boolean labels, String shown) throws IOException {
        List<String> outputs = new ArrayList<>();
        try {
            for (int i = 0; i < card.getJSONArray("outputs").length(); i++) {
                outputs.add(card.getJSONArray("outputs").getString(i));
            }
            return new TextModel(runner, TextEncoder.load(assets, "tokenizer"),
                    labels ? Classifier.load(assets, "labels.json") : null, SelfTest.load(assets, cardName),
                    new Manifest(card).selfTestTolerance(file), card.getString("task"), outputs);
        } catch (JSONException e) {
            throw new IOException(shown + " is malformed: " + e.getMessage(), e);
        }
    }

    /** The names of the model's outputs, in order (e.g. logits; sentence_embedding; a top-k head's three). */
    public List<String> outputs() {
        return Collections.unmodifiableList(outputs);
    }

    /** The runner this model runs on. */
    public ModelRunner runner() {
        return runner;
    }

    /** The task the model was exported for ("text-classification", "feature-extraction", ...). */
    public String task() {
        return task;
    }

    /** Labels by class index (empty for a task without labels). */
    public List<String> labels() {
        return classifier == null ? Collections.emptyList() : classifier.labels();
    }

    /** The label and probabilities of {@code text} (a classifier's model). */
    public Classifier.Prediction classify(String text) throws Exception {
        if (classifier == null) {
            throw new IllegalStateException("a " + task + " model has no labels to classify with");
        }
        return classifier.predict(runner.run(encoder.encode(text)));
    }

    /** The sentence embedding of {@code text} (a model exported with --task feature-extraction --pooling). */
    public float[] encode(String text) throws Exception {
        if (!outputs.contains(SentenceEmbedding.OUTPUT)) {
            throw new IllegalStateException("the model gives " + outputs + ", not a " + SentenceEmbedding.OUTPUT
                    + "; export it with --task feature-extraction --pooling mean");
        }
        return runner.run(encoder.encode(text));
    }

    /**
     * The {@code k} best tokens at every mask token ({@link TextEncoder#maskToken()}) of {@code text} (a fill-mask
     * model: the full head, the default, or {@code --head topk}, whose K best per mask, for its first masks, are all
     * it gives: k above K gives K).
     */
    public List<MaskFill> fillMask(String text, int k) throws Exception {
        if (!task.equals("fill-mask")) {
            throw new IllegalStateException("a " + task + " model fills no masks");
        }
        if (k < 1) {
            throw new IllegalArgumentException("k " + k + ": pass 1 or more");
        }
        String mask = encoder.maskToken();
        if (mask == null || !text.contains(mask)) {
            throw new IllegalArgumentException("fill-mask needs a " + (mask == null ? "[MASK]" : mask)
                    + " in the text");
        }
        Encoding input = encoder.encode(text);
        if (outputs.equals(TOPK_OUTPUTS)) {
            float[][] out = runner.runAll(input);
            return MaskFill.fromTopK(out[0], out[1], out[2], encoder, k);
        }
        return MaskFill.decode(runner.run(input), input, encoder, k);
    }

    /** The answer to {@code question} in {@code context} (a question-answering model; the context cut to fit). */
    public Answer answer(String question, String context) throws Exception {
        if (!task.equals("question-answering")) {
            throw new IllegalStateException("a " + task + " model answers no questions");
        }
        if (question.trim().isEmpty() || context.trim().isEmpty()) {
            String what = question.trim().isEmpty() ? "question" : "context";
            throw new IllegalArgumentException("the " + what + " is empty: pass a non-empty " + what);
        }
        TextEncoder.Spans input = encoder.encodePair(question, context);
        float[][] out = runner.runAll(input.input);
        if (out.length < 2) {
            throw new IllegalStateException(runner.name() + " gave " + out.length + " output; question answering "
                    + "needs the start and end logits (ModelRunner.runAll)");
        }
        return Answer.decode(out[0], out[1], input, Text.sanitize(context));
    }

    /** The file's own golden examples run through the runner: ids as Python gave them, outputs within tolerance. */
    public SelfTest.Result selfTest() {
        return SelfTest.run(golden, encoder, runner, tolerance);
    }

    /** The tokenizer the file carries. */
    public TextEncoder encoder() {
        return encoder;
    }

    /** Closes the runner (when it holds native memory); what it throws comes back as an IOException. */
    @Override
    public void close() throws IOException {
        if (runner instanceof AutoCloseable) {
            try {
                ((AutoCloseable) runner).close();
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IOException("closing " + runner.name() + ": " + e.getMessage(), e);
            }
        }
    }
}

package org.mobileexport.demo;

import java.io.BufferedReader;
import java.io.File;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Locale;
import org.mobileexport.core.AssetSource;
import org.mobileexport.core.Classifier;
import org.mobileexport.core.Manifest;
import org.mobileexport.core.SelfTest;
import org.mobileexport.core.TextEncoder;
import org.mobileexport.core.TextModel;

/**
 * The app's ONNX Runtime path on the JVM: the app's own {@link OrtRunner} (desktop build of the same
 * ONNX Runtime Java API), the core tokenizer, {@link Classifier} and {@link SelfTest} on an export
 * folder, or on one .onnx alone (with its data file) through the library's {@link TextModel}: then the tokenizer,
 * labels and golden examples are the ones it carries, read through ONNX Runtime's metadata API after its identity
 * is checked. Runs the self-test with the
 * manifest's (or card's) tolerance, then classifies every line of a {@code label<TAB>text} file and writes
 * {@code index<TAB>p0<TAB>p1...} per line.
 *
 * <p>Usage: {@code JvmOrtCheck EXPORT_DIR|MODEL_ONNX REVIEWS_TSV OUT_TSV}; exit 0 when the self-test passed.
 */
public final class JvmOrtCheck {
    private JvmOrtCheck() {
    }

    /** One text to its prediction. */
    private interface Classify {
        Classifier.Prediction apply(String text) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        File given = new File(args[0]);
        boolean alone = given.isFile();
        File model = alone ? given : new File(given, "model.onnx");
        int failures = 0;
        try (ai.onnxruntime.OrtSession.SessionOptions options = OrtRunner.sessionOptions(8)) {
            String precision = options.getConfigEntries().get(OrtRunner.X64_QUANT_PRECISION);
            System.out.println("session option " + OrtRunner.X64_QUANT_PRECISION + "=" + precision);
            if (!"1".equals(precision)) {
                failures++;
            }
        }
        try (OrtRunner runner = new OrtRunner(model)) {
            Classify classify;
            SelfTest.Result result;
            if (alone) { // the library's entry point: identity checked, the carried assets read through ORT
                TextModel carried = TextModel.open(runner, model);
                System.out.println("assets: carried by " + model.getName() + " (identity checked)");
                try {
                    carried.fillMask("[MASK]", 1);
                    failures++;
                } catch (IllegalStateException e) {
                    System.out.println("fill-mask refused: " + e.getMessage());
                }
                classify = carried::classify;
                result = carried.selfTest();
            } else {
                AssetSource assets = AssetSource.directory(given);
                TextEncoder encoder = TextEncoder.load(assets, "tokenizer");
                Classifier classifier = Classifier.load(assets, "labels.json");
                double tolerance = Manifest.load(assets, "manifest.json").selfTestTolerance("model.onnx");
                classify = text -> classifier.predict(runner.run(encoder.encode(text)));
                result = SelfTest.run(SelfTest.load(assets, "manifest.json"), encoder, runner, tolerance);
            }
            System.out.println("self-test: " + (result.passed ? "passed" : "FAILED") + ", " + result.message);
            if (!result.passed) {
                failures++;
            }
            int n = 0;
            try (BufferedReader in = Files.newBufferedReader(new File(args[1]).toPath(), StandardCharsets.UTF_8);
                 PrintWriter out = new PrintWriter(Files.newBufferedWriter(new File(args[2]).toPath(),
                         StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (line.trim().isEmpty()) {
                        continue;
                    }
                    int tab = line.indexOf('\t');
                    String text = tab >= 0 ? line.substring(tab + 1) : line;
                    Classifier.Prediction p = classify.apply(text);
                    StringBuilder row = new StringBuilder().append(p.index);
                    for (double v : p.probabilities) {
                        row.append('\t').append(String.format(Locale.ROOT, "%.9f", v));
                    }
                    out.println(row);
                    n++;
                }
            }
            System.out.println("classified " + n + " texts");
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}

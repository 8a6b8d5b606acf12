package org.mobileexport.demo;

import android.app.Activity;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.widget.Button;
import android.widget.EditText;
import android.widget.TextView;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.mobileexport.core.Classifier;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;
import org.mobileexport.core.SelfTest;
import org.mobileexport.core.TextEncoder;

/**
 * Type text, see the label, probabilities and latency from ExecuTorch and ONNX Runtime side by side.
 * At start the manifest's golden examples are run through both runtimes (the on-device self-test).
 * Everything but the two runtime calls lives in android_demo/core (tested on the JVM).
 */
public final class MainActivity extends Activity {
    /** Largest max |logit diff| the self-test accepts (int8 artifacts; fp32 ones sit far below). */
    private static final double SELF_TEST_TOLERANCE = 0.25;

    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private final Handler ui = new Handler(Looper.getMainLooper());
    private final List<ModelRunner> runners = new ArrayList<>();
    private TextEncoder encoder;
    private Classifier classifier;

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        setContentView(R.layout.activity_main);
        TextView selfTest = findViewById(R.id.selftest);
        EditText input = findViewById(R.id.input);
        Button classify = findViewById(R.id.classify);
        TextView results = findViewById(R.id.results);
        classify.setEnabled(false);
        selfTest.setText("Loading models…");
        worker.execute(() -> {
            String status = load();
            ui.post(() -> {
                selfTest.setText(status);
                classify.setEnabled(encoder != null && !runners.isEmpty());
            });
        });
        classify.setOnClickListener(v -> {
            String text = input.getText().toString();
            worker.execute(() -> {
                String report = classify(text);
                ui.post(() -> results.setText(report));
            });
        });
    }

    private String load() {
        AndroidAssets assets = new AndroidAssets(getAssets());
        StringBuilder status = new StringBuilder();
        try {
            encoder = TextEncoder.load(assets, "tokenizer");
            classifier = Classifier.load(assets, "labels.json");
            if (assets.exists("model.pte")) {
                runners.add(new ExecuTorchRunner(assets.toFile("model.pte", getFilesDir())));
            }
            if (assets.exists("model.onnx")) {
                if (assets.exists("model.onnx.data")) { // the weights, read by ONNX Runtime from beside the graph
                    assets.toFile("model.onnx.data", getFilesDir());
                }
                runners.add(new OrtRunner(assets.toFile("model.onnx", getFilesDir())));
            }
            if (runners.isEmpty()) {
                return "No model.pte or model.onnx in assets/model: run `make android-assets`.";
            }
            List<SelfTest.Golden> golden = SelfTest.load(assets, "manifest.json");
            for (ModelRunner r : runners) {
                SelfTest.Result result = SelfTest.run(golden, encoder, r, SELF_TEST_TOLERANCE);
                status.append(result.passed ? "✓ " : "✗ ").append(result.message).append('\n');
            }
        } catch (Exception e) {
            status.append("Could not load the exported model: ").append(e.getMessage());
        }
        return status.toString().trim();
    }

    private String classify(String text) {
        Encoding enc = encoder.encode(text);
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "%d tokens\n\n", enc.length()));
        for (ModelRunner r : runners) {
            try {
                r.run(enc); // warm-up, so the latency below is steady-state
                long t0 = System.nanoTime();
                float[] logits = r.run(enc);
                double ms = (System.nanoTime() - t0) / 1e6;
                Classifier.Prediction p = classifier.predict(logits);
                out.append(String.format(Locale.ROOT, "%s\n  %s  (%.1f ms)\n", r.name(), p.label, ms));
                for (int i = 0; i < p.probabilities.length; i++) {
                    out.append(String.format(Locale.ROOT, "  %-10s %.3f\n", classifier.labels().get(i), p.probabilities[i]));
                }
                out.append('\n');
            } catch (Exception e) {
                out.append(r.name()).append(" failed: ").append(e.getMessage()).append("\n\n");
            }
        }
        return out.toString();
    }

    @Override
    protected void onDestroy() {
        worker.shutdownNow();
        for (ModelRunner r : runners) {
            try {
                ((AutoCloseable) r).close();
            } catch (Exception ignored) {
                // closing on the way out
            }
        }
        super.onDestroy();
    }
}

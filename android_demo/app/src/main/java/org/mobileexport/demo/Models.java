package org.mobileexport.demo;

import android.content.Context;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import org.mobileexport.core.Classifier;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.Manifest;
import org.mobileexport.core.ModelRunner;
import org.mobileexport.core.SelfTest;
import org.mobileexport.core.TextEncoder;

/**
 * The tokenizer, labels and runtimes, loaded once per process on one worker thread and kept across
 * configuration changes (rotation does not reload or re-copy anything). Every runtime call, closing
 * included, runs on that worker, so a runner is never closed while it runs.
 */
final class Models {
    private static Models instance;

    private final ExecutorService worker = Executors.newSingleThreadExecutor();
    private final List<ModelRunner> runners = new ArrayList<>();
    private TextEncoder encoder;
    private Classifier classifier;
    private String status = "";

    private Models() {
    }

    /** The process's models; the first call starts loading them from the APK's assets. */
    static synchronized Models get(Context context) {
        if (instance == null) {
            Context app = context.getApplicationContext();
            Models m = new Models();
            m.worker.execute(() -> m.load(new AndroidAssets(app.getAssets()), app.getFilesDir()));
            instance = m;
        }
        return instance;
    }

    /** Closes the runners on the worker (after any run in progress) and forgets the models. */
    static synchronized void release() {
        if (instance != null) {
            Models m = instance;
            instance = null;
            m.worker.execute(m::closeAll);
            m.worker.shutdown();
        }
    }

    /** Calls {@code done} on the worker with the load and self-test status, once loading finished. */
    void whenLoaded(Consumer<String> done) {
        worker.execute(() -> done.accept(status));
    }

    boolean ready() {
        return encoder != null && classifier != null && !runners.isEmpty();
    }

    /** Classifies {@code text} with every runtime on the worker and hands the report to {@code done}. */
    void classify(String text, Consumer<String> done) {
        worker.execute(() -> done.accept(report(text)));
    }

    private void load(AndroidAssets assets, File dir) {
        StringBuilder out = new StringBuilder();
        Manifest manifest;
        List<SelfTest.Golden> golden;
        try {
            encoder = TextEncoder.load(assets, "tokenizer");
            classifier = Classifier.load(assets, "labels.json");
            manifest = Manifest.load(assets, "manifest.json");
            golden = SelfTest.load(assets, "manifest.json");
        } catch (Exception e) {
            status = "Could not read the export in assets/model (run `make android-assets`): " + describe(e);
            return;
        }
        // One try per runtime: a .pte that fails to load must not keep ONNX Runtime from loading.
        if (assets.exists("model.pte")) {
            try {
                File pte = assets.toFile("model.pte", dir, manifest.sha256("model.pte"));
                add(new ExecuTorchRunner(pte), manifest.selfTestTolerance("model.pte"), golden, out);
            } catch (Throwable e) { // UnsatisfiedLinkError / ExceptionInInitializerError from the native library too
                out.append("✗ ExecuTorch .pte did not load: ").append(describe(e)).append('\n');
            }
        }
        if (assets.exists("model.onnx")) {
            try {
                if (assets.exists("model.onnx.data")) { // the weights, read by ONNX Runtime from beside the graph
                    assets.toFile("model.onnx.data", dir, manifest.sha256("model.onnx.data"));
                }
                File onnx = assets.toFile("model.onnx", dir, manifest.sha256("model.onnx"));
                add(new OrtRunner(onnx), manifest.selfTestTolerance("model.onnx"), golden, out);
            } catch (Throwable e) {
                out.append("✗ ONNX Runtime .onnx did not load: ").append(describe(e)).append('\n');
            }
        }
        if (!assets.exists("model.pte") && !assets.exists("model.onnx")) {
            out.append("No model.pte or model.onnx in assets/model: run `make android-assets`.");
        }
        status = out.toString().trim();
    }

    private void add(ModelRunner runner, double tolerance, List<SelfTest.Golden> golden, StringBuilder out) {
        runners.add(runner);
        SelfTest.Result result = SelfTest.run(golden, encoder, runner, tolerance);
        out.append(result.passed ? "✓ " : "✗ ").append(result.message).append('\n');
    }

    private String report(String text) {
        if (!ready()) {
            return status;
        }
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
                out.append(r.name()).append(" failed: ").append(describe(e)).append("\n\n");
            }
        }
        return out.toString();
    }

    private void closeAll() {
        for (ModelRunner r : runners) {
            try {
                ((AutoCloseable) r).close();
            } catch (Exception e) {
                android.util.Log.w("mobile-export", "closing " + r.name() + ": " + describe(e));
            }
        }
        runners.clear();
    }

    /** A message for the screen: never "null" (getMessage() may be null, e.g. for native errors). */
    static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : ": " + m);
    }
}

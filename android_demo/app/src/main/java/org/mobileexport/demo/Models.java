package org.mobileexport.demo;

import android.content.Context;
import android.util.Log;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import org.mobileexport.core.AssetCopy;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.Classifier;
import org.mobileexport.core.DeviceStats;
import org.mobileexport.core.Embedded;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.Manifest;
import org.mobileexport.core.ModelHost;
import org.mobileexport.core.ModelRunner;
import org.mobileexport.core.SelfTest;
import org.mobileexport.core.TextEncoder;
import org.mobileexport.core.TextModel;

/**
 * The tokenizer, labels and runtimes of one load, with what loading them cost (time, first run, RSS).
 * The process holds them through {@link #host}: loaded once for every screen, kept across rotation, and
 * loaded, run and closed only on the host's one worker thread.
 */
final class Models implements AutoCloseable {
    static final int RUNS = 10;
    private static ModelHost<Models> host;

    private final List<ModelRunner> runners = new ArrayList<>();
    private TextEncoder encoder;
    private Classifier classifier;
    private String status = "";

    private Models() {
    }

    /** The process's host of the models, loading from the APK's assets into the app's files folder. */
    static synchronized ModelHost<Models> host(Context context) {
        if (host == null) {
            Context app = context.getApplicationContext();
            host = new ModelHost<>(() -> load(new AndroidAssets(app.getAssets()), app.getFilesDir()),
                    e -> Log.w("mobile-export", "models: " + describe(e)));
        }
        return host;
    }

    /** The load and self-test report, with load time, first-run time and RSS per runtime. */
    String status() {
        return status;
    }

    boolean ready() {
        return encoder != null && classifier != null && !runners.isEmpty();
    }

    private static Models load(AndroidAssets assets, File dir) {
        Models m = new Models();
        StringBuilder out = new StringBuilder();
        Manifest manifest;
        List<SelfTest.Golden> golden;
        try {
            m.encoder = TextEncoder.load(assets, "tokenizer");
            m.classifier = Classifier.load(assets, "labels.json");
            manifest = Manifest.load(assets, "manifest.json");
            golden = SelfTest.load(assets, "manifest.json");
        } catch (Exception e) {
            m.status = "Could not read the export in assets/model (run `make android-assets`): " + describe(e);
            return m;
        }
        out.append(String.format(Locale.ROOT, "RSS before the runtimes: %s\n\n", mib(DeviceStats.currentRssKib())));
        // One try per runtime: a .pte that fails to load must not keep ONNX Runtime from loading.
        if (assets.exists("model.pte")) {
            try {
                File pte = copy(assets, manifest, "model.pte", dir);
                long t0 = System.nanoTime();
                ExecuTorchRunner runner = new ExecuTorchRunner(pte, manifest.inputCount("model.pte"));
                m.add(runner, t0, m.selfTest(runner, pte, manifest.selfTestTolerance("model.pte"), golden), golden, out);
            } catch (Exception | Error e) { // UnsatisfiedLinkError / ExceptionInInitializerError from the native library too
                out.append("✗ ExecuTorch .pte did not load: ").append(describe(e)).append("\n\n");
            }
        }
        if (assets.exists("model.qnn.onnx")) { // the NPU file: where the phone has no HTP, model.onnx below runs
            try {
                String name = npuFile(assets);
                File qnn = copy(assets, manifest, name, dir);
                long t0 = System.nanoTime();
                OrtRunner runner = OrtRunner.onHtp(qnn);
                m.add(runner, t0, m.selfTest(runner, qnn, manifest.selfTestTolerance("model.qnn.onnx"), golden), golden, out);
            } catch (Exception | Error e) {
                out.append("✗ the NPU file did not load on this phone's HTP (the CPU model.onnx runs): ")
                        .append(describe(e)).append("\n\n");
            }
        }
        if (assets.exists("model.onnx")) {
            try {
                if (assets.exists("model.onnx.data")) { // the weights, read by ONNX Runtime from beside the graph
                    copy(assets, manifest, "model.onnx.data", dir);
                }
                File onnx = copy(assets, manifest, "model.onnx", dir);
                long t0 = System.nanoTime();
                OrtRunner runner = new OrtRunner(onnx);
                m.add(runner, t0, m.selfTest(runner, onnx, manifest.selfTestTolerance("model.onnx"), golden), golden, out);
            } catch (Exception | Error e) {
                out.append("✗ ONNX Runtime .onnx did not load: ").append(describe(e)).append("\n\n");
            }
        }
        if (!assets.exists("model.pte") && !assets.exists("model.onnx")) {
            out.append("No model.pte or model.onnx in assets/model: run `make android-assets`.");
        }
        m.status = out.toString().trim();
        return m;
    }

    /** The NPU file precompiled for this phone's SoC (exported with --soc) when there is one, else the QDQ model. */
    private static String npuFile(AndroidAssets assets) {
        String soc = android.os.Build.VERSION.SDK_INT >= 31 ? android.os.Build.SOC_MODEL : "";
        String compiled = "model." + soc + ".qnn.onnx";
        return !soc.isEmpty() && assets.exists(compiled) ? compiled : "model.qnn.onnx";
    }

    private static File copy(AndroidAssets assets, Manifest manifest, String name, File dir) throws Exception {
        return AssetCopy.toFile(assets, name, dir, manifest.bytes(name), manifest.sha256(name));
    }

    /** A runner's self-test, and whose golden examples it runs. */
    private static final class Check {
        final Supplier<SelfTest.Result> result;
        final String from;

        Check(Supplier<SelfTest.Result> result, String from) {
            this.result = result;
            this.from = from;
        }
    }

    /**
     * The self-test of a model file from what it carries ({@link TextModel}: its identity checked first, so the
     * golden examples are the ones exported with these very bytes), else from the folder's manifest.
     */
    private <R extends ModelRunner & CarriedAssets> Check selfTest(R runner, File file, double tolerance,
            List<SelfTest.Golden> golden) throws Exception {
        if (runner.carried(Embedded.IDENTITY_KEY) == null) { // exported with --no-embed: the folder's
            return new Check(() -> SelfTest.run(golden, encoder, runner, tolerance), "manifest.json");
        }
        TextModel model = TextModel.open(runner, file); // not closed here: the runner stays loaded in runners
        return new Check(model::selfTest, file.getName() + " itself");
    }

    /** Keeps a runner loaded since {@code t0}; reports its load time, first run, RSS and self-test. */
    private void add(ModelRunner runner, long t0, Check check, List<SelfTest.Golden> golden, StringBuilder out) {
        double loadMs = (System.nanoTime() - t0) / 1e6;
        runners.add(runner);
        long rss = DeviceStats.currentRssKib();
        String firstRun = "n/a";
        if (!golden.isEmpty()) {
            long t1 = System.nanoTime();
            try {
                runner.run(encoder.encode(golden.get(0).text));
                firstRun = String.format(Locale.ROOT, "%.1f ms", (System.nanoTime() - t1) / 1e6);
            } catch (Exception e) {
                firstRun = "failed: " + describe(e);
            }
        }
        SelfTest.Result result = check.result.get();
        out.append(result.passed ? "✓ " : "✗ ").append(result.message).append(" (golden examples of ")
                .append(check.from).append(")\n")
                .append(String.format(Locale.ROOT, "  load %.1f ms, first run %s, RSS after load %s\n\n",
                        loadMs, firstRun, mib(rss)));
    }

    /** Label, probabilities and the median latency of {@link #RUNS} runs of {@code text} per runtime. */
    String classify(String text) {
        if (!ready()) {
            return status;
        }
        Encoding enc = encoder.encode(text);
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "%d tokens\n\n", enc.length()));
        for (ModelRunner r : runners) {
            try {
                float[] logits = r.run(enc); // also the warm-up, so the median below is steady-state
                double[] ms = new double[RUNS];
                for (int i = 0; i < RUNS; i++) {
                    long t0 = System.nanoTime();
                    r.run(enc);
                    ms[i] = (System.nanoTime() - t0) / 1e6;
                }
                Classifier.Prediction p = classifier.predict(logits);
                out.append(String.format(Locale.ROOT, "%s\n  %s  (median %.1f ms of %d runs)\n", r.name(), p.label,
                        DeviceStats.median(ms), RUNS));
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

    @Override
    public void close() {
        for (ModelRunner r : runners) {
            try {
                ((AutoCloseable) r).close();
            } catch (Exception e) {
                Log.w("mobile-export", "closing " + r.name() + ": " + describe(e));
            }
        }
        runners.clear();
    }

    private static String mib(long kib) {
        return kib < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f MiB", kib / 1024.0);
    }

    /** A message for the screen: never "null" (getMessage() may be null, e.g. for native errors). */
    static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null || m.isEmpty() ? "" : ": " + m);
    }
}

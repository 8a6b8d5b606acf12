package org.mobileexport.demo;

import android.content.Context;
import android.util.Log;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.json.JSONObject;
import org.mobileexport.core.AssetCopy;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.DeviceStats;
import org.mobileexport.core.AssetBundle;
import org.mobileexport.core.Manifest;
import org.mobileexport.core.ModelHost;
import org.mobileexport.core.ModelRunner;
import org.mobileexport.core.SelfTest;
import org.mobileexport.core.TaskActions;
import org.mobileexport.core.TextEncoder;
import org.mobileexport.core.TextModel;

/**
 * The export's model in each runtime of one load (a {@link TextModel} per runner: its tokenizer, labels and golden
 * examples), with what loading them cost (time, first run, RSS), and what the screen offers for its task
 * ({@link TaskActions}). The process holds them through {@link #host}: loaded once for every screen, kept across
 * rotation, and loaded, run and closed only on the host's one worker thread.
 */
final class Models implements AutoCloseable {
    static final int RUNS = 10;
    private static ModelHost<Models> host;

    private final List<TextModel> models = new ArrayList<>();
    private final TaskActions actions = new TaskActions();
    private TextEncoder encoder;
    private String task = "";
    private List<String> outputs = new ArrayList<>();
    private boolean labels;
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
        return encoder != null && !models.isEmpty();
    }

    /** The screen's button for the export's task (null: nothing to offer), and whether it reads a context too. */
    String action() {
        return TaskActions.action(task, outputs);
    }

    boolean needsContext() {
        return TaskActions.needsContext(task);
    }

    /** A first text to try with this task. */
    String example() {
        return encoder == null ? "" : TaskActions.example(task, encoder.maskToken());
    }

    private static Models load(AndroidAssets assets, File dir) {
        Models m = new Models();
        StringBuilder out = new StringBuilder();
        Manifest manifest;
        List<SelfTest.Golden> golden;
        try {
            m.encoder = TextEncoder.load(assets, "tokenizer");
            m.labels = assets.exists("labels.json");
            manifest = Manifest.load(assets, "manifest.json");
            golden = SelfTest.load(assets, "manifest.json");
            JSONObject json = assets.json("manifest.json");
            m.task = json.getString("task");
            for (int i = 0; i < json.getJSONArray("outputs").length(); i++) {
                m.outputs.add(json.getJSONArray("outputs").getString(i));
            }
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
                m.add(m.model(runner, pte, "model.pte", assets), t0, golden, out);
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
                m.add(m.model(runner, qnn, "model.qnn.onnx", assets), t0, golden, out);
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
                m.add(m.model(runner, onnx, "model.onnx", assets), t0, golden, out);
            } catch (Exception | Error e) {
                out.append("✗ ONNX Runtime .onnx did not load: ").append(describe(e)).append("\n\n");
            }
        }
        if (assets.exists("model.tflite")) {
            try {
                File tflite = copy(assets, manifest, "model.tflite", dir);
                long t0 = System.nanoTime();
                TfliteRunner runner = new TfliteRunner(tflite,
                        OrtRunner.intraOpThreads(Runtime.getRuntime().availableProcessors()));
                m.add(m.model(runner, tflite, "model.tflite", assets), t0, golden, out);
            } catch (Exception | Error e) {
                out.append("✗ LiteRT .tflite did not load: ").append(describe(e)).append("\n\n");
            }
        }
        if (!assets.exists("model.pte") && !assets.exists("model.onnx") && !assets.exists("model.tflite")) {
            out.append("No model.pte, model.onnx or model.tflite in assets/model: run `make android-assets`.");
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

    /**
     * {@code runner}'s model: read from what the file carries ({@link TextModel#open}: its identity checked first,
     * so the golden examples are the ones exported with these very bytes), else from the export folder ({@code name}'s
     * entry in manifest.json: a file exported with --no-bundle). A runner it cannot read is closed.
     */
    private <R extends ModelRunner & CarriedAssets> TextModel model(R runner, File file, String name,
            AndroidAssets assets) throws Exception {
        try {
            return runner.carried(AssetBundle.IDENTITY_KEY) == null ? TextModel.inFolder(runner, assets, name, labels)
                    : TextModel.open(runner, file);
        } catch (Exception | Error e) {
            ((AutoCloseable) runner).close(); // both runners hold native memory
            throw e;
        }
    }

    /** Keeps a model loaded since {@code t0}; reports its load time, first run, RSS and self-test. */
    private void add(TextModel model, long t0, List<SelfTest.Golden> golden, StringBuilder out) {
        double loadMs = (System.nanoTime() - t0) / 1e6;
        models.add(model);
        long rss = DeviceStats.currentRssKib();
        String firstRun = "n/a";
        if (!golden.isEmpty()) {
            long t1 = System.nanoTime();
            try {
                model.runner().run(encoder.encode(golden.get(0).text));
                firstRun = String.format(Locale.ROOT, "%.1f ms", (System.nanoTime() - t1) / 1e6);
            } catch (Exception e) {
                firstRun = "failed: " + describe(e);
            }
        }
        SelfTest.Result result = model.selfTest();
        out.append(result.passed ? "✓ " : "✗ ").append(result.message).append(" (").append(model.runner().name())
                .append(")\n")
                .append(String.format(Locale.ROOT, "  load %.1f ms, first run %s, RSS after load %s\n\n",
                        loadMs, firstRun, mib(rss)));
    }

    /** The task's result for {@code text} (and a question answering's {@code context}) in every runtime. */
    String run(String text, String context) {
        if (!ready()) {
            return status;
        }
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, "%d tokens\n\n",
                encoder.encode(text).length()));
        for (TextModel m : models) {
            try {
                out.append(actions.run(m, text, context, RUNS)).append('\n');
            } catch (Exception e) {
                out.append(m.runner().name()).append(" failed: ").append(describe(e)).append("\n\n");
            }
        }
        return out.toString();
    }

    @Override
    public void close() {
        for (TextModel m : models) {
            try {
                m.close();
            } catch (Exception e) {
                Log.w("mobile-export", "closing " + m.runner().name() + ": " + describe(e));
            }
        }
        models.clear();
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

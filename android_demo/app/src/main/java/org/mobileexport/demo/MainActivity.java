package org.mobileexport.demo;

import android.app.Activity;
import android.graphics.Insets;
import android.os.Build;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.view.View;
import android.view.WindowInsets;
import android.widget.Button;
import android.widget.EditText;
import android.widget.TextView;
import org.mobileexport.core.ModelHost;

/**
 * Type text, see what the model gives and the latency from ExecuTorch and ONNX Runtime side by side: what the screen
 * offers follows the task the export was made for (classify; answer a question from a context; fill the masks of a
 * text; search a few sentences with a sentence embedding; {@link org.mobileexport.core.TaskActions}).
 * At start the manifest's golden examples are run through both runtimes (the on-device self-test).
 * The models live in {@link Models}' host (loaded once per process for every window, kept across
 * rotation, used and closed only on its worker thread); this screen holds a lease on them, handed to
 * its successor on a configuration change and closed when it leaves for good. Results are published
 * on the lease, so one that finishes during a rotation reaches the new screen. Everything but the
 * runtime calls lives in android_demo/core (tested on the JVM).
 */
public final class MainActivity extends Activity {
    private final Handler ui = new Handler(Looper.getMainLooper());
    private ModelHost<Models>.Lease lease;

    @Override
    @SuppressWarnings("unchecked") // the only object this activity retains is its lease
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        setContentView(R.layout.activity_main);
        applyInsets(findViewById(R.id.root));
        TextView selfTest = findViewById(R.id.selftest);
        EditText input = findViewById(R.id.input);
        EditText context = findViewById(R.id.context);
        Button classify = findViewById(R.id.classify);
        TextView results = findViewById(R.id.results);
        Object kept = getLastNonConfigurationInstance();
        boolean fresh = !(kept instanceof ModelHost.Lease);
        lease = fresh ? Models.host(this).acquire() : (ModelHost<Models>.Lease) kept;
        classify.setEnabled(false);
        if (fresh) {
            selfTest.setText(R.string.loading);
            lease.submit((models, error) -> {
                boolean ready = models != null && models.ready();
                if (ready) { // before "ready": the screen shows the task's own button, example and context field
                    lease.publish("context", String.valueOf(models.needsContext()));
                    lease.publish("example", models.example());
                    lease.publish("action", models.action() == null ? "" : models.action());
                }
                lease.publish("ready", String.valueOf(ready && models.action() != null));
                lease.publish("status", models == null ? "Could not load the models: " + Models.describe(error)
                        : models.status());
            });
        }
        lease.observe((key, text) -> ui.post(() -> {
            if (isDestroyed()) {
                return;
            }
            switch (key) {
                case "ready":
                    classify.setEnabled(Boolean.parseBoolean(text));
                    break;
                case "action":
                    classify.setText(text.isEmpty() ? getString(R.string.nothing) : text);
                    break;
                case "example":
                    input.setText(text);
                    break;
                case "context":
                    context.setVisibility(Boolean.parseBoolean(text) ? View.VISIBLE : View.GONE);
                    break;
                case "status":
                    selfTest.setText(text);
                    break;
                default:
                    results.setText(text);
            }
        }));
        classify.setOnClickListener(v -> {
            String text = input.getText().toString();
            String second = context.getText().toString();
            lease.submit((models, error) -> {
                if (models != null) {
                    lease.publish("result", models.run(text, second));
                }
            });
        });
    }

    /** Edge-to-edge (enforced from Android 15 at targetSdk 35): keep the views clear of the bars and keyboard. */
    private static void applyInsets(View root) {
        int left = root.getPaddingLeft();
        int top = root.getPaddingTop();
        int right = root.getPaddingRight();
        int bottom = root.getPaddingBottom();
        root.setOnApplyWindowInsetsListener((v, insets) -> {
            int[] edges = edges(insets);
            v.setPadding(left + edges[0], top + edges[1], right + edges[2], bottom + edges[3]);
            return insets;
        });
        root.requestApplyInsets();
    }

    @SuppressWarnings("deprecation") // the pre-Android-11 API is the only one there is on those versions
    private static int[] edges(WindowInsets insets) {
        if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.R) {
            Insets i = insets.getInsets(WindowInsets.Type.systemBars() | WindowInsets.Type.displayCutout()
                    | WindowInsets.Type.ime());
            return new int[] {i.left, i.top, i.right, i.bottom};
        }
        return new int[] {insets.getSystemWindowInsetLeft(), insets.getSystemWindowInsetTop(),
            insets.getSystemWindowInsetRight(), insets.getSystemWindowInsetBottom()};
    }

    @Override
    public Object onRetainNonConfigurationInstance() {
        return lease; // the next instance of this screen takes it over: no reload on rotation
    }

    @Override
    protected void onDestroy() {
        lease.observe(null);
        if (!isChangingConfigurations()) { // leaving for good: drop queued runs; the last screen frees the models
            lease.close();
        }
        super.onDestroy();
    }
}

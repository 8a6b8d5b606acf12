package org.mobileexport.demo;

import android.app.Activity;
import android.os.Bundle;
import android.os.Handler;
import android.os.Looper;
import android.widget.Button;
import android.widget.EditText;
import android.widget.TextView;

/**
 * Type text, see the label, probabilities and latency from ExecuTorch and ONNX Runtime side by side.
 * At start the manifest's golden examples are run through both runtimes (the on-device self-test).
 * The models live in {@link Models} (loaded once, kept across rotation, used and closed only on its
 * worker thread); everything but the runtime calls lives in android_demo/core (tested on the JVM).
 */
public final class MainActivity extends Activity {
    private final Handler ui = new Handler(Looper.getMainLooper());
    private Models models;

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
        models = Models.get(this);
        models.whenLoaded(status -> ui.post(() -> {
            if (!isDestroyed()) {
                selfTest.setText(status);
                classify.setEnabled(models.ready());
            }
        }));
        classify.setOnClickListener(v -> models.classify(input.getText().toString(), report -> ui.post(() -> {
            if (!isDestroyed()) {
                results.setText(report);
            }
        })));
    }

    @Override
    protected void onDestroy() {
        if (!isChangingConfigurations()) { // leaving for good: close on the worker, after any run in progress
            Models.release();
        }
        super.onDestroy();
    }
}

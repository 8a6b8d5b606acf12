package org.mobileexport.demo;

import ai.onnxruntime.OrtException;
import java.io.File;
import java.util.Locale;
import org.mobileexport.core.Encoding;

/**
 * The app's NPU path on the JVM: {@link OrtRunner#onHtp} (refused where ONNX Runtime has no QNN provider, as on a
 * phone without an HTP: the app then runs model.onnx), and the same runner's fixed-length calling convention (pad
 * to the file's length, cut per-token outputs back) run on ONNX Runtime's CPU provider, which runs the QDQ model
 * too. Prints {@code htp: ...}, {@code fixed N}, {@code ran at L} (the graph's length: a several-length file's
 * shortest that fits), one {@code out K: v v ...} line per output, and whether a text longer than the file's length
 * is refused.
 *
 * <p>Usage: {@code JvmNpuCheck MODEL_QNN_ONNX ID,ID,...}
 */
public final class JvmNpuCheck {
    private JvmNpuCheck() {
    }

    public static void main(String[] args) throws Exception {
        File model = new File(args[0]);
        String[] parts = args[1].split(",");
        long[] ids = new long[parts.length];
        for (int k = 0; k < ids.length; k++) {
            ids[k] = Long.parseLong(parts[k].trim());
        }
        try (OrtRunner npu = OrtRunner.onHtp(model)) {
            System.out.println("htp: loaded " + npu.name());
        } catch (OrtException e) {
            System.out.println("htp: refused (" + e.getMessage().split("\n")[0] + ")");
        }
        try (OrtRunner runner = new OrtRunner(model, OrtRunner.sessionOptions(2))) {
            System.out.println("fixed " + runner.fixedLength());
            float[][] outs = runner.runAll(new Encoding(ids, new long[ids.length]));
            System.out.println("ran at " + runner.lastLength());
            for (int k = 0; k < outs.length; k++) {
                StringBuilder line = new StringBuilder("out " + k + ":");
                for (float v : outs[k]) {
                    line.append(String.format(Locale.ROOT, " %.6f", v));
                }
                System.out.println(line);
            }
            long[] longer = new long[runner.fixedLength() + 1];
            try {
                runner.runAll(new Encoding(longer, new long[longer.length]));
                System.out.println("longer: ran");
            } catch (IllegalArgumentException e) {
                System.out.println("longer: refused (" + e.getMessage() + ")");
            }
        }
    }
}

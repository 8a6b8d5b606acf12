package org.mobileexport.demo;

import java.io.File;
import java.util.Arrays;
import java.util.List;
import org.mobileexport.core.CarriedAssets;
import org.mobileexport.core.AssetBundle;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.LayerLoop;
import org.mobileexport.core.Manifest;
import org.mobileexport.core.ModelRunner;
import org.pytorch.executorch.EValue;
import org.pytorch.executorch.Module;
import org.pytorch.executorch.Tensor;

/**
 * model.pte through ExecuTorch's Android library (XNNPACK delegate inside the program).
 *
 * <p>The export writes ALBERT as a layer loop (manifest.json, calling_convention "albert-layer-loop/1"):
 * {@code embed} turns the ids into hidden states and an additive mask, {@code layer_group_G} is the shared
 * layer, run once per entry of {@code layer_schedule}, and {@code head} gives the task's outputs. Each
 * method packs its XNNPACK weights once when it loads, so the shared layer is in RAM once however many
 * layers run. A .pte with a plain {@code forward} (other tools' exports) runs as it is, as in Python.
 * The program is memory-mapped, not read into the heap. The assets the file carries are constant methods
 * returning strings ({@link #carried}).
 */
final class ExecuTorchRunner implements ModelRunner, CarriedAssets, AutoCloseable {
    private final Module module;
    private final LayerLoop<EValue> calls;
    private final int inputs; // the model inputs the program takes (Manifest.inputCount: 2 for DistilBERT)

    /** {@code pte} taking {@code inputs} model inputs, as its folder's manifest.json says. */
    ExecuTorchRunner(File pte, int inputs) throws Exception {
        this(Module.load(pte.getAbsolutePath(), Module.LOAD_MODE_MMAP), inputs, null);
    }

    /** {@code pte} alone: how many inputs it takes is read from the card it carries. */
    static ExecuTorchRunner alone(File pte) throws Exception {
        return new ExecuTorchRunner(Module.load(pte.getAbsolutePath(), Module.LOAD_MODE_MMAP), -1, pte.getName());
    }

    private ExecuTorchRunner(Module loaded, int inputs, String file) throws Exception {
        try {
            calls = LayerLoop.of(new Program(loaded), Arrays.asList(loaded.getMethods()));
            if (inputs >= 0) {
                this.inputs = inputs;
            } else {
                Manifest card = new Manifest(AssetBundle.read(key -> carried(loaded, key), file).json(AssetBundle.CARD));
                this.inputs = card.inputCount(card.soleArtifact());
            }
        } catch (Exception | Error e) { // a .pte the app cannot call must not keep its native memory
            loaded.destroy();
            throw e;
        }
        module = loaded;
    }

    @Override
    public String carried(String key) {
        return carried(module, key);
    }

    private static String carried(Module module, String key) {
        if (!Arrays.asList(module.getMethods()).contains(key)) {
            return null;
        }
        return module.execute(key)[0].toStr();
    }

    @Override
    public float[] run(Encoding in) throws Exception {
        return calls.run(feeds(in)).toTensor().getDataAsFloatArray();
    }

    @Override
    public float[][] runAll(Encoding in) throws Exception {
        List<EValue> values = calls.runAll(feeds(in));
        float[][] outputs = new float[values.size()][];
        for (int k = 0; k < outputs.length; k++) {
            outputs[k] = floats(values.get(k).toTensor());
        }
        return outputs;
    }

    /** A float tensor's values; an int64 one's (a top-k head's positions and ids) as floats (ModelRunner.runAll). */
    private static float[] floats(Tensor t) {
        try {
            return t.getDataAsFloatArray();
        } catch (IllegalStateException notFloat) { // ExecuTorch's Tensor of another type refuses so
            long[] values = t.getDataAsLongArray();
            float[] out = new float[values.length];
            for (int i = 0; i < out.length; i++) {
                out[i] = values[i];
            }
            return out;
        }
    }

    /** The model's inputs for {@code in} (input_ids, attention_mask and, but for DistilBERT, token_type_ids). */
    private List<EValue> feeds(Encoding in) {
        long[] shape = {1, in.length()};
        List<EValue> all = Arrays.asList(
                EValue.from(Tensor.fromBlob(in.inputIds, shape)),
                EValue.from(Tensor.fromBlob(in.attentionMask, shape)),
                EValue.from(Tensor.fromBlob(in.tokenTypeIds, shape)));
        return all.subList(0, inputs);
    }

    @Override
    public String name() {
        return "ExecuTorch .pte (" + calls.describe() + ")";
    }

    @Override
    public void close() {
        module.destroy();
    }

    /** {@link LayerLoop}'s view of a loaded {@link Module}. */
    private static final class Program implements LayerLoop.Program<EValue> {
        private final Module module;

        Program(Module module) {
            this.module = module;
        }

        @Override
        public List<EValue> execute(String method, List<EValue> inputs) {
            return Arrays.asList(module.execute(method, inputs.toArray(new EValue[0])));
        }

        @Override
        public long toLong(EValue value) {
            return value.toInt();
        }

        @Override
        public EValue copy(EValue value) { // hidden states and the additive mask are float tensors
            Tensor t = value.toTensor();
            return EValue.from(Tensor.fromBlob(t.getDataAsFloatArray(), t.shape()));
        }
    }
}
